"""Django's PostgreSQL backend whose account connections come from, and go back to, the process's
account pool (`qiwei_site.platform.connections`), and which, in the schema layout (issue 23),
switches every transaction to the account's role and schema. Everything else is Django's.

The switch (schema layout only): the first statement of every transaction — an autocommit
statement is a transaction of its own — is sent as one simple query behind
`RESET ROLE; RESET search_path; SET LOCAL ROLE <account role>; SET LOCAL search_path TO <account
schema>, qiwei_ext;`, in the same round trip. `SET LOCAL` ends with the transaction, so a connection
carries nothing of an account into the next use, by whichever account (and through PgBouncer's
transaction pooling, where the next transaction may run on another server connection, the switch
always travels with it). The two RESETs first clear a session-level role or path the server
connection inherited (issue 36: a client that left `SET ROLE` on a PgBouncer server connection
would otherwise hand its role to whoever's statement runs there unswitched next): at commit the
connection is back to the login role. A statement sent without the switch runs as the login role,
which may read no account schema: the database refuses it (permission denied), never answers with
another account's rows — provided no other client left a session-level role on that server
connection since, which the shipped PgBouncer settings (`deploy/pgbouncer.ini`: DISCARD ALL's
parts but DISCARD PLANS, after every transaction) make sure of.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import psycopg as Database
from django.conf import settings
from django.db.backends.postgresql import base as postgresql
from psycopg import IsolationLevel, sql
from psycopg.pq import TransactionStatus

from qiwei_site.platform.connections import (
    ConnectionCapReached,
    PoolKey,
    account_pool,
    is_pooled_alias,
    lease_of,
    pool_enabled,
    schemas_served,
    socket_is_quiet,
)

EXTENSION_SCHEMA = "qiwei_ext"  # tenancy.EXTENSION_SCHEMA (tenancy imports this package)


# The statements the switch sends before the query: their results are skipped (`nextset`).
SWITCH_STATEMENTS = 4


@functools.lru_cache(maxsize=4096)  # a wrapper is made per request and thread: quote once per account
def switch_sql(role: str, schema: str) -> str:
    return (
        sql.SQL("RESET ROLE; RESET search_path; SET LOCAL ROLE {}; SET LOCAL search_path TO {}, {}; ")
        .format(sql.Identifier(role), sql.Identifier(schema), sql.Identifier(EXTENSION_SCHEMA))
        .as_string(None)
    )


# Django's client-side binding cursor (psycopg's ClientCursor): one simple query may hold several
# statements. Typed Any: django-stubs do not describe it.
_DjangoCursor: Any = postgresql.Cursor  # type: ignore[attr-defined]


class SwitchingCursor(_DjangoCursor):
    """Django's cursor that opens each transaction with its account's switch (`qiwei_switch`, set by
    the wrapper that made it). A cursor without one (psycopg's own, a probe) switches nothing."""

    qiwei_switch: str | None = None
    qiwei_lease = 0

    def _starts_transaction(self) -> bool:
        if self.qiwei_switch is None:
            return False
        if lease_of(self.connection) != self.qiwei_lease:
            # Kept past its account's use: the connection now serves another checkout, maybe
            # inside another account's transaction, where no switch would be sent.
            raise Database.ProgrammingError("游标所属的账号连接已归还 (this cursor outlived its account's connection)")
        return self.connection.info.transaction_status == TransactionStatus.IDLE

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        if not self._starts_transaction():
            return super().execute(query, params, **kwargs)
        if isinstance(query, sql.Composable):
            query = query.as_string(self.connection)
        elif isinstance(query, bytes | bytearray | memoryview):
            query = bytes(query).decode()
        super().execute(self.qiwei_switch + query, params, **kwargs)
        # The switch's results come first: stand on the statement's own.
        for _ in range(SWITCH_STATEMENTS):
            self.nextset()
        return self

    def executemany(self, query: Any, params_seq: Iterable[Any], **kwargs: Any) -> Any:
        if not self._starts_transaction():
            return super().executemany(query, params_seq, **kwargs)
        if self.connection.autocommit:
            with self.connection.transaction():
                super().execute(self.qiwei_switch)
                return super().executemany(query, params_seq, **kwargs)
        super().execute(self.qiwei_switch)  # psycopg begins Django's transaction first
        return super().executemany(query, params_seq, **kwargs)


class DatabaseWrapper(postgresql.DatabaseWrapper):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        s = self.settings_dict
        self.qiwei_switch = switch_sql(s["QIWEI_ROLE"], s["QIWEI_SCHEMA"]) if s.get("QIWEI_SCHEMA") else None

    def _pool_key(self) -> PoolKey:
        return pool_key(self.alias, self.settings_dict)

    def _pooled(self) -> bool:
        return is_pooled_alias(self.alias) and pool_enabled()

    def get_connection_params(self) -> dict[str, Any]:
        params = super().get_connection_params()
        if self.qiwei_switch is not None:
            params["cursor_factory"] = SwitchingCursor
        return params

    def create_cursor(self, name: str | None = None) -> Any:
        cursor = super().create_cursor(name)
        if self.qiwei_switch is not None:
            if name:  # DISABLE_SERVER_SIDE_CURSORS is set in this layout: never reached
                raise Database.ProgrammingError("named cursors are disabled in the schema layout")
            cursor.qiwei_switch = self.qiwei_switch
            cursor.qiwei_lease = lease_of(self.connection)
        return cursor

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        if not self._pooled():
            return super().get_new_connection(conn_params)
        level = self.settings_dict["OPTIONS"].get("isolation_level")
        try:
            raw = account_pool.checkout(
                self._pool_key(),
                lambda: super(DatabaseWrapper, self).get_new_connection(conn_params),
                _alive,
                affinity=self.alias if self.qiwei_switch is not None else None,
            )
        except ConnectionCapReached as exc:
            raise Database.OperationalError(str(exc)) from exc
        if self.qiwei_switch is not None:
            schemas_served(raw).add(self.alias)
        # Django sets this while connecting; a pooled connection skipped that step.
        self.isolation_level = IsolationLevel(level) if level is not None else IsolationLevel.READ_COMMITTED
        return raw

    def _close(self) -> None:
        raw = self.connection
        if raw is None or not self._pooled():
            return super()._close()  # type: ignore[misc]  # missing from django-stubs
        reusable = (
            not self.in_atomic_block
            and not raw.closed
            and not raw.broken
            and raw.info.transaction_status == TransactionStatus.IDLE
            and self.settings_dict is not None
            and _still_registered(self.alias, self._pool_key())
            # A backend caches the catalogue of every schema it has read (~0.25 MB each): one that
            # served many accounts is closed rather than kept (docs/scale-out.md).
            and len(schemas_served(raw)) <= int(getattr(settings, "QIWEI_PG_SCHEMAS_PER_CONNECTION", 50))
        )
        with self.wrap_database_errors:
            account_pool.checkin(
                self._pool_key(), raw, keep=getattr(self, "qiwei_keep_connection", False), reusable=reusable
            )
        return None


def pool_key(alias: str, settings_dict: dict[str, Any]) -> PoolKey:
    """A database per account: its alias's own connections. The schema layout: every account of
    the one database shares them (the switch travels with each transaction)."""
    s = settings_dict
    owner = f"schema:{s['NAME']}" if s.get("QIWEI_SCHEMA") else alias
    return (owner, str(s["NAME"]), str(s["HOST"]), str(s["PORT"]), str(s["USER"]))


def _alive(raw: Any) -> bool:
    return (
        not raw.closed
        and not raw.broken
        and raw.info.transaction_status == TransactionStatus.IDLE
        and socket_is_quiet(raw.fileno())
    )


def _still_registered(alias: str, key: PoolKey) -> bool:
    from django.db import connections

    current = connections.settings.get(alias)
    if current is None:
        return False
    return pool_key(alias, current) == key
