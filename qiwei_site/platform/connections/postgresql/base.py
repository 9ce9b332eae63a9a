"""Django's PostgreSQL backend whose account connections come from, and go back to, the process's
account pool (`qiwei_site.platform.connections`). Everything else is Django's."""

from __future__ import annotations

from typing import Any

import psycopg as Database
from django.db.backends.postgresql import base as postgresql
from psycopg import IsolationLevel
from psycopg.pq import TransactionStatus

from qiwei_site.platform.connections import (
    ConnectionCapReached,
    PoolKey,
    account_pool,
    is_pooled_alias,
    socket_is_quiet,
)


class DatabaseWrapper(postgresql.DatabaseWrapper):
    def _pool_key(self) -> PoolKey:
        s = self.settings_dict
        return (self.alias, str(s["NAME"]), str(s["HOST"]), str(s["PORT"]), str(s["USER"]))

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        if not is_pooled_alias(self.alias):
            return super().get_new_connection(conn_params)
        level = self.settings_dict["OPTIONS"].get("isolation_level")
        try:
            raw = account_pool.checkout(
                self._pool_key(), lambda: super(DatabaseWrapper, self).get_new_connection(conn_params), _alive
            )
        except ConnectionCapReached as exc:
            raise Database.OperationalError(str(exc)) from exc
        # Django sets this while connecting; a pooled connection skipped that step.
        self.isolation_level = IsolationLevel(level) if level is not None else IsolationLevel.READ_COMMITTED
        return raw

    def _close(self) -> None:
        raw = self.connection
        if raw is None or not is_pooled_alias(self.alias):
            return super()._close()  # type: ignore[misc]  # missing from django-stubs
        reusable = (
            not self.in_atomic_block
            and not raw.closed
            and not raw.broken
            and raw.info.transaction_status == TransactionStatus.IDLE
            and self.settings_dict is not None
            and _still_registered(self.alias, self._pool_key())
        )
        with self.wrap_database_errors:
            account_pool.checkin(
                self._pool_key(), raw, keep=getattr(self, "qiwei_keep_connection", False), reusable=reusable
            )
        return None


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
    return (alias, str(current["NAME"]), str(current["HOST"]), str(current["PORT"]), str(current["USER"])) == key
