"""What a build reads (`AgentContextBuilder._read`), as plain ORM reads returning tuples, each one
query: the context version with the profile, the snapshot, its human-written items, the recent
window with the recall candidates, and one per business-state table.

The builder runs the same reads written in SQL (`memory.sql`: the ORM's per-call compile cost more
than the database on a cold build); these are their ORM twins, and the tests require both to give
the same answer on the same rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import F, OuterRef, Q, Subquery

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
from memory.context import recall as recall_module
from memory.context.builder.layout import (
    _Business,
    _Instructions,
)
from memory.models import MemoryCreatedBy, MemoryItem, MemorySnapshot, MemoryStatus
from memory.sql import ACTIVE_ITEM_COLUMNS
from qiwei_site.reading.fields import PROFILE_FIELD_NAMES


def _version_and_profile(customer_id: int) -> tuple[int, tuple[str, ...] | None]:
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


def _window_up_to(customer_id: int, sent_at: datetime, message_id: int, size: int, after: int = 0) -> Any:
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


def _window_newest(customer_id: int, size: int) -> Any:
    return messages_up_to(Customer(pk=customer_id), None).values_list(*recall_module.RECALL_COLUMNS)[:size]


def _profile_row(customer_id: int) -> Any:
    return CustomerProfile.objects.filter(customer_id=customer_id).order_by("pk").values_list(*PROFILE_FIELD_NAMES)[:1]


def _open_tasks(customer_id: int) -> Any:
    tasks = Task.objects.filter(customer_id=customer_id, status=TaskStatus.OPEN).order_by("due_at", "id")
    return tasks.values_list("id", "title", "due_at")[:20]


def _open_alerts(customer_id: int) -> Any:
    alerts = Alert.objects.filter(customer_id=customer_id, resolved=False).order_by("id")
    return alerts.values_list("id", "level", "text")[:20]


def _open_recommendations(customer_id: int) -> list[tuple[Any, ...]]:
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


_ITEM_COLUMNS = ACTIVE_ITEM_COLUMNS


def _active_items(customer_id: int) -> Any:
    """Active items with what `effective_in` and `render_snapshot` read (expiry is decided then)."""
    return MemoryItem.objects.filter(customer_id=customer_id, status=MemoryStatus.ACTIVE).values_list(*_ITEM_COLUMNS)


def _current_snapshot(customer_id: int) -> Any:
    """The newest snapshot's version, content and item ids (`snapshot_current`, as a row)."""
    return (
        MemorySnapshot.objects.filter(customer_id=customer_id)
        .order_by("-version")
        .values_list("version", "content", "item_ids")[:1]
    )


def _human_items(customer_id: int) -> Any:
    return MemoryItem.objects.filter(customer_id=customer_id, created_by=MemoryCreatedBy.HUMAN).values_list("pk")


# --- what a build reads ------------------------------------------------------------------------

# Rows read past the recent window and the recall candidates when the latest inbound message is
# not given: it is found among the newest messages (usually the first or second), so one query
# reads it, its window and its candidates. Further back than this, it is read on its own.
LATEST_SLACK = 8
# At most this many messages after the one being answered (our replies to it, newest kept) join
# the recent window (issue 39): the same bound as the slack, so both ways of reading agree.
REPLIES_AFTER_LIMIT = LATEST_SLACK


@dataclass
class _Read:
    """Everything a build reads, before anything is computed from it."""

    instructions: _Instructions
    knowledge_report: dict[str, Any]
    core: tuple[Any, ...] | None  # (snapshot version, content, item ids, human item ids); None: failed
    latest: Message | None
    # The effective messages (RECALL_COLUMNS), newest first: the `after` newest ones follow
    # `latest` (what was said after it, before the customer's next message), then up to `latest`.
    window_rows: list[tuple[Any, ...]]
    business: _Business
    # When the context stops being what these reads give with nothing written: the earliest expiry
    # among the items rendered without a snapshot (a snapshot's content is fixed); None: never.
    valid_until: datetime | None = None
    after: int = 0

    def window(self) -> list[tuple[Any, ...]]:
        return self.window_rows


def _message_from_row(customer: Customer, row: Sequence[Any], alias: str) -> Message:
    """The latest inbound message, from its window row (the builder quotes and recalls with it)."""
    pk, direction, sender, text, sent_at = row[:5]
    message = Message(id=pk, customer=customer, direction=direction, sender=sender, text=text, sent_at=sent_at)
    message._state.adding, message._state.db = False, alias
    return message


def _recent_message(row: Sequence[Any]) -> recall_module.RecalledMessage:
    pk, direction, sender, text, sent_at = row[:5]
    return recall_module.RecalledMessage(id=pk, direction=direction, sender=sender, text=text, sent_at=sent_at)
