"""Moving accounts from a database each to a schema each (issue 23, item 3).

Run with the settings already naming the schema layout (QIWEI_ACCOUNT_DATABASE_URL without
`{account}`) and `source_template`, the old URL with `{account}`. Writers stopped (README,
operations): what an account receives after its copy would stay behind in its old database.

Per account, resumable and idempotent (a state row per account in the one database's `qiwei_ops`
schema, which only the login role reaches):
1. the old database must hold this code's migrations (its recorded fingerprint), else it is left
   alone with what to run first;
2. a schema not yet verified is dropped and made again (role, schema, migrations): a copy that
   stopped half-way starts over;
3. every table is copied in one transaction, as the account's role (COPY out of the old database,
   COPY into the schema), foreign keys checked at commit; the audit tables' rows go in with their
   chain links blank, in chain order, and the database links them again at commit; the context
   version counters (kept by triggers) are replaced by the old values last; every sequence is set
   past its column's largest value;
4. verified: per table, the row count and an md5 over every row (the same columns, in key order,
   the audit chain's links included, so the chain rebuilt must equal the old one) on both sides;
5. the old database is kept until `drop_old`, which drops only verified accounts' databases.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from qiwei_site.platform import tenancy

STATE_SCHEMA, STATE_TABLE = "qiwei_ops", "qiwei_layout_move"
VERIFIED, DROPPED, FAILED = "verified", "dropped", "failed"
NO_OLD_DATABASE = "no old database"
SKIPPED_TABLES = frozenset({tenancy.SCHEMA_TABLE, "django_migrations"})
CHAIN_TABLES = {"conversations_auditevent"}
DERIVED_TABLES = ("conversations_customercontextversion",)  # kept by triggers: replaced last


class MoveRefused(Exception):
    """The move cannot start: the settings, the template or an old database is not ready."""


@dataclass
class AccountMove:
    account_id: str
    outcome: str  # VERIFIED, DROPPED, FAILED, "already verified", "would copy" (dry run), "not found"
    rows: dict[str, int] = field(default_factory=dict)
    detail: str = ""


def _params(config: dict[str, Any]) -> dict[str, Any]:
    return {**tenancy.server_params(config), "dbname": config["NAME"]}


def _source_config(source_template: str, account_id: str) -> dict[str, Any]:
    import environ

    if "{account}" not in source_template:
        raise MoveRefused("--from 必须是含 {account} 的旧地址 (the old URL template must contain '{account}').")
    return environ.Env.db_url_config(source_template.replace("{account}", tenancy.validate_account_id(account_id)))


def _target_config(account_id: str) -> dict[str, Any]:
    if tenancy.account_layout() != tenancy.SCHEMA_LAYOUT:
        raise MoveRefused(
            "QIWEI_ACCOUNT_DATABASE_URL 必须已指向 schema 布局（不含 {account}） "
            "(point QIWEI_ACCOUNT_DATABASE_URL at the one database first, without '{account}')."
        )
    return tenancy.account_database_config(account_id)


def move_accounts(
    account_ids: list[str],
    *,
    source_template: str,
    dry_run: bool = False,
    drop_old: bool = False,
    overwrite: bool = False,
) -> Iterator[AccountMove]:
    """Each account's outcome, in order. Refuses (MoveRefused) before touching anything when the
    settings or the template are wrong."""
    import psycopg

    if not account_ids:
        return
    first = _target_config(account_ids[0])
    _source_config(source_template, account_ids[0])
    with psycopg.connect(autocommit=True, **_params(first)) as state:
        tenancy.check_login_role(state, first)
        if not dry_run:
            # The login role's own schema (it may not create in `public` when NOINHERIT); no account
            # role may use it.
            state.execute(f"CREATE SCHEMA IF NOT EXISTS {STATE_SCHEMA}")
            state.execute(
                f"CREATE TABLE IF NOT EXISTS {STATE_SCHEMA}.{STATE_TABLE} (account_id text PRIMARY KEY,"
                " state text NOT NULL, rows jsonb NOT NULL DEFAULT '{}', detail text NOT NULL DEFAULT '',"
                " updated_at timestamptz NOT NULL)"
            )
        for account_id in account_ids:
            yield _move_one(state, account_id, source_template, dry_run=dry_run, drop_old=drop_old, overwrite=overwrite)


def _state_of(state: Any, account_id: str) -> str | None:
    exists = state.execute("SELECT to_regclass(%s)", [f"{STATE_SCHEMA}.{STATE_TABLE}"]).fetchone()
    if not exists or exists[0] is None:
        return None
    row = state.execute(
        f"SELECT state FROM {STATE_SCHEMA}.{STATE_TABLE} WHERE account_id = %s", [account_id]
    ).fetchone()
    return str(row[0]) if row else None


def _record(state: Any, move: AccountMove) -> None:
    state.execute(
        f"INSERT INTO {STATE_SCHEMA}.{STATE_TABLE} (account_id, state, rows, detail, updated_at)"
        " VALUES (%s, %s, %s, %s, %s)"
        " ON CONFLICT (account_id) DO UPDATE SET state = EXCLUDED.state, rows = EXCLUDED.rows,"
        " detail = EXCLUDED.detail, updated_at = EXCLUDED.updated_at",
        [move.account_id, move.outcome, json.dumps(move.rows), move.detail, dt.datetime.now(dt.UTC)],
    )


def _move_one(
    state: Any, account_id: str, source_template: str, *, dry_run: bool, drop_old: bool, overwrite: bool
) -> AccountMove:
    import psycopg

    source = _source_config(source_template, account_id)
    target = _target_config(account_id)
    done = _state_of(state, account_id)
    if done in (VERIFIED, DROPPED):
        if drop_old and done == VERIFIED:
            if dry_run:
                return AccountMove(account_id, "would drop the old database")
            try:
                _drop_database(source)
            except psycopg.Error as exc:
                return AccountMove(
                    account_id, "not dropped", detail=f"旧数据库仍被使用，未删除 (old database still in use): {exc}"
                )
            move = AccountMove(account_id, DROPPED)
            _record(state, move)
            return move
        return AccountMove(account_id, f"already {done}")
    try:
        src = psycopg.connect(autocommit=True, **_params(source))
    except psycopg.OperationalError as exc:
        if f'database "{source["NAME"]}" does not exist' in str(exc):
            # An account made after the switch, in the schema layout already: nothing to move.
            return AccountMove(account_id, NO_OLD_DATABASE)
        return AccountMove(account_id, "not found", detail=f"旧数据库无法连接 (old database unreachable): {exc}")
    with src:
        src.execute("SET TIME ZONE 'UTC'")
        fingerprint = _fingerprint(src)
        if fingerprint != tenancy.migration_fingerprint():
            move = AccountMove(
                account_id,
                FAILED,
                detail="旧数据库的迁移不是当前版本：先用旧地址运行 migrate_accounts "
                "(the old database is not at this code's migrations: run migrate_accounts with the old URL first).",
            )
            if not dry_run:
                _record(state, move)
            return move
        tables = _tables(src, "public")
        if dry_run:
            return AccountMove(account_id, "would copy", rows={t: _count(src, "public", t) for t in tables})
        written = _rows_in_schema(target)
        if written and not overwrite:
            # A copy that failed rolled back whole: rows here were written by something else, most
            # likely the application already switched to this schema. Never drop them unasked.
            move = AccountMove(
                account_id,
                FAILED,
                detail=f"新 schema 已有 {written} 行数据（应用可能已在写入）：确认后用 --overwrite 重新复制 "
                f"(the schema already holds {written} rows, maybe written by the application: "
                "stop it, then re-run with --overwrite to copy this account again).",
            )
            _record(state, move)
            return move
        try:
            tenancy.unregister_account_database(account_id)
            tenancy._migrated.discard(tenancy.alias_for(account_id))
            tenancy._drop_account_schema(target)
            tenancy.ensure_account_database(account_id)
            tenancy.account_connections_close(account_id)
            with psycopg.connect(autocommit=True, **_params(target)) as dst:
                dst.execute("SET TIME ZONE 'UTC'")
                _copy(src, dst, target, tables)
                rows, mismatched = _verify(src, dst, target, tables)
        except Exception as exc:  # recorded; the next run starts this account over
            move = AccountMove(account_id, FAILED, detail=f"{exc.__class__.__name__}: {exc}")
            _record(state, move)
            return move
    if mismatched:
        move = AccountMove(account_id, FAILED, rows=rows, detail="校验不一致 (mismatch): " + ", ".join(mismatched))
    else:
        move = AccountMove(account_id, VERIFIED, rows=rows)
    _record(state, move)
    return move


def _rows_in_schema(target: dict[str, Any]) -> int:
    """Rows in the account's schema outside the bookkeeping tables (0 when it does not exist)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(autocommit=True, **_params(target)) as conn:
        exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [target["QIWEI_SCHEMA"]]).fetchone()
        role = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [target["QIWEI_ROLE"]]).fetchone()
        if not exists or not role:
            return 0
        with conn.transaction():
            _switch(conn, target)
            total = 0
            for table in _tables(conn, target["QIWEI_SCHEMA"]):
                if table not in DERIVED_TABLES:
                    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
                    total += int(row[0]) if row else 0
            return total


def _fingerprint(conn: Any) -> str | None:
    try:
        row = conn.execute(f"SELECT fingerprint FROM {tenancy.SCHEMA_TABLE}").fetchone()
    except Exception:
        return None
    return str(row[0]) if row else None


def _tables(conn: Any, schema: str) -> list[str]:
    rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename", [schema])
    return [row[0] for row in rows if row[0] not in SKIPPED_TABLES]


def _count(conn: Any, schema: str, table: str) -> int:
    from psycopg import sql

    row = conn.execute(
        sql.SQL("SELECT count(*) FROM {}.{}").format(sql.Identifier(schema), sql.Identifier(table))
    ).fetchone()
    return int(row[0]) if row else 0


def _switch(conn: Any, target: dict[str, Any]) -> None:
    from psycopg import sql

    conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(target["QIWEI_ROLE"])))
    conn.execute(
        sql.SQL("SET LOCAL search_path TO {}, {}").format(
            sql.Identifier(target["QIWEI_SCHEMA"]), sql.Identifier(tenancy.EXTENSION_SCHEMA)
        )
    )


def _columns(conn: Any, schema: str, table: str) -> list[str]:
    rows = conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s"
        " ORDER BY ordinal_position",
        [schema, table],
    )
    return [row[0] for row in rows]


def _key(columns: list[str], table: str) -> str:
    if table in CHAIN_TABLES:
        return "chain_seq, id"
    return "id" if "id" in columns else ", ".join(f'"{c}"' for c in columns)


def _copy(src: Any, dst: Any, target: dict[str, Any], tables: list[str]) -> None:
    from psycopg import sql

    schema = target["QIWEI_SCHEMA"]
    ordered = [t for t in tables if t not in DERIVED_TABLES] + [t for t in DERIVED_TABLES if t in tables]
    with dst.transaction():
        _switch(dst, target)
        dst.execute("SET CONSTRAINTS ALL DEFERRED")
        for table in ordered:
            old_columns = set(_columns(src, "public", table))
            columns = [c for c in _columns(dst, schema, table) if c in old_columns]
            if not columns:
                continue
            if table in DERIVED_TABLES:
                dst.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(table)))
            chained = table in CHAIN_TABLES
            selected = sql.SQL(", ").join(
                sql.SQL("NULL::bigint")
                if chained and c == "chain_seq"
                else sql.SQL("''")
                if chained and c in ("prev_hash", "chain_hash")
                else sql.Identifier(c)
                for c in columns
            )
            names = sql.SQL(", ").join(sql.Identifier(c) for c in columns)
            out = sql.SQL("COPY (SELECT {} FROM public.{} ORDER BY {}) TO STDOUT").format(
                selected, sql.Identifier(table), sql.SQL(_key(columns, table))
            )
            into = sql.SQL("COPY {} ({}) FROM STDIN").format(sql.Identifier(table), names)
            with src.cursor().copy(out) as reader, dst.cursor().copy(into) as writer:
                for block in reader:
                    writer.write(block)
        sequences = dst.execute(
            "SELECT s.relname, t.relname, a.attname FROM pg_class s"
            " JOIN pg_depend d ON d.objid = s.oid AND d.deptype IN ('a', 'i')"
            " JOIN pg_class t ON t.oid = d.refobjid"
            " JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid"
            " JOIN pg_namespace n ON n.oid = s.relnamespace WHERE s.relkind = 'S' AND n.nspname = %s",
            [schema],
        ).fetchall()
        for sequence, table, column in sequences:
            dst.execute(
                sql.SQL("SELECT setval({}, COALESCE((SELECT max({}) FROM {}), 0) + 1, false)").format(
                    sql.Literal(f'"{schema}"."{sequence}"'), sql.Identifier(column), sql.Identifier(table)
                )
            )


def _digest_sql(schema: str, table: str, columns: list[str]) -> Any:
    from psycopg import sql

    row = sql.SQL(", ").join(sql.Identifier(c) for c in columns)
    return sql.SQL("SELECT count(*), md5(string_agg(md5(ROW({})::text), '' ORDER BY {})) FROM {}.{}").format(
        row, sql.SQL(_key(columns, table)), sql.Identifier(schema), sql.Identifier(table)
    )


def _verify(src: Any, dst: Any, target: dict[str, Any], tables: list[str]) -> tuple[dict[str, int], list[str]]:
    schema = target["QIWEI_SCHEMA"]
    rows: dict[str, int] = {}
    mismatched: list[str] = []
    with dst.transaction():
        _switch(dst, target)
        for table in tables:
            old_columns = set(_columns(src, "public", table))
            columns = [c for c in _columns(dst, schema, table) if c in old_columns]
            old = src.execute(_digest_sql("public", table, columns)).fetchone()
            new = dst.execute(_digest_sql(schema, table, columns)).fetchone()
            rows[table] = int(old[0])
            if tuple(old) != tuple(new):
                mismatched.append(f"{table} ({old[0]} → {new[0]})")
    return rows, mismatched


def _drop_database(source: dict[str, Any]) -> None:
    import psycopg
    from psycopg import sql

    params = _params({**source, "NAME": "postgres"})
    with psycopg.connect(autocommit=True, **params) as conn:
        # Not WITH (FORCE): a process still connected to the old database (a worker left on the old
        # URL) makes the drop fail and be reported, instead of losing what it writes.
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(source["NAME"])))


__all__ = ["AccountMove", "ImproperlyConfigured", "MoveRefused", "move_accounts"]
