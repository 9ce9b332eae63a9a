"""Reads for the Workbench page: the conversation list with what needs attention, everything
the page shows for one customer, all from the account's local database, and the versions the page
polls to know, cheaply, when either has changed."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Max, Model, OuterRef, Q, QuerySet, Subquery
from django.urls import NoReverseMatch, reverse

from conversations.models import (
    Alert,
    AuditEvent,
    Customer,
    CustomerProfile,
    Delivery,
    Draft,
    DraftStatus,
    Message,
    Recommendation,
    RecommendationStatus,
    Task,
    TaskStatus,
)
from conversations.selectors import alert_list, customer_get, recommendation_list, task_list
from memory.models import MemoryItem, MemorySnapshot
from memory.snapshots import snapshot_current
from qiwei_site.platform.errors import NotFound
from qiwei_site.platform.tenancy import current_account

RECENT_MESSAGES = 30
RECENT_AUDIT_EVENTS = 30
RECENT_CLOSED_DRAFTS = 5
CONVERSATION_LIST_LIMIT = 200
OPEN_DRAFT_STATUSES = [DraftStatus.GENERATING, DraftStatus.PENDING, DraftStatus.APPROVED]


@dataclass
class ConversationOverview:
    customer: Customer
    messages: list[Message]
    profile: CustomerProfile | None
    tasks: list[Task]
    alerts: list[Alert]
    recommendations: list[Recommendation]
    snapshot: MemorySnapshot | None
    drafts: list[Draft]
    audit: list[AuditEvent]


def workbench_conversation_list(*, limit: int = CONVERSATION_LIST_LIMIT) -> QuerySet[Customer]:
    """The selected account's customers, most recent first, with what needs attention counted."""
    last_message = Message.objects.filter(customer=OuterRef("pk")).order_by("-sent_at", "-id")
    return Customer.objects.annotate(
        last_message_text=Subquery(last_message.values("text")[:1]),
        last_message_direction=Subquery(last_message.values("direction")[:1]),
        pending_drafts=Count("drafts", filter=Q(drafts__status=DraftStatus.PENDING), distinct=True),
        open_tasks=Count("tasks", filter=Q(tasks__status=TaskStatus.OPEN), distinct=True),
        unresolved_alerts=Count("alerts", filter=Q(alerts__resolved=False), distinct=True),
    ).order_by("-last_message_at", "conversation_id")[:limit]


def workbench_overview(*, conversation_id: str) -> ConversationOverview:
    """Everything the page shows for one customer, read from the account's local database."""
    customer = customer_get(conversation_id)
    newest = Message.objects.filter(customer=customer).order_by("-sent_at", "-id")[:RECENT_MESSAGES]
    # A generating draft is a card (生成中, with its elapsed time); a superseded one is not: it lives
    # on in the draft's history and the audit, and in the API (?status=superseded).
    open_drafts = Draft.objects.filter(customer=customer, status__in=OPEN_DRAFT_STATUSES).select_related(
        "customer", "delivery"
    )
    closed_drafts = (
        Draft.objects.filter(customer=customer)
        .exclude(status__in=[*OPEN_DRAFT_STATUSES, DraftStatus.SUPERSEDED])
        .select_related("customer", "delivery")
        .order_by("-updated_at", "-id")[:RECENT_CLOSED_DRAFTS]
    )
    return ConversationOverview(
        customer=customer,
        messages=list(reversed(list(newest))),
        profile=CustomerProfile.objects.filter(customer=customer).first(),
        # The open business state, through the same selectors (order, prefetches) as its API.
        tasks=list(task_list(customer=customer, status=TaskStatus.OPEN)),
        alerts=list(alert_list(customer=customer, resolved="false")),
        recommendations=list(recommendation_list(customer=customer, status=RecommendationStatus.OPEN)),
        snapshot=snapshot_current(customer),
        drafts=[*open_drafts.order_by("-created_at", "-id"), *closed_drafts],
        audit=list(
            AuditEvent.objects.filter(conversation_id=customer.conversation_id).order_by("-created_at", "-id")[
                :RECENT_AUDIT_EVENTS
            ]
        ),
    )


def memory_admin_url(user: Any) -> str:
    """Where the user curates memory in admin, or "" when they cannot open it (an agent is no staff
    member; a staff member needs the view permission): the page offers no link a user cannot open."""
    if not (user.is_active and user.is_staff and user.has_perm("memory.view_memoryitem")):
        return ""
    try:
        return reverse("admin:memory_memoryitem_changelist")
    except NoReverseMatch:
        return reverse("admin:index")


# --- versions: what the page polls ------------------------------------------------------------
#
# A version is an opaque token that changes whenever something the page shows changes. It is
# built from counts, newest ids and newest `updated_at` values, never from the rows themselves:
# one query for a customer (aggregates over that customer's rows, through the customer index) and
# five small aggregates for the list, so an unchanged poll reads no row the page shows. Counts
# catch deletions (forget, erasure), newest ids catch inserts, `updated_at` catches edits, and the
# audit id catches every audited write, including queryset updates that leave `updated_at` alone.
# A panel that shows another table adds that table to `_customer_fingerprint`.


@dataclass(frozen=True)
class WorkbenchVersions:
    conversations: str
    conversation_id: str | None
    conversation: str | None

    @property
    def combined(self) -> str:
        """One token for the pair, the ETag of the version endpoint."""
        return _token("versions", self.conversations, self.conversation_id, self.conversation)


def _token(*parts: Any) -> str:
    # The account is part of every token, so equal data in two accounts never shares a version.
    encoded = json.dumps([current_account(), *parts], default=str, ensure_ascii=False).encode()
    return hashlib.blake2b(encoded, digest_size=12).hexdigest()


def _per_customer(model: type[Model], link: str, outer: str = "pk", **aggregates: Any) -> dict[str, Subquery]:
    """Aggregates over one customer's rows of `model`, as scalar subqueries of a Customer query
    (named `v_…`, so they never clash with the customer's own fields and relations)."""
    grouped = model._default_manager.filter(**{link: OuterRef(outer)}).order_by().values(link)
    return {
        f"v_{name}": Subquery(grouped.annotate(value=aggregate).values("value")[:1])
        for name, aggregate in aggregates.items()
    }


def _customer_fingerprint() -> dict[str, Subquery]:
    return {
        **_per_customer(Message, "customer", messages=Count("pk"), message_last=Max("pk")),
        **_per_customer(CustomerProfile, "customer", profile=Max("updated_at")),
        **_per_customer(Draft, "customer", drafts=Count("pk"), draft_updated=Max("updated_at")),
        **_per_customer(Delivery, "draft__customer", delivery_updated=Max("updated_at")),
        **_per_customer(MemoryItem, "customer", items=Count("pk"), item_last=Max("pk"), item_updated=Max("updated_at")),
        **_per_customer(MemorySnapshot, "customer", snapshot=Max("version")),
        **_per_customer(Task, "customer", tasks=Count("pk"), task_updated=Max("updated_at")),
        **_per_customer(Alert, "customer", alerts=Count("pk"), alert_updated=Max("updated_at")),
        **_per_customer(
            Recommendation, "customer", recommendations=Count("pk"), recommendation_updated=Max("updated_at")
        ),
        **_per_customer(AuditEvent, "conversation_id", "conversation_id", audit_last=Max("pk")),
    }


def workbench_conversation_version(*, conversation_id: str) -> str:
    """The version of everything the page shows for one customer (one query)."""
    fingerprint = _customer_fingerprint()
    row = (
        Customer.objects.filter(conversation_id=conversation_id)
        .annotate(**fingerprint)
        .values("pk", "updated_at", "last_message_at", *fingerprint)
        .first()
    )
    if row is None:
        raise NotFound(f"会话 {conversation_id} 不存在 (no such conversation).", code="conversation_not_found")
    return _token("conversation", conversation_id, sorted(row.items()))


def workbench_conversations_version() -> str:
    """The version of the account's conversation list: its customers, last messages and the
    drafts, tasks and alerts it counts."""
    parts = [
        Customer.objects.aggregate(n=Count("pk"), updated=Max("updated_at"), last=Max("last_message_at")),
        Message.objects.aggregate(last=Max("pk")),
        Draft.objects.aggregate(n=Count("pk"), updated=Max("updated_at")),
        Task.objects.aggregate(n=Count("pk"), updated=Max("updated_at")),
        Alert.objects.aggregate(n=Count("pk"), updated=Max("updated_at")),
    ]
    return _token("conversations", [sorted(part.items()) for part in parts])


def workbench_versions(*, conversation_id: str | None = None) -> WorkbenchVersions:
    """The list's version and, when a conversation is open, that conversation's version."""
    conversation = workbench_conversation_version(conversation_id=conversation_id) if conversation_id else None
    return WorkbenchVersions(
        conversations=workbench_conversations_version(),
        conversation_id=conversation_id,
        conversation=conversation,
    )
