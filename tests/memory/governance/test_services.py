"""Governance services (spec §3.1, §8): each writes history with user and reason, an audit row
and a new snapshot version (or reuses the current one)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from conversations.models import AuditEvent, CustomerProfile
from memory.governance.services import (
    memory_item_add,
    memory_item_confirm,
    memory_item_edit,
    memory_item_expire,
    memory_item_forget,
    memory_item_reject,
    memory_items_expire_due,
)
from memory.items import memory_item_put
from memory.models import MemoryCreatedBy, MemoryDirection, MemoryItem, MemorySnapshot, MemoryStatus, MemoryType
from memory.profile import customer_profile_update
from memory.snapshots import snapshot_current
from qiwei_site.platform.errors import Conflict, ValidationFailed
from tests.factories import CustomerFactory, MessageFactory


def last_history(item):
    return MemoryItem.history.filter(id=item.pk).order_by("-history_date", "-history_id").first()


def last_audit(action):
    return AuditEvent.objects.filter(action=action).order_by("-id").first()


def test_memory_item_add_creates_human_fact_with_history_audit_and_snapshot(customer, staff_user):
    # Given a customer with no memory yet
    # When a supervisor adds a fact learnt on the phone
    item = memory_item_add(
        customer=customer, content="女儿明年上小学，需要学区房", actor=staff_user, reason="电话沟通得知"
    )
    # Then it is a confirmed, high-importance human fact
    assert (item.type, item.confidence, item.importance) == (MemoryType.FACT, 1.0, 5)
    assert (item.created_by, item.direction) == (MemoryCreatedBy.HUMAN, MemoryDirection.INTERNAL)
    assert item.key.startswith("human:fact:")
    # And history, audit and snapshot record it
    history = last_history(item)
    assert (history.history_user_id, history.history_change_reason) == (staff_user.pk, "电话沟通得知")
    audit = last_audit("memory_item_added")
    assert (audit.actor_id, audit.reason, audit.payload["item_id"]) == (staff_user.pk, "电话沟通得知", item.pk)
    assert "学区房" not in str(audit.payload)
    snapshot = snapshot_current(customer)
    assert snapshot.version == 1 and item.pk in snapshot.item_ids and "学区房" in snapshot.content


def test_memory_item_add_accepts_own_source_messages(customer, messages, staff_user):
    # When a supervisor cites the customer's own message
    item = memory_item_add(
        customer=customer,
        content="预算4500左右",
        source_message_ids=[messages[0].pk],
        actor=staff_user,
        reason="核对原话",
    )
    # Then the evidence is kept
    assert item.source_message_ids == [messages[0].pk]


def test_memory_item_add_rejects_foreign_source_message(customer, staff_user):
    # Given a message of another customer
    foreign = MessageFactory(customer=CustomerFactory(), text="我预算一万")
    # When a supervisor cites it, then it is refused and nothing is written
    with pytest.raises(ValidationFailed) as exc:
        memory_item_add(
            customer=customer, content="预算一万", source_message_ids=[foreign.pk], actor=staff_user, reason="误操作"
        )
    assert exc.value.code == "invalid_source_message"
    assert not MemoryItem.objects.exists() and not AuditEvent.objects.filter(action="memory_item_added").exists()


@pytest.mark.parametrize(
    "kwargs",
    [{"type": "opinion"}, {"importance": 0}, {"content": "   "}],
)
def test_memory_item_add_rejects_invalid_input(customer, staff_user, kwargs):
    params = {"content": "只看南北通透的户型"} | kwargs
    with pytest.raises(ValidationFailed):
        memory_item_add(customer=customer, actor=staff_user, reason="测试", **params)
    assert not MemoryItem.objects.exists()


def test_memory_item_add_hypothesis_by_hand_waits_unconfirmed_and_expires(customer, staff_user, settings):
    # Given a supervisor who wants the agent to check something with the customer
    settings.QIWEI_HYPOTHESIS_TTL_HOURS = 48
    before = timezone.now()
    # When it is recorded by hand as a hypothesis
    item = memory_item_add(
        customer=customer,
        type=MemoryType.HYPOTHESIS,
        content="可能是为孩子上学换房，下次确认学区要求",
        actor=staff_user,
        reason="电话里提到孩子明年上小学",
    )
    # Then it is an unconfirmed inference of a person: below certainty, keyed as a hypothesis,
    # expiring after the configured time unless someone confirms it
    assert item.type == MemoryType.HYPOTHESIS and item.created_by == MemoryCreatedBy.HUMAN
    assert item.confidence < 1.0 and item.key.startswith("hypothesis:")
    assert item.expires_at is not None
    assert before + dt.timedelta(hours=47) < item.expires_at <= timezone.now() + dt.timedelta(hours=48)
    # And confirming it makes it a fact
    confirmed = memory_item_confirm(item=item, actor=staff_user, reason="客户确认孩子明年上小学")
    assert confirmed.type == MemoryType.FACT and confirmed.confidence == 1.0


def test_memory_item_add_rejects_past_expiry(customer, staff_user):
    with pytest.raises(ValidationFailed):
        memory_item_add(
            customer=customer,
            content="本周六上午方便看房",
            expires_at=timezone.now() - dt.timedelta(hours=1),
            actor=staff_user,
            reason="测试",
        )


def test_memory_item_edit_overwrites_content_and_marks_human(customer, preference, staff_user):
    # Given a captured preference in snapshot v1
    assert snapshot_current(customer).version == 1
    # When a supervisor corrects it
    item = memory_item_edit(
        item=preference, content="更喜欢2号线地铁附近", importance=4, actor=staff_user, reason="客户补充说明线路"
    )
    # Then the content is overwritten in place and marked human
    item.refresh_from_db()
    assert (item.pk, item.content, item.importance) == (preference.pk, "更喜欢2号线地铁附近", 4)
    assert item.created_by == MemoryCreatedBy.HUMAN
    history = last_history(item)
    assert (history.history_user_id, history.history_change_reason) == (staff_user.pk, "客户补充说明线路")
    assert MemoryItem.history.filter(id=item.pk, content="更喜欢地铁附近").exists()
    audit = last_audit("memory_item_edited")
    assert audit.actor_id == staff_user.pk and audit.payload["fields"] == ["content", "importance"]
    snapshot = snapshot_current(customer)
    assert snapshot.version == 2 and "2号线" in snapshot.content


def test_memory_item_edit_without_change_writes_nothing(customer, preference, staff_user):
    # Given the counts before
    history_before, audit_before = MemoryItem.history.count(), AuditEvent.objects.count()
    # When the same value is saved again
    memory_item_edit(item=preference, content=" 更喜欢地铁附近 ", actor=staff_user, reason="无变化")
    # Then nothing is written
    assert (MemoryItem.history.count(), AuditEvent.objects.count()) == (history_before, audit_before)
    assert MemorySnapshot.objects.count() == 1


def test_memory_item_edit_refuses_inactive_item(customer, preference, staff_user):
    memory_item_reject(item=preference, actor=staff_user, reason="客户否认")
    with pytest.raises(Conflict):
        memory_item_edit(item=preference, content="喜欢公交方便的", actor=staff_user, reason="测试")


def test_memory_item_confirm_turns_hypothesis_into_fact(customer, hypothesis, staff_user):
    # Given a hypothesis, shown only as "to confirm"
    assert "待确认" in snapshot_current(customer).content
    # When a supervisor confirms it
    item = memory_item_confirm(item=hypothesis, actor=staff_user, reason="客户电话中确认")
    # Then it is a fact with confidence 1
    item.refresh_from_db()
    assert (item.type, item.confidence, item.created_by) == (MemoryType.FACT, 1.0, MemoryCreatedBy.HUMAN)
    history = last_history(item)
    assert (history.history_user_id, history.history_change_reason) == (staff_user.pk, "客户电话中确认")
    # and it says what the guess said, without the guess's 「可能」; the audit keeps both wordings
    assert item.content == "在陆家嘴上班"
    audit = last_audit("memory_item_confirmed")
    assert audit.payload == {
        "item_id": item.pk,
        "type": "fact",
        "previous_type": "hypothesis",
        "hypothesis_content": "可能在陆家嘴上班",
        "content": "在陆家嘴上班",
        "wording_edited": False,
    }
    snapshot = snapshot_current(customer)
    assert snapshot.version == 2 and "已确认事实" in snapshot.content and "待确认" not in snapshot.content


def _model_hypothesis(customer, messages, *, days: int = 7) -> MemoryItem:
    """A model inference as capture writes it: confidence 0.5, expiring after the hypothesis TTL."""
    return memory_item_put(
        customer=customer,
        type=MemoryType.HYPOTHESIS,
        key="hypothesis:commute",
        content="可能在陆家嘴上班",
        source_message_ids=[messages[1].pk],
        confidence=0.5,
        expires_at=timezone.now() + dt.timedelta(days=days),
        actor="model",
        reason="模型推断",
    ).item


def test_memory_item_confirm_clears_the_hypothesis_expiry(customer, messages, staff_user):
    # Given a model hypothesis that would lapse in a week
    hypothesis = _model_hypothesis(customer, messages)
    assert hypothesis.expires_at is not None
    # When a supervisor confirms it
    memory_item_confirm(item=hypothesis, actor=staff_user, reason="客户电话里说在陆家嘴上班")
    # Then the fact has no expiry, and its history row says who cleared it
    hypothesis.refresh_from_db()
    assert (hypothesis.type, hypothesis.expires_at) == (MemoryType.FACT, None)
    history = last_history(hypothesis)
    assert (history.expires_at, history.history_user_id) == (None, staff_user.pk)


def test_memory_item_confirm_then_sweep_a_week_later_keeps_the_fact(customer, messages, staff_user):
    # Given a hypothesis confirmed by a supervisor, beside one nobody confirmed
    confirmed = _model_hypothesis(customer, messages)
    memory_item_confirm(item=confirmed, actor=staff_user, reason="客户确认在陆家嘴上班")
    unconfirmed = memory_item_put(
        customer=customer,
        type=MemoryType.HYPOTHESIS,
        key="hypothesis:car",
        content="可能有车",
        source_message_ids=[messages[0].pk],
        confidence=0.4,
        expires_at=timezone.now() + dt.timedelta(days=7),
        actor="model",
        reason="模型推断",
    ).item
    # When the expiry sweep runs eight days later
    expired = memory_items_expire_due(now=timezone.now() + dt.timedelta(days=8))
    # Then only the unconfirmed hypothesis lapsed; the fact is still active and in the snapshot
    confirmed.refresh_from_db()
    unconfirmed.refresh_from_db()
    assert expired == 1
    assert (confirmed.status, unconfirmed.status) == (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED)
    assert "- 在陆家嘴上班" in snapshot_current(customer).content


def test_memory_item_confirm_keeps_an_expiry_the_supervisor_sets(customer, messages, staff_user):
    # Given a hypothesis about a short-lived situation
    hypothesis = _model_hypothesis(customer, messages, days=1)
    until = timezone.now() + dt.timedelta(days=30)
    # When the supervisor confirms it, valid for a month
    memory_item_confirm(item=hypothesis, expires_at=until, actor=staff_user, reason="客户这个月在陆家嘴驻场")
    # Then the fact expires when the supervisor said, and the sweep lets it go then, not before
    hypothesis.refresh_from_db()
    assert hypothesis.expires_at == until
    assert memory_items_expire_due(now=timezone.now() + dt.timedelta(days=8)) == 0
    assert memory_items_expire_due(now=until + dt.timedelta(minutes=1)) == 1


def test_memory_item_confirm_refuses_a_past_expiry(customer, messages, staff_user):
    hypothesis = _model_hypothesis(customer, messages)
    with pytest.raises(ValidationFailed):
        memory_item_confirm(
            item=hypothesis, expires_at=timezone.now() - dt.timedelta(days=1), actor=staff_user, reason="测试"
        )
    hypothesis.refresh_from_db()
    assert hypothesis.type == MemoryType.HYPOTHESIS


def test_memory_item_confirm_refuses_a_fact(customer, preference, staff_user):
    with pytest.raises(Conflict) as exc:
        memory_item_confirm(item=preference, actor=staff_user, reason="测试")
    assert exc.value.code == "not_a_hypothesis"


def test_memory_item_reject_takes_item_out_of_context(customer, preference, staff_user):
    # When a supervisor rejects a wrong item
    item = memory_item_reject(item=preference, actor=staff_user, reason="客户说其实开车上班")
    # Then it is rejected, audited and gone from the snapshot
    item.refresh_from_db()
    assert item.status == MemoryStatus.REJECTED
    assert last_history(item).history_user_id == staff_user.pk
    assert last_audit("memory_item_rejected").payload["item_id"] == item.pk
    snapshot = snapshot_current(customer)
    assert snapshot.version == 2 and item.pk not in snapshot.item_ids and "地铁" not in snapshot.content
    # And rejecting twice is refused
    with pytest.raises(Conflict):
        memory_item_reject(item=item, actor=staff_user, reason="再次")


def test_memory_item_expire_now(customer, preference, staff_user):
    item = memory_item_expire(item=preference, actor=staff_user, reason="客户已签约，偏好不再适用")
    item.refresh_from_db()
    assert item.status == MemoryStatus.SUPERSEDED and item.expires_at <= timezone.now()
    assert last_history(item).history_change_reason == "客户已签约，偏好不再适用"
    assert last_audit("memory_item_expired").payload["automatic"] is False
    assert item.pk not in snapshot_current(customer).item_ids


def test_memory_items_expire_due_removes_temporary_item_from_active_snapshot(customer, preference, staff_user):
    # Given a temporary item that expires tomorrow, in the snapshot
    temporary = memory_item_add(
        customer=customer,
        content="本周六上午方便看房",
        type=MemoryType.EVENT,
        importance=3,
        expires_at=timezone.now() + dt.timedelta(days=1),
        actor=staff_user,
        reason="约看房",
    )
    assert temporary.pk in snapshot_current(customer).item_ids
    version = snapshot_current(customer).version
    # When expiry runs the day after tomorrow
    expired = memory_items_expire_due(now=timezone.now() + dt.timedelta(days=2))
    # Then only the temporary item expired, with an audit, and a new snapshot leaves it out
    assert expired == 1
    temporary.refresh_from_db()
    preference.refresh_from_db()
    assert (temporary.status, preference.status) == (MemoryStatus.SUPERSEDED, MemoryStatus.ACTIVE)
    history = last_history(temporary)
    assert (history.history_user_id, history.history_change_reason) == (None, "到期自动失效")
    audit = last_audit("memory_item_expired")
    assert (audit.actor_name, audit.payload["automatic"]) == ("expiry", True)
    snapshot = snapshot_current(customer)
    assert snapshot.version == version + 1 and "看房" not in snapshot.content and preference.pk in snapshot.item_ids
    # And running again expires nothing
    assert memory_items_expire_due(now=timezone.now() + dt.timedelta(days=2)) == 0


def test_memory_item_forget_deletes_item_history_and_snapshot_lines(customer, preference, staff_user):
    # Given an item edited once (history holds both values) and several snapshot versions
    memory_item_edit(item=preference, content="更喜欢2号线地铁附近", actor=staff_user, reason="补充")
    memory_item_add(customer=customer, content="预算4500", actor=staff_user, reason="电话")
    assert MemorySnapshot.objects.filter(customer=customer).count() == 3
    # When the supervisor forgets the preference
    result = memory_item_forget(item=preference, actor=staff_user, reason="客户要求删除该偏好")
    # Then the item and its history are gone and no snapshot version mentions it
    assert not MemoryItem.objects.filter(pk=preference.pk).exists()
    assert not MemoryItem.history.filter(id=preference.pk).exists()
    for snapshot in MemorySnapshot.objects.filter(customer=customer):
        assert "地铁" not in snapshot.content and preference.pk not in snapshot.item_ids
    assert "预算4500" in snapshot_current(customer).content
    assert result["item_id"] == preference.pk
    audit = last_audit("memory_item_forgotten")
    assert audit.actor_id == staff_user.pk and audit.payload["item_id"] == preference.pk
    assert "地铁" not in str(audit.payload)
    # And the customer's messages are kept
    assert customer.messages.filter(text__contains="地铁").exists()


def test_memory_item_forget_clears_the_profile_though_another_field_holds_the_same_words(customer, staff_user):
    # Given the budget in the profile, and a note under another key with the very same words
    # (found in review: the same text elsewhere once kept the profile and the old snapshot lines)
    customer_profile_update(customer=customer, changes={"budget": "8000元"}, actor=staff_user, reason="电话确认")
    budget = MemoryItem.objects.get(customer=customer, key="profile:budget", status=MemoryStatus.ACTIVE)
    memory_item_add(customer=customer, content=budget.content, key="fact:note", actor=staff_user, reason="备注")
    # When the supervisor forgets the budget
    memory_item_forget(item=budget, actor=staff_user, reason="客户说预算8000元不对，要求删除")
    # Then the profile no longer says it, no snapshot lists the budget, and the reason is scrubbed
    assert CustomerProfile.objects.get(customer=customer).budget == ""
    for snapshot in MemorySnapshot.objects.filter(customer=customer):
        assert budget.pk not in snapshot.item_ids
    assert "8000元" not in last_audit("memory_item_forgotten").reason


def test_memory_item_forget_unlinks_superseded_items(customer, staff_user):
    # Given a budget that was superseded by a newer one
    old = memory_item_add(customer=customer, content="预算3000", key="profile:budget", actor=staff_user, reason="a")
    new = memory_item_add(customer=customer, content="预算4500", key="profile:budget", actor=staff_user, reason="b")
    old.refresh_from_db()
    assert old.superseded_by_id == new.pk
    # When the newer one is forgotten
    memory_item_forget(item=new, actor=staff_user, reason="录错了")
    # Then the old one stays superseded, no longer linked, with a history row for the change
    old.refresh_from_db()
    assert (old.status, old.superseded_by_id) == (MemoryStatus.SUPERSEDED, None)
    assert last_history(old).history_change_reason == "录错了"
