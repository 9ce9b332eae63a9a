"""memory_item_put: one active item per key; same value adds evidence; a new value supersedes.
memory_items_put, its batched form, decides each value as single puts would, in order, and writes
a history row and an audit row for each write."""

from __future__ import annotations

import pytest

from conversations.models import AuditEvent, CustomerProfile
from memory.governance.services import memory_item_reject
from memory.items import (
    CREATED,
    EVIDENCE_ADDED,
    REFUSED,
    SUPERSEDED,
    UNCHANGED,
    ItemPut,
    memory_item_put,
    memory_items_put,
)
from memory.models import MemoryItem, MemorySnapshot, MemoryStatus, MemoryType
from qiwei_site.platform.errors import ValidationFailed
from tests.factories import CustomerFactory, MessageFactory


def put(customer, content, sources, **kwargs):
    params = {"type": MemoryType.PREFERENCE, "key": "preference:location"} | kwargs
    return memory_item_put(
        customer=customer, content=content, source_message_ids=sources, actor="capture", reason="客户原话", **params
    )


def test_memory_item_put_same_statement_twice_is_one_item_with_growing_evidence(account):
    # Given a customer who twice says they prefer living near the metro
    customer = CustomerFactory()
    first, second = MessageFactory(customer=customer), MessageFactory(customer=customer)
    # When both statements are captured
    a = put(customer, "更喜欢地铁附近", [first.pk])
    b = put(customer, "更喜欢地铁附近", [second.pk])
    # Then there is one item whose evidence lists both messages
    assert (a.outcome, b.outcome) == (CREATED, EVIDENCE_ADDED)
    assert MemoryItem.objects.count() == 1
    assert MemoryItem.objects.get().source_message_ids == [first.pk, second.pk]
    assert put(customer, "更喜欢地铁附近", [second.pk]).outcome == UNCHANGED


def test_memory_item_put_new_value_supersedes_and_links_old(account):
    customer = CustomerFactory()
    old = put(customer, "预算3000", [1], key="profile:budget", type=MemoryType.FACT).item
    new = put(customer, "预算4500", [2], key="profile:budget", type=MemoryType.FACT)
    old.refresh_from_db()
    assert new.outcome == SUPERSEDED
    assert old.status == MemoryStatus.SUPERSEDED and old.superseded_by_id == new.item.pk
    assert old.history.first().history_change_reason == "客户原话"
    snapshot = MemorySnapshot.objects.order_by("-version").first()
    assert "预算4500" in snapshot.content and "预算3000" not in snapshot.content


def test_memory_item_put_supersedes_contradicted_key(account):
    customer = CustomerFactory()
    constraint = put(customer, "不考虑顶楼", [1], key="constraint:顶楼", type=MemoryType.CONSTRAINT).item
    put(customer, "喜欢顶楼", [2], key="preference:顶楼", supersedes_keys=["constraint:顶楼"])
    constraint.refresh_from_db()
    assert constraint.status == MemoryStatus.SUPERSEDED
    assert AuditEvent.objects.filter(action="memory_item_captured").count() == 2


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"type": "opinion"}, "invalid_type"),
        ({"confidence": 1.5}, "invalid_confidence"),
        ({"importance": 9}, "invalid_importance"),
    ],
)
def test_memory_item_put_rejects_invalid_values(account, kwargs, code):
    with pytest.raises(ValidationFailed) as exc:
        put(CustomerFactory(), "更喜欢南向", [], **kwargs)
    assert exc.value.code == code


def test_memory_item_put_rejects_empty_content(account):
    with pytest.raises(ValidationFailed):
        put(CustomerFactory(), "   ", [])


def test_memory_items_put_decides_each_value_after_the_ones_before_it(account):
    # given a customer who first said 3000 and then, in the same message, corrected it to 4500
    customer = CustomerFactory()
    message = MessageFactory(customer=customer, text="预算3000，哦不对，预算4500")
    budget = {"type": MemoryType.FACT, "key": "profile:budget", "source_message_ids": [message.pk]}
    # when both values are put in one batch
    first, second = memory_items_put(
        customer=customer,
        puts=[ItemPut(content="预算：3000", **budget), ItemPut(content="预算：4500", **budget)],
        actor="capture",
        reason="客户原话",
    )
    # then the second supersedes the first, exactly as two puts one after the other would
    assert (first.outcome, second.outcome) == (CREATED, SUPERSEDED)
    old, new = MemoryItem.objects.get(pk=first.item.pk), MemoryItem.objects.get(pk=second.item.pk)
    assert (old.status, old.superseded_by_id, new.status) == (MemoryStatus.SUPERSEDED, new.pk, MemoryStatus.ACTIVE)
    assert second.superseded_ids == (old.pk,)
    # and the profile follows the last value, with one snapshot version for the batch
    assert CustomerProfile.objects.get(customer=customer).budget == "4500"
    assert MemorySnapshot.objects.filter(customer=customer).count() == 1


def test_memory_items_put_writes_a_history_row_and_an_audit_row_for_each_write(account):
    # given a customer who excluded the top floor
    customer = CustomerFactory()
    constraint = put(customer, "不考虑：顶楼", [1], key="constraint:顶楼", type=MemoryType.CONSTRAINT).item
    before = AuditEvent.objects.filter(action="memory_item_captured").count()
    # when one batch adds a preference for it (contradicting the constraint) and another wish
    results = memory_items_put(
        customer=customer,
        puts=[
            ItemPut(
                type=MemoryType.PREFERENCE,
                key="preference:顶楼",
                content="偏好：顶楼",
                supersedes_keys=["constraint:顶楼"],
            ),
            ItemPut(type=MemoryType.PREFERENCE, key="preference:电梯", content="偏好：电梯"),
        ],
        actor="capture",
        reason="客户原话",
    )
    # then each new item has its creation row, the retired constraint a row saying why, and every
    # write its own audit row naming the item (never the content)
    assert [r.outcome for r in results] == [SUPERSEDED, CREATED]
    for result in results:
        assert result.item.history.filter(history_type="+").count() == 1
    retired = constraint.history.order_by("-history_id").first()
    assert (retired.status, retired.superseded_by_id, retired.history_change_reason) == (
        MemoryStatus.SUPERSEDED,
        results[0].item.pk,
        "客户原话",
    )
    audits = AuditEvent.objects.filter(action="memory_item_captured").order_by("id")[before:]
    assert [a.payload["item_id"] for a in audits] == [r.item.pk for r in results]
    assert audits[0].payload["superseded_ids"] == [constraint.pk]
    assert "顶楼" not in str([a.payload for a in audits])


def test_memory_items_put_refuses_a_rejected_value_and_writes_the_rest(account, staff_user):
    # given a supervisor who rejected "近地铁" for this customer
    customer = CustomerFactory()
    wrong = put(customer, "偏好：近地铁", [1], key="preference:近地铁").item
    memory_item_reject(item=wrong, actor=staff_user, reason="客户说不在意地铁")
    # when a later batch of automatic writes repeats it beside a new wish
    message = MessageFactory(customer=customer, text="最好近地铁，有电梯")
    refused, written = memory_items_put(
        customer=customer,
        puts=[
            ItemPut(
                type=MemoryType.PREFERENCE,
                key="preference:近地铁",
                content="偏好：近地铁",
                source_message_ids=[message.pk],
            ),
            ItemPut(
                type=MemoryType.PREFERENCE, key="preference:电梯", content="偏好：电梯", source_message_ids=[message.pk]
            ),
        ],
        actor="capture",
        reason="客户原话",
    )
    # then the rejected value stays out and the new wish is written, as single puts would decide
    assert (refused.outcome, written.outcome) == (REFUSED, CREATED)
    assert not MemoryItem.objects.filter(key="preference:近地铁", status=MemoryStatus.ACTIVE).exists()
    assert MemoryItem.objects.get(key="preference:电梯").status == MemoryStatus.ACTIVE


def test_memory_items_put_with_nothing_new_writes_nothing(account):
    # given an item already holding this message as evidence
    customer = CustomerFactory()
    message = MessageFactory(customer=customer, text="还是更喜欢南向")
    put(customer, "偏好：南向", [message.pk], key="preference:南向")
    counts = (MemoryItem.history.count(), AuditEvent.objects.count(), MemorySnapshot.objects.count())
    # when the same value is put again from the same message
    (result,) = memory_items_put(
        customer=customer,
        puts=[
            ItemPut(
                type=MemoryType.PREFERENCE, key="preference:南向", content="偏好：南向", source_message_ids=[message.pk]
            )
        ],
        actor="capture",
        reason="重试",
    )
    # then nothing is written: no history, no audit, no snapshot version
    assert result.outcome == UNCHANGED
    assert (MemoryItem.history.count(), AuditEvent.objects.count(), MemorySnapshot.objects.count()) == counts
