"""Session epochs: rotation on turns, age, invalid session and budget; pruning; nothing lost."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from conversations.models import AuditEvent, CustomerProfile, Message, Task
from memory.snapshots import snapshot_refresh
from sessions_epoch.models import CloseReason, SessionEpoch
from sessions_epoch.services import CLOSED_EPOCHS_KEPT, epoch_count_turn, epoch_for_turn, epoch_rotate
from tests.factories import MemoryItemFactory, SessionEpochFactory, TaskFactory


def _turn(customer, now=None) -> SessionEpoch:
    epoch = epoch_for_turn(customer=customer, now=now)
    epoch_count_turn(epoch=epoch)
    return epoch


def test_epoch_for_turn_opens_one_epoch_with_memory_version(customer):
    # given a customer with a core-memory snapshot
    MemoryItemFactory(customer=customer, content="更喜欢地铁附近", key="preference:metro")
    snapshot, _ = snapshot_refresh(customer=customer, reason="测试")

    # when the first turn asks for an epoch, twice
    first = epoch_for_turn(customer=customer)
    again = epoch_for_turn(customer=customer)

    # then one open epoch exists, recording the snapshot version, and its opening is audited
    assert first.pk == again.pk
    assert first.memory_version == snapshot.version
    assert first.parent_session_id == ""
    assert first.turns == 0 and first.closed_at is None
    assert SessionEpoch.objects.filter(customer=customer, closed_at__isnull=True).count() == 1
    assert (
        AuditEvent.objects.filter(action="session_epoch_opened", conversation_id=customer.conversation_id).count() == 1
    )


def test_epoch_rotates_at_the_thirteenth_turn_keeping_parent_and_history(customer, settings):
    # given the default of 12 generations per epoch and a customer with profile, tasks and messages
    settings.CLAUDE_CODE_SESSION_MAX_TURNS = 12
    CustomerProfile.objects.filter(customer=customer).update(budget="4500", layout="两居室")
    TaskFactory(customer=customer, title="周六上午带看张江两居室")
    MemoryItemFactory(customer=customer, type="constraint", key="constraint:top_floor", content="不考虑顶楼")
    messages_before = Message.objects.filter(customer=customer).count()

    # when 12 turns run, then a 13th
    epochs = [_turn(customer) for _ in range(12)]
    thirteenth = _turn(customer)

    # then the first 12 shared one epoch and the 13th opened a new one whose parent is the old session
    assert len({epoch.pk for epoch in epochs}) == 1
    old = SessionEpoch.objects.get(pk=epochs[0].pk)
    assert old.turns == 12
    assert old.closed_at is not None and old.close_reason == CloseReason.MAX_TURNS
    assert thirteenth.pk != old.pk
    assert thirteenth.parent_session_id == old.session_id
    assert thirteenth.turns == 1
    # the closed epoch keeps its history rows (opened, 12 counted turns, closed)
    assert old.history.count() == 14
    assert old.history.first().history_change_reason.startswith("关闭会话")
    # and rotation lost nothing of the customer: it all lives in the database
    profile = CustomerProfile.objects.get(customer=customer)
    assert (profile.budget, profile.layout, profile.preferred_name) == ("4500", "两居室", "王先生")
    assert Task.objects.filter(customer=customer, title="周六上午带看张江两居室").exists()
    assert customer.memory_items.filter(key="constraint:top_floor", status="active").exists()
    assert Message.objects.filter(customer=customer).count() == messages_before
    rotated = AuditEvent.objects.get(action="session_epoch_rotated")
    assert rotated.payload["close_reason"] == "max_turns"
    assert rotated.payload["old_session_id"] == old.session_id
    assert rotated.payload["new_session_id"] == thirteenth.session_id


def test_epoch_rotates_when_older_than_max_age(customer, settings):
    # given an epoch started 25 hours ago with a 24-hour limit
    settings.CLAUDE_CODE_SESSION_MAX_AGE_MS = 24 * 3600 * 1000
    now = timezone.now()
    old = _turn(customer, now=now - dt.timedelta(hours=25))

    # when the next turn asks for an epoch
    new = epoch_for_turn(customer=customer, now=now)

    # then a new epoch replaced it for age
    old.refresh_from_db()
    assert new.pk != old.pk
    assert old.close_reason == CloseReason.MAX_AGE
    assert new.parent_session_id == old.session_id


def test_epoch_does_not_rotate_just_before_max_age(customer, settings):
    # given an epoch started 23 hours ago with a 24-hour limit
    settings.CLAUDE_CODE_SESSION_MAX_AGE_MS = 24 * 3600 * 1000
    now = timezone.now()
    old = _turn(customer, now=now - dt.timedelta(hours=23))

    # when the next turn asks for an epoch
    same = epoch_for_turn(customer=customer, now=now)

    # then it is still the same one
    assert same.pk == old.pk
    assert not AuditEvent.objects.filter(action="session_epoch_rotated").exists()


def test_epoch_rotate_on_invalid_session_and_budget_records_reason(customer):
    # given an open epoch with two turns
    first = _turn(customer)
    _turn(customer)

    # when the client reports the session invalid, then a budget overrun in the next epoch
    second = epoch_rotate(customer=customer, reason=CloseReason.INVALID, actor="pipeline")
    third = epoch_rotate(customer=customer, reason=CloseReason.BUDGET_EXCEEDED, actor="pipeline")

    # then each rotation closed its predecessor with the reason and chained the parents
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.close_reason, second.close_reason) == (CloseReason.INVALID, CloseReason.BUDGET_EXCEEDED)
    assert second.parent_session_id == first.session_id
    assert third.parent_session_id == second.session_id
    assert third.closed_at is None
    reasons = list(
        AuditEvent.objects.filter(action="session_epoch_rotated")
        .order_by("id")
        .values_list("payload__close_reason", flat=True)
    )
    assert reasons == ["invalid", "budget_exceeded"]


def test_epoch_keeps_at_most_fifty_closed_epochs(customer):
    # given 55 closed epochs from earlier days, each with history rows
    start = timezone.now() - dt.timedelta(days=60)
    for index in range(55):
        epoch = SessionEpochFactory(
            customer=customer,
            started_at=start + dt.timedelta(hours=index),
            closed_at=start + dt.timedelta(hours=index, minutes=30),
            close_reason=CloseReason.MAX_TURNS,
        )
        epoch.save()  # a second history row
    oldest_ids = list(SessionEpoch.objects.order_by("closed_at").values_list("id", flat=True)[:6])

    # when a turn opens a new epoch, then the client reports its session invalid
    epoch_for_turn(customer=customer)
    epoch_rotate(customer=customer, reason=CloseReason.INVALID, actor="pipeline")

    # then only the newest 50 closed epochs are kept, and the pruned ones left no history behind
    closed = SessionEpoch.objects.filter(customer=customer, closed_at__isnull=False)
    assert closed.count() == CLOSED_EPOCHS_KEPT
    assert SessionEpoch.objects.filter(customer=customer, closed_at__isnull=True).count() == 1
    assert not SessionEpoch.objects.filter(id__in=oldest_ids).exists()
    assert not SessionEpoch.history.filter(id__in=oldest_ids).exists()
    assert SessionEpoch.history.filter(id__in=closed.values("id")).exists()
