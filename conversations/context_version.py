"""The per-customer context version (DESIGN §8): one number that changes whenever anything a
customer's context is built from changes, so a warm build reads it (one indexed read) and serves
the context it built for that number.

The database bumps it, by triggers on every table the context reads (messages, profile, tasks,
alerts, recommendations and their feedback, memory items and snapshots): an INSERT, a DELETE, or
an UPDATE of a column the context quotes adds one to the customer's row in
`conversations_customercontextversion`, in the writer's own transaction. So no write path can
forget it — a service, an admin form, a scrub's in-place UPDATE, a bulk_create, a factory in a
test, another process. The row has no foreign key (it outlives an erased customer harmlessly) and
is never written by the ORM.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

VERSION_TABLE = "conversations_customercontextversion"
PG_FUNCTION = "qiwei_context_version_bump"


_SQLITE_UPSERT = "ON CONFLICT (customer_id) DO UPDATE SET version = version + 1;"


def _sqlite_statements(table: str, columns: Sequence[str] | None) -> list[str]:
    def bump(ref: str) -> str:
        return f"INSERT INTO {VERSION_TABLE} (customer_id, version) VALUES ({ref}.customer_id, 1) {_SQLITE_UPSERT}"

    moved = (
        f"INSERT INTO {VERSION_TABLE} (customer_id, version) SELECT NEW.customer_id, 1 "
        f"WHERE NEW.customer_id IS NOT OLD.customer_id {_SQLITE_UPSERT}"
    )
    of = f" OF {', '.join(columns)}" if columns else ""
    return [
        f"CREATE TRIGGER IF NOT EXISTS {table}_ctxv_ins AFTER INSERT ON {table} FOR EACH ROW BEGIN {bump('NEW')} END",
        f"CREATE TRIGGER IF NOT EXISTS {table}_ctxv_del AFTER DELETE ON {table} FOR EACH ROW BEGIN {bump('OLD')} END",
        f"CREATE TRIGGER IF NOT EXISTS {table}_ctxv_upd AFTER UPDATE{of} ON {table} FOR EACH ROW "
        f"BEGIN {bump('OLD')} {moved} END",
    ]


_PG_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {PG_FUNCTION}() RETURNS trigger AS $$
DECLARE
    customer bigint;
BEGIN
    -- The customer row first, then the version row: every writer that also locks the customer
    -- (ingest, the capture flush) takes the two in the same order, so they cannot deadlock.
    IF TG_OP = 'DELETE' THEN customer := OLD.customer_id; ELSE customer := NEW.customer_id; END IF;
    PERFORM 1 FROM conversations_customer WHERE id = customer FOR UPDATE;
    IF TG_OP <> 'INSERT' THEN
        INSERT INTO {VERSION_TABLE} (customer_id, version) VALUES (OLD.customer_id, 1)
        ON CONFLICT (customer_id) DO UPDATE SET version = {VERSION_TABLE}.version + 1;
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.customer_id IS DISTINCT FROM OLD.customer_id) THEN
        INSERT INTO {VERSION_TABLE} (customer_id, version) VALUES (NEW.customer_id, 1)
        ON CONFLICT (customer_id) DO UPDATE SET version = {VERSION_TABLE}.version + 1;
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql
"""


def _pg_statements(table: str, columns: Sequence[str] | None) -> list[str]:
    of = f" OF {', '.join(columns)}" if columns else ""
    return [
        f"DROP TRIGGER IF EXISTS {table}_ctxv ON {table}",
        f"CREATE TRIGGER {table}_ctxv AFTER INSERT OR DELETE OR UPDATE{of} ON {table} "
        f"FOR EACH ROW EXECUTE FUNCTION {PG_FUNCTION}()",
    ]


def install(schema_editor: Any, tables: dict[str, Sequence[str] | None]) -> None:
    """Create the bump triggers on `tables` (table -> the columns whose UPDATE bumps; None: any)."""
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        statements = [s for table, columns in tables.items() for s in _sqlite_statements(table, columns)]
    elif vendor == "postgresql":
        triggers = [s for table, columns in tables.items() for s in _pg_statements(table, columns)]
        statements = [_PG_FUNCTION_SQL, *triggers]
    else:
        raise NotImplementedError(f"context version triggers for {vendor}")
    for statement in statements:
        schema_editor.execute(statement)


def uninstall(schema_editor: Any, tables: dict[str, Sequence[str] | None]) -> None:
    vendor = schema_editor.connection.vendor
    for table in tables:
        if vendor == "sqlite":
            for suffix in ("ins", "del", "upd"):
                schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_ctxv_{suffix}")
        else:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_ctxv ON {table}")
