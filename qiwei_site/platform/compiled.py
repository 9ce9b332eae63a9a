"""Fixed-shape ORM queries compiled to SQL once per database backend, then run with new values.

Building and compiling a queryset costs the ORM 0.1–1 ms; running its SQL costs ~20 µs on SQLite.
A query a hot path runs again and again with other values (a context build's reads, a capture
job's claim, reads and finish) is compiled once here:

- `CompiledRead(build, *stand_ins)`: `build(*args)` returns a `values_list()` queryset; `rows(*values)`
  returns its rows as tuples, through the ORM's column converters (aware datetimes, JSON, booleans).
- `CompiledUpdate(build, *stand_ins)`: `build(*args)` returns `(queryset, values)`; `run(*values)`
  runs `queryset.update(**values)` and returns the number of rows it updated.
- `CompiledGet(model, filter, *stand_ins)`: `first(*values)` is the first instance `filter(*values)`
  gives, made as the ORM makes it, or None.

A stand-in is a value no constant of the query equals, in range for its column (an out-of-range
integer compiles to "no rows"): an `int`, a `str` or an aware `datetime`, one per argument. The
query is compiled twice, with the stand-ins and with each moved on by one (an integer by 1, a
datetime by a second, a string by a character); every compiled parameter is traced to the stand-in
it equals once prepared as the ORM prepares it (or is a constant of the query). Only when both
compilations give the same SQL text, trace the same parameters to the same arguments and the same
constants, and every argument reaches a parameter, is the plan used; otherwise the query keeps
running through the ORM, and so does a run whose value the plan cannot bind as the ORM would (None,
a naive datetime, another type).

`static` arguments are part of the SQL text (a LIMIT): they follow the others in `build`'s
arguments and each value has a plan of its own. Plans are keyed by the backend's vendor and
wrapper class, so two databases of different vendors never share SQL and a connection whose
wrapper class changes (the project's own SQLite and PostgreSQL backends) compiles its own. A run
goes to `using`, or where the router sends the queryset's model, executes on that connection (so
it is counted, logged and wrapped like any query) and applies that connection's converters.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MethodType
from typing import Any

from django.conf import settings
from django.core.exceptions import EmptyResultSet
from django.db import connections, router, transaction
from django.db.models import QuerySet
from django.db.models.query import ValuesListIterable
from django.db.models.sql import UpdateQuery

logger = logging.getLogger(__name__)


# A column's position, its expression and its converters; one bound to the compiling connection's
# operations is kept unbound (True), to be bound to the running connection's: a plan serves every
# database of its backend and must keep none of their connections alive.
_Converters = tuple[int, Any, tuple[tuple[Callable[..., Any], bool], ...]]


@dataclass(frozen=True)
class _Plan:
    sql: str
    params: tuple[Any, ...]  # as compiled; a traced parameter's own is replaced at each run
    slots: tuple[int | None, ...]  # for each parameter, the argument it takes (None: a constant)
    converters: tuple[_Converters, ...] = ()  # a read's columns that have converters
    width: int | None = None  # a read's selected columns, when ordering columns follow them


def _next(stand_in: Any) -> Any:
    """The stand-in of the second compilation: moved on by one, so the arguments stay distinct."""
    if isinstance(stand_in, str):
        return stand_in + "~"
    return stand_in + (timedelta(seconds=1) if isinstance(stand_in, datetime) else 1)


def _is_stand_in(value: Any) -> bool:
    return type(value) in (int, str) or (isinstance(value, datetime) and value.utcoffset() is not None)


_UNBOUND = object()


class _OrmOnly(Exception):
    """The query cannot run as its compiled SQL alone: it keeps running through the ORM."""


def _prepared(value: Any, stand_in: Any, connection: Any) -> Any:
    """`value` as the ORM binds it for an argument of `stand_in`'s type, or `_UNBOUND` when the
    plan cannot bind it that way (None, a naive datetime, another type: the ORM runs it)."""
    if isinstance(stand_in, datetime):
        if not isinstance(value, datetime) or (settings.USE_TZ and value.utcoffset() is None):
            return _UNBOUND
        return connection.ops.adapt_datetimefield_value(value)
    return value if type(value) is type(stand_in) else _UNBOUND


def _unbound(function: Callable[..., Any], ops: Any) -> tuple[Callable[..., Any], bool]:
    """A converter as a plan keeps it: a method of the connection's operations unbound (True)."""
    if getattr(function, "__self__", None) is ops:
        return function.__func__, True  # type: ignore[attr-defined]
    return function, False


def _slot(value: Any, prepared: Sequence[Any]) -> int | None:
    """Which argument a compiled parameter came from (by type and value), None for a constant."""
    matches = [i for i, candidate in enumerate(prepared) if type(candidate) is type(value) and candidate == value]
    return matches[0] if len(matches) == 1 else None


class _Compiled:
    """What reads and updates share: the stand-ins, the plans and their checks, the routing."""

    _writes = False

    def __init__(self, build: Callable[..., Any], *stand_ins: Any) -> None:
        for stand_in in stand_ins:
            if not _is_stand_in(stand_in):
                raise TypeError(f"a stand-in is an int, a str or an aware datetime, not {stand_in!r}")
        if len(set(stand_ins)) != len(stand_ins):
            raise ValueError("stand-ins must differ from each other")
        self.build = build
        self.stand_ins = stand_ins
        self._plans: dict[tuple[Any, ...], _Plan | None] = {}
        self._route: tuple[Callable[..., str], Any] | None = None
        self._lock = threading.Lock()

    # --- what a read or an update compiles and runs ------------------------------------------

    def _queryset(self, built: Any) -> QuerySet[Any]:
        return built  # type: ignore[no-any-return]

    def _compiler(self, built: Any, connection: Any) -> Any:
        """The SQL compiler of what `build` returned (`_OrmOnly` when its SQL is not all the ORM runs)."""
        raise NotImplementedError

    def _finish(self, plan: _Plan, compiler: Any) -> _Plan:
        return plan

    # --- plans ---------------------------------------------------------------------------------

    def _alias(self, using: str | None, static: tuple[Any, ...]) -> str:
        """`using`, or the database the router gives the queryset's model (as the ORM routes it)."""
        if using is not None:
            return using
        if self._route is None:
            queryset = self._queryset(self.build(*self.stand_ins, *static))
            writes = self._writes or bool(getattr(queryset, "_for_write", False))
            self._route = (router.db_for_write if writes else router.db_for_read, queryset.model)
        route, model = self._route
        return route(model)

    def _compile(
        self, connection: Any, stand_ins: Sequence[Any], static: tuple[Any, ...]
    ) -> tuple[Any, str, tuple[Any, ...], tuple[int | None, ...]]:
        compiler = self._compiler(self.build(*stand_ins, *static), connection)
        sql, params = compiler.as_sql()
        params = tuple(params)
        prepared = [_prepared(stand_in, stand_in, connection) for stand_in in stand_ins]
        return compiler, sql, params, tuple(_slot(value, prepared) for value in params)

    def _plan(self, connection: Any, static: tuple[Any, ...]) -> _Plan | None:
        key = (connection.vendor, type(connection), static)
        known = self._plans.get(key, _UNBOUND)
        if known is not _UNBOUND:
            return known  # type: ignore[return-value]
        plan: _Plan | None = None
        try:
            compiler, sql, params, slots = self._compile(connection, self.stand_ins, static)
            _compiler, sql_again, params_again, slots_again = self._compile(
                connection, [_next(s) for s in self.stand_ins], static
            )
        except EmptyResultSet:  # a stand-in the query cannot hold (out of range): no SQL to run
            reason = "it compiles to no rows with the stand-ins"
        except _OrmOnly as exc:
            reason = str(exc)
        else:
            constants_agree = all(
                value == again for value, again, slot in zip(params, params_again, slots, strict=True) if slot is None
            )
            if sql != sql_again or slots != slots_again or not constants_agree:
                reason = "its two compilations disagree"
            elif not set(range(len(self.stand_ins))) <= set(slots):
                reason = "an argument is not among its parameters"
            else:
                try:
                    plan = self._finish(_Plan(sql, params, slots), compiler)
                    reason = ""
                except _OrmOnly as exc:
                    reason = str(exc)
        if plan is None:
            logger.warning("compiled query %s runs through the ORM: %s", getattr(self.build, "__name__", ""), reason)
        with self._lock:
            self._plans[key] = plan
        return plan

    def _params(
        self, values: Sequence[Any], static: tuple[Any, ...], using: str | None
    ) -> tuple[Any, _Plan | None, list[Any]]:
        """The connection, the plan (None: run the ORM) and the parameters to run it with."""
        if len(values) != len(self.stand_ins):
            raise TypeError(f"{len(self.stand_ins)} values expected, {len(values)} given")
        connection = connections[self._alias(using, static)]
        plan = self._plan(connection, static)
        if plan is None:
            return connection, None, []
        prepared = [_prepared(value, s, connection) for value, s in zip(values, self.stand_ins, strict=True)]
        if any(value is _UNBOUND for value in prepared):
            return connection, None, []
        slots = zip(plan.params, plan.slots, strict=True)
        return connection, plan, [value if slot is None else prepared[slot] for value, slot in slots]


class CompiledRead(_Compiled):
    """A `values_list()` queryset of a fixed shape, compiled once per backend (module docstring)."""

    def _compiler(self, built: Any, connection: Any) -> Any:
        if built._iterable_class is not ValuesListIterable:
            raise TypeError("a compiled read takes a values_list() queryset (not flat, not named)")
        return built.query.get_compiler(connection=connection)

    def _finish(self, plan: _Plan, compiler: Any) -> _Plan:
        selected = [column for column, _sql, _alias in compiler.select[: compiler.col_count]]
        if compiler.has_composite_fields(selected):
            raise _OrmOnly("the ORM makes tuples of its composite fields")
        ops = compiler.connection.ops
        converters = tuple(
            (position, expression, tuple(_unbound(function, ops) for function in functions))
            for position, (functions, expression) in compiler.get_converters(selected).items()
        )
        width = compiler.col_count if compiler.has_extra_select else None
        return _Plan(plan.sql, plan.params, plan.slots, converters=converters, width=width)

    def rows(self, *values: Any, static: tuple[Any, ...] = (), using: str | None = None) -> list[tuple[Any, ...]]:
        """The rows `build(*values, *static)` gives, on `using` or where the router sends its model."""
        fetched, convert = self.rows_unconverted(*values, static=static, using=using)
        return convert(fetched)

    def rows_unconverted(
        self, *values: Any, static: tuple[Any, ...] = (), using: str | None = None
    ) -> tuple[list[tuple[Any, ...]], Callable[[list[tuple[Any, ...]]], list[tuple[Any, ...]]]]:
        """The rows as the database returned them, and the function that turns some of them into
        what `rows` gives: for a caller that compares rows before it needs their values (equal as
        returned means equal once converted). Rows the ORM had to read come back converted, with
        a function that leaves them as they are."""
        connection, plan, params = self._params(values, static, using)
        if plan is None:
            return list(self.build(*values, *static).using(connection.alias)), _as_they_are
        with connection.cursor() as cursor:
            cursor.execute(plan.sql, params)
            fetched = cursor.fetchall()
        if plan.width is not None:
            fetched = [row[: plan.width] for row in fetched]
        raw = [tuple(row) for row in fetched]
        if not plan.converters:
            return raw, _as_they_are
        return raw, lambda rows: self._converted(rows, plan, connection)

    @staticmethod
    def _converted(fetched: list[tuple[Any, ...]], plan: _Plan, connection: Any) -> list[tuple[Any, ...]]:
        ops = connection.ops
        converters = [
            (position, expression, [MethodType(f, ops) if on_ops else f for f, on_ops in functions])
            for position, expression, functions in plan.converters
        ]
        converted = []
        for row in fetched:
            values_ = list(row)
            for position, expression, functions in converters:
                value = values_[position]
                for function in functions:
                    value = function(value, expression, connection)
                values_[position] = value
            converted.append(tuple(values_))
        return converted


class CompiledGet:
    """The first instance of `model` a fixed-shape filter gives (or None), read through a compiled
    `values_list` of the model's concrete fields and made as the ORM makes it (`Model.from_db`).
    `filter(*args)` returns the filtered, ordered queryset of `model`."""

    def __init__(self, model: Any, filter: Callable[..., QuerySet[Any]], *stand_ins: Any) -> None:
        self.model = model
        self.fields = [field.attname for field in model._meta.concrete_fields]
        self.read = CompiledRead(lambda *args: filter(*args).values_list(*self.fields)[:1], *stand_ins)

    def first(self, *values: Any, using: str | None = None) -> Any:
        alias = self.read._alias(using, ())
        rows = self.read.rows(*values, using=alias)
        return self.model.from_db(alias, self.fields, rows[0]) if rows else None


def _as_they_are(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return rows


class CompiledUpdate(_Compiled):
    """`queryset.update(**values)` of a fixed shape, compiled once per backend (module docstring)."""

    _writes = True

    def _queryset(self, built: Any) -> QuerySet[Any]:
        queryset, _values = built
        return queryset  # type: ignore[no-any-return]

    def _compiler(self, built: Any, connection: Any) -> Any:
        queryset, values = built
        query: Any = queryset.query.chain(UpdateQuery)
        query.add_update_values(values)
        if query.related_updates or query.annotations or query.order_by:
            raise _OrmOnly("`QuerySet.update` does more (parents' rows, inlined annotations)")
        if not connection.features.update_can_self_select:
            raise _OrmOnly("the backend selects the rows first, in a query of their own")
        return query.get_compiler(connection=connection)

    def run(self, *values: Any, static: tuple[Any, ...] = (), using: str | None = None) -> int:
        """The number of rows `build(*values, *static)`'s update changed."""
        connection, plan, params = self._params(values, static, using)
        if plan is None:
            queryset, changes = self.build(*values, *static)
            return int(queryset.using(connection.alias).update(**changes))
        with transaction.mark_for_rollback_on_error(using=connection.alias), connection.cursor() as cursor:
            cursor.execute(plan.sql, params)
            return int(cursor.rowcount)
