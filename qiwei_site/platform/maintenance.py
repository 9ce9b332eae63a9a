"""Reclaiming what PostgreSQL keeps of deleted rows (README, "Forget and erase"): `VACUUM (FULL)`
of an account's tables, in either PostgreSQL layout. SQLite accounts zero deleted bytes as they go.

VACUUM cannot run inside a transaction, so it cannot ride the schema layout's per-transaction
switch: it runs on a connection of its own, straight to the server (never through PgBouncer's
transaction pooling, where a session setting could reach another client), as the account's role
with the account's schema on the search path, set for that session only and closed after.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from psycopg import sql

from qiwei_site.platform.tenancy import account_database_config, is_schema_config, is_sqlite_config, server_params

# The tables a forget rewrites (README, production deployment).
FORGET_TABLES = (
    "memory_memoryitem",
    "memory_historicalmemoryitem",
    "memory_memorysnapshot",
    "conversations_auditevent",
    "conversations_customerprofile",
    "conversations_historicalcustomerprofile",
    "conversations_draft",
    "conversations_historicaldraft",
    "memory_capturejob",
    "sessions_epoch_historicalsessionepoch",
)


class VacuumRefused(Exception):
    pass


@dataclass(frozen=True)
class VacuumResult:
    account_id: str
    tables: tuple[str, ...]  # empty: nothing to do (SQLite)


def account_vacuum(*, account_id: str, every_table: bool = False) -> VacuumResult:
    """VACUUM (FULL, ANALYZE) the account's forget tables, or every table of it (after an erase)."""
    import psycopg

    config = account_database_config(account_id)
    if is_sqlite_config(config):
        return VacuumResult(account_id=account_id, tables=())
    if settings.QIWEI_PGBOUNCER:
        # The role and search path are set for the session: through transaction pooling they could
        # stay on a server connection another client gets next.
        raise VacuumRefused(
            "VACUUM 必须直连 PostgreSQL：运行时把 QIWEI_ACCOUNT_DATABASE_URL 指向服务器本身，并去掉 QIWEI_PGBOUNCER "
            "(run it with QIWEI_ACCOUNT_DATABASE_URL pointing straight at PostgreSQL and QIWEI_PGBOUNCER unset)."
        )
    with psycopg.connect(dbname=config["NAME"], autocommit=True, **server_params(config)) as conn:
        if is_schema_config(config):
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(config["QIWEI_ROLE"])))
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(config["QIWEI_SCHEMA"])))
        schema = conn.execute("SELECT current_schema()").fetchone()
        present = {
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s", [schema[0] if schema else "public"]
            )
        }
        tables = tuple(sorted(present)) if every_table else tuple(t for t in FORGET_TABLES if t in present)
        if tables:
            conn.execute(
                sql.SQL("VACUUM (FULL, ANALYZE) {}").format(sql.SQL(", ").join(sql.Identifier(t) for t in tables))
            )
    return VacuumResult(account_id=account_id, tables=tables)
