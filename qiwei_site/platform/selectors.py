"""Reads for the account registry: which accounts a user may see, and which an operator command covers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from django.db import DatabaseError
from django.db.models import QuerySet

from qiwei_site.platform.errors import NotFound
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.sql import account_access
from qiwei_site.platform.tenancy import account_database_config, is_sqlite_config, use_account


def accounts_for_user(user: Any) -> QuerySet[WeComAccount]:
    accounts = WeComAccount.objects.filter(is_active=True)
    if getattr(user, "is_superuser", False):
        return accounts
    if not getattr(user, "is_authenticated", False):
        return accounts.none()
    return accounts.filter(memberships__user=user)


def user_can_access_account(user: Any, account_id: str) -> bool:
    """An active account the user is a member of (any active one for a superuser): one statement
    (`qiwei_site.platform.sql.account_access`).

    Not cached: an account is switched off by an UPDATE no hook sees (`is_active`), and the
    answer must change at once."""
    if not getattr(user, "is_authenticated", False):
        return False
    return account_access(user.pk, account_id, superuser=bool(user.is_superuser))


def account_ids_for_command(account_id: str | None) -> list[str]:
    """The named account (NotFound if unknown) or every active account, for operator commands."""
    if account_id:
        if not WeComAccount.objects.filter(pk=account_id).exists():
            raise NotFound(f"账号 {account_id} 不存在 (no such account).", code="account_not_found")
        return [account_id]
    return list(WeComAccount.objects.filter(is_active=True).order_by("pk").values_list("pk", flat=True))


def account_ids_every() -> list[str]:
    """Every registered account, active or not (a move or a migration must miss none)."""
    return list(WeComAccount.objects.order_by("pk").values_list("pk", flat=True))


def account_samples(query: Callable[[], str | None]) -> Iterator[str]:
    """`query()` run in each registered account whose store exists and is migrated (inactive ones
    too: their data is kept), yielding what it finds: how a key's probe asks whether data it guards
    exists (`qiwei_site.platform.keyfiles`). A missing SQLite file is skipped, never made."""
    for account_id in WeComAccount.objects.using("default").order_by("pk").values_list("pk", flat=True):
        config = account_database_config(account_id)
        if is_sqlite_config(config) and not Path(config["NAME"]).exists():
            continue
        try:
            with use_account(account_id):
                found = query()
        except DatabaseError:
            continue
        if found:
            yield found
