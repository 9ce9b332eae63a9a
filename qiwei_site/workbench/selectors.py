"""Reads for the Workbench page: the conversation list with what needs attention, and everything
the page shows for one customer, all from the account's local database."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.urls import NoReverseMatch, reverse

from conversations.models import (
    Alert,
    AuditEvent,
    Customer,
    CustomerProfile,
    Draft,
    DraftStatus,
    Message,
    Task,
    TaskStatus,
)
from conversations.selectors import customer_get
from memory.models import MemorySnapshot
from memory.snapshots import snapshot_current

RECENT_MESSAGES = 30
RECENT_AUDIT_EVENTS = 30
RECENT_CLOSED_DRAFTS = 5
CONVERSATION_LIST_LIMIT = 200


@dataclass
class ConversationOverview:
    customer: Customer
    messages: list[Message]
    profile: CustomerProfile | None
    tasks: list[Task]
    alerts: list[Alert]
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
    open_drafts = Draft.objects.filter(
        customer=customer, status__in=[DraftStatus.PENDING, DraftStatus.APPROVED]
    ).select_related("customer", "delivery")
    closed_drafts = (
        Draft.objects.filter(customer=customer)
        .exclude(status__in=[DraftStatus.PENDING, DraftStatus.APPROVED])
        .select_related("customer", "delivery")
        .order_by("-updated_at", "-id")[:RECENT_CLOSED_DRAFTS]
    )
    return ConversationOverview(
        customer=customer,
        messages=list(reversed(list(newest))),
        profile=CustomerProfile.objects.filter(customer=customer).first(),
        tasks=list(Task.objects.filter(customer=customer, status=TaskStatus.OPEN).order_by("due_at", "id")),
        alerts=list(Alert.objects.filter(customer=customer, resolved=False).order_by("-created_at", "-id")),
        snapshot=snapshot_current(customer),
        drafts=[*open_drafts.order_by("-created_at", "-id"), *closed_drafts],
        audit=list(
            AuditEvent.objects.filter(conversation_id=customer.conversation_id).order_by("-created_at", "-id")[
                :RECENT_AUDIT_EVENTS
            ]
        ),
    )


def memory_admin_url() -> str:
    try:
        return reverse("admin:memory_memoryitem_changelist")
    except NoReverseMatch:
        return reverse("admin:index")
