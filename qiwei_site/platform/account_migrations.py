"""`migrate_accounts` (issue 23, item 2): every account's database or schema brought to this
code's migrations, each checked first by its recorded fingerprint (one query; current ones are
left alone unless forced), in at most `jobs` processes at once.

The processes are forked from the command's (same settings, accounts already listed); a child
never uses a connection it inherited: it sets them aside unclosed (closing would end the parent's
server session on the shared socket) and opens its own. Each account's connections are closed as
soon as it is done, so N jobs hold at most N account connections."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

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
            return AccountMigration(account_id, CURRENT)
        tenancy.ensure_account_database(account_id, force_migrate=True)
        return AccountMigration(account_id, MIGRATED)
    except Exception as exc:  # every failure is reported, the others go on
        return AccountMigration(account_id, FAILED, f"{exc.__class__.__name__}: {exc}")
    finally:
        tenancy.account_connections_close(account_id)


def migrate_accounts(account_ids: list[str], *, force: bool = False, jobs: int = 1) -> Iterator[AccountMigration]:
    """Each account's outcome, in the order given."""
    if jobs <= 1 or len(account_ids) <= 1:
        for account_id in account_ids:
            yield migrate_one(account_id, force=force)
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
        min(jobs, len(account_ids)),
        mp_context=multiprocessing.get_context("fork"),
        initializer=_forget_inherited_connections,
    ) as executor:
        yield from executor.map(_migrate_forced if force else _migrate, account_ids)


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
