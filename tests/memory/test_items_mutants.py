"""The one write path's edges that mutation testing found unpinned (issue 25,
`scripts/mutation.sh items`): what each outcome writes to the row, its history, the audit, the
profile and the snapshot."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.models import AuditAction, AuditEvent, CustomerProfile
from memory.governance.services import memory_item_reject
from memory.items import (
    CREATED,
    ItemPut,
    MemoryWrites,
    memory_item_put,
    memory_item_supersede,
    profile_field_release,
    profile_follow,
)
from memory.models import MemoryItem, MemorySnapshot, MemoryStatus, MemoryType
from qiwei_site.platform.tenancy import account_atomic
from tests.factories import CustomerFactory, MessageFactory, StaffUserFactory


@pytest.fixture
def customer(account):
    return CustomerFactory(conversation_id="wm_sun_items", display_name="孙先生")


def _latest_snapshot(customer) -> MemorySnapshot:
    return MemorySnapshot.objects.filter(customer=customer).order_by("-version").first()


def test_memory_item_supersede_takes_the_item_out_of_the_next_snapshot(customer):
    # given two captured preferences, both in the snapshot
    said = MessageFactory(customer=customer, text="想住地铁附近，最好能养猫")
    metro = memory_item_put(
        customer=customer,
        type=MemoryType.PREFERENCE,
        key="preference:location",
        content="更喜欢地铁附近",
        source_message_ids=[said.pk],
        actor="capture",
        reason="客户原话",
    ).item
    memory_item_put(
        customer=customer,
        type=MemoryType.PREFERENCE,
        key="preference:pets",
        content="想找可以养猫的房子",
        source_message_ids=[said.pk],
        actor="capture",
        reason="客户原话",
    )
    assert "更喜欢地铁附近" in _latest_snapshot(customer).content
    # when one leaves memory with no replacement (the caller's own copy of the row)
    held = MemoryItem.objects.get(pk=metro.pk)
    memory_item_supersede(item=held, actor="系统", reason="已过期", audit_action=AuditAction.MEMORY_ITEM_EXPIRED)
    # then the row, the audit and the new snapshot all say so
    assert held.status == MemoryStatus.SUPERSEDED
    assert MemoryItem.objects.get(pk=metro.pk).status == MemoryStatus.SUPERSEDED
    snapshot = _latest_snapshot(customer)
    assert "更喜欢地铁附近" not in snapshot.content and "想找可以养猫的房子" in snapshot.content
    assert metro.pk not in snapshot.item_ids
    event = AuditEvent.objects.filter(action=AuditAction.MEMORY_ITEM_EXPIRED).get()
    assert event.payload == {"item_id": metro.pk, "type": MemoryType.PREFERENCE}
    assert event.reason == "已过期" and event.actor_name == "系统"


def test_memory_item_supersede_of_a_profile_item_leaves_the_profile_to_the_caller(customer):
    # given a captured budget, written to the profile too
    said = MessageFactory(customer=customer, text="预算八千左右")
    item = memory_item_put(
        customer=customer,
        type=MemoryType.FACT,
        key="profile:budget",
        content="预算：8000元左右",
        source_message_ids=[said.pk],
        actor="capture",
        reason="客户原话",
    ).item
    assert item is not None
    # when the item is retired
    memory_item_supersede(item=item, actor="系统", reason="已过期", audit_action=AuditAction.MEMORY_ITEM_EXPIRED)
    # then it is no longer active, and a second retirement changes nothing
    assert MemoryItem.objects.filter(customer=customer, status=MemoryStatus.ACTIVE).count() == 0
    again = memory_item_supersede(
        item=item, actor="系统", reason="再次过期", audit_action=AuditAction.MEMORY_ITEM_EXPIRED
    )
    assert again is item
    assert AuditEvent.objects.filter(action=AuditAction.MEMORY_ITEM_EXPIRED).count() == 1
    assert CustomerProfile.objects.get(customer=customer).budget == "8000元左右"


def test_a_batch_that_retires_an_item_then_hears_its_value_again_writes_a_new_item(customer):
    # given a captured preference
    said = MessageFactory(customer=customer, text="想找可以养猫的房子")
    old = memory_item_put(
        customer=customer,
        type=MemoryType.PREFERENCE,
        key="preference:pets",
        content="想找可以养猫的房子",
        source_message_ids=[said.pk],
        actor="capture",
        reason="客户原话",
    ).item
    assert old is not None
    again = MessageFactory(customer=customer, text="还是想找可以养猫的房子")
    # when one batch retires it and then puts the same value from a new message
    with account_atomic():
        writes = MemoryWrites.load(customer)
        writes.retire(old, actor="系统", reason="已过期", audit_action=AuditAction.MEMORY_ITEM_EXPIRED)
        result = writes.put(
            ItemPut(
                type=MemoryType.PREFERENCE,
                key="preference:pets",
                content="想找可以养猫的房子",
                source_message_ids=[again.pk],
            ),
            actor="capture",
            reason="客户原话",
        )
        writes.flush()
    # then the value is a new item on the new message; the retired one stays retired
    assert result.outcome == CREATED and result.item is not None and result.item.pk != old.pk
    assert result.item.source_message_ids == [again.pk]
    assert MemoryItem.objects.get(pk=old.pk).status == MemoryStatus.SUPERSEDED
    assert MemoryItem.objects.filter(customer=customer, status=MemoryStatus.ACTIVE).get().pk == result.item.pk


def test_memory_writes_sent_after_is_strictly_later(customer):
    # given two messages a minute apart
    first = MessageFactory(customer=customer, text="预算八千左右")
    second = MessageFactory(customer=customer, text="预算可以再高一点", sent_at=first.sent_at + dt.timedelta(minutes=1))
    with account_atomic():
        writes = MemoryWrites.load(customer)
        # then only a message sent strictly after the moment counts, and unknown ids never do
        assert writes.sent_after([first.pk, second.pk], first.sent_at)
        assert not writes.sent_after([first.pk], first.sent_at)
        assert not writes.sent_after([second.pk], second.sent_at)
        assert not writes.sent_after([999_999], first.sent_at - dt.timedelta(days=1))


def _budget_item(customer, content: str = "预算：8000元左右") -> MemoryItem:
    item = memory_item_put(
        customer=customer,
        type=MemoryType.FACT,
        key="profile:budget",
        content=content,
        actor="capture",
        reason="客户原话",
    ).item
    assert item is not None
    return item


def test_profile_field_release_clears_only_the_items_own_value_with_history(customer):
    # given a budget item and the profile holding its value
    supervisor = StaffUserFactory()
    item = _budget_item(customer)
    # when the item leaves memory, then the field is cleared by the supervisor, for the reason given
    assert profile_field_release(item, actor=supervisor, reason="客户说预算待定") is True
    profile = CustomerProfile.objects.get(customer=customer)
    assert profile.budget == ""
    latest = profile.history.first()
    assert latest.history_user_id == supervisor.pk and latest.history_change_reason == "客户说预算待定"
    # and a second release, the field already empty, changes nothing
    rows = profile.history.count()
    assert profile_field_release(item, actor=supervisor, reason="再次清空") is False
    assert profile.history.count() == rows


def test_profile_field_release_leaves_a_field_that_holds_another_value(customer):
    # given a budget item whose value the profile no longer holds
    item = _budget_item(customer)
    CustomerProfile.objects.filter(customer=customer).update(budget="6000元")
    # then releasing the item leaves the field as it is; a non-profile item never touches it
    assert profile_field_release(item, actor="系统", reason="过期") is False
    assert CustomerProfile.objects.get(customer=customer).budget == "6000元"
    pets = memory_item_put(
        customer=customer, type=MemoryType.PREFERENCE, key="preference:pets", content="想养猫", actor="c", reason="r"
    ).item
    assert pets is not None and profile_field_release(pets, actor="系统", reason="过期") is False


def test_profile_follow_writes_the_field_with_history_and_makes_a_missing_profile(customer):
    # given a budget item, and a customer who has no profile row
    supervisor = StaffUserFactory()
    item = _budget_item(customer, "预算：6000元")
    CustomerProfile.objects.filter(customer=customer).delete()
    # when the profile follows the item, then a profile is made holding its value
    profile_follow(item, actor=supervisor, reason="主管核对")
    profile = CustomerProfile.objects.get(customer=customer)
    assert profile.budget == "6000元"
    # and when the field drifted, following writes it back with the supervisor's name and reason
    CustomerProfile.objects.filter(customer=customer).update(budget="5000元")
    profile_follow(item, actor=supervisor, reason="以记忆为准")
    profile = CustomerProfile.objects.get(customer=customer)
    assert profile.budget == "6000元"
    latest = profile.history.first()
    assert latest.history_user_id == supervisor.pk and latest.history_change_reason == "以记忆为准"


def test_memory_item_put_without_refreshing_the_snapshot_writes_none(customer):
    # given a customer with no snapshot
    # when a value is put with refresh_snapshot=False, then the item is written and no snapshot is
    result = memory_item_put(
        customer=customer,
        type=MemoryType.PREFERENCE,
        key="preference:pets",
        content="想找可以养猫的房子",
        actor="capture",
        reason="客户原话",
        refresh_snapshot=False,
    )
    assert result.outcome == CREATED
    assert not MemorySnapshot.objects.filter(customer=customer).exists()


def test_memory_item_put_not_automatic_is_not_held_to_decisions(customer):
    # given a value the supervisor rejected
    item = memory_item_put(
        customer=customer, type=MemoryType.PREFERENCE, key="preference:pets", content="想养猫", actor="c", reason="r"
    ).item
    assert item is not None
    memory_item_reject(item=item, actor="主管王经理", reason="误读")
    # when a caller that is not automatic puts it back (created_by auto, automatic=False), then it is written
    result = memory_item_put(
        customer=customer,
        type=MemoryType.PREFERENCE,
        key="preference:pets",
        content="想养猫",
        actor="主管王经理",
        reason="客户电话确认",
        automatic=False,
    )
    assert result.outcome == CREATED
