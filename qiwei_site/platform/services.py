"""Writes for the account registry: accounts (each with its own database) and memberships. Every
write records who and why in the registry's journal (`qiwei_site.platform.audit`)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction

from qiwei_site.platform.audit import audit_record, registry_audit_record
from qiwei_site.platform.errors import Conflict, NotFound, ProvisioningUnavailable, ValidationFailed
from qiwei_site.platform.history import Actor
from qiwei_site.platform.models import AccountMembership, AuditAction, WeComAccount
from qiwei_site.platform.tenancy import (
    InvalidAccountId,
    drop_account_database,
    ensure_account_database,
    provisioning_refusal,
    use_account,
    validate_account_id,
)


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
    refusal = provisioning_refusal(account_id)
    if refusal:
        raise ProvisioningUnavailable(refusal)
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


def refuse_other_fields(changes: dict[str, Any], editable: tuple[str, ...], what: str, what_en: str) -> None:
    unknown = sorted(set(changes) - set(editable))
    if unknown:
        raise ValidationFailed(f"不可修改的{what}字段 {unknown} (these {what_en} fields cannot be edited).")


def apply_changes(current: Any, changes: dict[str, Any]) -> list[str]:
    """Set the fields whose value differs; returns their names (nothing to write when empty)."""
    changed = [field for field, value in changes.items() if getattr(current, field) != value]
    for field in changed:
        setattr(current, field, changes[field])
    return changed


ACCOUNT_EDITABLE_FIELDS = ("name", "is_active")


def account_update(*, account: WeComAccount, changes: dict[str, Any], actor: Actor, reason: str = "") -> WeComAccount:
    """Rename or (de)activate an account; its id, which names its database, never changes."""
    refuse_other_fields(changes, ACCOUNT_EDITABLE_FIELDS, "账号", "account")
    with transaction.atomic():
        current = WeComAccount.objects.select_for_update().get(pk=account.pk)
        changed = apply_changes(current, changes)
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
