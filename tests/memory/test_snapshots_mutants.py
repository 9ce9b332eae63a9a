"""Core-memory snapshots at their edges (issue 40, mutation testing): a snapshot never exceeds its size
limit (an item that fits exactly is kept, one character more is left out and recorded), sections come
in their fixed order with each heading once, only active unexpired items count, and the version
increases by one exactly when the rendered text changes."""

from __future__ import annotations

import datetime as dt
import hashlib

from django.utils import timezone

from memory.models import MemorySnapshot, MemoryStatus, MemoryType
from memory.snapshots import (
    effective_in,
    effective_items,
    render_snapshot,
    snapshot_current,
    snapshot_refresh,
    snapshot_write,
)
from tests.factories import MemoryItemFactory

BUDGET = "预算每月4500元以内"
METRO = "上班在陆家嘴，希望离2号线地铁站步行十分钟以内"


def _cost(heading: str, *contents: str) -> int:
    """What a section takes of the limit: its heading and each item's line, each with its line break."""
    return len(heading) + 1 + sum(len(f"- {content}") + 1 for content in contents)


def test_render_snapshot_keeps_an_item_that_fits_exactly_and_leaves_out_one_character_more(customer):
    # given one confirmed fact about the customer's budget
    item = MemoryItemFactory(customer=customer, type=MemoryType.FACT, key="fact:budget", content=BUDGET)
    exact = _cost("## 已确认事实", BUDGET)

    # when it is rendered within exactly its cost, then within one character less
    fits = render_snapshot([item], limit=exact)
    too_small = render_snapshot([item], limit=exact - 1)

    # then the first holds it under its heading, and the second holds nothing and records it left out
    assert fits.content == f"## 已确认事实\n- {BUDGET}"
    assert (fits.item_ids, fits.left_out_ids) == ([item.pk], [])
    assert len(fits.content) <= exact
    assert (too_small.content, too_small.item_ids, too_small.left_out_ids) == ("", [], [item.pk])


def test_render_snapshot_counts_a_section_heading_once(customer):
    # given two preferences of the same customer
    metro = MemoryItemFactory(customer=customer, type=MemoryType.PREFERENCE, content=METRO)
    balcony = MemoryItemFactory(customer=customer, type=MemoryType.PREFERENCE, content="喜欢南向带阳台")
    exact = _cost("## 偏好", METRO, "喜欢南向带阳台")

    # when they are rendered within exactly the cost of one heading and both lines
    rendered = render_snapshot([metro, balcony], limit=exact)

    # then both are kept under the one heading
    assert rendered.content == f"## 偏好\n- {METRO}\n- 喜欢南向带阳台"
    assert (rendered.item_ids, rendered.left_out_ids) == ([metro.pk, balcony.pk], [])


def test_render_snapshot_orders_sections_by_type_with_each_heading_once(customer):
    # given items of every type, given out of order, two of them preferences
    hypothesis = MemoryItemFactory(customer=customer, type=MemoryType.HYPOTHESIS, content="可能有孩子要上学")
    event = MemoryItemFactory(customer=customer, type=MemoryType.EVENT, content="周六上午约了看张江的两居室")
    balcony = MemoryItemFactory(customer=customer, type=MemoryType.PREFERENCE, content="喜欢南向带阳台")
    constraint = MemoryItemFactory(customer=customer, type=MemoryType.CONSTRAINT, content="不考虑顶楼")
    metro = MemoryItemFactory(customer=customer, type=MemoryType.PREFERENCE, content=METRO)
    fact = MemoryItemFactory(customer=customer, type=MemoryType.FACT, content=BUDGET)

    # when they are rendered with room for all
    rendered = render_snapshot([hypothesis, event, balcony, constraint, metro, fact], limit=2000)

    # then facts come first and hypotheses last, items keep their order within a type
    assert rendered.content.split("\n") == [
        "## 已确认事实",
        f"- {BUDGET}",
        "## 偏好",
        "- 喜欢南向带阳台",
        f"- {METRO}",
        "## 约束（排除项）",
        "- 不考虑顶楼",
        "## 重要事件",
        "- 周六上午约了看张江的两居室",
        "## 待确认（模型推断，仅可用于向客户确认，不是事实）",
        "- 可能有孩子要上学",
    ]
    assert rendered.item_ids == [fact.pk, balcony.pk, metro.pk, constraint.pk, event.pk, hypothesis.pk]
    assert rendered.left_out_ids == []


def test_render_snapshot_puts_an_item_on_one_line(customer):
    # given a fact written over several lines with extra spaces
    item = MemoryItemFactory(customer=customer, type=MemoryType.FACT, content="  预算4500\n  押一付三 \t可以接受 ")

    # when it is rendered
    rendered = render_snapshot([item], limit=500)

    # then it is one line with single spaces
    assert rendered.content == "## 已确认事实\n- 预算4500 押一付三 可以接受"


def test_render_snapshot_fills_the_room_a_long_item_left_with_later_ones(customer):
    # given a long preference that does not fit, followed by a short one that does
    long_text = "希望小区有健身房、游泳池、地下车库、快递柜，离菜市场和三甲医院都近，" * 3
    heading = "## 偏好"
    long_item = MemoryItemFactory(customer=customer, type=MemoryType.PREFERENCE, content=long_text)
    short_item = MemoryItemFactory(customer=customer, type=MemoryType.PREFERENCE, content="喜欢南向")
    limit = _cost(heading, "喜欢南向")

    # when they are rendered within room for the short one only
    rendered = render_snapshot([long_item, short_item], limit=limit)

    # then the short one is in, under one heading, and the long one is recorded as left out
    assert rendered.content == "## 偏好\n- 喜欢南向"
    assert (rendered.item_ids, rendered.left_out_ids) == ([short_item.pk], [long_item.pk])


def test_render_snapshot_writes_no_heading_for_a_section_left_out_whole(customer):
    # given a fact that fits and a constraint too long for the room left
    fact = MemoryItemFactory(customer=customer, type=MemoryType.FACT, content=BUDGET)
    constraint = MemoryItemFactory(
        customer=customer, type=MemoryType.CONSTRAINT, content="不考虑顶楼、不考虑一楼、不考虑没有电梯的老小区"
    )

    # when they are rendered with room for the fact and two characters more
    rendered = render_snapshot([fact, constraint], limit=_cost("## 已确认事实", BUDGET) + 2)

    # then the constraint's section has no heading at all
    assert rendered.content == f"## 已确认事实\n- {BUDGET}"
    assert "约束" not in rendered.content and rendered.left_out_ids == [constraint.pk]


def test_render_snapshot_uses_the_core_limit_by_default(customer, settings):
    # given a core limit with room for one budget line, and two facts
    first = MemoryItemFactory(customer=customer, type=MemoryType.FACT, content=BUDGET)
    second = MemoryItemFactory(customer=customer, type=MemoryType.FACT, content="想在十二月底之前入住")
    settings.QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT = _cost("## 已确认事实", BUDGET)

    # when they are rendered without a limit
    rendered = render_snapshot([first, second])

    # then the setting's limit holds
    assert (rendered.item_ids, rendered.left_out_ids) == ([first.pk], [second.pk])


def test_rendered_snapshot_hash_is_the_sha256_of_its_utf8_text():
    # given a rendered snapshot in Chinese
    content = f"## 已确认事实\n- {BUDGET}"

    # when its hash is read
    rendered = render_snapshot([], limit=10)
    rendered.content = content

    # then it is the SHA-256 of the UTF-8 text
    assert rendered.sha256 == hashlib.sha256(content.encode("utf-8")).hexdigest()


def test_effective_items_keep_only_active_unexpired_ones_in_snapshot_order(customer):
    # given active items of different weight, one expired, one expiring tomorrow, one rejected,
    # and another customer's item
    now = timezone.now()
    sure = MemoryItemFactory(customer=customer, content="喜欢南向带阳台", importance=2, confidence=0.95)
    light = MemoryItemFactory(customer=customer, content="喜欢安静", importance=2, confidence=0.9)
    heavy = MemoryItemFactory(customer=customer, content=METRO, importance=5, confidence=0.6)
    tomorrow = MemoryItemFactory(
        customer=customer, content="明天下午三点看房", importance=1, expires_at=now + dt.timedelta(days=1)
    )
    MemoryItemFactory(customer=customer, content="昨天约的看房", importance=5, expires_at=now - dt.timedelta(minutes=1))
    MemoryItemFactory(customer=customer, content="想要三居室", importance=5, status=MemoryStatus.REJECTED)
    MemoryItemFactory(content="李女士想要一居室", importance=5)

    # when the effective items are read from the database and from memory
    from_database = list(effective_items(customer))
    from_memory = effective_in(customer.memory_items.all(), now=now)

    # then both hold the same active unexpired items of this customer, by importance, then confidence
    assert from_database == [heavy, sure, light, tomorrow]
    assert from_memory == from_database


def test_effective_items_of_equal_weight_come_newest_first(customer):
    # given three preferences of equal weight: the oldest edited last, the other two updated together
    edited = MemoryItemFactory(customer=customer, content="喜欢南向带阳台")
    first = MemoryItemFactory(customer=customer, content="喜欢安静的小区")
    second = MemoryItemFactory(customer=customer, content=METRO)
    moment = timezone.now()
    customer.memory_items.filter(pk__in=[first.pk, second.pk]).update(updated_at=moment - dt.timedelta(hours=1))
    customer.memory_items.filter(pk=edited.pk).update(updated_at=moment)

    # when the effective items are read from the database and from memory
    from_database = list(effective_items(customer))
    from_memory = effective_in(customer.memory_items.all(), now=moment)

    # then the one edited last comes first, then the newer of the two updated together
    assert from_database == [edited, second, first]
    assert from_memory == from_database


def test_effective_in_drops_an_item_that_expires_at_that_moment(customer):
    # given a viewing reminder that expires at ten o'clock, and a lasting preference updated later
    at_ten = timezone.now().replace(hour=10, minute=0, second=0, microsecond=0)
    reminder = MemoryItemFactory(customer=customer, content="十点在小区门口见面", expires_at=at_ten, importance=3)
    lasting = MemoryItemFactory(customer=customer, content=METRO, importance=3, confidence=0.8)
    same_weight = MemoryItemFactory(customer=customer, content="喜欢南向带阳台", importance=3, confidence=0.8)

    # when the effective items are read at ten o'clock, and a minute before
    at_the_moment = effective_in([reminder, lasting, same_weight], now=at_ten)
    before = effective_in([reminder, lasting, same_weight], now=at_ten - dt.timedelta(minutes=1))

    # then the reminder is gone at ten but still there before; equal weight goes by the newest first
    assert at_the_moment == [same_weight, lasting]
    assert reminder in before and len(before) == 3


def test_effective_in_reads_the_clock_when_no_moment_is_given(customer):
    # given a reminder that expired a minute ago and one that expires in an hour
    now = timezone.now()
    expired = MemoryItemFactory(customer=customer, content="刚才的看房提醒", expires_at=now - dt.timedelta(minutes=1))
    coming = MemoryItemFactory(customer=customer, content="一小时后看房", expires_at=now + dt.timedelta(hours=1))

    # when the effective items are read without a moment
    kept = effective_in([expired, coming])

    # then only the one still to come is kept
    assert kept == [coming]


def test_snapshot_refresh_increases_the_version_only_when_the_text_changes(customer):
    # given a customer with one preference and no snapshot yet
    MemoryItemFactory(customer=customer, content=METRO)

    # when the snapshot is refreshed, refreshed again unchanged, then after a new fact
    first, first_created = snapshot_refresh(customer=customer, reason="记录偏好")
    same, same_created = snapshot_refresh(customer=customer, reason="再次刷新")
    fact = MemoryItemFactory(customer=customer, type=MemoryType.FACT, content=BUDGET)
    second, second_created = snapshot_refresh(customer=customer, reason="新增事实")

    # then version 1 is written, reused while unchanged, and version 2 holds the new fact
    assert (first.version, first_created) == (1, True)
    assert (same.pk, same_created) == (first.pk, False)
    assert (second.version, second_created) == (2, True)
    assert fact.pk in second.item_ids and BUDGET in second.content
    assert second.char_count == len(second.content)
    assert second.sha256 == hashlib.sha256(second.content.encode("utf-8")).hexdigest()
    assert second.reason == "新增事实"
    assert snapshot_current(customer) == second
    assert MemorySnapshot.objects.filter(customer=customer).count() == 2


def test_snapshot_refresh_records_what_was_left_out_and_keeps_a_long_reason_short(customer, settings):
    # given a core limit with room for the budget only, and a long constraint
    settings.QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT = _cost("## 已确认事实", BUDGET)
    fact = MemoryItemFactory(customer=customer, type=MemoryType.FACT, content=BUDGET, importance=5)
    constraint = MemoryItemFactory(customer=customer, type=MemoryType.CONSTRAINT, content="不考虑顶楼和一楼")

    # when the snapshot is refreshed for a reason longer than the column
    snapshot, _ = snapshot_refresh(customer=customer, reason="客服确认" * 60)

    # then it holds what fits, records what did not, and keeps 200 characters of the reason
    assert snapshot.item_ids == [fact.pk] and snapshot.left_out_ids == [constraint.pk]
    assert snapshot.char_count <= settings.QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT
    assert snapshot.reason == ("客服确认" * 60)[:200]


def test_snapshot_write_numbers_versions_from_the_head_it_is_given(customer):
    # given a customer's preference, and no snapshot yet
    item = MemoryItemFactory(customer=customer, content=METRO)

    # when a batched write renders it with no head, then again with that snapshot as head
    first, first_created = snapshot_write(customer=customer, items=[item], head=None, reason="批量写入")
    again, again_created = snapshot_write(
        customer=customer, items=[item], head=(first.version, first.sha256), reason="再次写入"
    )
    fact = MemoryItemFactory(customer=customer, type=MemoryType.FACT, content=BUDGET)
    second, second_created = snapshot_write(
        customer=customer, items=[item, fact], head=(first.version, first.sha256), reason="客服" * 120
    )

    # then version 1, then nothing while the text is the same, then version 2 with both
    assert (first.version, first_created) == (1, True)
    assert first.content == f"## 偏好\n- {METRO}" and first.item_ids == [item.pk]
    assert (again, again_created) == (None, False)
    assert (second.version, second_created) == (2, True)
    assert second.item_ids == [fact.pk, item.pk] and second.left_out_ids == []
    assert second.char_count == len(second.content)
    assert second.sha256 == hashlib.sha256(second.content.encode("utf-8")).hexdigest()
    assert second.reason == ("客服" * 120)[:200]


def test_snapshot_write_leaves_out_what_is_no_longer_effective(customer, settings):
    # given a preference, a superseded budget and a core limit with room for one line
    settings.QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT = _cost("## 偏好", METRO)
    item = MemoryItemFactory(customer=customer, content=METRO)
    old = MemoryItemFactory(customer=customer, type=MemoryType.FACT, content="预算3000", status=MemoryStatus.SUPERSEDED)
    extra = MemoryItemFactory(customer=customer, content="喜欢南向带阳台", importance=1)

    # when a batched write renders them
    snapshot, _ = snapshot_write(customer=customer, items=[old, extra, item], head=None, reason="批量写入")

    # then the superseded one is not there at all, and what did not fit is recorded
    assert snapshot.item_ids == [item.pk] and snapshot.left_out_ids == [extra.pk]
    assert "3000" not in snapshot.content
