"""Session epochs (spec §5): a model session is short-term scratch space, rotated on turns, age,
invalidity or an exceeded budget. The customer's memory lives in the database, so rotating loses nothing.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid

from django.conf import settings
from django.db import DatabaseError, IntegrityError
from django.utils import timezone

from conversations.models import AuditAction, Customer
from memory.providers import get_provider
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.history import Actor, stamp_history
from qiwei_site.platform.tenancy import account_atomic
from sessions_epoch.models import CloseReason, SessionEpoch

logger = logging.getLogger(__name__)

CLOSED_EPOCHS_KEPT = 50


def _open_epoch(customer: Customer) -> SessionEpoch | None:
    return SessionEpoch.objects.filter(customer=customer, closed_at__isnull=True).first()


def _lock_customer(customer: Customer) -> None:
    # Serialises epoch changes per customer on PostgreSQL; SQLite's IMMEDIATE transactions
    # already serialise writers.
    Customer.objects.select_for_update().filter(pk=customer.pk).first()


def _rotation_due(epoch: SessionEpoch, now: dt.datetime) -> str | None:
    if epoch.turns >= settings.CLAUDE_CODE_SESSION_MAX_TURNS:
        return CloseReason.MAX_TURNS
    if now - epoch.started_at >= dt.timedelta(milliseconds=settings.CLAUDE_CODE_SESSION_MAX_AGE_MS):
        return CloseReason.MAX_AGE
    return None


def _close(epoch: SessionEpoch, *, reason: str, actor: Actor, now: dt.datetime) -> None:
    epoch.closed_at = now
    epoch.close_reason = reason
    stamp_history(epoch, actor=actor, reason=f"关闭会话：{CloseReason(reason).label}")
    epoch.save(update_fields=["closed_at", "close_reason"])


def _memory_version(customer: Customer, actor: Actor) -> int | None:
    """The snapshot version a new epoch starts from. An unreadable snapshot table must not stop the
    turn (spec §6 failure boundary): it is audited as memory_recall_failed and the epoch opens with
    no version; the pipeline then drafts through the degraded context."""
    try:
        with account_atomic():  # a savepoint: on PostgreSQL a failed read would abort the whole turn
            version = get_provider().memory_version(customer)
    except DatabaseError as exc:
        logger.exception("reading the memory snapshot for %s failed; epoch opens without one", customer.conversation_id)
        audit_record(
            action=AuditAction.MEMORY_RECALL_FAILED,
            conversation_id=customer.conversation_id,
            actor=actor,
            reason="开启会话时读取记忆快照失败，会话不带记忆版本",
            payload={"stage": "epoch_open", "error": exc.__class__.__name__},
        )
        return None
    return version


def _open(
    *, customer: Customer, parent: SessionEpoch | None, actor: Actor, client: str, now: dt.datetime, reason: str
) -> SessionEpoch:
    epoch = SessionEpoch(
        customer=customer,
        session_id=str(uuid.uuid4()),
        parent_session_id=parent.session_id if parent else "",
        memory_version=_memory_version(customer, actor),
        client=client,
        started_at=now,
        turns=0,
    )
    epoch.full_clean()
    stamp_history(epoch, actor=actor, reason=reason)
    epoch.save()
    return epoch


def _prune_closed(customer: Customer) -> int:
    """Keep the newest CLOSED_EPOCHS_KEPT closed epochs; older ones go with their history rows."""
    stale_ids = list(
        SessionEpoch.objects.filter(customer=customer, closed_at__isnull=False)
        .order_by("-closed_at", "-id")
        .values_list("id", flat=True)[CLOSED_EPOCHS_KEPT:]
    )
    if not stale_ids:
        return 0
    SessionEpoch.objects.filter(id__in=stale_ids).delete()
    # After the delete: simple-history writes a "-" row for each deleted epoch, which goes too.
    SessionEpoch.history.filter(id__in=stale_ids).delete()
    return len(stale_ids)


def _rotate_locked(
    *, customer: Customer, old: SessionEpoch | None, reason: str, actor: Actor, client: str, now: dt.datetime
) -> SessionEpoch:
    parent = old
    if old is not None:
        _close(old, reason=reason, actor=actor, now=now)
    else:
        parent = SessionEpoch.objects.filter(customer=customer).order_by("-started_at", "-id").first()
    label = CloseReason(reason).label
    new = _open(customer=customer, parent=parent, actor=actor, client=client, now=now, reason=f"轮换会话：{label}")
    pruned = _prune_closed(customer)
    audit_record(
        action=AuditAction.SESSION_EPOCH_ROTATED,
        conversation_id=customer.conversation_id,
        actor=actor,
        reason=f"会话轮换：{label}",
        payload={
            "close_reason": reason,
            "old_session_id": old.session_id if old else "",
            "old_turns": old.turns if old else 0,
            "new_session_id": new.session_id,
            "parent_session_id": new.parent_session_id,
            "memory_version": new.memory_version,
            "pruned_epochs": pruned,
        },
    )
    return new


def epoch_for_turn(
    *, customer: Customer, now: dt.datetime | None = None, actor: Actor = "pipeline", client: str = ""
) -> SessionEpoch:
    """The epoch the next generation runs in: the open one, or a new one if it is due to rotate."""
    now = now or timezone.now()
    current = _open_epoch(customer)
    if current is not None and _rotation_due(current, now) is None:
        return current
    try:
        with account_atomic():
            _lock_customer(customer)
            current = _open_epoch(customer)  # re-read under the lock: another turn may have rotated
            if current is None:
                epoch = _open(customer=customer, parent=None, actor=actor, client=client, now=now, reason="开启会话")
                audit_record(
                    action=AuditAction.SESSION_EPOCH_OPENED,
                    conversation_id=customer.conversation_id,
                    actor=actor,
                    reason="开启模型会话",
                    payload={"session_id": epoch.session_id, "memory_version": epoch.memory_version},
                )
                return epoch
            due = _rotation_due(current, now)
            if due is None:
                return current
            return _rotate_locked(customer=customer, old=current, reason=due, actor=actor, client=client, now=now)
    except IntegrityError:
        # Another process opened the epoch between our read and write (the partial unique
        # constraint allows one open epoch per customer): use theirs.
        winner = _open_epoch(customer)
        if winner is None:
            raise
        return winner


def epoch_rotate(
    *, customer: Customer, reason: str, actor: Actor, client: str = "", now: dt.datetime | None = None
) -> SessionEpoch:
    """Close the open epoch (if any) for `reason` and open its successor."""
    if reason not in CloseReason.values:
        raise ValueError(f"unknown close reason {reason!r}")
    now = now or timezone.now()
    with account_atomic():
        _lock_customer(customer)
        current = _open_epoch(customer)
        if current is not None and not client:
            client = current.client
        return _rotate_locked(customer=customer, old=current, reason=reason, actor=actor, client=client, now=now)


def epoch_count_turn(*, epoch: SessionEpoch, actor: Actor = "pipeline", reason: str = "生成一轮") -> SessionEpoch:
    """Count one generation in `epoch` and remember that its model session now exists."""
    with account_atomic():
        locked = SessionEpoch.objects.select_for_update().get(pk=epoch.pk)
        locked.turns += 1
        locked.model_session_started = True
        stamp_history(locked, actor=actor, reason=reason)
        locked.save(update_fields=["turns", "model_session_started"])
    epoch.turns, epoch.model_session_started = locked.turns, locked.model_session_started
    return locked
