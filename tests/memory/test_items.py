"""memory_item_put: one active item per key; same value adds evidence; a new value supersedes."""

from __future__ import annotations

import pytest

from conversations.models import AuditEvent
from memory.items import CREATED, EVIDENCE_ADDED, SUPERSEDED, UNCHANGED, memory_item_put
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
