"""The builder's promises the mutation run of `memory/context/builder/` found untested (issue 40):
each budget met exactly and never exceeded, the latest customer message kept (and, below the allowed
settings, cut within its budget), the oldest history given up first, and the sections in the spec's
order."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.models import Alert, MessageDirection
from memory.context.builder import (
    ALREADY_ANSWERED_NOTE,
    BUSINESS_STATE,
    CORE_MEMORY,
    INSTRUCTIONS,
    KNOWLEDGE_OMITTED,
    LATEST_MESSAGE,
    LATEST_RESERVE_CHARS,
    LATEST_TRUNCATED,
    OUTPUT_CONTRACT,
    QUOTE_END,
    RECALLED_HISTORY,
    RECENT_CONVERSATION,
    TRUNCATED,
    AgentContextBuilder,
)
from memory.models import MemoryType
from memory.snapshots import snapshot_refresh
from tests.factories import MemoryItemFactory, MessageFactory, TaskFactory
from tests.memory.context.conftest import filler

IN, OUT = MessageDirection.INBOUND, MessageDirection.OUTBOUND
CONVERSATION = (RECALLED_HISTORY, RECENT_CONVERSATION, LATEST_MESSAGE)
LATEST = "栖霞路那套两居室还在吗？周六上午能去看吗？"
LONG = "我想租栖霞路那套两居室，" * 25  # its block is longer than the room reserved for the latest message


def build(customer):
    return AgentContextBuilder().build(customer=customer)


def sections(built) -> dict[str, str]:
    return {section.name: section.text for section in built.sections}


@pytest.fixture
def li(customer, chat):
    """A customer asking after a flat, with an open task and an alert."""
    chat(customer, [(IN, "你好，想在栖霞路附近租一套两居室"), (OUT, "您好，请问预算多少？"), *filler(4), (IN, LATEST)])
    TaskFactory(customer=customer, title="周六上午带看栖霞路两居室")
    Alert.objects.create(customer=customer, text="客户对中介费敏感")
    return customer


def test_build_keeps_a_business_state_that_exactly_fits_its_budget_whole(li, settings):
    # Given the business state's length, read with room to spare
    whole = sections(build(li))[BUSINESS_STATE]

    # When its budget is exactly that length
    settings.QIWEI_AGENT_STATE_CHAR_LIMIT = len(whole)
    built = build(li)

    # Then it is kept whole, and not reported as cut
    assert sections(built)[BUSINESS_STATE] == whole
    assert BUSINESS_STATE not in built.trace["truncated_sections"]


@pytest.mark.parametrize("room", [5, -3])
def test_build_below_the_allowed_conversation_budget_still_keeps_within_it(li, settings, room):
    # Given the latest message's block and the frame around its quoted line
    block = sections(build(li))[LATEST_MESSAGE]
    line = next(line for line in block.split("\n") if line.startswith("> ["))
    frame = len(block) - len(line)

    # When the conversation budget (below its allowed range, as only tests set it) leaves the
    # quoted line `room` characters
    settings.QIWEI_AGENT_CONVERSATION_CHAR_LIMIT = frame + room
    built = build(li)

    # Then the conversation sections stay within it, and the line keeps its first characters when
    # there is room for some
    texts = sections(built)
    assert sum(len(texts.get(name, "")) for name in CONVERSATION) <= frame + room
    if room > 0:
        kept = next(kept for kept in texts[LATEST_MESSAGE].split("\n") if kept.startswith("> ["))
        assert kept == line[:room]
        assert built.trace["latest_message_truncated"] is True


@pytest.fixture
def chen(customer, chat, settings):
    """A customer with every section: rules read whole, core memory, an old statement to recall,
    small talk, an open task and an alert, then a question."""
    settings.QIWEI_AGENT_CONTEXT_CHAR_LIMIT = 50_000
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 6
    old = chat(customer, [(IN, "家里有老人，不考虑顶楼，最好有电梯"), (OUT, "好的陈女士，已记下"), *filler(12)])
    chat(customer, [(IN, "栖霞路那套是顶楼吗？有电梯吗？")], start=old[-1].sent_at + dt.timedelta(hours=2))
    MemoryItemFactory(customer=customer, type=MemoryType.CONSTRAINT, key="constraint:顶楼", content="不考虑顶楼")
    MemoryItemFactory(customer=customer, type=MemoryType.PREFERENCE, key="preference:电梯", content="希望有电梯")
    snapshot_refresh(customer=customer, reason="测试")
    TaskFactory(customer=customer, title="周六上午带看栖霞路两居室")
    Alert.objects.create(customer=customer, text="客户家有老人，注意楼层")
    return customer


# Each budget and the sections it holds (the conversation budget counts its three sections
# without the blank lines between them; the prompt counts the whole prompt).
BUDGETS = {
    "QIWEI_AGENT_PROMPT_CHAR_LIMIT": None,
    "QIWEI_AGENT_CONTEXT_CHAR_LIMIT": (INSTRUCTIONS,),
    "QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT": (CORE_MEMORY,),
    "QIWEI_AGENT_STATE_CHAR_LIMIT": (BUSINESS_STATE,),
    "QIWEI_AGENT_CONVERSATION_CHAR_LIMIT": CONVERSATION,
}


@pytest.mark.parametrize("budget", list(BUDGETS))
def test_build_with_a_budget_exactly_the_length_it_holds_changes_nothing(chen, settings, budget):
    # Given the context built with room to spare, every section present
    roomy = build(chen)
    texts = sections(roomy)
    assert set(texts) == {INSTRUCTIONS, CORE_MEMORY, RECALLED_HISTORY, BUSINESS_STATE, *CONVERSATION, OUTPUT_CONTRACT}
    held = BUDGETS[budget]
    used = len(roomy.prompt) if held is None else sum(len(texts[name]) for name in held)

    # When that budget is set to exactly what it held
    setattr(settings, budget, used)
    built = build(chen)

    # Then nothing is trimmed, cut or shortened: the same prompt, the latest message whole
    assert built.prompt == roomy.prompt
    assert built.trace["truncated_sections"] == []
    assert all(not ids for ids in built.trace["trimmed"].values())
    assert built.trace["latest_message_truncated"] is False


@pytest.mark.parametrize("words", [LATEST, LONG, None])
def test_build_with_a_prompt_limit_exactly_fitting_keeps_every_section_whole(customer, settings, words):
    # Given a customer whose only message is the one to answer (short, or longer than the room
    # reserved for it), or who has written nothing yet, and the context built with room to spare
    settings.QIWEI_AGENT_CONTEXT_CHAR_LIMIT = 50_000
    if words is not None:
        MessageFactory(customer=customer, text=words)
    roomy = build(customer)
    assert [section.name for section in roomy.sections] == [
        INSTRUCTIONS,
        *([LATEST_MESSAGE] if words else []),
        OUTPUT_CONTRACT,
    ]

    # When the prompt limit is exactly its length
    settings.QIWEI_AGENT_PROMPT_CHAR_LIMIT = len(roomy.prompt)
    built = build(customer)

    # Then the instructions, the latest message (its quote closed, nothing after it: nobody
    # replied yet) and the contract are all whole
    assert built.prompt == roomy.prompt
    if words is not None:
        assert sections(built)[LATEST_MESSAGE].endswith(QUOTE_END)
    assert built.trace["truncated_sections"] == []
    assert built.trace["latest_message_truncated"] is False


def test_build_core_memory_over_its_budget_gives_up_its_last_items_first(customer, chat, settings):
    # Given core memory holding a preference, a constraint and, last, a guess to confirm
    chat(customer, [(IN, "栖霞路那套是顶楼吗？")])
    preference = MemoryItemFactory(customer=customer, type=MemoryType.PREFERENCE, content="希望有电梯")
    constraint = MemoryItemFactory(customer=customer, type=MemoryType.CONSTRAINT, content="不考虑顶楼")
    guess = MemoryItemFactory(customer=customer, type=MemoryType.HYPOTHESIS, content="可能与老人同住")
    snapshot_refresh(customer=customer, reason="测试")
    core = sections(build(customer))[CORE_MEMORY]
    guess_line = next(line for line in core.split("\n") if "可能与老人同住" in line)

    # When its budget is one character short of holding it all
    settings.QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT = len(core) - 1
    built = build(customer)

    # Then only the last item, the guess, is left out, and the trace names it
    kept = sections(built)[CORE_MEMORY]
    assert len(kept) <= len(core) - 1
    assert kept == core.replace(guess_line + "\n", "")
    assert built.trace["trimmed"][CORE_MEMORY] == [guess.id]
    assert built.trace["memory_item_ids"] == sorted([preference.id, constraint.id])


def test_build_latest_message_already_answered_says_so_after_the_quote(customer, chat):
    # Given the customer's question, and our reply after it (typed in WeCom)
    asked, replied = chat(customer, [(IN, "栖霞路那套押金多少？"), (OUT, "押一付三，押金一个月房租")])

    # When the context is built
    built = build(customer)

    # Then the latest message section quotes the question, then says it was already answered,
    # outside the quote; the reply is in the recent conversation
    latest = sections(built)[LATEST_MESSAGE].split("\n")
    assert any("栖霞路那套押金多少" in line for line in latest)
    assert latest[-2:] == [QUOTE_END, ALREADY_ANSWERED_NOTE]
    assert built.trace["latest_message_id"] == asked.id
    assert built.trace["recent_message_ids"] == [replied.id]


@pytest.mark.parametrize("shortened", ["to 20 past its reserve", "by one character"])
def test_build_a_long_latest_message_gives_way_before_the_instructions(customer, settings, shortened):
    # Given a customer whose only message is long, and the context built with room to spare
    settings.QIWEI_AGENT_CONTEXT_CHAR_LIMIT = 50_000
    MessageFactory(customer=customer, text=LONG)
    roomy = sections(build(customer))
    assert len(roomy[LATEST_MESSAGE]) > LATEST_RESERVE_CHARS + 20

    # When the prompt leaves the latest message 20 characters more than its reserve, or one
    # character less than its whole block
    left = LATEST_RESERVE_CHARS + 20 if shortened.startswith("to") else len(roomy[LATEST_MESSAGE]) - 1
    limit = len(roomy[INSTRUCTIONS]) + len(roomy[OUTPUT_CONTRACT]) + left + 4
    settings.QIWEI_AGENT_PROMPT_CHAR_LIMIT = limit
    built = build(customer)

    # Then the instructions and the contract stay whole, and the latest message is shortened to
    # exactly what the prompt has left, marked as shortened
    texts = sections(built)
    assert texts[INSTRUCTIONS] == roomy[INSTRUCTIONS]
    assert texts[OUTPUT_CONTRACT] == roomy[OUTPUT_CONTRACT]
    assert built.trace["latest_message_truncated"] is True
    assert len(texts[LATEST_MESSAGE]) == left
    assert next(line for line in texts[LATEST_MESSAGE].split("\n") if line.startswith("> [")).endswith(LATEST_TRUNCATED)
    assert len(built.prompt) == limit


@pytest.mark.parametrize("short_by", [1, 300])
def test_build_a_prompt_too_short_for_the_rules_leaves_knowledge_sections_out_whole(customer, settings, short_by):
    # Given a customer's short question, and the context built with room to spare
    settings.QIWEI_AGENT_CONTEXT_CHAR_LIMIT = 50_000
    MessageFactory(customer=customer, text=LATEST)
    roomy = build(customer)

    # When the prompt limit (below its allowed range, as only tests set it) is a little or a lot
    # shorter than that
    settings.QIWEI_AGENT_PROMPT_CHAR_LIMIT = len(roomy.prompt) - short_by
    built = build(customer)

    # Then the instructions lose whole knowledge sections (marked as left out), are never cut in
    # the middle, and the latest message stays whole
    instructions = sections(built)[INSTRUCTIONS]
    assert instructions.endswith(KNOWLEDGE_OMITTED)
    assert TRUNCATED not in instructions
    assert built.trace["instructions_left_out"]
    assert built.trace["latest_message_truncated"] is False
    assert sections(built)[LATEST_MESSAGE] == sections(roomy)[LATEST_MESSAGE]
    assert len(built.prompt) <= len(roomy.prompt) - short_by


@pytest.mark.parametrize("budget", ["QIWEI_AGENT_CONVERSATION_CHAR_LIMIT", "QIWEI_AGENT_PROMPT_CHAR_LIMIT"])
def test_build_one_character_over_gives_up_the_oldest_history_line_first(chen, settings, budget):
    # Given the context built with room to spare, and what the budget held
    roomy = build(chen)
    texts = sections(roomy)
    held = BUDGETS[budget]
    used = len(roomy.prompt) if held is None else sum(len(texts[name]) for name in held)
    oldest = roomy.trace["recalled_message_ids"][0]

    # When the budget is one character short of it
    setattr(settings, budget, used - 1)
    built = build(chen)

    # Then only the oldest recalled line is given up: the latest message, the business state, core
    # memory and the instructions stay whole
    assert built.trace["trimmed"][RECALLED_HISTORY] == [oldest]
    assert built.trace["trimmed"][RECENT_CONVERSATION] == [] and built.trace["trimmed"][CORE_MEMORY] == []
    assert built.trace["truncated_sections"] == []
    assert built.trace["latest_message_truncated"] is False
    assert len(built.prompt) <= len(roomy.prompt) - 1


def test_build_one_character_over_without_history_or_business_state_gives_up_core_memorys_last_item(customer, settings):
    # Given a customer's first message, core memory ending with a guess, and no business state
    settings.QIWEI_AGENT_CONTEXT_CHAR_LIMIT = 50_000
    MessageFactory(customer=customer, text=LATEST)
    MemoryItemFactory(customer=customer, type=MemoryType.CONSTRAINT, content="不考虑顶楼")
    guess = MemoryItemFactory(customer=customer, type=MemoryType.HYPOTHESIS, content="可能与老人同住")
    snapshot_refresh(customer=customer, reason="测试")
    roomy = build(customer)
    assert BUSINESS_STATE not in sections(roomy) and RECENT_CONVERSATION not in sections(roomy)

    # When the prompt limit is one character short of it
    settings.QIWEI_AGENT_PROMPT_CHAR_LIMIT = len(roomy.prompt) - 1
    built = build(customer)

    # Then core memory's last item goes, before the instructions, the contract or the latest message
    assert built.trace["trimmed"][CORE_MEMORY] == [guess.id]
    assert sections(built)[INSTRUCTIONS] == sections(roomy)[INSTRUCTIONS]
    assert sections(built)[OUTPUT_CONTRACT] == sections(roomy)[OUTPUT_CONTRACT]
    assert sections(built)[LATEST_MESSAGE] == sections(roomy)[LATEST_MESSAGE]


def test_build_a_prompt_limit_below_the_latest_message_still_holds(customer, settings):
    # Given a customer's question, and its block in a context built with room to spare
    MessageFactory(customer=customer, text=LATEST)
    block = sections(build(customer))[LATEST_MESSAGE]

    # When the prompt limit (far below its allowed range, as only tests set it) is shorter than
    # that block alone
    settings.QIWEI_AGENT_PROMPT_CHAR_LIMIT = len(block) - 30
    built = build(customer)

    # Then the prompt holds to it: everything else gives way, and last the latest message, shortened
    # to exactly what the limit leaves
    assert len(built.prompt) == len(block) - 30
    assert [section.name for section in built.sections] == [LATEST_MESSAGE]
    assert built.trace["latest_message_truncated"] is True


def test_build_a_shortened_latest_message_already_answered_keeps_the_note(customer, chat, settings):
    # Given a long question, our reply after it, and a conversation budget the question's block
    # does not fit
    settings.QIWEI_AGENT_CONVERSATION_CHAR_LIMIT = 500
    chat(customer, [(IN, LONG * 2), (OUT, "您好，栖霞路那套两居室还在，周六上午可以看")])

    # When the context is built
    built = build(customer)

    # Then the question is shortened within the budget, and still followed by the note that we
    # already replied
    latest = sections(built)[LATEST_MESSAGE]
    assert built.trace["latest_message_truncated"] is True
    assert len(latest) <= 500
    assert latest.split("\n")[-2:] == [QUOTE_END, ALREADY_ANSWERED_NOTE]


@pytest.mark.parametrize("room", ["its title, the mark and a character", "its title and the mark"])
def test_build_business_state_cut_to_its_title_is_left_out(customer, settings, room):
    # Given a customer's question and an open alert, and the context built with room to spare
    settings.QIWEI_AGENT_CONTEXT_CHAR_LIMIT = 50_000
    MessageFactory(customer=customer, text=LATEST)
    Alert.objects.create(customer=customer, text="客户对中介费敏感，报价前先确认预算；周六上午可以带看")
    roomy = build(customer)
    state = sections(roomy)[BUSINESS_STATE]
    title = state.split("\n")[0]
    bare = len(title) + len(TRUNCATED) + 1  # the title, a line break and the mark: nothing said

    # When the prompt leaves the business state room for a little more than that, or just that
    keep = bare + 1 if room.endswith("character") else bare
    settings.QIWEI_AGENT_PROMPT_CHAR_LIMIT = len(roomy.prompt) - len(state) + keep
    built = build(customer)

    # Then a state with room for some of its words keeps its beginning, marked as cut; one with
    # room for its title alone is left out
    texts = sections(built)
    if keep > bare:
        assert texts[BUSINESS_STATE] == state[: keep - len(TRUNCATED)] + TRUNCATED
    else:
        assert BUSINESS_STATE not in texts
    assert BUSINESS_STATE in built.trace["truncated_sections"]
    assert texts[INSTRUCTIONS] == sections(roomy)[INSTRUCTIONS]
    # (the sections after a left-out one move up a number)
    assert texts[LATEST_MESSAGE].split("\n")[1:] == sections(roomy)[LATEST_MESSAGE].split("\n")[1:]
    assert len(built.prompt) <= len(roomy.prompt) - len(state) + keep
