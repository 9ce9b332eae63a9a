"""Writes for accounts, customers and the audit trail. Every write records who and why."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction

from conversations.models import AuditEvent, Customer, CustomerProfile
from qiwei_site.platform.errors import Conflict, ValidationFailed
from qiwei_site.platform.history import actor_identity, stamp_history
from qiwei_site.platform.models import AccountMembership, WeComAccount
from qiwei_site.platform.tenancy import InvalidAccountId, account_atomic, ensure_account_database, validate_account_id


def audit_record(
    *,
    action: str,
    conversation_id: str = "",
    actor: Any = None,
    reason: str = "",
    payload: dict[str, Any] | None = None,
) -> AuditEvent:
    """Write one audit row in the selected account's database."""
    actor_id, actor_name = actor_identity(actor)
    return AuditEvent.objects.create(
        action=action,
        conversation_id=conversation_id,
        actor_id=actor_id,
        actor_name=actor_name[:150],
        reason=(reason or "")[:300],
        payload=payload or {},
    )


def account_create(*, account_id: str, name: str, actor: Any = None) -> WeComAccount:
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
    try:
        with transaction.atomic():
            account = WeComAccount.objects.create(id=account_id, name=name.strip())
    except IntegrityError:
        raise Conflict(f"账号 {account_id} 已存在 (account already exists).", code="account_exists") from None
    from qiwei_site.platform.tenancy import use_account

    with use_account(account_id):
        audit_record(action="account_created", actor=actor, payload={"account_id": account_id, "name": name})
    return account


def account_delete(*, account_id: str, actor: Any = None) -> None:
    """Delete a (temporary) account: its registry row and its whole database."""
    from qiwei_site.platform.tenancy import drop_account_database

    WeComAccount.objects.filter(pk=account_id).delete()
    drop_account_database(account_id)


def membership_grant(*, user: Any, account: WeComAccount) -> AccountMembership:
    membership, _created = AccountMembership.objects.get_or_create(user=user, account=account)
    return membership


CUSTOMER_EDITABLE_FIELDS = ("display_name", "session_mode", "auto_send_whitelisted")


def customer_update(*, customer: Customer, changes: dict[str, Any], actor: Any, reason: str) -> Customer:
    """Customer settings (display name, session mode, auto-send whitelist) with history and audit."""
    unknown = sorted(set(changes) - set(CUSTOMER_EDITABLE_FIELDS))
    if unknown:
        raise ValidationFailed(f"不可修改的客户字段 {unknown} (these customer fields cannot be edited).")
    with account_atomic():
        current = Customer.objects.select_for_update().get(pk=customer.pk)
        changed = [field for field, value in changes.items() if getattr(current, field) != value]
        if not changed:
            return current
        for field in changed:
            setattr(current, field, changes[field])
        try:
            current.full_clean(exclude=["conversation_id"])
        except DjangoValidationError as exc:
            raise ValidationFailed("; ".join(exc.messages)) from None
        stamp_history(current, actor=actor, reason=reason)
        current.save(update_fields=[*changed, "updated_at"])
        audit_record(
            action="customer_updated",
            conversation_id=current.conversation_id,
            actor=actor,
            reason=reason,
            # The display name is personal data: the audit says it changed, not what it became.
            payload={"fields": changed, **{f: getattr(current, f) for f in changed if f != "display_name"}},
        )
    return current


def customer_get_or_create(
    *, conversation_id: str, display_name: str = "", actor: Any = None, reason: str = "首次收到消息"
) -> tuple[Customer, bool]:
    """The customer for a conversation id, created (with an empty profile) on first sight."""
    conversation_id = (conversation_id or "").strip()
    if not conversation_id or len(conversation_id) > 128:
        raise ValidationFailed("conversation_id 必须是 1–128 个字符 (conversation_id must be 1–128 chars).")
    customer = Customer.objects.filter(conversation_id=conversation_id).first()
    if customer is not None:
        return customer, False
    with account_atomic():
        customer = Customer(conversation_id=conversation_id, display_name=display_name[:100])
        stamp_history(customer, actor=actor, reason=reason)
        customer.save()
        profile = CustomerProfile(customer=customer)
        stamp_history(profile, actor=actor, reason=reason)
        profile.save()
    return customer, True
