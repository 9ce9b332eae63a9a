"""customer_profile_update: the profile and its `profile:<field>` memory items change together (spec §3)."""

from __future__ import annotations

import pytest

from conversations.models import AuditEvent, CustomerProfile
from memory.models import MemoryCreatedBy, MemoryDirection, MemoryItem, MemorySnapshot, MemoryStatus
from memory.profile import customer_profile_update
from memory.snapshots import snapshot_current
from qiwei_site.platform.errors import ValidationFailed
from tests.factories import CustomerFactory, MessageFactory


def test_customer_profile_update_sets_field_and_stable_item(customer, staff_user):
    # When a supervisor records the budget
    profile = customer_profile_update(
        customer=customer, changes={"budget": "4500", "layout": "两居室"}, actor=staff_user, reason="电话确认"
    )
    # Then the profile and the stable items agree
    assert (profile.budget, profile.layout) == ("4500", "两居室")
    item = MemoryItem.objects.get(key="profile:budget", status=MemoryStatus.ACTIVE)
    assert item.content == "预算：4500"
    assert (item.created_by, item.direction, item.confidence) == (MemoryCreatedBy.HUMAN, MemoryDirection.INTERNAL, 1.0)
    history = profile.history.first()
    assert (history.history_user_id, history.history_change_reason) == (staff_user.pk, "电话确认")
    audit = AuditEvent.objects.get(action="customer_profile_updated")
    assert audit.payload["fields"] == ["budget", "layout"] and "4500" not in str(audit.payload)
    snapshot = snapshot_current(customer)
    assert snapshot.version == 1 and "预算：4500" in snapshot.content and "户型：两居室" in snapshot.content


def test_customer_profile_update_new_value_supersedes_old_item(customer, staff_user):
    customer_profile_update(customer=customer, changes={"budget": "3000"}, actor=staff_user, reason="初次")
    customer_profile_update(customer=customer, changes={"budget": "4500"}, actor=staff_user, reason="客户加预算")
    old = MemoryItem.objects.get(content="预算：3000")
    new = MemoryItem.objects.get(content="预算：4500")
    assert (old.status, old.superseded_by_id) == (MemoryStatus.SUPERSEDED, new.pk)
    assert "3000" not in snapshot_current(customer).content


def test_customer_profile_update_clearing_field_supersedes_stable_item(customer, staff_user):
    # Given a budget in profile and memory
    customer_profile_update(customer=customer, changes={"budget": "4500"}, actor=staff_user, reason="电话确认")
    item = MemoryItem.objects.get(key="profile:budget")
    # When the supervisor clears it
    profile = customer_profile_update(customer=customer, changes={"budget": ""}, actor=staff_user, reason="预算待定")
    # Then the profile is empty and the old item superseded, with history, audit and a new snapshot
    item.refresh_from_db()
    assert profile.budget == "" and item.status == MemoryStatus.SUPERSEDED
    history = item.history.first()
    assert (history.history_user_id, history.history_change_reason) == (staff_user.pk, "预算待定")
    assert AuditEvent.objects.filter(action="memory_item_superseded", payload__item_id=item.pk).exists()
    assert AuditEvent.objects.filter(action="customer_profile_updated").count() == 2
    snapshot = snapshot_current(customer)
    assert snapshot.version == 2 and "预算" not in snapshot.content


def test_customer_profile_update_unchanged_writes_nothing(customer, staff_user):
    customer_profile_update(customer=customer, changes={"city": "上海"}, actor=staff_user, reason="a")
    counts = (CustomerProfile.history.count(), MemoryItem.history.count(), AuditEvent.objects.count())
    customer_profile_update(customer=customer, changes={"city": "上海"}, actor=staff_user, reason="b")
    assert (CustomerProfile.history.count(), MemoryItem.history.count(), AuditEvent.objects.count()) == counts
    assert MemorySnapshot.objects.count() == 1


def test_customer_profile_update_grounded_cites_customer_messages(customer, messages):
    # When capture grounds "预算4500" in the customer's first message
    customer_profile_update(
        customer=customer,
        changes={"budget": "4500"},
        actor="capture",
        reason="模型画像更新（已核验）",
        source_message_ids=[messages[0].pk],
    )
    item = MemoryItem.objects.get(key="profile:budget")
    assert (item.created_by, item.direction) == (MemoryCreatedBy.AUTO, MemoryDirection.INBOUND)
    assert item.source_message_ids == [messages[0].pk]
    # And the same grounded value from a later message only adds evidence (idempotent backfill)
    later = MessageFactory(customer=customer, text="预算还是4500")
    customer_profile_update(
        customer=customer, changes={"budget": "4500"}, actor="capture", reason="回填", source_message_ids=[later.pk]
    )
    item.refresh_from_db()
    assert item.source_message_ids == [messages[0].pk, later.pk]
    assert MemoryItem.objects.filter(key="profile:budget").count() == 1


def test_customer_profile_update_grounded_refuses_foreign_message(customer):
    foreign = MessageFactory(customer=CustomerFactory(), text="预算8000")
    with pytest.raises(ValidationFailed):
        customer_profile_update(
            customer=customer, changes={"budget": "8000"}, actor="capture", reason="x", source_message_ids=[foreign.pk]
        )
    assert not MemoryItem.objects.exists()


@pytest.mark.parametrize(
    "changes", [{"salary": "3万"}, {"budget": "9" * 60}, {"budget": 4500}, {}], ids=["unknown", "long", "int", "empty"]
)
def test_customer_profile_update_rejects_invalid_changes(customer, staff_user, changes):
    with pytest.raises(ValidationFailed):
        customer_profile_update(customer=customer, changes=changes, actor=staff_user, reason="测试")
    assert not AuditEvent.objects.filter(action="customer_profile_updated").exists()
