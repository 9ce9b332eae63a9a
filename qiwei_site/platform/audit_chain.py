"""The audit's proof (issue 25, item 3): each audit table is append-only in the database and a
hash chain, so an edited, deleted or reordered row is refused or found (`manage.py audit_verify`).

Three hashes per row. `payload_hash` is taken of the row's words (reason and payload) when it is
written; `entry_hash` of what the row says happened (time, action, actor, the conversation or
account id, and `payload_hash`); `chain_hash` = sha256(`prev_hash` ":" `entry_hash`), where
`prev_hash` is the chain hash of the row before it (`chain_seq` - 1). The writer (Python) computes
the first two; the database links the row, in a trigger, so every insert is chained and a bulk
insert row by row: on SQLite right after the insert (writes are serialised by the database's one
write lock; `qiwei_sha256` is a function this module gives every SQLite connection), on PostgreSQL
at commit (a deferred trigger under a transaction-level advisory lock: the chain follows commit
order, and the lock is the transaction's last, so it closes no deadlock cycle).

A scrub (forget, erasure: their quotes replaced in reason and payload) changes the words, not the
chain: `payload_hash` stays as written and `scrubbed_hash` holds the hash of the words left, so the
row still verifies. The triggers refuse every UPDATE and DELETE except the chain's own link, and an
UPDATE of reason, payload and `scrubbed_hash` only inside `audit_unlocked("scrub")`, a row in
`qiwei_audit_unlock` inserted and removed in the scrubbing transaction (no other transaction ever
sees it). `manage.py flush` (tests' teardown) empties the tables inside `audit_unlocked("flush")`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connections, transaction
from django.db.backends.signals import connection_created

UNLOCK_TABLE = "qiwei_audit_unlock"
SCRUB = "scrub"
FLUSH = "flush"
SQLITE_HASH_FUNCTION = "qiwei_sha256"
PG_GUARD_FUNCTION = "qiwei_audit_guard"
PG_CHAIN_FUNCTION = "qiwei_audit_chain"
PG_TRUNCATE_FUNCTION = "qiwei_audit_no_truncate"
# Present once a schema's audit is handed to its owner role (`audit_owner`): the triggers and
# functions are then the owner's, installed by the provisioner, never by a migration.
PG_SCRUB_SIGNATURE = "qiwei_audit_scrub(bigint, text, jsonb, text)"
REFUSED = "审计记录只能追加，不能修改或删除 (audit rows are append-only)"
UNHASHED = "审计记录缺少哈希，只能通过审计服务写入 (audit rows are written by the audit service)"

# The columns a scrub may rewrite; every other column is the chain's.
SCRUBBABLE = ("reason", "payload", "scrubbed_hash")
CHAIN_LINK = ("chain_seq", "prev_hash", "chain_hash")
# The chained tables: table -> (the id column the row is about, the PostgreSQL advisory lock key).
TABLES = {
    "conversations_auditevent": ("conversation_id", 25_03_0001),
    "conversations_registryauditevent": ("account_id", 25_03_0002),
}


# --- hashes -------------------------------------------------------------------------------------


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _canonical(value: Any) -> str:
    # Through JSON once first: the value as the JSON column gives it back (tuples as lists, keys as strings).
    return json.dumps(json.loads(json.dumps(value)), ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def payload_hash(reason: str, payload: Any) -> str:
    """The hash of a row's words: its reason and payload."""
    return sha256_hex(_canonical({"reason": reason or "", "payload": payload if payload is not None else {}}))


def time_text(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def entry_hash(
    *, created_at: dt.datetime, action: str, actor_id: int | None, actor_name: str, subject: str, payload_hash: str
) -> str:
    """The hash of what a row says happened: when, which action, who, about which conversation
    (or account), and the hash of its words."""
    return sha256_hex(_canonical([time_text(created_at), str(action), actor_id, actor_name, subject, payload_hash]))


def chain_link(prev_hash: str, entry: str) -> str:
    """A row's chain hash; the database computes the same (`_sqlite_statements`, `_PG_CHAIN_SQL`)."""
    return sha256_hex(f"{prev_hash}:{entry}")


def _sqlite_sha256(text: Any) -> str | None:
    return None if text is None else sha256_hex(str(text))


def sqlite_functions_install(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Every SQLite connection gets `qiwei_sha256` for the chain trigger. A client without it (the
    sqlite3 shell) cannot insert into an audit table at all."""
    if connection.vendor == "sqlite":
        connection.connection.create_function(SQLITE_HASH_FUNCTION, 1, _sqlite_sha256, deterministic=True)


connection_created.connect(sqlite_functions_install, dispatch_uid="qiwei_audit_chain_sqlite_functions")


# --- the unlock ---------------------------------------------------------------------------------


@contextmanager
def audit_unlocked(purpose: str, *, using: str) -> Iterator[None]:
    """Let this transaction rewrite audit words (`SCRUB`) or empty the tables (`FLUSH`): a row in
    the unlock table that the triggers read, inserted and deleted in one transaction, so no other
    transaction sees it and a rollback takes it away."""
    if purpose not in (SCRUB, FLUSH):
        raise ValueError(f"unknown audit unlock {purpose!r}")
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute(f"INSERT INTO {UNLOCK_TABLE} (purpose) VALUES (%s)", [purpose])
        yield
        cursor.execute(f"DELETE FROM {UNLOCK_TABLE} WHERE purpose = %s", [purpose])


def unlock_table_exists(using: str) -> bool:
    return UNLOCK_TABLE in connections[using].introspection.table_names()


# --- triggers -----------------------------------------------------------------------------------

_CREATE_UNLOCK = f"CREATE TABLE IF NOT EXISTS {UNLOCK_TABLE} (purpose varchar(16) NOT NULL)"


def _columns(subject: str) -> list[str]:
    return [
        "id",
        "action",
        "actor_id",
        "actor_name",
        "reason",
        "payload",
        "created_at",
        subject,
        "payload_hash",
        "entry_hash",
        "scrubbed_hash",
        *CHAIN_LINK,
    ]


def _unchanged(columns: Sequence[str]) -> str:
    return " AND ".join(f"NEW.{column} IS OLD.{column}" for column in columns)


def trigger_names(table: str, vendor: str) -> list[str]:
    if vendor == "sqlite":
        return [f"{table}_chain", f"{table}_no_update", f"{table}_no_delete", f"{table}_no_replace"]
    return [f"{table}_guard", f"{table}_chain", f"{table}_no_truncate"]


def _sqlite_statements(table: str, subject: str) -> list[str]:
    columns = _columns(subject)
    fill_may_change = [c for c in columns if c not in CHAIN_LINK]
    scrub_may_change = [c for c in columns if c not in SCRUBBABLE]
    last = f"(SELECT chain_hash FROM {table} WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1)"
    return [
        _CREATE_UNLOCK,
        f"CREATE TRIGGER IF NOT EXISTS {table}_chain AFTER INSERT ON {table} FOR EACH ROW BEGIN "
        f"SELECT RAISE(ABORT, '{UNHASHED}') "
        "WHERE NEW.entry_hash = '' OR NEW.payload_hash = '' OR NEW.chain_hash <> '' OR NEW.chain_seq IS NOT NULL; "
        f"UPDATE {table} SET "
        f"chain_seq = (SELECT COALESCE(MAX(chain_seq), 0) + 1 FROM {table}), "
        f"prev_hash = COALESCE({last}, ''), "
        f"chain_hash = {SQLITE_HASH_FUNCTION}(COALESCE({last}, '') || ':' || NEW.entry_hash) "
        "WHERE id = NEW.id; END",
        f"CREATE TRIGGER IF NOT EXISTS {table}_no_update BEFORE UPDATE ON {table} FOR EACH ROW WHEN NOT ("
        f"(OLD.chain_hash = '' AND OLD.chain_seq IS NULL AND {_unchanged(fill_may_change)}) OR "
        f"(EXISTS (SELECT 1 FROM {UNLOCK_TABLE} WHERE purpose = '{SCRUB}') AND {_unchanged(scrub_may_change)})"
        f") BEGIN SELECT RAISE(ABORT, '{REFUSED}'); END",
        f"CREATE TRIGGER IF NOT EXISTS {table}_no_delete BEFORE DELETE ON {table} FOR EACH ROW "
        f"WHEN NOT EXISTS (SELECT 1 FROM {UNLOCK_TABLE} WHERE purpose = '{FLUSH}') "
        f"BEGIN SELECT RAISE(ABORT, '{REFUSED}'); END",
        # INSERT OR REPLACE deletes the row it replaces without firing the delete trigger (SQLite's
        # recursive_triggers is off): an insert over an existing id or sequence is refused before.
        f"CREATE TRIGGER IF NOT EXISTS {table}_no_replace BEFORE INSERT ON {table} FOR EACH ROW "
        f"WHEN EXISTS (SELECT 1 FROM {table} WHERE id = NEW.id OR chain_seq = NEW.chain_seq) "
        f"BEGIN SELECT RAISE(ABORT, '{REFUSED}'); END",
    ]


def _pg_array(names: Sequence[str]) -> str:
    return "ARRAY[" + ", ".join(f"'{name}'" for name in names) + "]::text[]"


def pg_function_sql(schema: str | None = None) -> tuple[str, str, str]:
    """The guard, chain and no-truncate functions. With `schema` (an audit handed to its owner role,
    `audit_owner`): created in that schema, every table named with it, the search path pinned to
    pg_catalog (nothing the account role creates in its schema can stand in for a table, function or
    operator they use, however its argument types match), and the chain function SECURITY DEFINER
    (it links each row as the owner)."""
    unlock = f'"{schema}".{UNLOCK_TABLE}' if schema else UNLOCK_TABLE
    prefix = f'"{schema}".' if schema else ""
    named, names = ("%I.%I", "TG_TABLE_SCHEMA, TG_TABLE_NAME") if schema else ("%I", "TG_TABLE_NAME")
    pinned = " SET search_path = pg_catalog, pg_temp" if schema else ""
    definer = " SECURITY DEFINER" if schema else ""
    guard = f"""
CREATE OR REPLACE FUNCTION {prefix}{PG_GUARD_FUNCTION}() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.entry_hash = '' OR NEW.payload_hash = '' OR NEW.chain_hash <> '' OR NEW.chain_seq IS NOT NULL THEN
            RAISE EXCEPTION '{UNHASHED}' USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        -- The chain's own link (at commit), once per row: only the link columns change.
        IF OLD.chain_hash = '' AND OLD.chain_seq IS NULL
           AND (to_jsonb(NEW) - {_pg_array(CHAIN_LINK)}) = (to_jsonb(OLD) - {_pg_array(CHAIN_LINK)}) THEN
            RETURN NEW;
        END IF;
        -- A scrub: only the words change, inside audit_unlocked('scrub').
        IF EXISTS (SELECT 1 FROM {unlock} WHERE purpose = '{SCRUB}')
           AND (to_jsonb(NEW) - {_pg_array(SCRUBBABLE)}) = (to_jsonb(OLD) - {_pg_array(SCRUBBABLE)}) THEN
            RETURN NEW;
        END IF;
    END IF;
    IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM {unlock} WHERE purpose = '{FLUSH}') THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '{REFUSED}' USING ERRCODE = 'insufficient_privilege';
END
$$ LANGUAGE plpgsql{pinned}
"""
    chain = f"""
CREATE OR REPLACE FUNCTION {prefix}{PG_CHAIN_FUNCTION}() RETURNS trigger AS $$
DECLARE
    last_seq bigint;
    last_hash text;
BEGIN
    -- At commit, one transaction at a time per table: the chain follows commit order. The key
    -- names the table and its schema: accounts sharing one database (a schema each) never wait
    -- on each other's chain.
    PERFORM pg_advisory_xact_lock(TG_ARGV[0]::integer, hashtext(TG_TABLE_SCHEMA));
    EXECUTE format('SELECT chain_seq, chain_hash FROM {named} WHERE chain_seq IS NOT NULL '
                   'ORDER BY chain_seq DESC LIMIT 1', {names}) INTO last_seq, last_hash;
    last_hash := COALESCE(last_hash, '');
    EXECUTE format('UPDATE {named} SET chain_seq = $1, prev_hash = $2, chain_hash = $3 WHERE id = $4', {names})
    USING COALESCE(last_seq, 0) + 1, last_hash,
          encode(sha256(convert_to(last_hash || ':' || NEW.entry_hash, 'UTF8')), 'hex'), NEW.id;
    RETURN NULL;
END
$$ LANGUAGE plpgsql{definer}{pinned}
"""
    # TRUNCATE fires no row trigger: a statement trigger refuses it outside the flush unlock.
    truncate = f"""
CREATE OR REPLACE FUNCTION {prefix}{PG_TRUNCATE_FUNCTION}() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM {unlock} WHERE purpose = '{FLUSH}') THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION '{REFUSED}' USING ERRCODE = 'insufficient_privilege';
END
$$ LANGUAGE plpgsql{pinned}
"""
    return guard, chain, truncate


_PG_GUARD_SQL, _PG_CHAIN_SQL, _PG_TRUNCATE_SQL = pg_function_sql()


def pg_trigger_statements(table: str, lock_key: int) -> list[str]:
    return [_CREATE_UNLOCK, _PG_GUARD_SQL, _PG_CHAIN_SQL, _PG_TRUNCATE_SQL, *pg_triggers(table, lock_key)]


def pg_triggers(table: str, lock_key: int) -> list[str]:
    """`table`'s three triggers, (re)created on the functions the search path finds now."""
    return [
        f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table}",
        f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {PG_TRUNCATE_FUNCTION}()",
        f"DROP TRIGGER IF EXISTS {table}_guard ON {table}",
        f"CREATE TRIGGER {table}_guard BEFORE INSERT OR UPDATE OR DELETE ON {table} "
        f"FOR EACH ROW EXECUTE FUNCTION {PG_GUARD_FUNCTION}()",
        f"DROP TRIGGER IF EXISTS {table}_chain ON {table}",
        f"CREATE CONSTRAINT TRIGGER {table}_chain AFTER INSERT ON {table} DEFERRABLE INITIALLY DEFERRED "
        f"FOR EACH ROW EXECUTE FUNCTION {PG_CHAIN_FUNCTION}('{lock_key}')",
    ]


def refresh_chain_function(schema_editor: Any) -> None:
    """Replace the chain function of a database migrated before its lock named the schema."""
    if schema_editor.connection.vendor == "postgresql" and not _pg_separated(schema_editor):
        schema_editor.execute(_PG_CHAIN_SQL, params=None)


def _pg_separated(schema_editor: Any) -> bool:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT to_regprocedure(%s) IS NOT NULL", [PG_SCRUB_SIGNATURE])
        return bool(cursor.fetchone()[0])


def install(schema_editor: Any, table: str) -> None:
    """Create the unlock table and `table`'s triggers (idempotent)."""
    subject, lock_key = TABLES[table]
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        statements = _sqlite_statements(table, subject)
    elif vendor == "postgresql":
        if _pg_separated(schema_editor):
            return  # the audit owner's (`audit_owner.separation_statements` installs them again)
        statements = pg_trigger_statements(table, lock_key)
    else:
        raise NotImplementedError(f"audit triggers for {vendor}")
    for statement in statements:
        schema_editor.execute(statement, params=None)  # no parameters: the `%I` of format() is PostgreSQL's


def uninstall(schema_editor: Any, table: str) -> None:
    vendor = schema_editor.connection.vendor
    for name in trigger_names(table, vendor):
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}" + (f" ON {table}" if vendor == "postgresql" else ""))


def triggers_missing(table: str, *, using: str) -> list[str]:
    """The append-only and chain triggers of `table` that are not installed (a SQLite table rebuilt
    by a later migration loses them)."""
    connection = connections[using]
    names = trigger_names(table, connection.vendor)
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s", [table])
        else:
            cursor.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal", [table])
        present = {row[0] for row in cursor.fetchall()}
    return [name for name in names if name not in present]


def chain_existing(rows: Sequence[dict[str, Any]], subject: str) -> list[dict[str, Any]]:
    """The hash columns for rows written before the chain (in id order): what the migration stores."""
    linked: list[dict[str, Any]] = []
    previous = ""
    for seq, row in enumerate(rows, start=1):
        words = payload_hash(row["reason"], row["payload"])
        entry = entry_hash(
            created_at=row["created_at"],
            action=row["action"],
            actor_id=row["actor_id"],
            actor_name=row["actor_name"],
            subject=row[subject],
            payload_hash=words,
        )
        chain = chain_link(previous, entry)
        linked.append(
            {
                "id": row["id"],
                "payload_hash": words,
                "entry_hash": entry,
                "prev_hash": previous,
                "chain_hash": chain,
                "chain_seq": seq,
            }
        )
        previous = chain
    return linked
