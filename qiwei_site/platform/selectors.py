"""Reads for the account registry: which accounts a user may see, and which an operator command covers."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from qiwei_site.platform.compiled import CompiledRead
from qiwei_site.platform.errors import NotFound
from qiwei_site.platform.models import AccountMembership, WeComAccount


def accounts_for_user(user: Any) -> QuerySet[WeComAccount]:
    accounts = WeComAccount.objects.filter(is_active=True)
    if getattr(user, "is_superuser", False):
        return accounts
    if not getattr(user, "is_authenticated", False):
        return accounts.none()
    return accounts.filter(memberships__user=user)


# Asked on every account API request: compiled once (`qiwei_site.platform.compiled`).
_ACTIVE_ACCOUNT = CompiledRead(
    lambda account_id: WeComAccount.objects.filter(pk=account_id, is_active=True).values_list("pk")[:1], "\x1e"
)
_ACTIVE_MEMBERSHIP = CompiledRead(
    lambda user_id, account_id: AccountMembership.objects.filter(
        user_id=user_id, account_id=account_id, account__is_active=True
    ).values_list("pk")[:1],
    2_117_263_561,
    "\x1e",
)


def user_can_access_account(user: Any, account_id: str) -> bool:
    """An active account the user is a member of (any active one for a superuser): one query."""
    if not getattr(user, "is_authenticated", False):
        return False
    if user.is_superuser:
        return bool(_ACTIVE_ACCOUNT.rows(account_id))
    return bool(_ACTIVE_MEMBERSHIP.rows(user.pk, account_id))


def account_ids_for_command(account_id: str | None) -> list[str]:
    """The named account (NotFound if unknown) or every active account, for operator commands."""
    if account_id:
        if not WeComAccount.objects.filter(pk=account_id).exists():
            raise NotFound(f"账号 {account_id} 不存在 (no such account).", code="account_not_found")
        return [account_id]
    return list(WeComAccount.objects.filter(is_active=True).order_by("pk").values_list("pk", flat=True))
