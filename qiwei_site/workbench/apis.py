"""The Workbench's read endpoints (spec §9): the page loads local data from them at start-up, so
local work never waits for the upstream WeCom status. Drafts and audit events are serialized by
conversations' own serializers; only the page's shapes live here."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.apis import DraftOutputSerializer
from conversations.models import Alert, AuditEvent, Customer, CustomerProfile, Message, Task
from conversations.profile_fields import PROFILE_FIELDS
from memory.capture.apis import MaskedTextField
from memory.models import MemorySnapshot
from qiwei_site.platform.api import AccountAPIView
from qiwei_site.platform.selectors import accounts_for_user
from qiwei_site.workbench.selectors import memory_admin_url, workbench_conversation_list, workbench_overview


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
    # The list preview quotes the last message masked, like every other place a message is shown.
    last_message_text = MaskedTextField(allow_null=True)
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
    text = MaskedTextField(read_only=True)

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


@extend_schema_serializer(component_name="WorkbenchAuditEvent")
class AuditOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEvent
        fields = ["id", "action", "actor_name", "reason", "payload", "created_at"]


def profile_output(profile: CustomerProfile | None) -> list[dict[str, str]]:
    values = profile.as_dict() if profile is not None else {}
    return [{"name": name, "label": label, "value": values.get(name, "")} for name, label in PROFILE_FIELDS]


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
