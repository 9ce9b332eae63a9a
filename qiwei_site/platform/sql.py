"""Hand-written SQL for the hottest reads and writes, without the ORM's per-call cost and without
Django's private query internals: a `Statement` is one SQL text, written once with table and column names
from the models' `_meta` (`table`, `name`, `columns`), run on the cursor with its parameters bound
by name (`%(name)s`, datetimes adapted as the ORM adapts them), each result value converted as the
ORM converts it (`_converter`), and each row a named tuple (its `row` class; `Part`: one model's
columns inside a wider row, read back by name into an instance). Writes: `insert`, `insert_unless`
and `update_rows`, the statements `bulk_create` and `bulk_update` run, each value prepared by its
field as they prepare it, without their compiler (`insert` calls the model's own
`_prepare_related_fields_for_save` and sets `_state`, as `bulk_create` does).

The statements live beside the app whose tables they read (`memory.sql`, and here the platform's
own: `token_with_user`, `account_access`); each has an ORM twin, beside the test that runs both
on the same rows (`tests/qiwei_site/platform/sql_twins.py`, `tests/memory/sql_twins.py`), on
SQLite and on PostgreSQL."""

from __future__ import annotations

import collections
import functools
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Generic, NamedTuple, TypeVar, overload

from django.conf import settings
from django.db import connections, router, transaction
from django.db.models import AutoField, BinaryField, Field, Model
from django.utils.dateparse import parse_datetime

from qiwei_site.platform.tenancy import current_alias

Row = tuple[Any, ...]
R = TypeVar("R", bound=tuple[Any, ...])
M = TypeVar("M", bound=Model)


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
        if zone is not None and value is not None and value.tzinfo is None:
            # What timezone.make_aware does for a naive value (its checks cost more than the
            # replace: ~6% of a context build's CPU, 260 datetimes a build).
            value = value.replace(tzinfo=zone)
        return value

    return convert


# A row class made from names at run time (a model's concrete fields): typed Any, as mypy cannot
# see its fields.
_namedtuple: Any = collections.namedtuple


def row_type(typename: str, names: Sequence[str]) -> Any:
    """A named-tuple row class with these fields, one per result column, in the statement's order."""
    return _namedtuple(typename, names)


class Part(Generic[M]):
    """One model's columns inside a wider row: selected by `select(alias)`, named
    `<prefix>_<attname>` in the row (`row_names`), read back by those names."""

    def __init__(self, model: type[M], names: Sequence[str], prefix: str) -> None:
        self.model = model
        self.names = list(names)
        self.fields = fields(model, self.names)
        self.attnames = attnames(model, self.names)
        self.row_names = [f"{prefix}_{attname}" for attname in self.attnames]
        get = operator.attrgetter(*self.row_names)
        self._get: Callable[[Any], tuple[Any, ...]] = get if len(self.row_names) > 1 else lambda row: (get(row),)

    def select(self, alias: str) -> str:
        return columns(self.model, self.names, alias)

    def values(self, row: Any) -> tuple[Any, ...]:
        """The part's values, in its fields' order."""
        return self._get(row)

    def instance(self, row: Any, using: str) -> M:
        """The model instance the part's values make (`Model.from_db`, as the ORM makes it)."""
        return self.model.from_db(using, self.attnames, self._get(row))  # type: ignore[return-value]

    def optional(self, row: Any, using: str) -> M | None:
        """As `instance`, or None when an outer join found no row (its first field, the key, is NULL)."""
        values = self._get(row)
        return None if values[0] is None else self.model.from_db(using, self.attnames, values)  # type: ignore[return-value]


class Statement(Generic[R]):
    """One SQL statement, per result column the field (or kind) its value converts as, and the
    row class its rows are made as (a named tuple; none: plain tuples, for a statement whose rows
    are only counted). Parameters are bound by name: `%(name)s` in the SQL, `name=` in the call."""

    @overload
    def __init__(self: Statement[Row], sql: str, fields: Sequence[Field[Any, Any] | str | None]) -> None: ...

    @overload
    def __init__(self, sql: str, fields: Sequence[Field[Any, Any] | str | None], row: type[R]) -> None: ...

    def __init__(self, sql: str, fields: Sequence[Field[Any, Any] | str | None], row: Any = None) -> None:
        self.sql = sql
        self.fields = list(fields)
        if row is not None and fields and len(row._fields) != len(self.fields):
            raise ValueError(f"{row.__name__} has {len(row._fields)} fields for {len(self.fields)} columns")
        make: Any = row._make if row is not None else tuple
        self._make: Callable[[Any], R] = make
        self._converters: dict[str, list[Callable[[Any], Any]] | None] = {}

    def _converters_for(self, connection: Any) -> list[Callable[[Any], Any]] | None:
        key = f"{connection.vendor}:{connection.timezone_name}"
        if key not in self._converters:
            converters = [_converter(field, connection) for field in self.fields]
            plain = all(converter is _identity for converter in converters)
            self._converters[key] = None if plain else converters
        return self._converters[key]

    @staticmethod
    def _adapted(connection: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        adapt = connection.ops.adapt_datetimefield_value
        return {key: adapt(value) if isinstance(value, datetime) else value for key, value in params.items()}

    def execute(self, *, using: str | None = None, **params: Any) -> int:
        """Run a statement that changes rows; returns how many it changed."""
        connection = connections[using or current_alias()]
        with connection.cursor() as cursor:
            cursor.execute(self.sql, self._adapted(connection, params))
            return int(cursor.rowcount)

    def rows(self, *, using: str | None = None, **params: Any) -> list[R]:
        """The rows, each value as the ORM would give it (`using`: the selected account's database
        unless named)."""
        connection = connections[using or current_alias()]
        with connection.cursor() as cursor:
            cursor.execute(self.sql, self._adapted(connection, params))
            fetched = cursor.fetchall()
        make = self._make
        converters = self._converters_for(connection)
        if converters is None:
            return [make(row) for row in fetched]
        changing = [(index, convert) for index, convert in enumerate(converters) if convert is not _identity]
        rows = []
        for row in fetched:
            values = list(row)
            for index, convert in changing:
                values[index] = convert(values[index])
            rows.append(make(values))
        return rows


# --- inserts: `bulk_create`'s statement without its compiler ---------------------------------------


@functools.cache
def _written(model: type[Model]) -> tuple[tuple[Field[Any, Any], ...], str]:
    """The fields an insert writes (every concrete one but an automatic key, which the database
    gives, and a generated one, as `bulk_create` leaves them) and their quoted columns."""
    written = tuple(
        field
        for field in model._meta.concrete_fields
        if not _automatic_key(field) and not getattr(field, "generated", False)
    )
    return written, ", ".join(f'"{field.column}"' for field in written)  # type: ignore[return-value]


@functools.lru_cache(maxsize=512)
def _insert_sql(model: type[Model], count: int, unique_fields: tuple[str, ...], update_fields: tuple[str, ...]) -> str:
    """`INSERT INTO t (columns) VALUES (…), … [ON CONFLICT (unique) DO UPDATE SET …] RETURNING pk` for
    `count` new rows of `model`, as `bulk_create` writes them (with `update_conflicts=True` when
    `update_fields` are named)."""
    written, quoted = _written(model)
    row = f"({', '.join(['%s'] * len(written))})"
    conflict = ""
    if update_fields:
        keys = ", ".join(name(model, field) for field in unique_fields)
        sets = ", ".join(f"{name(model, field)} = EXCLUDED.{name(model, field)}" for field in update_fields)
        conflict = f" ON CONFLICT ({keys}) DO UPDATE SET {sets}"
    values = ", ".join([row] * count)
    return f"INSERT INTO {table(model)} ({quoted}) VALUES {values}{conflict} RETURNING {name(model, 'pk')}"


def _automatic_key(field: Field[Any, Any]) -> bool:
    return bool(field.primary_key and isinstance(field, AutoField))


def _plain(model: type[Model], written: Sequence[Field[Any, Any]], connection: Any) -> bool:
    """Whether every value is written as a plain `%s` (no field asks for a placeholder of its own but
    a BinaryField, whose placeholder is `%s` on both backends), and the model is no child of another."""
    return (
        not model._meta.parents
        and connection.vendor in ("sqlite", "postgresql")
        and not any(hasattr(field, "get_placeholder") and not isinstance(field, BinaryField) for field in written)
    )


def _insert_params(objs: Sequence[Model], written: Sequence[Field[Any, Any]], connection: Any) -> list[Any] | None:
    """Every object's values in the statement's order, each as `bulk_create` prepares it, or None when
    one is an expression (a database default, an F()) that only the ORM's compiler writes."""
    params: list[Any] = []
    for obj in objs:
        obj._prepare_related_fields_for_save(operation_name="bulk_create")  # type: ignore[attr-defined]  # a related row saved since
        for field in written:
            value = field.pre_save(obj, True)  # type: ignore[no-untyped-call]  # auto_now_add, as the ORM
            if hasattr(value, "resolve_expression"):
                return None
            params.append(field.get_db_prep_save(value, connection=connection))
    return params


def insert(
    objs: Sequence[M],
    *,
    using: str | None = None,
    unique_fields: Sequence[str] = (),
    update_fields: Sequence[str] = (),
) -> list[M]:
    """Insert new rows of one model in one statement, as `Model.objects.bulk_create(objs)` does (no
    signals; each value prepared by its field, `pre_save` then `get_db_prep_save`), and give each its
    key; without the ORM's query compiler, which costs more than the statement on a hot path (one
    message's ingest writes four rows). An automatic key already set (or a key of another kind left
    unset), a value that is an expression, or more rows than one statement takes: `bulk_create`
    itself. `update_fields` on a conflict over `unique_fields`: `bulk_create(update_conflicts=True)`.
    Twin: `bulk_create`."""
    if not objs:
        return []
    model = type(objs[0])
    alias = using or router.db_for_write(model)
    connection = connections[alias]
    written = _written(model)[0]
    params = (
        _insert_params(objs, written, connection)
        if connection.ops.bulk_batch_size(written, objs) >= len(objs)
        and _plain(model, written, connection)
        and all((obj.pk is None) is _automatic_key(model._meta.pk) for obj in objs)  # type: ignore[arg-type]
        else None
    )
    if params is None:
        conflicts: dict[str, Any] = (
            {"update_conflicts": True, "unique_fields": unique_fields, "update_fields": update_fields}
            if update_fields
            else {}
        )
        return list(model._default_manager.using(alias).bulk_create(objs, **conflicts))  # type: ignore[arg-type]
    sql = _insert_sql(model, len(objs), tuple(unique_fields), tuple(update_fields))
    with transaction.mark_for_rollback_on_error(using=alias), connection.cursor() as cursor:
        cursor.execute(sql, params)
        keys = cursor.fetchall()
    _keys_given(objs, keys, alias)
    return list(objs)


def _keys_given(objs: Sequence[Model], keys: Sequence[tuple[Any, ...]], alias: str) -> None:
    """Each inserted object's key as the database returned it (its own, for a key of another kind),
    and its state saved, as `bulk_create` leaves it."""
    pk = objs[0]._meta.pk
    assert pk is not None
    for obj, (key,) in zip(objs, keys, strict=True):
        setattr(obj, pk.attname, key)
        obj._state.adding, obj._state.db = False, alias


# A cast's length ("varchar(64)" → "varchar"): an explicit cast would cut a longer value where the
# insert itself refuses it, as `bulk_create`'s does.
_LENGTH = re.compile(r"\(\d+\)$")


@functools.lru_cache(maxsize=128)
def _insert_unless_sql(model: type[Model], match: tuple[str, ...], casts: tuple[str, ...] | None) -> str:
    """`INSERT INTO t (columns) SELECT %s, … WHERE NOT EXISTS (a row with the same `match` values)
    RETURNING pk` for one new row (`casts`: each value's type, on PostgreSQL, where a SELECT's bare
    parameters have none)."""
    written, quoted = _written(model)
    values = ", ".join(f"CAST(%s AS {cast})" for cast in casts) if casts else ", ".join(["%s"] * len(written))
    same = " AND ".join(f"x.{name(model, field)} = %s" for field in match)
    return (
        f"INSERT INTO {table(model)} ({quoted}) SELECT {values}"
        f" WHERE NOT EXISTS (SELECT 1 FROM {table(model)} x WHERE {same}) RETURNING {name(model, 'pk')}"
    )


def insert_unless(obj: M, *, match: Sequence[str], using: str | None = None) -> M | None:
    """Insert one new row unless a row with the same values of the `match` fields exists, in one
    statement (what `exists()` then `bulk_create([obj])` do in two; on PostgreSQL after a
    transaction lock on the match, so that two concurrent calls insert once); the object with its
    key, or None when such a row was there. Twin: `filter(**match).exists()`, then `bulk_create`."""
    model = type(obj)
    alias = using or router.db_for_write(model)
    connection = connections[alias]
    written = _written(model)[0]
    plain = _plain(model, written, connection) and (obj.pk is None) is _automatic_key(model._meta.pk)  # type: ignore[arg-type]
    params = _insert_params([obj], written, connection) if plain else None
    match_fields: list[Field[Any, Any]] = fields(model, match)
    matched = [field.get_db_prep_save(getattr(obj, field.attname), connection=connection) for field in match_fields]
    with transaction.atomic(using=alias, savepoint=False), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # READ COMMITTED: NOT EXISTS cannot see a concurrent transaction's uncommitted row, so two
            # could both insert. A transaction lock on (schema, table, match values) makes the second
            # wait for the first to end; its INSERT then takes a new snapshot and sees the row.
            # (SQLite: one writer at a time; the statement sees every committed row.) The key is the
            # prepared values' repr: equal for the ids and texts matched on (not for values equal in
            # SQL but written differently, such as 1.0 and 1.00).
            cursor.execute(_MATCH_LOCK, [f"{model._meta.db_table}|{matched!r}"])
        if params is None:
            same = {field.attname: getattr(obj, field.attname) for field in match_fields}
            if model._default_manager.using(alias).filter(**same).exists():
                return None
            return insert([obj], using=alias)[0]
        casts = (
            tuple(_LENGTH.sub("", str(field.cast_db_type(connection))) for field in written)
            if connection.vendor == "postgresql"
            else None
        )
        cursor.execute(_insert_unless_sql(model, tuple(match), casts), [*params, *matched])
        keys = cursor.fetchall()
    if not keys:
        return None
    _keys_given([obj], keys, alias)
    return obj


_MATCH_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(coalesce(current_schema(), '') || '|' || %s, 0))"


@functools.lru_cache(maxsize=512)
def _update_sql(model: type[Model], count: int, names: tuple[str, ...], casts: tuple[str, ...] | None) -> str:
    """`UPDATE t SET …` of these fields for `count` rows by key: `field = %s` for one row, else each
    field a `CASE key WHEN %s THEN %s … END` (as `bulk_update` writes it; `casts`: the type each
    CASE is cast to, on PostgreSQL)."""
    key = name(model, "pk")
    sets = []
    for index, field_name in enumerate(names):
        column = name(model, field_name)
        if count == 1:
            sets.append(f"{column} = %s")
            continue
        case = f"CASE {key} {' '.join(['WHEN %s THEN %s'] * count)} END"
        sets.append(f"{column} = {f'CAST({case} AS {casts[index]})' if casts else case}")
    where = f"{key} = %s" if count == 1 else f"{key} IN ({', '.join(['%s'] * count)})"
    return f"UPDATE {table(model)} SET {', '.join(sets)} WHERE {where}"


def update_rows(rows: Sequence[Model], names: Sequence[str], *, using: str | None = None) -> int:
    """Write these fields of these rows (of one model, each by its key) in one statement, as
    `bulk_update(rows, names)` does (each value prepared by its field; no `pre_save`, no signals),
    without its compiler's cost: `queryset.update()` for one row, CASE expressions for several.
    Returns how many rows changed. Twin: `bulk_update`."""
    if not rows:
        return 0
    model = type(rows[0])
    alias = using or router.db_for_write(model)
    connection = connections[alias]
    fields_ = [model._meta.get_field(field_name) for field_name in names]
    if any(row.pk is None for row in rows):
        raise ValueError("update_rows() needs every row's primary key (as bulk_update() does)")
    for row in rows:  # a related row saved since it was assigned: its key, as bulk_update takes it
        row._prepare_related_fields_for_save(operation_name="bulk_update", fields=fields_)  # type: ignore[attr-defined]
    most = connection.features.max_query_params  # None: no bound (PostgreSQL)
    fits = most is None or len(rows) * (2 * len(fields_) + 1) <= most
    expression = any(
        hasattr(getattr(row, field.attname), "resolve_expression")  # type: ignore[union-attr]
        for row in rows
        for field in fields_
    )
    if not fits or expression or connection.vendor not in ("sqlite", "postgresql"):
        return int(model._default_manager.using(alias).bulk_update(rows, list(names)))
    casts = (
        tuple(field.cast_db_type(connection) for field in fields_)  # type: ignore[union-attr]
        if connection.vendor == "postgresql" and len(rows) > 1
        else None
    )
    sql = _update_sql(model, len(rows), tuple(names), casts)
    params: list[Any] = []
    for field in fields_:
        values = [field.get_db_prep_save(getattr(row, field.attname), connection=connection) for row in rows]  # type: ignore[union-attr]
        params += values if len(rows) == 1 else [p for row, v in zip(rows, values, strict=True) for p in (row.pk, v)]
    params += [row.pk for row in rows]
    with transaction.mark_for_rollback_on_error(using=alias), connection.cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.rowcount)


# --- the platform's own: every API request reads its token and the account it names ------------


@functools.cache
def _token_statement() -> tuple[Statement[Any], Part[Any], Part[Any]]:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    user_model = get_user_model()
    token, user = Part(Token, ["key", "user", "created"], "token"), Part(user_model, concrete(user_model), "user")
    statement = Statement(
        f"SELECT {token.select('t')}, {user.select('u')}"
        f" FROM {table(Token)} t INNER JOIN {table(user_model)} u"
        f" ON u.{name(user_model, 'pk')} = t.{name(Token, 'user')}"
        f" WHERE t.{name(Token, 'key')} = %(key)s",
        [*token.fields, *user.fields],
        row_type("TokenRow", [*token.row_names, *user.row_names]),
    )
    return statement, token, user


def token_with_user(key: str) -> Any:
    """The token with its user (as DRF's `Token.objects.select_related("user").get(key=key)` gives
    them, its twin), or None. Read on every request, never cached: a revoked token or a deactivated
    user must stop working at once."""
    from rest_framework.authtoken.models import Token

    statement, token_part, user_part = _token_statement()
    using = router.db_for_read(Token)
    rows = statement.rows(key=key, using=using)
    if not rows:
        return None
    token = token_part.instance(rows[0], using)
    token.user = user_part.instance(rows[0], using)
    return token


@functools.cache
def _access_statements() -> tuple[Statement[Row], Statement[Row]]:
    from qiwei_site.platform.models import AccountMembership, WeComAccount

    account, membership = table(WeComAccount), table(AccountMembership)
    active = f"a.{name(WeComAccount, 'is_active')}"
    any_active = Statement(
        f"SELECT 1 FROM {account} a WHERE a.{name(WeComAccount, 'pk')} = %(account)s AND {active} LIMIT 1", [None]
    )
    member = Statement(
        f"SELECT 1 FROM {membership} m INNER JOIN {account} a"
        f" ON a.{name(WeComAccount, 'pk')} = m.{name(AccountMembership, 'account')}"
        f" WHERE m.{name(AccountMembership, 'user')} = %(user)s"
        f" AND m.{name(AccountMembership, 'account')} = %(account)s"
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
        return bool(any_active.rows(account=account_id, using=using))
    return bool(member.rows(user=user_id, account=account_id, using=using))


class _Taken(NamedTuple):
    failures: int


@functools.cache
def _token_failure_statements() -> tuple[Statement[_Taken], Statement[Row], Statement[Row]]:
    from qiwei_site.platform.models import TokenFailureWindow

    t = table(TokenFailureWindow)
    address, minute, failures = (name(TokenFailureWindow, f) for f in ("address", "minute", "failures"))
    take = Statement(
        f"INSERT INTO {t} ({address}, {minute}, {failures}) VALUES (%(address)s, %(minute)s, 1) "
        f"ON CONFLICT ({address}, {minute}) DO UPDATE SET {failures} = {t}.{failures} + 1 RETURNING {failures}",
        [None],
        _Taken,
    )
    give_back = Statement(
        f"UPDATE {t} SET {failures} = {failures} - 1"
        f" WHERE {address} = %(address)s AND {minute} = %(minute)s AND {failures} > 0",
        [],
    )
    purge = Statement(f"DELETE FROM {t} WHERE {minute} < %(before)s", [])
    return take, give_back, purge


def token_failure_take(*, address: str, minute: int) -> int:
    """One slot of this address's wrong-token limit for this minute, taken atomically in `default`
    (shared by every process); returns how many are taken now. A new minute's first slot also
    removes the rows of minutes past."""
    take, _give_back, purge = _token_failure_statements()
    taken = int(take.rows(address=address[:64], minute=minute, using="default")[0].failures)
    if taken == 1:
        purge.execute(before=minute - 2, using="default")
    return taken


def token_failure_give_back(*, address: str, minute: int) -> None:
    """A valid token gives its slot back."""
    _take, give_back, _purge = _token_failure_statements()
    give_back.execute(address=address[:64], minute=minute, using="default")
