"""The builder's trace of where each section sits in the prompt (issue 12, item 6) and the business
state section (item 4): open tasks, open alerts and open recommendations with their latest feedback."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.business import (
    alert_create,
    recommendation_create,
    recommendation_feedback_record,
    recommendation_resolve,
    task_create,
    task_resolve,
)
from conversations.models import CustomerProfile, MessageDirection
from conversations.services import alert_resolve
from memory.context.builder import (
    BUSINESS_STATE,
    CORE_MEMORY,
    INSTRUCTIONS,
    LATEST_MESSAGE,
    OUTPUT_CONTRACT,
    RECALLED_HISTORY,
    RECENT_CONVERSATION,
    TITLES,
    AgentContextBuilder,
    MemoryFailure,
)
from memory.models import MemoryType
from memory.snapshots import snapshot_refresh
from tests.factories import MemoryItemFactory
from tests.memory.context.conftest import filler

IN, OUT = MessageDirection.INBOUND, MessageDirection.OUTBOUND


@pytest.fixture
def zhao(customer, chat, staff_user):
    """赵先生: an early constraint, small talk, a question; memory, and business state in every state."""
    old = chat(customer, [(IN, "我不考虑一楼，家里老人腿脚不好"), (OUT, "好的赵先生，记下了"), *filler(30)])
    latest = chat(
        customer,
        [(OUT, "赵先生，亚运村有套两居室在三楼"), (IN, "三楼可以，有电梯吗？一楼我是不考虑的")],
        start=old[-1].sent_at + dt.timedelta(hours=3),
    )
    constraint = MemoryItemFactory(
        customer=customer, type=MemoryType.CONSTRAINT, key="constraint:一楼", content="不考虑一楼"
    )
    hypothesis = MemoryItemFactory(
        customer=customer, type=MemoryType.HYPOTHESIS, key="hypothesis:elderly", content="可能与老人同住"
    )
    snapshot_refresh(customer=customer, reason="测试")
    CustomerProfile.objects.filter(customer=customer).update(district="朝阳区")
    tasks = {
        "open": task_create(customer=customer, title="周六上午带看亚运村两居室", actor=staff_user),
        "done": task_create(customer=customer, title="发送小区平面图", actor=staff_user),
    }
    task_resolve(task=tasks["done"], actor=staff_user, reason="已发")
    alerts = {
        "open": alert_create(customer=customer, text="客户对电梯有硬性要求", actor=staff_user),
        "done": alert_create(customer=customer, text="客户曾投诉看房迟到", actor=staff_user),
    }
    alert_resolve(alert=alerts["done"], actor=staff_user, reason="已道歉")
    recommendation = recommendation_create(customer=customer, text="推荐亚运村两居室（三楼有电梯）", actor=staff_user)
    recommendation_feedback_record(
        recommendation=recommendation, source="customer", verdict="declined", comment="太贵", actor=staff_user
    )
    recommendation_feedback_record(
        recommendation=recommendation,
        source="customer",
        verdict="interested",
        comment="降到七千可以考虑",
        actor=staff_user,
    )
    ended = recommendation_create(customer=customer, text="推荐望京一居室", actor=staff_user)
    recommendation_resolve(recommendation=ended, actor=staff_user, reason="客户要两居")
    return {
        "customer": customer,
        "old": old,
        "latest": latest,
        "items": (constraint, hypothesis),
        "tasks": tasks,
        "alerts": alerts,
        "recommendations": (recommendation, ended),
    }


def build(customer):
    return AgentContextBuilder().build(customer=customer)


def test_prompt_sections_split_the_prompt_exactly_in_order_with_titles_and_budgets(zhao, settings):
    # when the context is built
    built = build(zhao["customer"])
    entries = built.trace["prompt_sections"]
    # then each entry's offsets cut out exactly its section, in prompt order, with its Chinese title
    assert [e["key"] for e in entries] == [s.name for s in built.sections]
    for entry, section in zip(entries, built.sections, strict=True):
        assert built.prompt[entry["start"] : entry["end"]] == section.text
        assert entry["chars"] == section.chars and entry["title"] == TITLES[section.name]
        assert section.text.startswith(f"===== {entry['title']} =====")
    # and each names the budget it was fitted into
    budgets = {e["key"]: (e["budget"], e["budget_scope"]) for e in entries}
    assert budgets[INSTRUCTIONS] == (settings.QIWEI_AGENT_CONTEXT_CHAR_LIMIT, INSTRUCTIONS)
    assert budgets[CORE_MEMORY] == (settings.QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT, CORE_MEMORY)
    assert budgets[BUSINESS_STATE] == (settings.QIWEI_AGENT_STATE_CHAR_LIMIT, BUSINESS_STATE)
    for key in (RECALLED_HISTORY, RECENT_CONVERSATION, LATEST_MESSAGE):
        assert budgets[key] == (settings.QIWEI_AGENT_CONVERSATION_CHAR_LIMIT, "conversation")
    assert budgets[OUTPUT_CONTRACT] == (None, "whole")
    assert not any(e["trimmed"] for e in entries)


def test_prompt_sections_name_the_memory_items_and_messages_each_section_quotes(zhao):
    built = build(zhao["customer"])
    entries = {e["key"]: e for e in built.trace["prompt_sections"]}
    constraint, hypothesis = zhao["items"]
    # core memory lists its items with their types
    assert {(m["id"], m["type"]) for m in entries[CORE_MEMORY]["memory_items"]} == {
        (constraint.pk, "constraint"),
        (hypothesis.pk, "hypothesis"),
    }
    # recalled and recent history list their messages with their direction, as the trace's id lists do
    recalled = entries[RECALLED_HISTORY]["messages"]
    assert [m["id"] for m in recalled] == built.trace["recalled_message_ids"]
    assert zhao["old"][0].id in [m["id"] for m in recalled]
    assert {m["direction"] for m in recalled} <= {"inbound", "outbound"}
    recent = entries[RECENT_CONVERSATION]["messages"]
    assert [m["id"] for m in recent] == built.trace["recent_message_ids"]
    assert recent[-1] == {"id": zhao["latest"][0].id, "direction": "outbound"}
    # the latest message is the customer's
    assert entries[LATEST_MESSAGE]["messages"] == [{"id": zhao["latest"][-1].id, "direction": "inbound"}]


def test_business_state_shows_open_rows_only_with_the_latest_feedback(zhao):
    built = build(zhao["customer"])
    state = next(s.text for s in built.sections if s.name == BUSINESS_STATE)
    # open task, open alert and open recommendation with its newest feedback only
    assert "周六上午带看亚运村两居室" in state and "客户对电梯有硬性要求" in state
    assert "推荐亚运村两居室（三楼有电梯）；最新反馈（客户·感兴趣）：降到七千可以考虑" in state
    assert "太贵" not in state
    # nothing that was closed
    for closed in ("发送小区平面图", "客户曾投诉看房迟到", "推荐望京一居室"):
        assert closed not in state
    # and the trace names the rows it quotes
    entry = next(e for e in built.trace["prompt_sections"] if e["key"] == BUSINESS_STATE)
    assert entry["business"] == [
        {"kind": "task", "id": zhao["tasks"]["open"].pk},
        {"kind": "alert", "id": zhao["alerts"]["open"].pk},
        {"kind": "recommendation", "id": zhao["recommendations"][0].pk},
    ]


def test_business_state_is_cut_to_its_budget_and_the_trace_says_so(zhao, settings, staff_user):
    # given many open tasks and a small business-state budget
    for index in range(15):
        task_create(customer=zhao["customer"], title=f"第{index + 1}次回访：确认电梯和楼层要求", actor=staff_user)
    settings.QIWEI_AGENT_STATE_CHAR_LIMIT = 200
    built = build(zhao["customer"])
    entry = next(e for e in built.trace["prompt_sections"] if e["key"] == BUSINESS_STATE)
    # then the section stays within its budget, is marked trimmed, and lists only rows it still shows
    assert entry["chars"] <= 200 and entry["trimmed"] is True
    shown = built.prompt[entry["start"] : entry["end"]]
    assert len(entry["business"]) < 16 and all(ref["kind"] == "task" for ref in entry["business"])
    assert "第15次回访" not in shown


def test_prompt_sections_record_what_the_conversation_budget_trimmed(zhao, settings):
    # given a conversation budget too small for the recalled history
    settings.QIWEI_AGENT_CONVERSATION_CHAR_LIMIT = 500
    built = build(zhao["customer"])
    entries = {e["key"]: e for e in built.trace["prompt_sections"]}
    # then the recalled section is listed with nothing left and the ids it lost
    recalled = entries[RECALLED_HISTORY]
    assert recalled["trimmed"] is True and recalled["chars"] == 0 and recalled["start"] == recalled["end"]
    assert recalled["trimmed_ids"] == sorted(built.trace["trimmed"][RECALLED_HISTORY])
    assert recalled.get("messages") == []
    # and the offsets of the other sections still cut the prompt exactly
    for section in built.sections:
        entry = entries[section.name]
        assert built.prompt[entry["start"] : entry["end"]] == section.text


def test_degraded_build_traces_its_sections_too(zhao):
    customer, latest = zhao["customer"], zhao["latest"][-1]
    built = AgentContextBuilder().build_degraded(
        customer=customer, latest_message=latest, failure=MemoryFailure(stage="prefetch", error="OperationalError")
    )
    entries = built.trace["prompt_sections"]
    assert [e["key"] for e in entries] == [INSTRUCTIONS, LATEST_MESSAGE, OUTPUT_CONTRACT]
    assert all(built.prompt[e["start"] : e["end"]].startswith("=====") for e in entries)
    assert built.trace["fallback"] is True
