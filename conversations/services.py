"""Writes for accounts, memberships, customers and the audit trail. Every write records who and why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from conversations.models import (
    Alert,
    AuditAction,
    AuditEvent,
    Customer,
    CustomerProfile,
    Message,
    RegistryAuditEvent,
)
from qiwei_site.platform.errors import (
    Conflict,
    NotFound,
    PermissionDenied,
    StorageUnavailable,
    ValidationFailed,
    validate_identifier,
)
from qiwei_site.platform.history import Actor, actor_identity, stamp_history
from qiwei_site.platform.models import AccountMembership, WeComAccount
from qiwei_site.platform.tenancy import (
    InvalidAccountId,
    account_atomic,
    drop_account_database,
    ensure_account_database,
    use_account,
    validate_account_id,
)


def _audit_fields(
    action: AuditAction | str, actor: Actor, reason: str, payload: dict[str, Any] | None
) -> dict[str, Any]:
    """The columns every audit row shares. The action list is fixed: an unknown action is a
    programming error (ValueError), never silently stored."""
    actor_id, actor_name = actor_identity(actor)
    return {
        "action": AuditAction(action),
        "actor_id": actor_id,
        "actor_name": actor_name[:150],
        "reason": (reason or "")[:300],
        "payload": payload or {},
    }


def audit_record(
    *,
    action: AuditAction | str,
    conversation_id: str = "",
    actor: Actor = None,
    reason: str = "",
    payload: dict[str, Any] | None = None,
) -> AuditEvent:
    """Write one audit row in the selected account's database."""
    return AuditEvent.objects.create(conversation_id=conversation_id, **_audit_fields(action, actor, reason, payload))


@dataclass(frozen=True)
class AuditEntry:
    """One audit row to write with `audit_records_bulk` (the arguments of `audit_record`)."""

    action: AuditAction | str
    conversation_id: str = ""
    actor: Actor = None
    reason: str = ""
    payload: dict[str, Any] | None = None


def audit_records_bulk(entries: Sequence[AuditEntry]) -> list[AuditEvent]:
    """Write several audit rows in the selected account's database in one statement (a batched
    memory write audits each of its changes, in order)."""
    if not entries:
        return []
    return AuditEvent.objects.bulk_create(
        AuditEvent(
            conversation_id=entry.conversation_id,
            **_audit_fields(entry.action, entry.actor, entry.reason, entry.payload),
        )
        for entry in entries
    )


def registry_audit_record(
    *,
    action: AuditAction | str,
    account_id: str,
    actor: Actor = None,
    reason: str = "",
    payload: dict[str, Any] | None = None,
) -> RegistryAuditEvent:
    """Write one row of the registry's audit journal (in `default`)."""
    return RegistryAuditEvent.objects.create(account_id=account_id, **_audit_fields(action, actor, reason, payload))


def account_create(*, account_id: str, name: str, actor: Actor = None, reason: str = "") -> WeComAccount:
    """Register a WeCom account and create and migrate its own database."""
    try:
        validate_account_id(account_id)
    except InvalidAccountId as exc:
        raise ValidationFailed(str(exc), code="invalid_account_id") from None
    if not name.strip():
        raise ValidationFailed("账号名称不能为空 (name is required).")
    if WeComAccount.objects.filter(pk=account_id).exists():
        raise Conflict(f"账号 {account_id} 已存在 (account already exists).", code="account_exists")
    ensure_account_database(account_id)
    payload = {"account_id": account_id, "name": name}
    try:
        with transaction.atomic():
            account = WeComAccount.objects.create(id=account_id, name=name.strip())
            registry_audit_record(
                action=AuditAction.ACCOUNT_CREATED, account_id=account_id, actor=actor, reason=reason, payload=payload
            )
    except IntegrityError:
        raise Conflict(f"账号 {account_id} 已存在 (account already exists).", code="account_exists") from None
    with use_account(account_id):
        audit_record(action=AuditAction.ACCOUNT_CREATED, actor=actor, reason=reason, payload=payload)
    return account


def _refuse_other_fields(changes: dict[str, Any], editable: tuple[str, ...], what: str, what_en: str) -> None:
    unknown = sorted(set(changes) - set(editable))
    if unknown:
        raise ValidationFailed(f"不可修改的{what}字段 {unknown} (these {what_en} fields cannot be edited).")


def _apply_changes(current: Any, changes: dict[str, Any]) -> list[str]:
    """Set the fields whose value differs; returns their names (nothing to write when empty)."""
    changed = [field for field, value in changes.items() if getattr(current, field) != value]
    for field in changed:
        setattr(current, field, changes[field])
    return changed


ACCOUNT_EDITABLE_FIELDS = ("name", "is_active")


def account_update(*, account: WeComAccount, changes: dict[str, Any], actor: Actor, reason: str = "") -> WeComAccount:
    """Rename or (de)activate an account; its id, which names its database, never changes."""
    _refuse_other_fields(changes, ACCOUNT_EDITABLE_FIELDS, "账号", "account")
    with transaction.atomic():
        current = WeComAccount.objects.select_for_update().get(pk=account.pk)
        changed = _apply_changes(current, changes)
        if not changed:
            return current
        if not str(current.name).strip():
            raise ValidationFailed("账号名称不能为空 (name is required).")
        current.save(update_fields=[*changed, "updated_at"])
        registry_audit_record(
            action=AuditAction.ACCOUNT_UPDATED,
            account_id=current.pk,
            actor=actor,
            reason=reason,
            payload={field: getattr(current, field) for field in changed},
        )
    return current


def account_delete(*, account_id: str, actor: Actor = None, reason: str = "") -> None:
    """Delete a (temporary) account: its registry row and its whole database. The registry's
    journal keeps that it happened."""
    with transaction.atomic():
        deleted, _ = WeComAccount.objects.filter(pk=account_id).delete()
        registry_audit_record(
            action=AuditAction.ACCOUNT_DELETED,
            account_id=account_id,
            actor=actor,
            reason=reason,
            payload={"registry_rows": deleted},
        )
    drop_account_database(account_id)


def membership_grant(
    *, user: AbstractBaseUser, account: WeComAccount, actor: Actor = None, reason: str = ""
) -> AccountMembership:
    """Let `user` see `account` (idempotent: a second grant changes and records nothing)."""
    with transaction.atomic():
        membership, created = AccountMembership.objects.get_or_create(user_id=user.pk, account=account)
        if created:
            registry_audit_record(
                action=AuditAction.MEMBERSHIP_GRANTED,
                account_id=account.pk,
                actor=actor,
                reason=reason,
                payload={"user_id": user.pk},
            )
    return membership


def membership_revoke(*, membership: AccountMembership, actor: Actor = None, reason: str = "") -> None:
    """Take away a user's access to an account."""
    with transaction.atomic():
        current = AccountMembership.objects.select_for_update().filter(pk=membership.pk).first()
        if current is None:
            raise NotFound("该授权不存在 (no such membership).", code="membership_not_found")
        current.delete()
        registry_audit_record(
            action=AuditAction.MEMBERSHIP_REVOKED,
            account_id=current.account_id,
            actor=actor,
            reason=reason,
            payload={"user_id": current.user_id},
        )


CUSTOMER_EDITABLE_FIELDS = ("display_name", "session_mode", "auto_send_whitelisted")


def customer_update(*, customer: Customer, changes: dict[str, Any], actor: Actor, reason: str) -> Customer:
    """Customer settings (display name, session mode, auto-send whitelist) with history and audit."""
    _refuse_other_fields(changes, CUSTOMER_EDITABLE_FIELDS, "客户", "customer")
    with account_atomic():
        current = Customer.objects.select_for_update().get(pk=customer.pk)
        changed = _apply_changes(current, changes)
        if not changed:
            return current
        try:
            current.full_clean(exclude=["conversation_id"])
        except DjangoValidationError as exc:
            raise ValidationFailed("; ".join(exc.messages)) from None
        stamp_history(current, actor=actor, reason=reason)
        current.save(update_fields=[*changed, "updated_at"])
        audit_record(
            action=AuditAction.CUSTOMER_UPDATED,
            conversation_id=current.conversation_id,
            actor=actor,
            reason=reason,
            # The display name is personal data: the audit says it changed, not what it became.
            payload={"fields": changed, **{f: getattr(current, f) for f in changed if f != "display_name"}},
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
    """The message as received, for a supervisor who must read what masking hides (a credential,
    an ID or card number). Audited with who, why and which message, never the text itself."""
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
    return message.text


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
        if cause and Alert.objects.filter(customer=customer, kind=kind, cause=cause).exists():
            return None
        alert = Alert(customer=customer, kind=kind, level=level, text=text[:300], cause=cause[:64])
        try:
            alert.full_clean()
        except DjangoValidationError as exc:
            raise ValidationFailed("; ".join(exc.messages)) from None
        stamp_history(alert, actor=actor, reason=reason or "自动预警")
        alert.save()
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
