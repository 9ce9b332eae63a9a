"""Writes for customers, message reveals and alerts. Every write records who and why (the audit
writers and the account registry's services are the platform's: `qiwei_site.platform.audit`,
`qiwei_site.platform.services`)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.utils import timezone

from conversations.models import (
    Alert,
    AuditAction,
    Customer,
    CustomerProfile,
    Message,
)
from conversations.received import received_text
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.errors import (
    PermissionDenied,
    StorageUnavailable,
    ValidationFailed,
    validate_identifier,
)
from qiwei_site.platform.history import Actor, actor_identity, history_rows, history_rows_insert, stamp_history
from qiwei_site.platform.services import apply_changes, refuse_other_fields
from qiwei_site.platform.sql import insert, insert_unless
from qiwei_site.platform.tenancy import (
    account_atomic,
)

CUSTOMER_EDITABLE_FIELDS = ("display_name", "session_mode", "auto_send_whitelisted")


def customer_update(*, customer: Customer, changes: dict[str, Any], actor: Actor, reason: str) -> Customer:
    """Customer settings (display name, session mode, auto-send whitelist) with history and audit."""
    refuse_other_fields(changes, CUSTOMER_EDITABLE_FIELDS, "客户", "customer")
    with account_atomic():
        current = Customer.objects.select_for_update().get(pk=customer.pk)
        changed = apply_changes(current, changes)
        if not changed:
            return current
        # The display name is personal data: the audit says it changed, not what it became.
        payload = {"fields": changed, **{f: getattr(current, f) for f in changed if f != "display_name"}}
        _customer_save(
            current, changed, action=AuditAction.CUSTOMER_UPDATED, payload=payload, actor=actor, reason=reason
        )
    return current


def _customer_save(
    current: Customer, changed: list[str], *, action: AuditAction, payload: dict[str, Any], actor: Actor, reason: str
) -> None:
    """Validate, stamp the history, save the changed fields and audit: the one way a customer's row
    is written by a person or by the upstream."""
    try:
        current.full_clean(exclude=["conversation_id"])
    except DjangoValidationError as exc:
        raise ValidationFailed("; ".join(exc.messages)) from None
    stamp_history(current, actor=actor, reason=reason)
    current.save(update_fields=[*changed, "updated_at"])
    audit_record(action=action, conversation_id=current.conversation_id, actor=actor, reason=reason, payload=payload)


def customer_upstream_profile_update(
    *,
    customer: Customer,
    display_name: str = "",
    avatar_url: str = "",
    upstream_channel: str = "",
    actor: Actor,
    reason: str,
) -> Customer:
    """What the upstream keeps for a customer — WeCom's nickname and avatar (`kf/customer/batchget`),
    the kf account a reply must leave from: the customer record, never memory. A name staff already
    gave is kept; an empty value changes nothing."""
    with account_atomic():
        current = Customer.objects.select_for_update().get(pk=customer.pk)
        changed: list[str] = []
        if upstream_channel and upstream_channel != current.upstream_channel:
            current.upstream_channel = upstream_channel
            changed.append("upstream_channel")
        if display_name and not current.display_name:
            current.display_name = display_name
            changed.append("display_name")
        if avatar_url and avatar_url != current.avatar_url:
            current.avatar_url = avatar_url
            changed.append("avatar_url")
        if not changed:
            return current
        # Personal data: that it changed, not what it became.
        _customer_save(
            current,
            changed,
            action=AuditAction.CUSTOMER_UPSTREAM_PROFILE,
            payload={"fields": changed},
            actor=actor,
            reason=reason,
        )
    return current


CUSTOMER_CREATE_ATTEMPTS = 3


def customer_get_or_create(
    *, conversation_id: str, display_name: str = "", actor: Actor = None, reason: str = "首次收到消息"
) -> tuple[Customer, bool]:
    """The customer for a conversation id, created (with an empty profile) on first sight.

    Race-free on the unique conversation id: the insert runs in its own transaction (a savepoint
    inside a caller's), and an IntegrityError means another request created the customer first —
    theirs is read and returned. Each retry re-reads, so losing the race never loses the message."""
    conversation_id = validate_identifier(conversation_id, field="conversation_id", code="invalid_conversation_id")
    for _attempt in range(CUSTOMER_CREATE_ATTEMPTS):
        customer = Customer.objects.filter(conversation_id=conversation_id).first()
        if customer is not None:
            return customer, False
        try:
            with account_atomic():
                customer = Customer(conversation_id=conversation_id, display_name=display_name[:100])
                stamp_history(customer, actor=actor, reason=reason)
                customer.save()
                profile = CustomerProfile(customer=customer)
                stamp_history(profile, actor=actor, reason=reason)
                profile.save()
        except IntegrityError:
            continue  # created concurrently: the next pass reads it
        return customer, True
    # The row kept appearing and vanishing (a concurrent erasure): let the client retry.
    raise StorageUnavailable("contention")


def message_reveal(*, message: Message, actor: Actor, reason: str) -> str:
    """The message as received (its sealed original opened), for a supervisor who must read what
    masking hides (a credential, an ID or card number). Audited with who, why and which message,
    never the text itself."""
    if not (getattr(actor, "is_active", False) and getattr(actor, "is_staff", False)):
        raise PermissionDenied("只有主管可以查看未遮蔽的消息 (only staff may reveal a message).", code="reveal_denied")
    reason = (reason or "").strip()
    if not reason:
        raise ValidationFailed("查看未遮蔽消息需要填写原因 (a reason is required).", code="reason_required")
    customer = Customer.objects.only("conversation_id").get(pk=message.customer_id)
    with account_atomic():
        audit_record(
            action=AuditAction.MESSAGE_REVEALED,
            conversation_id=customer.conversation_id,
            actor=actor,
            reason=reason,
            payload={"message_id": message.pk, "direction": message.direction},
        )
    return received_text(message)


def resolution_reason(reason: str) -> str:
    """The reason closing a task, an alert or a recommendation needs (the audit and the record keep it)."""
    reason = " ".join((reason or "").split())
    if not reason:
        raise ValidationFailed("处理需要填写原因 (a reason is required to resolve).", code="reason_required")
    if len(reason) > 300:
        raise ValidationFailed(
            "原因不能超过 300 个字符 (the reason must be at most 300 characters).", code="reason_too_long"
        )
    return reason


def resolved_by(actor: Actor) -> tuple[int | None, str]:
    actor_id, actor_name = actor_identity(actor)
    return actor_id, actor_name[:150]


def alert_raise(
    *,
    customer: Customer,
    kind: str,
    level: str,
    text: str,
    actor: Actor,
    cause: str = "",
    reason: str = "",
) -> Alert | None:
    """Raise an alert for the agents and supervisors; an automatic one (with a `cause`) is raised once
    per cause, however often its cause is seen again (a retried job, a second backfill). The text
    says what happened, never what the customer wrote. (A person's alert: `conversations.business.alert_create`.)"""
    with account_atomic():
        alert = Alert(customer=customer, kind=kind, level=level, text=text[:300], cause=cause[:64])
        try:
            # The customer is the caller's row, read already: no query to check that it exists.
            alert.full_clean(exclude=["customer"])
        except DjangoValidationError as exc:
            raise ValidationFailed("; ".join(exc.messages)) from None
        stamp_history(alert, actor=actor, reason=reason or "自动预警")
        if cause:
            # Once per cause: inserted only where no alert of this customer, kind and cause is (one statement).
            if insert_unless(alert, match=["customer", "kind", "cause"]) is None:
                return None
        else:
            insert([alert])
        history_rows_insert(history_rows([alert], update=False))
        audit_record(
            action=AuditAction.ALERT_RAISED,
            conversation_id=customer.conversation_id,
            actor=actor,
            reason=reason,
            payload={"alert_id": alert.pk, "kind": kind, "level": level, "cause": cause},
        )
    return alert


def alert_resolve(*, alert: Alert, actor: Actor, reason: str) -> Alert:
    """Mark an alert handled, saying why (idempotent: a resolved alert stays as it was closed)."""
    reason = resolution_reason(reason)
    with account_atomic():
        current = Alert.objects.select_for_update().select_related("customer").get(pk=alert.pk)
        if current.resolved:
            return current
        current.resolved = True
        current.resolution_reason = reason
        current.resolved_at = timezone.now()
        current.resolved_by_id, current.resolved_by_name = resolved_by(actor)
        stamp_history(current, actor=actor, reason=reason)
        current.save(
            update_fields=[
                "resolved",
                "resolution_reason",
                "resolved_at",
                "resolved_by_id",
                "resolved_by_name",
                "updated_at",
            ]
        )
        audit_record(
            action=AuditAction.ALERT_RESOLVED,
            conversation_id=current.customer.conversation_id,
            actor=actor,
            reason=reason,
            payload={"alert_id": current.pk, "kind": current.kind},
        )
    return current
