"""The Workbench's read endpoints (spec §9): the page loads local data from them at start-up, so
local work never waits for the upstream WeCom status, and polls a version to refresh itself.
Drafts are serialized by conversations' own serializer; only the page's shapes live here.

The conversation list, the overview and the version endpoint carry an `ETag` and answer
`If-None-Match` with a body-less 304, decided from the version alone, before any row the page
shows is read."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.http import HttpResponseNotModified
from django.utils.http import parse_etags
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
    inline_serializer,
)
from rest_framework import permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.drafts import draft_generation_fail, draft_generation_start
from conversations.models import AuditEvent, Customer, CustomerProfile, Message
from conversations.selectors import customer_get, draft_get
from conversations.serializers import (
    AlertOutputSerializer,
    DraftOutputSerializer,
    MaskedTextField,
    RecommendationOutputSerializer,
    TaskOutputSerializer,
)
from memory.models import MemorySnapshot
from qiwei_site.platform.api import AccountAPIView
from qiwei_site.platform.selectors import accounts_for_user
from qiwei_site.platform.tenancy import on_account_commit
from qiwei_site.reading.fields import PROFILE_FIELDS
from qiwei_site.workbench.selectors import (
    memory_admin_url,
    workbench_conversation_list,
    workbench_conversation_version,
    workbench_conversations_version,
    workbench_overview,
    workbench_versions,
)
from qiwei_site.workbench.tasks import workbench_draft_generate_task

logger = logging.getLogger(__name__)

# Every browser revalidates (no-cache) and no shared cache keeps a user's answer (private).
CACHE_CONTROL = "private, no-cache"
IF_NONE_MATCH = OpenApiParameter(
    "If-None-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=False,
    description="上次应答的 ETag；未变化时返回 304，无正文 (the ETag last seen; 304 when unchanged)",
)
NOT_MODIFIED = OpenApiResponse(description="自上次 ETag 以来未变化，无正文 (unchanged since that ETag, no body)")


def etag_matches(request: Request, token: str) -> bool:
    """`If-None-Match` against our token, compared weakly as RFC 9110 asks (a proxy may weaken it)."""
    header = request.headers.get("If-None-Match", "")
    if not header:
        return False
    tags = parse_etags(header)
    return tags == ["*"] or any(tag.removeprefix("W/").strip('"') == token for tag in tags)


def conditional(request: Request, token: str, body: Callable[[], dict[str, Any]]) -> Response | HttpResponseNotModified:
    """A 304 when the client holds `token`, otherwise `body()` with `token` as its ETag."""
    headers = {"ETag": f'"{token}"', "Cache-Control": CACHE_CONTROL}
    if etag_matches(request, token):
        not_modified = HttpResponseNotModified()
        for name, value in headers.items():
            not_modified[name] = value
        return not_modified
    return Response(body(), headers=headers)


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


@extend_schema_serializer(component_name="WorkbenchSnapshot")
class SnapshotOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = MemorySnapshot
        fields = ["version", "content", "char_count", "item_ids", "reason", "created_at"]


# The named system processes that act (`actor="capture"` …), as an agent reads them; people keep their names.
SYSTEM_ACTOR_LABELS = {
    "system": "系统",
    "capture": "记忆提取",
    "pipeline": "回复流水线",
    "context": "上下文组装",
    "expiry": "到期处理",
    "celery": "后台任务",
    "worker": "后台任务",
    "seed_demo": "演示数据",
}


@extend_schema_serializer(component_name="WorkbenchAuditEvent")
class AuditOutputSerializer(serializers.ModelSerializer):
    action_label = serializers.CharField(source="get_action_display")
    actor_label = serializers.SerializerMethodField()

    class Meta:
        model = AuditEvent
        fields = ["id", "action", "action_label", "actor_name", "actor_label", "reason", "payload", "created_at"]

    def get_actor_label(self, event: AuditEvent) -> str:
        if event.actor_id is None:
            return SYSTEM_ACTOR_LABELS.get(event.actor_name or "system", event.actor_name)
        return event.actor_name


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
        parameters=[IF_NONE_MATCH],
        responses={
            200: inline_serializer("WorkbenchConversationList", {"results": ConversationOutputSerializer(many=True)}),
            304: NOT_MODIFIED,
        },
        summary="工作台会话列表（本地数据）",
    )
    def get(self, request: Request, account_id: str) -> Response | HttpResponseNotModified:
        # The version is read before the rows: a change in between only costs one more refresh.
        token = workbench_conversations_version()
        return conditional(
            request,
            token,
            lambda: {"results": ConversationOutputSerializer(workbench_conversation_list(), many=True).data},
        )


class OverviewOutputSerializer(serializers.Serializer):
    account_id = serializers.CharField()
    customer = CustomerOutputSerializer()
    messages = MessageOutputSerializer(many=True)
    profile = inline_serializer(
        "WorkbenchProfileField",
        {"name": serializers.CharField(), "label": serializers.CharField(), "value": serializers.CharField()},
        many=True,
    )
    # The open business state, shaped exactly as its own API answers it (the page resolves and
    # records feedback through that API).
    tasks = TaskOutputSerializer(many=True)
    alerts = AlertOutputSerializer(many=True)
    recommendations = RecommendationOutputSerializer(many=True)
    snapshot = SnapshotOutputSerializer(allow_null=True)
    drafts = DraftOutputSerializer(many=True)
    audit = AuditOutputSerializer(many=True)
    memory_admin_url = serializers.CharField(
        help_text="记忆条目管理的后台地址；无权打开时为空 (empty when the user cannot open it)"
    )


class WorkbenchOverviewApi(AccountAPIView):
    @extend_schema(
        parameters=[IF_NONE_MATCH],
        responses={200: OverviewOutputSerializer, 304: NOT_MODIFIED},
        summary="工作台：一个客户的全部本地信息",
    )
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response | HttpResponseNotModified:
        token = workbench_conversation_version(conversation_id=conversation_id)
        return conditional(request, token, lambda: self.overview(account_id, conversation_id, request.user))

    @staticmethod
    def overview(account_id: str, conversation_id: str, user: Any) -> dict[str, Any]:
        overview = workbench_overview(conversation_id=conversation_id)
        return {
            "account_id": account_id,
            "customer": CustomerOutputSerializer(overview.customer).data,
            "messages": MessageOutputSerializer(overview.messages, many=True).data,
            "profile": profile_output(overview.profile),
            "tasks": TaskOutputSerializer(overview.tasks, many=True).data,
            "alerts": AlertOutputSerializer(overview.alerts, many=True).data,
            "recommendations": RecommendationOutputSerializer(overview.recommendations, many=True).data,
            "snapshot": SnapshotOutputSerializer(overview.snapshot).data if overview.snapshot else None,
            "drafts": DraftOutputSerializer(overview.drafts, many=True).data,
            "audit": AuditOutputSerializer(overview.audit, many=True).data,
            "memory_admin_url": memory_admin_url(user),
        }


@extend_schema_serializer(component_name="WorkbenchVersion")
class VersionOutputSerializer(serializers.Serializer):
    version = serializers.CharField(help_text="整体版本，即本应答的 ETag (the answer's ETag)")
    conversations = serializers.CharField(help_text="会话列表的版本，等于会话列表接口的 ETag")
    conversation_id = serializers.CharField(allow_null=True, help_text="打开的会话；未指定时为 null")
    conversation = serializers.CharField(allow_null=True, help_text="该会话的版本，等于概览接口的 ETag")


class WorkbenchVersionApi(AccountAPIView):
    """工作台轮询的版本号：会话列表和（可选）一个会话的版本，内容未变时返回 304。

    The page polls this about once a second with `If-None-Match`. A 200 names which part changed:
    `conversations` is the ETag the conversation list now has, `conversation` the ETag the
    overview of `conversation_id` now has; the page refetches only the part whose token differs."""

    @extend_schema(
        parameters=[IF_NONE_MATCH],
        responses={200: VersionOutputSerializer, 304: NOT_MODIFIED},
        summary="工作台：会话列表与会话的版本（轮询用）",
    )
    def get(
        self, request: Request, account_id: str, conversation_id: str | None = None
    ) -> Response | HttpResponseNotModified:
        versions = workbench_versions(conversation_id=conversation_id)
        return conditional(
            request,
            versions.combined,
            lambda: {
                "version": versions.combined,
                "conversations": versions.conversations,
                "conversation_id": versions.conversation_id,
                "conversation": versions.conversation,
            },
        )


class WorkbenchDraftGenerateApi(AccountAPIView):
    """生成（或重新生成）回复草稿：立即返回「生成中」的草稿，模型在后台生成。

    The draft exists, as 生成中, before the model is asked, so a reload shows it with its elapsed
    time; the turn runs in a worker and fills that same draft, which the page's poll then shows. A
    regenerated draft replaces the customer's failed ones (`superseded`, kept in history)."""

    class InputSerializer(serializers.Serializer):
        regenerate = serializers.BooleanField(
            required=False, default=False, help_text="客户的最新消息已回复时仍要重新生成（否则 409）"
        )
        reason = serializers.CharField(required=False, allow_blank=True, max_length=300)

    @extend_schema(
        request=InputSerializer,
        responses={202: DraftOutputSerializer},
        summary="工作台：生成回复草稿（后台生成，立即返回生成中的草稿）",
    )
    def post(self, request: Request, account_id: str, conversation_id: str) -> Response:
        data = self.InputSerializer(data=request.data or {})
        data.is_valid(raise_exception=True)
        regenerate = data.validated_data["regenerate"]
        reason = data.validated_data.get("reason") or ("客服重新生成回复草稿" if regenerate else "客服生成回复草稿")
        customer = customer_get(conversation_id)
        draft = draft_generation_start(customer=customer, actor=request.user, reason=reason, regenerate=regenerate)
        user_id = request.user.pk
        on_account_commit(lambda: _queue_generation(account_id, draft.pk, regenerate, reason, user_id))
        return Response(DraftOutputSerializer(draft_get(draft.pk)).data, status=status.HTTP_202_ACCEPTED)


def _queue_generation(account_id: str, draft_id: int, regenerate: bool, reason: str, user_id: int | None) -> None:
    try:
        workbench_draft_generate_task.delay(account_id, draft_id, regenerate=regenerate, reason=reason, user_id=user_id)
    except Exception:  # a broker outage: the draft says so instead of 生成中 for ever
        logger.exception("draft generation %s could not be queued", draft_id)
        draft_generation_fail(
            draft=draft_get(draft_id),
            error="无法排队生成草稿：后台任务服务不可用，请稍后重新生成",
            actor="workbench",
            reason=reason,
        )
