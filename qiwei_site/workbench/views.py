"""The Workbench page 智能会话 (spec §9): the page itself and the read-only endpoints it loads
local data from at start-up, so local work never waits for the upstream WeCom status."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.csrf import ensure_csrf_cookie
from drf_spectacular.utils import extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.models import (
    PROFILE_FIELDS,
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
from qiwei_site.platform.api import AccountAPIView
from qiwei_site.platform.selectors import accounts_for_user

RECENT_MESSAGES = 30
RECENT_AUDIT_EVENTS = 30
RECENT_CLOSED_DRAFTS = 5
CONVERSATION_LIST_LIMIT = 200

# --- selectors ------------------------------------------------------------------------


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
    ).select_related("delivery")
    closed_drafts = (
        Draft.objects.filter(customer=customer)
        .exclude(status__in=[DraftStatus.PENDING, DraftStatus.APPROVED])
        .select_related("delivery")
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


# --- output serializers ---------------------------------------------------------------


@extend_schema_serializer(component_name="WorkbenchAccount")
class AccountOutputSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()


@extend_schema_serializer(component_name="WorkbenchConversation")
class ConversationOutputSerializer(serializers.Serializer):
    conversation_id = serializers.CharField()
    display_name = serializers.CharField()
    session_mode = serializers.CharField()
    last_message_at = serializers.DateTimeField(allow_null=True)
    last_message_text = serializers.CharField(allow_null=True)
    last_message_direction = serializers.CharField(allow_null=True)
    pending_drafts = serializers.IntegerField()
    open_tasks = serializers.IntegerField()
    unresolved_alerts = serializers.IntegerField()


@extend_schema_serializer(component_name="WorkbenchCustomer")
class CustomerOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Customer
        fields = ["conversation_id", "display_name", "session_mode", "auto_send_whitelisted", "last_message_at"]


@extend_schema_serializer(component_name="WorkbenchMessage")
class MessageOutputSerializer(serializers.ModelSerializer):
    direction_label = serializers.CharField(source="get_direction_display")

    class Meta:
        model = Message
        fields = ["id", "external_id", "direction", "direction_label", "sender", "text", "sent_at", "is_effective"]


@extend_schema_serializer(component_name="WorkbenchTask")
class TaskOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Task
        fields = ["id", "title", "status", "due_at"]


@extend_schema_serializer(component_name="WorkbenchAlert")
class AlertOutputSerializer(serializers.ModelSerializer):
    level_label = serializers.CharField(source="get_level_display")

    class Meta:
        model = Alert
        fields = ["id", "level", "level_label", "text", "created_at"]


@extend_schema_serializer(component_name="WorkbenchSnapshot")
class SnapshotOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = MemorySnapshot
        fields = ["version", "content", "char_count", "item_ids", "reason", "created_at"]


@extend_schema_serializer(component_name="WorkbenchDraft")
class DraftOutputSerializer(serializers.ModelSerializer):
    status_label = serializers.CharField(source="get_status_display")
    delivery = serializers.SerializerMethodField()

    class Meta:
        model = Draft
        fields = [
            "id",
            "status",
            "status_label",
            "reply",
            "final_text",
            "confidence",
            "requires_human",
            "reasons",
            "error",
            "created_at",
            "delivery",
        ]

    def get_delivery(self, obj: Draft) -> dict[str, Any] | None:
        delivery = getattr(obj, "delivery", None)
        if delivery is None:
            return None
        when = serializers.DateTimeField()
        return {
            "status": delivery.status,
            "status_label": delivery.get_status_display(),
            "upstream_id": delivery.upstream_id,
            "text": delivery.text,
            "last_error": delivery.last_error,
            "sent_at": when.to_representation(delivery.sent_at) if delivery.sent_at else None,
            "created_at": when.to_representation(delivery.created_at),
        }


@extend_schema_serializer(component_name="WorkbenchAuditEvent")
class AuditOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEvent
        fields = ["id", "action", "actor_name", "reason", "payload", "created_at"]


def profile_output(profile: CustomerProfile | None) -> list[dict[str, str]]:
    values = profile.as_dict() if profile is not None else {}
    return [{"name": name, "label": label, "value": values.get(name, "")} for name, label in PROFILE_FIELDS]


# --- API views ------------------------------------------------------------------------


class WorkbenchAccountListApi(APIView):
    """The accounts the logged-in user may see (the page caches them per origin)."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        responses=inline_serializer("WorkbenchAccountList", {"results": AccountOutputSerializer(many=True)}),
        summary="当前用户可见的企微账号",
    )
    def get(self, request: Request) -> Response:
        accounts = accounts_for_user(request.user).order_by("id")
        return Response({"results": AccountOutputSerializer(accounts, many=True).data})


class WorkbenchConversationListApi(AccountAPIView):
    @extend_schema(
        responses=inline_serializer("WorkbenchConversationList", {"results": ConversationOutputSerializer(many=True)}),
        summary="工作台会话列表（本地数据）",
    )
    def get(self, request: Request, account_id: str) -> Response:
        customers = workbench_conversation_list()
        return Response({"results": ConversationOutputSerializer(customers, many=True).data})


class OverviewOutputSerializer(serializers.Serializer):
    account_id = serializers.CharField()
    customer = CustomerOutputSerializer()
    messages = MessageOutputSerializer(many=True)
    profile = inline_serializer(
        "WorkbenchProfileField",
        {"name": serializers.CharField(), "label": serializers.CharField(), "value": serializers.CharField()},
        many=True,
    )
    tasks = TaskOutputSerializer(many=True)
    alerts = AlertOutputSerializer(many=True)
    snapshot = SnapshotOutputSerializer(allow_null=True)
    drafts = DraftOutputSerializer(many=True)
    audit = AuditOutputSerializer(many=True)
    memory_admin_url = serializers.CharField()


class WorkbenchOverviewApi(AccountAPIView):
    @extend_schema(responses=OverviewOutputSerializer, summary="工作台：一个客户的全部本地信息")
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response:
        overview = workbench_overview(conversation_id=conversation_id)
        return Response(
            {
                "account_id": account_id,
                "customer": CustomerOutputSerializer(overview.customer).data,
                "messages": MessageOutputSerializer(overview.messages, many=True).data,
                "profile": profile_output(overview.profile),
                "tasks": TaskOutputSerializer(overview.tasks, many=True).data,
                "alerts": AlertOutputSerializer(overview.alerts, many=True).data,
                "snapshot": SnapshotOutputSerializer(overview.snapshot).data if overview.snapshot else None,
                "drafts": DraftOutputSerializer(overview.drafts, many=True).data,
                "audit": AuditOutputSerializer(overview.audit, many=True).data,
                "memory_admin_url": memory_admin_url(),
            }
        )


# --- the page -------------------------------------------------------------------------


@login_required
@ensure_csrf_cookie
def workbench_page(request: HttpRequest) -> HttpResponse:
    """The page shell; data arrives from the endpoints above so the shell renders instantly."""
    accounts = [{"id": account.id, "name": account.name} for account in accounts_for_user(request.user)]
    return render(
        request,
        "workbench/index.html",
        {"accounts": accounts, "memory_admin_url": memory_admin_url(), "admin_url": reverse("admin:index")},
    )
