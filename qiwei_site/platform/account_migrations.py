"""`migrate_accounts` (issue 23, item 2): every account's database or schema brought to this
code's migrations, each checked first by its recorded fingerprint (one query; current ones are
left alone unless forced), in at most `jobs` processes at once.

The processes are forked from the command's (same settings, accounts already listed); a child
never uses a connection it inherited: it sets them aside unclosed (closing would end the parent's
server session on the shared socket) and opens its own. Each account's connections are closed as
soon as it is done, so N jobs hold at most N account connections.

`onboard_accounts` (issue 38, item 3) creates many accounts the same way: each from the migrated
template (`account_template`), skipping those registered and current, so a run cut short is
finished by running it again."""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

MIGRATED, CURRENT, FAILED = "migrated", "current", "failed"

# Connections a forked child inherited: kept referenced, never closed or collected, until exit.
_inherited: list[object] = []


@dataclass(frozen=True)
class AccountMigration:
    account_id: str
    outcome: str  # MIGRATED, CURRENT or FAILED
    error: str = ""


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def migrate_one(account_id: str, *, force: bool = False) -> AccountMigration:
    from qiwei_site.platform import tenancy

    try:
        alias = tenancy.register_account_database(account_id)
        if not force and tenancy.schema_is_current(alias):
            tenancy.audit_owner_separate(account_id)  # with the provisioning URL: an upgrade, once
            return AccountMigration(account_id, CURRENT)
        tenancy.ensure_account_database(account_id, force_migrate=True)
        return AccountMigration(account_id, MIGRATED)
    except Exception as exc:  # every failure is reported, the others go on
        return AccountMigration(account_id, FAILED, f"{exc.__class__.__name__}: {exc}")
    finally:
        tenancy.account_connections_close(account_id)


def migrate_accounts(account_ids: list[str], *, force: bool = False, jobs: int = 1) -> Iterator[AccountMigration]:
    """Each account's outcome, in the order given."""
    yield from _in_processes(_migrate_forced if force else _migrate, account_ids, jobs)


_Item = TypeVar("_Item")
_Outcome = TypeVar("_Outcome")


def _in_processes(work: Callable[[_Item], _Outcome], items: Sequence[_Item], jobs: int) -> Iterator[_Outcome]:
    """`work` of each item, in the order given, in at most `jobs` forked processes."""
    if jobs <= 1 or len(items) <= 1:
        for item in items:
            yield work(item)
        return
    from qiwei_site.platform.connections import account_pool
    from qiwei_site.platform.tenancy import account_connections_release_idle

    # Nothing of ours for the children to inherit: this thread's account connections and the
    # pool's idle ones (a child never closes what it inherited, so they would stay open).
    account_connections_release_idle(keep=False)
    account_pool.close_idle()
    # An executor, not a Pool: a child killed mid-way (out of memory) fails the run
    # (BrokenProcessPool) instead of leaving it waiting for ever.
    with ProcessPoolExecutor(
        min(jobs, len(items)),
        mp_context=multiprocessing.get_context("fork"),
        initializer=_forget_inherited_connections,
    ) as executor:
        yield from executor.map(work, items)


def _migrate(account_id: str) -> AccountMigration:
    return migrate_one(account_id, force=False)


def _migrate_forced(account_id: str) -> AccountMigration:
    return migrate_one(account_id, force=True)


def _forget_inherited_connections() -> None:
    from django.db import connections

    for wrapper in connections.all(initialized_only=True):
        if wrapper.connection is not None:
            _inherited.append(wrapper.connection)
            wrapper.connection = None


CREATED, REPAIRED = "created", "repaired"


@dataclass(frozen=True)
class AccountOnboarding:
    account_id: str
    outcome: str  # CREATED, REPAIRED (registered, its database brought to current), CURRENT or FAILED
    made_by: str = ""  # tenancy.TEMPLATE or tenancy.MIGRATE when its database was made or migrated
    seconds: float = 0.0
    error: str = ""


@dataclass(frozen=True)
class NewAccount:
    account_id: str
    name: str
    actor: str = "manage.py accounts_onboard"
    reason: str = ""


def onboard_one(new: NewAccount) -> AccountOnboarding:
    """Create one account (`account_create`: from the template, verified), or leave it when it is
    registered and current, or bring a registered one's database to current (a run cut short
    between the database and the registry row, or an older account)."""
    from qiwei_site.platform import tenancy
    from qiwei_site.platform.models import WeComAccount
    from qiwei_site.platform.services import account_create

    started = time.perf_counter()
    try:
        alias = tenancy.register_account_database(new.account_id)
        if WeComAccount.objects.filter(pk=new.account_id).exists():
            if tenancy.schema_is_current(alias):
                return AccountOnboarding(new.account_id, CURRENT, seconds=time.perf_counter() - started)
            tenancy.ensure_account_database(new.account_id)
            outcome = REPAIRED
        else:
            account_create(account_id=new.account_id, name=new.name, actor=new.actor, reason=new.reason)
            outcome = CREATED
        return AccountOnboarding(
            new.account_id, outcome, made_by=tenancy.made_by(alias) or "", seconds=time.perf_counter() - started
        )
    except Exception as exc:  # every failure is reported, the others go on
        detail = getattr(exc, "detail", None) or str(exc)
        return AccountOnboarding(
            new.account_id, FAILED, seconds=time.perf_counter() - started, error=f"{exc.__class__.__name__}: {detail}"
        )
    finally:
        tenancy.account_connections_close(new.account_id)


def onboard_accounts(accounts: Sequence[NewAccount], *, jobs: int = 1) -> Iterator[AccountOnboarding]:
    """Each account's outcome, in the order given, `jobs` accounts at once."""
    yield from _in_processes(onboard_one, accounts, jobs)
