"""Hand-written SQL for the hottest reads, without the ORM's per-call cost and without Django's
private query internals: a `Statement` is one SQL text, written once with table and column names
from the models' `_meta` (`table`, `name`, `columns`), run on the cursor with its parameters bound
by the driver (datetimes adapted as the ORM adapts them), and each result value converted as the
ORM converts it (`_converter`).

The statements live beside the app whose tables they read (`memory.sql`, and here the platform's
own: `token_with_user`, `account_access`); each has an ORM twin, beside the test that runs both
on the same rows (`tests/qiwei_site/platform/sql_twins.py`, `tests/memory/sql_twins.py`), on
SQLite and on PostgreSQL."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connections, router
from django.db.models import Field, Model
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from qiwei_site.platform.tenancy import current_alias

Row = tuple[Any, ...]


def table(model: type[Model]) -> str:
    return f'"{model._meta.db_table}"'


def name(model: type[Model], field: str) -> str:
    """A field's column, quoted (`pk` for the primary key); both backends quote with `"`."""
    column = model._meta.pk.column if field == "pk" else model._meta.get_field(field).column  # type: ignore[union-attr]
    return f'"{column}"'


def columns(model: type[Model], fields: Sequence[str], alias: str) -> str:
    return ", ".join(f"{alias}.{name(model, field)}" for field in fields)


def fields(model: type[Model], names: Sequence[str]) -> list[Field[Any, Any]]:
    return [model._meta.get_field(name) for name in names]  # type: ignore[misc]


def attnames(model: type[Model], names: Sequence[str]) -> list[str]:
    """The attribute names `Model.from_db` takes, for these fields (`customer_id` for `customer`)."""
    return [model._meta.get_field(field).attname for field in names]  # type: ignore[union-attr]


def concrete(model: type[Model]) -> list[str]:
    return [field.name for field in model._meta.concrete_fields]


# --- values as the ORM gives them -----------------------------------------------------------------


def _identity(value: Any) -> Any:
    return value


def _converter(field: Field[Any, Any] | str | None, connection: Any) -> Callable[[Any], Any]:
    """What turns the driver's value into the ORM's: datetimes aware (SQLite stores text in the
    connection's time zone), booleans from SQLite's integers, JSON decoded by the field itself
    (`from_db_value`, the documented hook for custom fields), floats as floats; the kinds the driver
    already gives as the ORM does pass as they are, and any other kind is refused (TypeError)."""
    kind = field if isinstance(field, str) or field is None else field.get_internal_type()
    sqlite = connection.vendor == "sqlite"
    if kind == "DateTimeField":
        return _datetime_converter(connection) if sqlite else _identity
    if kind == "BooleanField":
        return (lambda value: None if value is None else bool(value)) if sqlite else _identity
    if kind == "FloatField":
        return lambda value: None if value is None else float(value)
    if kind == "JSONField" and isinstance(field, Field):
        from_db_value = field.from_db_value  # type: ignore[attr-defined]

        def decode(value: Any) -> Any:
            if value is None or not isinstance(value, str | bytes):
                return value
            return from_db_value(value, None, connection)

        return decode
    if kind is None or kind in _AS_THE_DRIVER_GIVES:
        return _identity
    # A Date, Time, Decimal, UUID, Duration or binary column would come back as the driver's text or
    # bytes on SQLite without a word: refused until a converter for it is written (and tested).
    raise TypeError(f"qiwei_site.platform.sql does not convert {kind} columns; add a converter for it")


# Field kinds whose value the driver already gives as the ORM does, on SQLite and PostgreSQL.
_AS_THE_DRIVER_GIVES = frozenset(
    {
        "AutoField",
        "BigAutoField",
        "SmallAutoField",
        "IntegerField",
        "BigIntegerField",
        "SmallIntegerField",
        "PositiveIntegerField",
        "PositiveBigIntegerField",
        "PositiveSmallIntegerField",
        "ForeignKey",
        "OneToOneField",
        "CharField",
        "TextField",
        "SlugField",
        "EmailField",
        "URLField",
        "GenericIPAddressField",
        "FilePathField",
        "FileField",
        "ImageField",
    }
)


def _datetime_converter(connection: Any) -> Callable[[Any], Any]:
    zone = connection.timezone if settings.USE_TZ else None

    def convert(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, datetime):
            try:
                value = datetime.fromisoformat(value)  # what Django writes; parse_datetime is slower
            except ValueError:
                value = parse_datetime(value)
        if zone is not None and value is not None and timezone.is_naive(value):
            value = timezone.make_aware(value, zone)
        return value

    return convert


class Statement:
    """One SQL statement and, per result column, the field (or kind) its value converts as."""

    def __init__(self, sql: str, fields: Sequence[Field[Any, Any] | str | None]) -> None:
        self.sql = sql
        self.fields = list(fields)
        self._converters: dict[str, list[Callable[[Any], Any]] | None] = {}

    def _converters_for(self, connection: Any) -> list[Callable[[Any], Any]] | None:
        key = f"{connection.vendor}:{connection.timezone_name}"
        if key not in self._converters:
            converters = [_converter(field, connection) for field in self.fields]
            plain = all(converter is _identity for converter in converters)
            self._converters[key] = None if plain else converters
        return self._converters[key]

    @staticmethod
    def _adapted(connection: Any, params: Sequence[Any]) -> list[Any]:
        adapt = connection.ops.adapt_datetimefield_value
        return [adapt(value) if isinstance(value, datetime) else value for value in params]

    def execute(self, *params: Any, using: str | None = None) -> int:
        """Run a statement that changes rows; returns how many it changed."""
        connection = connections[using or current_alias()]
        with connection.cursor() as cursor:
            cursor.execute(self.sql, self._adapted(connection, params))
            return int(cursor.rowcount)

    def rows(self, *params: Any, using: str | None = None) -> list[Row]:
        """The rows, each value as the ORM would give it (`using`: the selected account's database
        unless named)."""
        connection = connections[using or current_alias()]
        with connection.cursor() as cursor:
            cursor.execute(self.sql, self._adapted(connection, params))
            fetched = cursor.fetchall()
        converters = self._converters_for(connection)
        if converters is None:
            return [tuple(row) for row in fetched]
        changing = [(index, convert) for index, convert in enumerate(converters) if convert is not _identity]
        rows = []
        for row in fetched:
            values = list(row)
            for index, convert in changing:
                values[index] = convert(values[index])
            rows.append(tuple(values))
        return rows


# --- the platform's own: every API request reads its token and the account it names ------------


@functools.cache
def _token_statement() -> tuple[Statement, list[str], list[str]]:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    user_model = get_user_model()
    token_names, user_names = ["key", "user", "created"], concrete(user_model)
    statement = Statement(
        f"SELECT {columns(Token, token_names, 't')}, {columns(user_model, user_names, 'u')}"
        f" FROM {table(Token)} t INNER JOIN {table(user_model)} u"
        f" ON u.{name(user_model, 'pk')} = t.{name(Token, 'user')}"
        f" WHERE t.{name(Token, 'key')} = %s",
        [*fields(Token, token_names), *fields(user_model, user_names)],
    )
    return statement, attnames(Token, token_names), attnames(user_model, user_names)


def token_with_user(key: str) -> Any:
    """The token with its user (as DRF's `Token.objects.select_related("user").get(key=key)` gives
    them, its twin), or None. Read on every request, never cached: a revoked token or a deactivated
    user must stop working at once."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    statement, token_attnames, user_attnames = _token_statement()
    using = router.db_for_read(Token)
    rows = statement.rows(key, using=using)
    if not rows:
        return None
    split = len(token_attnames)
    token = Token.from_db(using, token_attnames, rows[0][:split])
    token.user = get_user_model().from_db(using, user_attnames, rows[0][split:])
    return token


@functools.cache
def _access_statements() -> tuple[Statement, Statement]:
    from qiwei_site.platform.models import AccountMembership, WeComAccount

    account, membership = table(WeComAccount), table(AccountMembership)
    active = f"a.{name(WeComAccount, 'is_active')}"
    any_active = Statement(
        f"SELECT 1 FROM {account} a WHERE a.{name(WeComAccount, 'pk')} = %s AND {active} LIMIT 1", [None]
    )
    member = Statement(
        f"SELECT 1 FROM {membership} m INNER JOIN {account} a"
        f" ON a.{name(WeComAccount, 'pk')} = m.{name(AccountMembership, 'account')}"
        f" WHERE m.{name(AccountMembership, 'user')} = %s AND m.{name(AccountMembership, 'account')} = %s"
        f" AND {active} LIMIT 1",
        [None],
    )
    return any_active, member


def account_access(user_id: int, account_id: str, *, superuser: bool) -> bool:
    """Whether the account is active and (unless `superuser`) the user is its member. Twin:
    `tests.qiwei_site.platform.sql_twins.account_access`."""
    from qiwei_site.platform.models import WeComAccount

    any_active, member = _access_statements()
    using = router.db_for_read(WeComAccount)
    if superuser:
        return bool(any_active.rows(account_id, using=using))
    return bool(member.rows(user_id, account_id, using=using))


@functools.cache
def _token_failure_statements() -> tuple[str, str, str]:
    from qiwei_site.platform.models import TokenFailureWindow

    t = table(TokenFailureWindow)
    address, minute, failures = (name(TokenFailureWindow, f) for f in ("address", "minute", "failures"))
    take = (
        f"INSERT INTO {t} ({address}, {minute}, {failures}) VALUES (%s, %s, 1) "
        f"ON CONFLICT ({address}, {minute}) DO UPDATE SET {failures} = {t}.{failures} + 1 RETURNING {failures}"
    )
    give_back = f"UPDATE {t} SET {failures} = {failures} - 1 WHERE {address} = %s AND {minute} = %s AND {failures} > 0"
    purge = f"DELETE FROM {t} WHERE {minute} < %s"
    return take, give_back, purge


def token_failure_take(*, address: str, minute: int) -> int:
    """One slot of this address's wrong-token limit for this minute, taken atomically in `default`
    (shared by every process); returns how many are taken now. A new minute's first slot also
    removes the rows of minutes past."""
    take, _give_back, purge = _token_failure_statements()
    with connections["default"].cursor() as cursor:
        cursor.execute(take, [address[:64], minute])
        taken = int(cursor.fetchone()[0])
        if taken == 1:
            cursor.execute(purge, [minute - 2])
    return taken


def token_failure_give_back(*, address: str, minute: int) -> None:
    """A valid token gives its slot back."""
    _take, give_back, _purge = _token_failure_statements()
    with connections["default"].cursor() as cursor:
        cursor.execute(give_back, [address[:64], minute])
