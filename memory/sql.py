"""The hot reads in hand-written SQL: what a cold context build and a capture job read, on every
turn and every customer message.

The ORM builds and compiles a query on every call, and for these reads that Python work cost more
than the database did (a capture job's load: ~1.9 ms through the ORM against ~0.2 ms for the same
SQL on the cursor). Each function here is one statement written once, with the table and column
names taken from the models' `_meta`, the parameters bound by name, each row a named tuple
(`WindowRow` …; a `Part` per model in the wide ones), and the values converted the way the ORM
converts them (`qiwei_site.platform.sql.Statement`). Each has an ORM twin, named in
its docstring (most in `tests/memory/sql_twins.py`: only tests call them), and
`tests/memory/test_sql.py` (SQLite) and `tests/integration/test_sql_pg.py` (PostgreSQL) run both on
the same rows and require the same answer. Nothing here uses Django's private query internals.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.db import connections

from conversations.models import (
    Alert,
    Customer,
    CustomerContextVersion,
    CustomerProfile,
    Message,
    MessageDirection,
    MessageSecret,
    Recommendation,
    RecommendationFeedback,
    RecommendationStatus,
    Task,
    TaskStatus,
)
from memory.models import (
    CaptureJob,
    CaptureJobStatus,
    MemoryCreatedBy,
    MemoryDecision,
    MemoryItem,
    MemorySnapshot,
    MemoryStatus,
    MessageReading,
    MessageRecallFeatures,
)
from qiwei_site.platform.sql import Part, Statement, columns, concrete, fields, name, row_type, table
from qiwei_site.platform.tenancy import current_alias
from qiwei_site.reading.fields import PROFILE_FIELD_NAMES

# --- the context build (`memory.context.builder.build`) ---------------------------------------

_C, _P, _V = table(Customer), table(CustomerProfile), table(CustomerContextVersion)
_M, _F = table(Message), table(MessageRecallFeatures)
_I, _S, _D = table(MemoryItem), table(MemorySnapshot), table(MemoryDecision)

_PROFILE = Part(CustomerProfile, PROFILE_FIELD_NAMES, "profile")
_VERSION_AND_PROFILE = Statement(
    f"SELECT (SELECT v.{name(CustomerContextVersion, 'version')} FROM {_V} v"
    f" WHERE v.{name(CustomerContextVersion, 'customer_id')} = c.{name(Customer, 'pk')}),"
    f" p.{name(CustomerProfile, 'pk')}, {_PROFILE.select('p')}"
    f" FROM {_C} c LEFT OUTER JOIN {_P} p ON p.{name(CustomerProfile, 'customer')} = c.{name(Customer, 'pk')}"
    f" WHERE c.{name(Customer, 'pk')} = %(customer)s",
    [None, None, *_PROFILE.fields],
    row_type("VersionAndProfileRow", ["version", "profile_pk", *_PROFILE.row_names]),
)


def version_and_profile(customer_id: int) -> tuple[int, tuple[Any, ...] | None]:
    """The customer's context version (0: none yet) and profile values (`PROFILE_FIELD_NAMES`;
    None: no profile). Twin: `tests.memory.sql_twins.version_and_profile`."""
    rows = _VERSION_AND_PROFILE.rows(customer=customer_id)
    if not rows:
        return 0, None
    row = rows[0]
    return row.version or 0, (_PROFILE.values(row) if row.profile_pk is not None else None)


class WindowRow(NamedTuple):
    """A message of the window with its stored recall features (`recall.RECALL_COLUMNS`; the
    features' three are None when none are stored)."""

    id: int
    direction: str
    sender: str
    text: str
    sent_at: datetime
    features_version: int | None
    text_fingerprint: str | None
    features: Any


_WINDOW_NAMES = ("pk", "direction", "sender", "text", "sent_at")
_FEATURE_NAMES = ("version", "text_fingerprint", "features")
_WINDOW_SELECT = (
    f"SELECT {columns(Message, _WINDOW_NAMES, 'm')}, {columns(MessageRecallFeatures, _FEATURE_NAMES, 'f')}"
    f" FROM {_M} m LEFT OUTER JOIN {_F} f ON f.{name(MessageRecallFeatures, 'message')} = m.{name(Message, 'pk')}"
    f" WHERE m.{name(Message, 'customer')} = %(customer)s AND m.{name(Message, 'is_effective')}"
)


def _window_order(limit: str) -> str:
    """Newest first, at most the `limit` parameter's count."""
    return f" ORDER BY m.{name(Message, 'sent_at')} DESC, m.{name(Message, 'pk')} DESC LIMIT %({limit})s"


_WINDOW_FIELDS = [
    *fields(Message, ["id", "direction", "sender", "text", "sent_at"]),
    *fields(MessageRecallFeatures, _FEATURE_NAMES),
]
_WINDOW_NEWEST = Statement(_WINDOW_SELECT + _window_order("size"), _WINDOW_FIELDS, WindowRow)
_UP_TO = (
    f" AND m.{name(Message, 'sent_at')} <= %(sent_at)s"
    f" AND NOT (m.{name(Message, 'sent_at')} = %(sent_at)s AND m.{name(Message, 'pk')} > %(message)s)"
)
_WINDOW_UP_TO = Statement(_WINDOW_SELECT + _UP_TO + _window_order("size"), _WINDOW_FIELDS, WindowRow)


def _after(alias: str) -> str:
    """`alias` comes after the message (`sent_at`, `message`). Written as a range on `sent_at` and a
    tie-break, so the (customer, sent_at, id) index bounds the scan."""
    sent_at, pk = f"{alias}.{name(Message, 'sent_at')}", f"{alias}.{name(Message, 'pk')}"
    return f"{sent_at} >= %(sent_at)s AND NOT ({sent_at} = %(sent_at)s AND {pk} <= %(message)s)"


def _replies_after() -> str:
    """`m` is one of our messages (not the customer's) after the message, sent no later than the
    customer's next effective message after it (read once, an indexed scan forward from the
    message; none: `far_future`). Parameters: the message (`sent_at`, `message`), the `customer`,
    the `inbound` direction, `far_future`."""
    customer, effective = name(Message, "customer"), name(Message, "is_effective")
    sent_at, pk, direction = name(Message, "sent_at"), name(Message, "pk"), name(Message, "direction")
    following = (
        f"SELECT n.{sent_at} FROM {_M} n WHERE n.{customer} = %(customer)s AND n.{effective}"
        f" AND n.{direction} = %(inbound)s AND {_after('n')} ORDER BY n.{sent_at} ASC, n.{pk} ASC LIMIT 1"
    )
    return (
        f" AND {_after('m')} AND m.{sent_at} <= COALESCE(({following}), %(far_future)s)"
        f" AND m.{direction} <> %(inbound)s"
    )


# The window up to the message and, in the same statement, the newest of our messages after it,
# up to the customer's next one: what our side already said to it (issue 39). Each half is an
# indexed range read newest first with its own limit; the union is ordered newest first again.
_WINDOW_AROUND = Statement(
    f"SELECT * FROM ({_WINDOW_SELECT}{_replies_after()}{_window_order('after')}) a"
    f" UNION ALL SELECT * FROM ({_WINDOW_SELECT}{_UP_TO}{_window_order('size')}) w"
    f" ORDER BY {name(Message, 'sent_at')} DESC, {name(Message, 'pk')} DESC",
    _WINDOW_FIELDS,
    WindowRow,
)
# What "no next message" compares as: later than any message.
_FAR_FUTURE = datetime(9999, 12, 31, tzinfo=UTC)


def window_newest(customer_id: int, size: int) -> list[WindowRow]:
    """The newest `size` effective messages with their stored recall features (`RECALL_COLUMNS`),
    newest first. Twin: `sql_twins.window_newest`."""
    return _WINDOW_NEWEST.rows(customer=customer_id, size=size)


def window_up_to(customer_id: int, sent_at: datetime, message_id: int, size: int, after: int = 0) -> list[WindowRow]:
    """As `window_newest`, up to and including the message (`sent_at`, `message_id`): an older turn
    sees its conversation as it was. With `after`, first, the newest `after` effective messages of
    ours (outbound or system) after it and sent no later than the customer's next message (the
    replies it already had), in one statement. Twin: `memory.context.builder.reads._window_up_to`."""
    position: dict[str, Any] = {"customer": customer_id, "sent_at": sent_at, "message": message_id, "size": size}
    if after <= 0:
        return _WINDOW_UP_TO.rows(**position)
    inbound = MessageDirection.INBOUND.value
    return _WINDOW_AROUND.rows(**position, inbound=inbound, far_future=_FAR_FUTURE, after=after)


class TaskRow(NamedTuple):
    id: int
    title: str
    due_at: datetime | None


_T = table(Task)
_OPEN_TASKS = Statement(
    f"SELECT {columns(Task, ['pk', 'title', 'due_at'], 't')} FROM {_T} t"
    f" WHERE t.{name(Task, 'customer')} = %(customer)s AND t.{name(Task, 'status')} = %(status)s"
    f" ORDER BY t.{name(Task, 'due_at')} ASC, t.{name(Task, 'pk')} ASC LIMIT 20",
    fields(Task, ["id", "title", "due_at"]),
    TaskRow,
)


def open_tasks(customer_id: int) -> list[TaskRow]:
    """Up to 20 open tasks, soonest due first. Twin: `sql_twins.open_tasks`."""
    return _OPEN_TASKS.rows(customer=customer_id, status=TaskStatus.OPEN.value)


class AlertRow(NamedTuple):
    id: int
    level: str
    text: str


_OPEN_ALERTS = Statement(
    f"SELECT {columns(Alert, ['pk', 'level', 'text'], 'a')} FROM {table(Alert)} a"
    f" WHERE a.{name(Alert, 'customer')} = %(customer)s AND NOT a.{name(Alert, 'resolved')}"
    f" ORDER BY a.{name(Alert, 'pk')} ASC LIMIT 20",
    fields(Alert, ["id", "level", "text"]),
    AlertRow,
)


def open_alerts(customer_id: int) -> list[AlertRow]:
    """Up to 20 unresolved alerts, oldest first. Twin: `sql_twins.open_alerts`."""
    return _OPEN_ALERTS.rows(customer=customer_id)


class RecommendationRow(NamedTuple):
    """A recommendation with one feedback (its newest, in `open_recommendations`; Nones: none)."""

    id: int
    text: str
    feedback_source: str | None
    feedback_verdict: str | None
    feedback_comment: str | None


_R, _RF = table(Recommendation), table(RecommendationFeedback)
_OPEN_RECOMMENDATIONS = Statement(
    f"SELECT {columns(Recommendation, ['pk', 'text'], 'r')},"
    f" {columns(RecommendationFeedback, ['source', 'verdict', 'comment'], 'b')}"
    f" FROM {_R} r LEFT OUTER JOIN {_RF} b"
    f" ON b.{name(RecommendationFeedback, 'recommendation')} = r.{name(Recommendation, 'pk')}"
    f" WHERE r.{name(Recommendation, 'pk')} IN (SELECT n.{name(Recommendation, 'pk')} FROM {_R} n"
    f" WHERE n.{name(Recommendation, 'customer')} = %(customer)s AND n.{name(Recommendation, 'status')} = %(status)s"
    f" ORDER BY n.{name(Recommendation, 'created_at')} DESC, n.{name(Recommendation, 'pk')} DESC LIMIT 10)"
    f" ORDER BY r.{name(Recommendation, 'created_at')} DESC, r.{name(Recommendation, 'pk')} DESC,"
    f" b.{name(RecommendationFeedback, 'created_at')} DESC NULLS LAST, b.{name(RecommendationFeedback, 'pk')} DESC",
    [*fields(Recommendation, ["id", "text"]), *fields(RecommendationFeedback, ["source", "verdict", "comment"])],
    RecommendationRow,
)


def open_recommendations(customer_id: int) -> list[RecommendationRow]:
    """The ten newest open recommendations, each with its newest feedback (Nones when it has none).
    Twin: `sql_twins.open_recommendations`."""
    newest: dict[int, RecommendationRow] = {}
    for row in _OPEN_RECOMMENDATIONS.rows(customer=customer_id, status=RecommendationStatus.OPEN.value):
        newest.setdefault(row.id, row)
    return list(newest.values())


class SnapshotRow(NamedTuple):
    version: int
    content: str
    item_ids: list[int]


_CURRENT_SNAPSHOT = Statement(
    f"SELECT {columns(MemorySnapshot, ['version', 'content', 'item_ids'], 's')} FROM {_S} s"
    f" WHERE s.{name(MemorySnapshot, 'customer')} = %(customer)s"
    f" ORDER BY s.{name(MemorySnapshot, 'version')} DESC LIMIT 1",
    fields(MemorySnapshot, ["version", "content", "item_ids"]),
    SnapshotRow,
)


def current_snapshot(customer_id: int) -> list[SnapshotRow]:
    """The newest snapshot, as a list of at most one row. Twin: `sql_twins.current_snapshot`."""
    return _CURRENT_SNAPSHOT.rows(customer=customer_id)


class HumanItemRow(NamedTuple):
    id: int


_ITEM_ORDER = (
    f" ORDER BY i.{name(MemoryItem, 'importance')} DESC, i.{name(MemoryItem, 'confidence')} DESC,"
    f" i.{name(MemoryItem, 'updated_at')} DESC, i.{name(MemoryItem, 'pk')} DESC"
)
_HUMAN_ITEMS = Statement(
    f"SELECT i.{name(MemoryItem, 'pk')} FROM {_I} i"
    f" WHERE i.{name(MemoryItem, 'customer')} = %(customer)s AND i.{name(MemoryItem, 'created_by')} = %(created_by)s"
    + _ITEM_ORDER,
    [None],
    HumanItemRow,
)


def human_items(customer_id: int) -> list[HumanItemRow]:
    """Every item a person wrote, any status. Twin: `sql_twins.human_items`."""
    return _HUMAN_ITEMS.rows(customer=customer_id, created_by=MemoryCreatedBy.HUMAN.value)


class ActiveItemRow(NamedTuple):
    """What `effective_in` and `render_snapshot` read of an item (`MemoryItem(**row._asdict())`)."""

    id: int
    type: str
    content: str
    status: str
    expires_at: datetime | None
    importance: int
    confidence: float
    updated_at: datetime
    created_by: str


ACTIVE_ITEM_COLUMNS = ActiveItemRow._fields
_ACTIVE_ITEMS = Statement(
    f"SELECT {columns(MemoryItem, ACTIVE_ITEM_COLUMNS, 'i')} FROM {_I} i"
    f" WHERE i.{name(MemoryItem, 'customer')} = %(customer)s AND i.{name(MemoryItem, 'status')} = %(status)s"
    + _ITEM_ORDER,
    fields(MemoryItem, ACTIVE_ITEM_COLUMNS),
    ActiveItemRow,
)


def active_items(customer_id: int) -> list[ActiveItemRow]:
    """The active items, in the items' order. Twin: `sql_twins.active_items`."""
    return _ACTIVE_ITEMS.rows(customer=customer_id, status=MemoryStatus.ACTIVE.value)


# --- capture (`memory.capture.jobs`, `memory.items.MemoryWrites`) ------------------------------

_J = table(CaptureJob)


def _job_set(*fields: str) -> str:
    """`column = %(field)s` for each field: the new values, bound by the fields' names."""
    return ", ".join(f"{name(CaptureJob, field)} = %({field})s" for field in fields)


_JOB_FINISH = Statement(
    f"UPDATE {_J} SET {_job_set('status', 'finished_at', 'last_error', 'updated_at')}"
    f" WHERE {name(CaptureJob, 'pk')} = %(job)s AND {name(CaptureJob, 'status')} = %(was)s"
    f" AND {name(CaptureJob, 'attempts')} = %(attempt)s",
    [],
)


def capture_job_finish(job_id: int, attempt: int, now: datetime) -> int:
    """running (this attempt) → done, finished now; how many rows changed (0: the claim was lost).
    Twin: `memory.capture.jobs._finish_query`."""
    return _JOB_FINISH.execute(
        status=CaptureJobStatus.DONE.value,
        finished_at=now,
        last_error="",
        updated_at=now,
        job=job_id,
        was=CaptureJobStatus.RUNNING.value,
        attempt=attempt,
    )


_JOB = Part(CaptureJob, concrete(CaptureJob), "job")
_CUSTOMER = Part(Customer, concrete(Customer), "customer")
_MESSAGE = Part(Message, concrete(Message), "message")
_READING = Part(MessageReading, concrete(MessageReading), "reading")


def _before(column: str) -> str:
    """A correlated subquery: `column` of the customer's effective, non-system message just before
    the job's message (`memory.capture.selectors.messages_before`; `system`: the system direction)."""
    sent_at, pk = name(Message, "sent_at"), name(Message, "pk")
    return (
        f"(SELECT b.{name(Message, column)} FROM {_M} m INNER JOIN {_M} b"
        f" ON b.{name(Message, 'customer')} = m.{name(Message, 'customer')} AND b.{name(Message, 'is_effective')}"
        f" AND (b.{sent_at} < m.{sent_at} OR (b.{sent_at} = m.{sent_at} AND b.{pk} < m.{pk}))"
        f" AND NOT (b.{name(Message, 'direction')} = %(system)s)"
        f" WHERE m.{pk} = {_J}.{name(CaptureJob, 'message')}"
        f" ORDER BY b.{sent_at} DESC, b.{pk} DESC LIMIT 1)"
    )


def _returned(part: Part[Any], source: str, key: str, on: str) -> str:
    """Each of the part's columns as a scalar subquery of `source`'s row whose `key` column equals
    `on` (RETURNING names only the updated table's own columns, but a subquery in it may read any
    table: SQLite 3.35+ and PostgreSQL alike)."""
    return ", ".join(
        f"(SELECT x.{name(part.model, field)} FROM {source} x WHERE x.{key} = {on})" for field in part.names
    )


_ON_MESSAGE = f"{_J}.{name(CaptureJob, 'message')}"
_ON_CUSTOMER = f"{_J}.{name(CaptureJob, 'customer')}"
_JOB_CLAIM = Statement(
    f"UPDATE {_J} SET {name(CaptureJob, 'attempts')} = {name(CaptureJob, 'attempts')} + 1,"
    f" {_job_set('status', 'started_at', 'updated_at')}"
    f" WHERE {name(CaptureJob, 'pk')} = %(job)s AND {name(CaptureJob, 'status')} = %(was)s"
    f" AND ({name(CaptureJob, 'next_attempt_at')} IS NULL OR {name(CaptureJob, 'next_attempt_at')} <= %(due)s)"
    f" RETURNING {_JOB.select(_J)},"
    f" {_returned(_CUSTOMER, _C, name(Customer, 'pk'), _ON_CUSTOMER)},"
    f" {_returned(_MESSAGE, _M, name(Message, 'pk'), _ON_MESSAGE)}, {_before('direction')}, {_before('text')},"
    f" (SELECT x.{name(MessageSecret, 'sealed')} FROM {table(MessageSecret)} x"
    f" WHERE x.{name(MessageSecret, 'message')} = {_ON_MESSAGE}),"
    f" {_returned(_READING, table(MessageReading), name(MessageReading, 'message'), _ON_MESSAGE)}",
    [*_JOB.fields, *_CUSTOMER.fields, *_MESSAGE.fields, None, None, None, *_READING.fields],
    row_type(
        "CaptureJobRow",
        [
            *_JOB.row_names,
            *_CUSTOMER.row_names,
            *_MESSAGE.row_names,
            "previous_direction",
            "previous_text",
            "sealed",
            *_READING.row_names,
        ],
    ),
)


def capture_job_claim(job_id: int, now: datetime) -> CaptureJob | None:
    """Claim the job and read it, in one statement: pending and due → running, one more attempt,
    started now (a conditional UPDATE: one run wins; None for the others), returned with its
    customer, its message (with `sealed_text`, its sealed original or None, and its kept reading,
    so the evidence check reads no more) and (`previous_direction`, `previous_text`) the message
    before that one. Twins: `sql_twins.capture_job_claim_query`, then `sql_twins.capture_job_get`."""
    rows = _JOB_CLAIM.rows(
        status=CaptureJobStatus.RUNNING.value,
        started_at=now,
        updated_at=now,
        job=job_id,
        was=CaptureJobStatus.PENDING.value,
        due=now,
        system=MessageDirection.SYSTEM.value,
    )
    if not rows:
        return None
    row = rows[0]
    alias = current_alias()
    job = _JOB.instance(row, alias)
    customer = _CUSTOMER.instance(row, alias)
    job.customer = customer
    message = _MESSAGE.optional(row, alias)
    if message is not None:
        if message.customer_id == customer.pk:
            message.customer = customer
        message.sealed_text = row.sealed  # type: ignore[attr-defined]  # conversations.received
        Message.reading.related.set_cached_value(message, _READING.optional(row, alias))  # type: ignore[attr-defined]
    job.message = message
    job.previous_direction, job.previous_text = row.previous_direction, row.previous_text  # type: ignore[attr-defined]
    return job


# The customer row's profile and its items, as the memory write state reads them (`memory.items`).
STATE_PROFILE = Part(CustomerProfile, concrete(CustomerProfile), "profile")
STATE_ITEM = Part(MemoryItem, concrete(MemoryItem), "item")
_ITEM_NAMES = STATE_ITEM.names


def _snapshot_head(column: str) -> str:
    return (
        f"(SELECT h.{name(MemorySnapshot, column)} FROM {_S} h"
        f" WHERE h.{name(MemorySnapshot, 'customer')} = c.{name(Customer, 'pk')}"
        f" ORDER BY h.{name(MemorySnapshot, 'version')} DESC LIMIT 1)"
    )


# Each item's sources as message ids, per backend: the integers of a JSON list (a string, a float or
# a value that is no list is no id here; `memory.items` then reads that item's times when asked).
_SOURCE_IDS = {
    "sqlite": (
        "SELECT s.value AS id FROM json_each(CASE WHEN json_type(i.{sources}) = 'array' THEN i.{sources}"
        " ELSE '[]' END) s WHERE s.type = 'integer'"
    ),
    "postgresql": (
        "SELECT (s.v)::text::bigint AS id FROM jsonb_array_elements(CASE WHEN jsonb_typeof(i.{sources}) = 'array'"
        " THEN i.{sources} ELSE '[]'::jsonb END) s(v)"
        " WHERE jsonb_typeof(s.v) = 'number' AND (s.v)::text ~ '^-?[0-9]{{1,18}}$'"
    ),
}
_EARLIER = {"sqlite": "min", "postgresql": "LEAST"}


def _evidence(vendor: str, value: str) -> str:
    """A correlated subquery over the item's sources that are this customer's messages: the newest
    `value` of them (`memory.decisions.evidence_time` and the staleness check read these)."""
    sources = _SOURCE_IDS[vendor].format(sources=name(MemoryItem, "source_message_ids"))
    return (
        f"(SELECT max({value}) FROM ({sources}) e INNER JOIN {_M} m ON m.{name(Message, 'pk')} = e.id"
        f" AND m.{name(Message, 'customer')} = c.{name(Customer, 'pk')})"
    )


def _memory_state_statement(vendor: str) -> Statement[Any]:
    sent_at, created_at = f"m.{name(Message, 'sent_at')}", f"m.{name(Message, 'created_at')}"
    received = f"{_EARLIER[vendor]}({sent_at}, {created_at})"
    return Statement(
        f"SELECT {_snapshot_head('version')}, {_snapshot_head('sha256')},"
        f" EXISTS(SELECT 1 FROM {_D} d WHERE d.{name(MemoryDecision, 'customer')} = c.{name(Customer, 'pk')}),"
        f" {STATE_PROFILE.select('p')}, {STATE_ITEM.select('i')},"
        f" {_evidence(vendor, received)}, {_evidence(vendor, sent_at)}"
        f" FROM {_C} c LEFT OUTER JOIN {_P} p ON p.{name(CustomerProfile, 'customer')} = c.{name(Customer, 'pk')}"
        f" LEFT OUTER JOIN {_I} i ON i.{name(MemoryItem, 'customer')} = c.{name(Customer, 'pk')}"
        f" AND i.{name(MemoryItem, 'status')} IN (%(active)s, %(proposed)s)"
        f" WHERE c.{name(Customer, 'pk')} = %(customer)s ORDER BY i.{name(MemoryItem, 'pk')}",
        [None, None, "BooleanField", *STATE_PROFILE.fields, *STATE_ITEM.fields, "DateTimeField", "DateTimeField"],
        row_type(
            "MemoryStateRow",
            [
                "head_version",
                "head_sha256",
                "has_decisions",
                *STATE_PROFILE.row_names,
                *STATE_ITEM.row_names,
                "evidence_received",
                "evidence_sent",
            ],
        ),
    )


_MEMORY_STATE = {vendor: _memory_state_statement(vendor) for vendor in ("sqlite", "postgresql")}


def memory_state(customer_id: int) -> list[Any]:
    """The customer row with its profile and its active items and pending proposals joined (none:
    one row of NULLs), the snapshot head and whether a decision exists: (`head_version`,
    `head_sha256`, `has_decisions`, the profile's fields (`STATE_PROFILE`), the item's
    (`STATE_ITEM`), and of the item's sources that are this customer's messages the newest time
    one reached us (`evidence_received`: sent or stored, whichever is earlier) and the newest sent
    time (`evidence_sent`)) per row, items by id. Twin: `sql_twins.memory_state_rows`."""
    vendor = "postgresql" if connections[current_alias()].vendor == "postgresql" else "sqlite"
    return _MEMORY_STATE[vendor].rows(
        active=MemoryStatus.ACTIVE.value, proposed=MemoryStatus.PROPOSED.value, customer=customer_id
    )


# --- ingest (`memory.capture.ingest`) --------------------------------------------------------------

_CUSTOMER_ROW = row_type("CustomerRow", _CUSTOMER.row_names)
_CUSTOMER_WHERE = f"SELECT {_CUSTOMER.select('c')} FROM {_C} c WHERE c."
_CUSTOMER_BY_CONVERSATION = Statement(
    f"{_CUSTOMER_WHERE}{name(Customer, 'conversation_id')} = %(conversation)s",
    _CUSTOMER.fields,
    _CUSTOMER_ROW,
)
# PostgreSQL locks the row for the rest of the transaction; a SQLite writer holds the whole database
# already (BEGIN IMMEDIATE), and SQLite has no FOR UPDATE.
_CUSTOMER_LOCKED = {
    vendor: Statement(f"{_CUSTOMER_WHERE}{name(Customer, 'pk')} = %(customer)s{lock}", _CUSTOMER.fields, _CUSTOMER_ROW)
    for vendor, lock in (("sqlite", ""), ("postgresql", " FOR UPDATE"))
}


def customer_by_conversation(conversation_id: str) -> Customer | None:
    """The customer of a conversation id, or None. Twin: `sql_twins.customer_by_conversation`."""
    rows = _CUSTOMER_BY_CONVERSATION.rows(conversation=conversation_id)
    return _CUSTOMER.instance(rows[0], current_alias()) if rows else None


def customer_locked(customer_id: int) -> Customer:
    """The customer row read afresh in the current transaction, locked against other writers until it
    ends (`select_for_update().get(pk=…)`); Customer.DoesNotExist when it is gone (erased meanwhile).
    Twin: `sql_twins.customer_locked`."""
    alias = current_alias()
    statement = _CUSTOMER_LOCKED["postgresql" if connections[alias].vendor == "postgresql" else "sqlite"]
    rows = statement.rows(customer=customer_id)
    if not rows:
        raise Customer.DoesNotExist(f"customer {customer_id} is gone")
    return _CUSTOMER.instance(rows[0], alias)


_CUSTOMER_LAST_MESSAGE = Statement(
    f"UPDATE {_C} SET {name(Customer, 'last_message_at')} = %(at)s, {name(Customer, 'updated_at')} = %(now)s"
    f" WHERE {name(Customer, 'pk')} = %(customer)s",
    [],
)


def customer_last_message_set(customer_id: int, at: datetime, now: datetime) -> int:
    """The time of the customer's last message moved to `at` (no revision: `Customer.history` leaves
    the field out); how many rows changed. Twin: `sql_twins.customer_last_message_set`."""
    return _CUSTOMER_LAST_MESSAGE.execute(at=at, now=now, customer=customer_id)


_MESSAGE_ROW = row_type("MessageRow", _MESSAGE.row_names)


@functools.lru_cache(maxsize=64)
def _messages_by_external_id(count: int) -> Statement[Any]:
    """The statement for `count` external ids (one text per batch size: parameters are bound by name)."""
    marks = ", ".join(f"%(e{index})s" for index in range(count))
    return Statement(
        f"SELECT {_MESSAGE.select('m')} FROM {_M} m WHERE m.{name(Message, 'customer')} = %(customer)s"
        f" AND m.{name(Message, 'external_id')} IN ({marks})",
        _MESSAGE.fields,
        _MESSAGE_ROW,
    )


def messages_by_external_id(customer_id: int, external_ids: list[str]) -> list[Message]:
    """The customer's messages stored already under these external ids (ingest's duplicate check),
    as instances. Twin: `sql_twins.messages_by_external_id`."""
    wanted = list(dict.fromkeys(external_ids))
    if not wanted:
        return []
    rows = _messages_by_external_id(len(wanted)).rows(
        customer=customer_id, **{f"e{index}": value for index, value in enumerate(wanted)}
    )
    alias = current_alias()
    return [_MESSAGE.instance(row, alias) for row in rows]
