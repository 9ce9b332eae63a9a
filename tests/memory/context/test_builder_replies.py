"""What was already said (issue 39, item 1): the recent conversation ends at the newest message, so
our replies after the customer's latest message are in the prompt, in order; the latest message
section still holds the message being answered and says it was already replied to."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from conversations.models import Customer, Message, MessageDirection
from memory import sql
from memory.context.builder import (
    ALREADY_ANSWERED_NOTE,
    LATEST_MESSAGE,
    RECENT_CONVERSATION,
    REPLIES_AFTER_LIMIT,
    AgentContextBuilder,
    context_cache_clear,
)
from qiwei_site.platform.services import account_create
from qiwei_site.platform.tenancy import current_alias, use_account
from tests.factories import BASE_TIME, CustomerFactory, MessageFactory
from tests.memory import sql_twins
from tests.memory.context.conftest import filler

IN, OUT, SYSTEM = MessageDirection.INBOUND, MessageDirection.OUTBOUND, MessageDirection.SYSTEM


def build(customer, **kwargs):
    context_cache_clear()
    return AgentContextBuilder().build(customer=customer, **kwargs)


def section(built, name: str) -> str:
    return next((s.text for s in built.sections if s.name == name), "")


@pytest.fixture
def zhang(account, chat):
    """张先生 asked to be called 小张, and the agent already answered him twice."""
    customer = CustomerFactory(conversation_id="wm_zhang", display_name="张先生")
    messages = chat(
        customer,
        [
            (IN, "你好，我想在望京租个一居室"),
            (OUT, "张先生您好，请问预算大概多少？"),
            (IN, "叫我小张就行，预算五千左右"),
            (OUT, "好的小张，五千左右望京的一居室有几套"),
            (OUT, "小张，这周六上午方便看房吗？"),
        ],
    )
    return customer, messages


def test_build_recent_conversation_includes_the_agents_replies_after_the_latest_message(zhang):
    # given 张先生's latest message was answered twice by the agent
    customer, messages = zhang
    asked, replies = messages[2], messages[3:]
    # when the context is built, for "the latest customer message" and for that message named
    for built in (build(customer), build(customer, latest_message=asked)):
        # then the recent conversation ends with both replies, after the earlier turns, in order
        assert built.trace["recent_message_ids"] == [messages[0].id, messages[1].id, *[m.id for m in replies]]
        recent = section(built, RECENT_CONVERSATION)
        positions = [recent.index(m.text) for m in (messages[0], messages[1], *replies)]
        assert positions == sorted(positions)
        # and the latest customer message section still holds the message being answered
        assert built.trace["latest_message_id"] == asked.id
        latest = section(built, LATEST_MESSAGE)
        assert "叫我小张就行" in latest and "好的小张" not in latest
        assert "叫我小张就行" not in recent


def test_build_says_the_latest_message_was_already_answered(zhang):
    # given the agent replied after 张先生's latest message
    customer, messages = zhang
    # when the context is built
    built = build(customer)
    # then the trace names the replies, and the latest message section says so after the quote
    assert built.trace["already_answered"] is True
    assert built.trace["answered_by_message_ids"] == [messages[3].id, messages[4].id]
    latest = section(built, LATEST_MESSAGE)
    assert latest.endswith(ALREADY_ANSWERED_NOTE)
    assert "请勿重复回答" in latest
    # and each section is exactly its part of the prompt
    for entry in built.trace["prompt_sections"]:
        assert built.prompt[entry["start"] : entry["end"]] == section(built, entry["key"])


def test_build_a_customer_message_after_the_reply_clears_the_flag(zhang, chat):
    # given 张先生 wrote again after the agent's replies
    customer, messages = zhang
    (again,) = chat(customer, [(IN, "周六上午可以，几点？")], start=messages[-1].sent_at + dt.timedelta(minutes=1))
    # when the context is built
    built = build(customer)
    # then it answers his new message, with the replies as earlier conversation and no note
    assert built.trace["latest_message_id"] == again.id
    assert built.trace["already_answered"] is False
    assert built.trace["answered_by_message_ids"] == []
    assert ALREADY_ANSWERED_NOTE not in built.prompt
    assert "这周六上午方便看房吗" in section(built, RECENT_CONVERSATION)


def test_build_without_replies_after_the_latest_message_has_no_note(customer, chat):
    # given the customer spoke last
    chat(customer, [(OUT, "王先生您好，请问想租哪里？"), (IN, "想租张江附近的两居室")])
    # when the context is built
    built = build(customer)
    # then nothing says it was answered
    assert built.trace["already_answered"] is False
    assert ALREADY_ANSWERED_NOTE not in built.prompt


def test_build_a_system_message_after_the_latest_message_is_not_a_reply(customer, chat):
    # given only a system notice followed the customer's message
    messages = chat(customer, [(IN, "想租张江附近的两居室"), (SYSTEM, "客户已被分配给顾问小李")])
    # when the context is built
    built = build(customer)
    # then the notice is in the recent conversation, but the message is not marked as answered
    assert built.trace["recent_message_ids"] == [messages[1].id]
    assert built.trace["already_answered"] is False


def test_build_an_earlier_message_sees_its_replies_not_what_came_after_the_next_question(zhang, chat):
    # given 张先生 asked again after the agent's replies, and was answered again
    customer, messages = zhang
    later = chat(
        customer,
        [(IN, "周六上午可以，几点？"), (OUT, "十点在望京地铁站A口见")],
        start=messages[-1].sent_at + dt.timedelta(minutes=1),
    )
    # when the context is built for his earlier message
    built = build(customer, latest_message=messages[2])
    # then it sees the replies to that message only
    assert built.trace["answered_by_message_ids"] == [messages[3].id, messages[4].id]
    assert later[0].text not in built.prompt and later[1].text not in built.prompt


def test_build_budgets_hold_with_many_agent_replies(customer, chat, settings):
    # given the customer's question was followed by far more agent messages than the window keeps
    settings.QIWEI_AGENT_CONVERSATION_CHAR_LIMIT = 700
    history = chat(customer, [*filler(12), (IN, "张江那套两居室还在吗？")])
    replies = chat(
        customer,
        [(OUT, f"王先生，张江那套两居室还在，这是第{n}张照片，客厅朝南，采光很好") for n in range(1, 21)],
        start=history[-1].sent_at + dt.timedelta(minutes=1),
    )
    # when the context is built, both ways
    for built in (build(customer), build(customer, latest_message=history[-1])):
        # then the question is still the latest message, whole, and the note is there
        assert built.trace["latest_message_id"] == history[-1].id
        assert built.trace["latest_message_truncated"] is False
        assert section(built, LATEST_MESSAGE).endswith(ALREADY_ANSWERED_NOTE)
        # and at most the newest REPLIES_AFTER_LIMIT replies were read, oldest of them first
        kept = [m.id for m in replies[-REPLIES_AFTER_LIMIT:]]
        assert built.trace["answered_by_message_ids"] == kept
        # and the conversation and prompt budgets hold: the oldest lines went first, then the oldest replies
        conversation = sum(e["chars"] for e in built.trace["prompt_sections"] if e["budget_scope"] == "conversation")
        assert conversation <= 700
        assert built.trace["prompt_chars"] <= settings.QIWEI_AGENT_PROMPT_CHAR_LIMIT
        recent_ids = built.trace["recent_message_ids"]
        assert len(recent_ids) < len(kept) and recent_ids == kept[len(kept) - len(recent_ids) :]
        assert built.trace["trimmed"][RECENT_CONVERSATION]


def test_build_reads_the_window_with_its_replies_in_one_query(zhang):
    # given 张先生's conversation with replies after his latest message
    customer, messages = zhang
    message = Message.objects.get(pk=messages[2].pk)
    context_cache_clear()
    # when the context is built for that message
    with CaptureQueriesContext(connections[current_alias()]) as queries:
        AgentContextBuilder().build(customer=customer, latest_message=message)
    # then one statement read the messages, the replies with the window
    message_reads = [q["sql"] for q in queries if 'FROM "conversations_message"' in q["sql"]]
    assert len(message_reads) == 1
    assert "UNION ALL" in message_reads[0]


def replies_world() -> tuple[Customer, list[Message]]:
    """张先生's conversation with replies, a withdrawn reply, a later question, a reply sent at the
    same moment as that question, and a last answer."""
    customer = CustomerFactory(conversation_id="wm_zhang_sql", display_name="张先生")
    turns = [
        (IN, "你好，我想在望京租个一居室"),
        (OUT, "张先生您好，请问预算大概多少？"),
        (IN, "叫我小张就行，预算五千左右"),
        (OUT, "好的小张，五千左右望京的一居室有几套"),
        (SYSTEM, "客户已被分配给顾问小李"),
        (OUT, "这条撤回了"),
        (IN, "周六上午可以"),
        (OUT, "同一时刻的回复"),
        (OUT, "十点在望京地铁站A口见"),
        (IN, "好的"),
    ]
    minutes = [0, 1, 2, 3, 4, 5, 6, 6, 7, 8]
    messages = [
        MessageFactory(
            customer=customer,
            direction=direction,
            sender="张先生" if direction == IN else "顾问小李",
            text=text,
            sent_at=BASE_TIME + dt.timedelta(minutes=minute),
        )
        for (direction, text), minute in zip(turns, minutes, strict=True)
    ]
    Message.objects.filter(pk=messages[5].pk).update(is_effective=False)
    return customer, messages


def assert_replies_window_equals_its_twin(customer: Customer, messages: list[Message]) -> None:
    for message in messages:
        for size in (1, 3, 50):
            for after in (0, 1, 2, REPLIES_AFTER_LIMIT):
                assert sql.window_up_to(customer.pk, message.sent_at, message.pk, size, after) == list(
                    sql_twins.window_up_to(customer.pk, message.sent_at, message.pk, size, after)
                )
    # and the replies to 小张's question are ours after it, up to his next message, newest first
    rows = sql.window_up_to(customer.pk, messages[2].sent_at, messages[2].pk, 50, REPLIES_AFTER_LIMIT)
    assert [row[0] for row in rows[:6]] == [m.id for m in (messages[7], messages[4], messages[3], *messages[:3][::-1])]


def test_sql_window_with_replies_equals_its_orm_twin(account):
    # given a conversation with replies, a withdrawn one, later questions and two messages at one time
    customer, messages = replies_world()
    # then for every message, size and number of replies, the statement gives what its twin gives
    assert_replies_window_equals_its_twin(customer, messages)


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_sql_window_with_replies_equals_its_orm_twin_on_postgres(postgres_accounts):
    # given the same conversation in an account on PostgreSQL
    account_id = postgres_accounts("pgreply")
    account_create(account_id=account_id, name="安居客服二部")
    with use_account(account_id) as alias:
        assert connections[alias].vendor == "postgresql"
        customer, messages = replies_world()
        # then the statement gives what its twin gives there too
        assert_replies_window_equals_its_twin(customer, messages)
