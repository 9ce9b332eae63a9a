"""The builder's promises (spec §4) for any history, memory and settings in their allowed ranges
(issue 40): every section within its budget and the prompt within its limit, the sections in the
spec's order, the latest customer message always there (whole unless its block alone is longer than
the room reserved for it), and recall at most its limit, drawn from the whole scan window — an old
message that shares the latest message's words is recalled wherever it sits between the recent
window and the end of the scan window, and never from beyond it.

Runs QIWEI_PROPERTY_EXAMPLES random builds (100 by default, about 5 s).
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
from dataclasses import dataclass
from typing import cast

import pytest
from django.test import override_settings
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from conversations.models import Customer, Message, MessageDirection
from memory.context.builder import (
    BUSINESS_STATE,
    CORE_MEMORY,
    HEADER_RE,
    INSTRUCTIONS,
    LATEST_MESSAGE,
    LATEST_RESERVE_CHARS,
    LATEST_TRUNCATED,
    OUTPUT_CONTRACT,
    RECALLED_HISTORY,
    RECENT_CONVERSATION,
    TITLES,
    build_context,
    quote_line,
)
from memory.models import MemoryType
from memory.snapshots import snapshot_refresh
from tests.factories import BASE_TIME, CustomerFactory, MemoryItemFactory, MessageFactory, TaskFactory

EXAMPLES = int(os.environ.get("QIWEI_PROPERTY_EXAMPLES", "100"))
# The spec's order (§4): identity and rules, core memory, older relevant history, business state,
# recent conversation, the latest customer message, the output contract.
SPEC_ORDER = [
    INSTRUCTIONS,
    CORE_MEMORY,
    RECALLED_HISTORY,
    BUSINESS_STATE,
    RECENT_CONVERSATION,
    LATEST_MESSAGE,
    OUTPUT_CONTRACT,
]
CONVERSATION = (RECALLED_HISTORY, RECENT_CONVERSATION, LATEST_MESSAGE)
# The one old message the latest one is about, and the latest message asking after it. Nothing
# else in a history shares a character with them (recall ranks by bigrams, words and numbers).
NEEDLE = "栖霞路77弄那套朝南的我很喜欢"
QUERY = "栖霞路77弄那套还在吗"
# Other old messages that share some of the latest message's words (the same street)
RELATED = "栖霞路"
PAD = "嗯"  # lengthens the latest message without adding anything another message shares
# Small talk and memory: characters shared by none of NEEDLE, QUERY or PAD.
WORDS = (
    "的一是了我不人在他有这个上们来到时大地为子中你说生国年着就和要她出也得里后自以会家可下而过天去能对小"
    "多然于心学么之都好看起发当没成只如事把用第样道想作种开美总从无情己面最女但现前些所同日手又行意动方期"
    "它头经长儿回位分爱老因很给名法间知世什两次使身者被高已亲其进此话常与活正感"
)
_conversations = itertools.count(1)


def _text(min_size: int, max_size: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=WORDS, min_size=min_size, max_size=max_size)


# Lengths: mostly chat-sized, sometimes long (a pasted listing, a wall of text).
chat_text = st.one_of(_text(1, 40), _text(200, 3000))

limits = st.fixed_dictionaries(
    {
        # Each setting over its whole allowed range (qiwei_site/settings/base.py), the windows over
        # the part of it a short history can exercise.
        "QIWEI_AGENT_CONTEXT_CHAR_LIMIT": st.integers(500, 50_000),
        "QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT": st.integers(500, 8000),
        "QIWEI_AGENT_STATE_CHAR_LIMIT": st.integers(200, 20_000),
        "QIWEI_AGENT_CONVERSATION_CHAR_LIMIT": st.integers(500, 50_000),
        "QIWEI_AGENT_PROMPT_CHAR_LIMIT": st.integers(2000, 200_000),
        "QIWEI_AGENT_MEMORY_RECALL_LIMIT": st.integers(0, 3) | st.integers(0, 50),
        "QIWEI_AGENT_MEMORY_RECENT_MESSAGES": st.integers(1, 30),
        "QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT": st.integers(0, 40),
    }
)

memory_items = st.lists(
    st.tuples(
        st.sampled_from([MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.CONSTRAINT, MemoryType.HYPOTHESIS]),
        st.one_of(_text(2, 30), _text(100, 900)),
    ),
    max_size=25,
)


@dataclass(frozen=True)
class History:
    turns: list[tuple[str, str]]  # (direction, text), oldest first, before the latest message
    needle_at: int | None  # the needle's place counted back from the latest message (1 = just before it)
    related_at: list[int]  # the same for the messages naming the street
    latest_padding: int


@st.composite
def histories(draw: st.DrawFn, limit: dict[str, int]) -> History:
    turns: list[tuple[str, str]] = draw(
        st.lists(
            st.tuples(st.sampled_from([MessageDirection.INBOUND, MessageDirection.OUTBOUND]), chat_text), max_size=60
        )
    )
    recent, scan = limit["QIWEI_AGENT_MEMORY_RECENT_MESSAGES"], limit["QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT"]
    # Most often inside the scan window (at its edges as much as anywhere in it), sometimes anywhere
    window = (
        st.sampled_from([recent, recent + scan - 1]) | st.integers(recent, recent + scan - 1)
        if scan
        else st.integers(1, recent + 1)
    )
    needle_at = draw(st.none() | window | st.integers(1, recent + scan + 5))
    if needle_at is not None:
        # enough small talk before it for the needle to sit that far back
        while len(turns) < needle_at - 1:
            turns.append((MessageDirection.OUTBOUND, draw(_text(1, 20))))
        turns.insert(len(turns) + 1 - needle_at, (MessageDirection.INBOUND, NEEDLE))
    # Some messages naming the street too, anywhere before the latest one
    for _ in range(draw(st.integers(0, 8))):
        place = draw(st.integers(0, len(turns)))
        turns.insert(place, (MessageDirection.INBOUND, RELATED + draw(_text(1, 30))))
    texts = [text for _direction, text in turns]
    needle_at = len(turns) - texts.index(NEEDLE) if NEEDLE in texts else None
    related_at = [len(turns) - index for index, text in enumerate(texts) if text.startswith(RELATED) and text != NEEDLE]
    padding = draw(st.one_of(st.just(0), st.integers(1, 100), st.integers(1000, 6000)))
    return History(turns=turns, needle_at=needle_at, related_at=related_at, latest_padding=padding)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[str, int], History]:
    limit = draw(limits)
    return limit, draw(histories(limit))


def _customer_with(history: History, items: list[tuple[str, str]], tasks: list[str], snapshot: bool):
    customer = cast(Customer, CustomerFactory(conversation_id=f"wm_builder_prop_{next(_conversations):05d}"))
    messages: list[Message] = []
    for offset, (direction, text) in enumerate(history.turns):
        sender = "客户" if direction == MessageDirection.INBOUND else "客服小安"
        messages.append(
            MessageFactory(  # type: ignore[arg-type]  # factory_boy: a Message
                customer=customer,
                direction=direction,
                sender=sender,
                text=text,
                sent_at=BASE_TIME + dt.timedelta(minutes=offset),
            )
        )
    latest: Message = MessageFactory(  # type: ignore[assignment]  # factory_boy: a Message
        customer=customer,
        text=QUERY + PAD * history.latest_padding,
        sent_at=BASE_TIME + dt.timedelta(minutes=len(history.turns)),
    )
    for index, (memory_type, content) in enumerate(items):
        MemoryItemFactory(customer=customer, type=memory_type, key=f"{memory_type}:prop{index}", content=content)
    for title in tasks:
        TaskFactory(customer=customer, title=title)
    if snapshot:
        snapshot_refresh(customer=customer, reason="测试")
    needle = None
    if history.needle_at is not None:
        needle = messages[len(messages) - history.needle_at]
        assert needle.text == NEEDLE
    return customer, latest, needle


@pytest.mark.long
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    scenario=scenarios(),
    items=memory_items,
    tasks=st.lists(st.one_of(_text(2, 20), _text(300, 2000)), max_size=4),
    snapshot=st.booleans(),
)
def test_build_keeps_every_promise_for_any_history_and_settings(account, scenario, items, tasks, snapshot):
    limit, history = scenario
    # Given a customer with a random history, memory and open tasks, and random settings
    customer, latest, needle = _customer_with(history, items, tasks, snapshot)
    with override_settings(**limit):
        # When the context for their latest message is built
        built = build_context(customer=customer)
    trace = built.trace
    chars = {section.name: section.chars for section in built.sections}
    texts = {section.name: section.text for section in built.sections}
    assert trace["failures"] == []

    # Then the prompt is its sections joined, in the spec's order, numbered without a gap
    names = [section.name for section in built.sections]
    assert names == [name for name in SPEC_ORDER if name in names]
    assert built.prompt == "\n\n".join(section.text for section in built.sections)
    assert all(section.chars == len(section.text) > 0 for section in built.sections)
    numerals = [title.split("、", 1)[0] for title in HEADER_RE.findall(built.prompt)]
    assert numerals == list("一二三四五六七")[: len(names)]
    for position, name in enumerate(names):
        assert texts[name].startswith(f"===== {'一二三四五六七'[position]}{TITLES[name][1:]} =====")
    for entry in trace["prompt_sections"]:
        assert built.prompt[entry["start"] : entry["end"]] == texts.get(entry["key"], "")

    # And every section within its budget, the whole within its limit
    assert len(built.prompt) <= limit["QIWEI_AGENT_PROMPT_CHAR_LIMIT"]
    assert chars.get(INSTRUCTIONS, 0) <= limit["QIWEI_AGENT_CONTEXT_CHAR_LIMIT"]
    assert chars.get(CORE_MEMORY, 0) <= limit["QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT"]
    assert chars.get(BUSINESS_STATE, 0) <= limit["QIWEI_AGENT_STATE_CHAR_LIMIT"]
    assert sum(chars.get(name, 0) for name in CONVERSATION) <= limit["QIWEI_AGENT_CONVERSATION_CHAR_LIMIT"]
    assert OUTPUT_CONTRACT in names and INSTRUCTIONS in names  # the contract and the rules are never lost

    # And the latest customer message is always there: whole, unless its block alone is longer
    # than the room reserved for it, and then never shorter than that room
    assert trace["latest_message_id"] == latest.id
    assert LATEST_MESSAGE in names
    quoted = quote_line(
        direction=latest.direction,
        sender=latest.sender,
        text=latest.text,
        sent_at=latest.sent_at,
        message_id=latest.id,
    )
    latest_text = texts[LATEST_MESSAGE]
    event(f"latest truncated: {trace['latest_message_truncated']}")
    event(f"core memory trimmed: {bool(trace['trimmed'][CORE_MEMORY])}")
    event(f"history trimmed: {bool(trace['trimmed'][RECENT_CONVERSATION] or trace['trimmed'][RECALLED_HISTORY])}")
    if trace["latest_message_truncated"]:
        assert len(quoted) > LATEST_RESERVE_CHARS
        assert chars[LATEST_MESSAGE] >= LATEST_RESERVE_CHARS
        line = next(line for line in latest_text.split("\n") if line.startswith("> ["))
        assert line.endswith(LATEST_TRUNCATED) and quoted.startswith(line.removesuffix(LATEST_TRUNCATED))
        assert QUERY in line
    else:
        assert quoted in latest_text.split("\n")
    assert latest.id not in trace["recent_message_ids"] and latest.id not in trace["recalled_message_ids"]

    # And recall: at most its limit, only from the scan window beyond the recent one
    recent = limit["QIWEI_AGENT_MEMORY_RECENT_MESSAGES"]
    scan = limit["QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT"]
    recall_limit = limit["QIWEI_AGENT_MEMORY_RECALL_LIMIT"]
    newest_first = [
        latest.id,
        *reversed(list(customer.messages.exclude(pk=latest.pk).order_by("sent_at", "pk").values_list("pk", flat=True))),
    ]
    candidates = set(newest_first[recent : recent + scan])
    chosen = set(trace["recalled_message_ids"]) | set(trace["trimmed"][RECALLED_HISTORY])
    assert len(chosen) <= recall_limit
    assert chosen <= candidates
    assert set(trace["recent_message_ids"]) <= set(newest_first[1:recent])
    # The old message about the same flat (the best match: it shares the most with the latest
    # one) is recalled wherever it sits in the scan window, whatever else names the street
    relevant = [place for place in [*history.related_at, history.needle_at] if place is not None]
    in_window = [place for place in relevant if recent <= place < recent + scan]
    event(f"recalled {min(len(chosen), 3)} of {min(len(in_window), 3)} relevant, limit {min(recall_limit, 3)}")
    if needle is not None:
        in_scan_window = recent <= history.needle_at < recent + scan
        event(f"needle {'in' if in_scan_window else 'outside'} the scan window")
        assert (needle.id in chosen) == (in_scan_window and recall_limit > 0), (history.needle_at, recent, scan)
