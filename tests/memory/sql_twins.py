"""The ORM twins of `memory.sql`'s hand-written statements: the same reads and updates through the
ORM, run beside the SQL on the same rows by `tests/memory/test_sql.py` (and, on PostgreSQL, by
`tests/integration/test_sql_pg.py`), which require equal answers. Only the tests call them: the
product runs the SQL.

`memory.capture.jobs._finish_query` stays in the product: it is the product's own finish for a
payload job (which changes more columns), and the twin of `capture_job_finish` too."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Exists, F, FilteredRelation, Max, OuterRef, Q, Subquery

from conversations.models import (
    Alert,
    Customer,
    CustomerContextVersion,
    CustomerProfile,
    Message,
    MessageDirection,
    Recommendation,
    RecommendationStatus,
    Task,
    TaskStatus,
)
from conversations.selectors import messages_up_to
from memory.capture.selectors import previous_message_fields
from memory.context import recall as recall_module
from memory.decisions import evidence_time
from memory.models import (
    CaptureJob,
    CaptureJobStatus,
    MemoryCreatedBy,
    MemoryDecision,
    MemoryItem,
    MemorySnapshot,
    MemoryStatus,
)
from memory.sql import ACTIVE_ITEM_COLUMNS
from qiwei_site.reading.fields import PROFILE_FIELD_NAMES

# --- the context build's reads (`memory.sql`, as `memory.context.builder.build` runs them) -------


def version_and_profile(customer_id: int) -> tuple[int, tuple[str, ...] | None]:
    """The customer's context version and profile row, in one indexed read (the version first:
    `_AnswerCache`)."""
    version = CustomerContextVersion.objects.filter(customer_id=OuterRef("pk")).values("version")[:1]
    rows = list(
        Customer.objects.filter(pk=customer_id)
        .annotate(context_version=Subquery(version))
        .values_list("context_version", "profile__pk", *(f"profile__{name}" for name in PROFILE_FIELD_NAMES))[:1]
    )
    row = rows[0] if rows else None
    if row is None:
        return 0, None
    return row[0] or 0, (tuple(row[2:]) if row[1] is not None else None)


def window_newest(customer_id: int, size: int) -> Any:
    return messages_up_to(Customer(pk=customer_id), None).values_list(*recall_module.RECALL_COLUMNS)[:size]


def open_tasks(customer_id: int) -> Any:
    tasks = Task.objects.filter(customer_id=customer_id, status=TaskStatus.OPEN).order_by("due_at", "id")
    return tasks.values_list("id", "title", "due_at")[:20]


def open_alerts(customer_id: int) -> Any:
    alerts = Alert.objects.filter(customer_id=customer_id, resolved=False).order_by("id")
    return alerts.values_list("id", "level", "text")[:20]


def open_recommendations(customer_id: int) -> list[tuple[Any, ...]]:
    """The newest open recommendations, each with its newest feedback (None when it has none), in
    one query: the ten newest open ones joined to all their feedback, newest first, the first row
    of each kept (a plain join is cheaper to build than a correlated subquery per column)."""
    newest_open = (
        Recommendation.objects.filter(customer_id=customer_id, status=RecommendationStatus.OPEN)
        .order_by("-created_at", "-id")
        .values("pk")[:10]
    )
    rows = (
        Recommendation.objects.filter(pk__in=newest_open)
        .order_by("-created_at", "-id", F("feedback__created_at").desc(nulls_last=True), "-feedback__id")
        .values_list("id", "text", "feedback__source", "feedback__verdict", "feedback__comment")
    )
    newest: dict[int, tuple[Any, ...]] = {}
    for row in rows:
        newest.setdefault(row[0], tuple(row))
    return list(newest.values())


def active_items(customer_id: int) -> Any:
    """Active items with what `effective_in` and `render_snapshot` read (expiry is decided then)."""
    items = MemoryItem.objects.filter(customer_id=customer_id, status=MemoryStatus.ACTIVE)
    return items.values_list(*ACTIVE_ITEM_COLUMNS)


def current_snapshot(customer_id: int) -> Any:
    """The newest snapshot's version, content and item ids (`snapshot_current`, as a row)."""
    return (
        MemorySnapshot.objects.filter(customer_id=customer_id)
        .order_by("-version")
        .values_list("version", "content", "item_ids")[:1]
    )


def human_items(customer_id: int) -> Any:
    return MemoryItem.objects.filter(customer_id=customer_id, created_by=MemoryCreatedBy.HUMAN).values_list("pk")


# --- capture (`memory.sql.capture_job_claim`) ---------------------------------------------------


def capture_job_claim_query(job_id: Any, due: Any, started_at: Any, updated_at: Any) -> tuple[Any, dict[str, Any]]:
    """The claim as an ORM update: the queryset and the values to `update` it with."""
    queryset = CaptureJob.objects.filter(pk=job_id, status=CaptureJobStatus.PENDING).filter(
        Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=due)
    )
    return queryset, {
        "status": CaptureJobStatus.RUNNING,
        "attempts": F("attempts") + 1,
        "started_at": started_at,
        "updated_at": updated_at,
    }


# --- the window with the replies after it, the capture job, the memory write state -------------


def window_up_to(customer_id: int, sent_at: datetime, message_id: int, size: int, after: int = 0) -> Any:
    """Twin of `memory.sql.window_up_to`: the recent window up to a message, with up to `after`
    of our replies to it (before the customer's next message), newest first."""
    latest = Message(id=message_id, sent_at=sent_at)
    window = messages_up_to(Customer(pk=customer_id), latest).values_list(*recall_module.RECALL_COLUMNS)[:size]
    if after <= 0:
        return window
    later = Q(sent_at__gt=sent_at) | Q(sent_at=sent_at, id__gt=message_id)
    effective = Message.objects.filter(customer_id=customer_id, is_effective=True).filter(later)
    inbound = effective.filter(direction=MessageDirection.INBOUND)
    replies = effective.exclude(direction=MessageDirection.INBOUND).order_by("-sent_at", "-id")
    following = inbound.order_by("sent_at", "id").values_list("sent_at", flat=True).first()
    if following is not None:
        replies = replies.filter(sent_at__lte=following)
    return [*replies.values_list(*recall_module.RECALL_COLUMNS)[:after], *window]


def capture_job_get(job_id: int) -> CaptureJob | None:
    """Twin of what `memory.sql.capture_job_claim` returns (read after the claim): the job with its
    customer, its message (and its kept reading) and (`previous_direction`, `previous_text`) the
    message before that one, in one query."""
    job = (
        CaptureJob.objects.select_related("customer", "message", "message__reading")
        .annotate(
            sealed_text=F("message__secret__sealed"),
            **previous_message_fields("message__customer_id", "message__sent_at", "message_id"),
        )
        .filter(pk=job_id)
        .first()
    )
    if job is not None and job.message is not None:
        if job.message.customer_id == job.customer_id:
            job.message.customer = job.customer
        job.message.sealed_text = job.sealed_text  # type: ignore[attr-defined]  # conversations.received
    return job


ITEM_FIELDS = list(MemoryItem._meta.concrete_fields)
PROFILE_MODEL_FIELDS = list(CustomerProfile._meta.concrete_fields)
STATE_HEAD_COLUMNS = ("snapshot_head_version", "snapshot_head_sha256", "has_decisions")


def memory_state_rows(*, customer_id: int) -> list[tuple[Any, ...]]:
    """Twin of `memory.sql.memory_state` (which capture runs). SQLite: the customer row with its
    profile, its active items and pending proposals joined (none: one row of NULLs), the snapshot
    head and whether a decision exists, in one statement: (head version, head sha256, has
    decisions, *profile fields, *item fields, the newest time one of the item's sources reached us,
    the newest sent time of them) per row."""
    head = MemorySnapshot.objects.filter(customer=OuterRef("pk")).order_by("-version")
    customer = Customer.objects.get(pk=customer_id)
    sources = len(STATE_HEAD_COLUMNS) + len(PROFILE_MODEL_FIELDS) + ITEM_FIELDS.index(
        MemoryItem._meta.get_field("source_message_ids")
    )

    def evidence(row: tuple[Any, ...]) -> tuple[Any, ...]:
        ids = [int(i) for i in row[sources] or []]
        sent = Message.objects.filter(customer=customer, pk__in=ids).aggregate(newest=Max("sent_at"))["newest"]
        return (*row, evidence_time(customer, ids), sent)

    rows = (
        Customer.objects.filter(pk=customer_id)
        .annotate(
            active_item=FilteredRelation(
                "memory_items",
                condition=Q(memory_items__status__in=[MemoryStatus.ACTIVE, MemoryStatus.PROPOSED]),
            ),
            snapshot_head_version=Subquery(head.values("version")[:1]),
            snapshot_head_sha256=Subquery(head.values("sha256")[:1]),
            has_decisions=Exists(MemoryDecision.objects.filter(customer=OuterRef("pk"))),
        )
        .values_list(
            *STATE_HEAD_COLUMNS,
            *[f"profile__{f.name}" for f in PROFILE_MODEL_FIELDS],
            *[f"active_item__{f.name}" for f in ITEM_FIELDS],
        )
    )
    return [evidence(row) for row in rows]


# --- ingest (`memory.sql.customer_by_conversation`, `memory.sql.customer_locked`) ----------------


def customer_by_conversation(conversation_id: str) -> Customer | None:
    return Customer.objects.filter(conversation_id=conversation_id).first()


def customer_locked(customer_id: int) -> Customer:
    return Customer.objects.select_for_update().get(pk=customer_id)


def customer_last_message_set(customer_id: int, at: Any, now: Any) -> int:
    return Customer.objects.filter(pk=customer_id).update(last_message_at=at, updated_at=now)


def messages_by_external_id(customer_id: int, external_ids: list[str]) -> list[Message]:
    return list(Message.objects.filter(customer_id=customer_id, external_id__in=external_ids))
