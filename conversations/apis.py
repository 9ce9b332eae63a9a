"""Conversations' API (DESIGN §12): customers, drafts (read, approve, reject, send, the prompt each
was made from), business state (tasks, alerts, recommendations and their feedback) and the audit
trail. Views validate, call one service or selector and serialize."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.business import (
    alert_create,
    alert_update,
    recommendation_create,
    recommendation_feedback_record,
    recommendation_resolve,
    recommendation_update,
    task_create,
    task_resolve,
    task_update,
)
from conversations.drafts import draft_approve, draft_context_read, draft_reject, draft_send
from conversations.models import (
    AlertKind,
    AlertLevel,
    AuditEvent,
    Customer,
    FeedbackSource,
    FeedbackVerdict,
    RecommendationStatus,
    TaskStatus,
)
from conversations.selectors import (
    alert_get,
    alert_list,
    audit_event_list,
    customer_get,
    draft_get,
    draft_prompt_view,
    recommendation_get,
    recommendation_list,
    task_get,
    task_list,
)
from conversations.serializers import (
    AlertOutputSerializer,
    DeliveryOutputSerializer,
    DraftOutputSerializer,
    RecommendationOutputSerializer,
    TaskOutputSerializer,
)
from conversations.services import alert_resolve
from qiwei_site.platform.api import AccountAPIView, ErrorOutputSerializer
from qiwei_site.platform.models import ContextReadPurpose
from qiwei_site.platform.pagination import LimitOffsetPagination, paginated_response


class CustomerOutputSerializer(serializers.ModelSerializer):
    profile = serializers.SerializerMethodField()

    class Meta:
        model = Customer
        fields = [
            "conversation_id",
            "display_name",
            "session_mode",
            "auto_send_whitelisted",
            "last_message_at",
            "created_at",
            "profile",
        ]

    def get_profile(self, obj: Customer) -> dict[str, str]:
        profile = getattr(obj, "profile", None)
        return profile.as_dict() if profile is not None else {}


class CustomerListApi(AccountAPIView):
    pagination_class = LimitOffsetPagination

    @extend_schema(responses=CustomerOutputSerializer(many=True), summary="客户（会话）列表")
    def get(self, request: Request, account_id: str) -> Response:
        customers = Customer.objects.select_related("profile").order_by("-last_message_at", "conversation_id")
        return paginated_response(request=request, view=self, queryset=customers, serializer=CustomerOutputSerializer)


class CustomerDetailApi(AccountAPIView):
    @extend_schema(responses=CustomerOutputSerializer, summary="客户（会话）详情")
    def get(self, request: Request, account_id: str, conversation_id: str, **kwargs: Any) -> Response:
        return Response(CustomerOutputSerializer(customer_get(conversation_id)).data)


# --- drafts ------------------------------------------------------------------------------


class ReasonInputSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=300)


class DraftDetailApi(AccountAPIView):
    @extend_schema(responses=DraftOutputSerializer, summary="草稿详情")
    def get(self, request: Request, account_id: str, draft_id: int) -> Response:
        return Response(DraftOutputSerializer(draft_get(draft_id)).data)


class DraftApproveApi(AccountAPIView):
    @extend_schema_serializer(component_name="DraftApproveInput")
    class InputSerializer(serializers.Serializer):
        text = serializers.CharField(required=False, allow_blank=True, max_length=4000, trim_whitespace=False)
        reason = serializers.CharField(required=False, allow_blank=True, max_length=300)

    @extend_schema(request=InputSerializer, responses=DraftOutputSerializer, summary="批准草稿（可附编辑后的文本）")
    def post(self, request: Request, account_id: str, draft_id: int) -> Response:
        data = self.InputSerializer(data=request.data or {})
        data.is_valid(raise_exception=True)
        draft = draft_approve(
            draft=draft_get(draft_id),
            actor=request.user,
            reason=data.validated_data.get("reason") or "审核通过",
            text=data.validated_data.get("text"),
        )
        return Response(DraftOutputSerializer(draft_get(draft.pk)).data)


class DraftRejectApi(AccountAPIView):
    @extend_schema(request=ReasonInputSerializer, responses=DraftOutputSerializer, summary="拒绝草稿")
    def post(self, request: Request, account_id: str, draft_id: int) -> Response:
        data = ReasonInputSerializer(data=request.data or {})
        data.is_valid(raise_exception=True)
        draft = draft_reject(
            draft=draft_get(draft_id), actor=request.user, reason=data.validated_data.get("reason") or "审核拒绝"
        )
        return Response(DraftOutputSerializer(draft_get(draft.pk)).data)


class DraftSendApi(AccountAPIView):
    @extend_schema(
        request=ReasonInputSerializer,
        responses={
            200: DeliveryOutputSerializer,
            503: OpenApiResponse(ErrorOutputSerializer, description="企微上游不可用，未发送，草稿保留可重试"),
        },
        summary="发送已批准的草稿（幂等：重复请求返回同一条发送记录）",
    )
    def post(self, request: Request, account_id: str, draft_id: int) -> Response:
        data = ReasonInputSerializer(data=request.data or {})
        data.is_valid(raise_exception=True)
        delivery = draft_send(
            draft=draft_get(draft_id), actor=request.user, reason=data.validated_data.get("reason") or "发送回复"
        )
        return Response(DeliveryOutputSerializer(delivery).data)


# --- audit -------------------------------------------------------------------------------


class AuditEventOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEvent
        fields = ["id", "action", "conversation_id", "actor_id", "actor_name", "reason", "payload", "created_at"]


class AuditListApi(AccountAPIView):
    pagination_class = LimitOffsetPagination

    @extend_schema(
        parameters=[
            OpenApiParameter("conversation_id", OpenApiTypes.STR),
            OpenApiParameter("action", OpenApiTypes.STR),
            OpenApiParameter("since", OpenApiTypes.DATETIME, description="起始时间（含）ISO 8601"),
            OpenApiParameter("until", OpenApiTypes.DATETIME, description="截止时间（不含）ISO 8601"),
        ],
        responses=AuditEventOutputSerializer(many=True),
    )
    def get(self, request: Request, account_id: str) -> Response:
        events = audit_event_list(filters=request.query_params)
        return paginated_response(request=request, view=self, queryset=events, serializer=AuditEventOutputSerializer)


# --- business state: tasks, alerts, recommendations (agents write them too) ----------------------


class StrictInput(serializers.Serializer):
    """Input that refuses unknown fields, so a typo is a 400 rather than a silent no-op."""

    rejects_unknown_fields = True  # documented as additionalProperties: false

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(getattr(self, "initial_data", {}) or {}) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({field: "未知字段 (unknown field)." for field in unknown})
        return attrs


def _reason_field() -> serializers.CharField:
    return serializers.CharField(required=False, allow_blank=True, max_length=300, default="")


@extend_schema_serializer(component_name="BusinessResolveInput")
class ResolveInputSerializer(StrictInput):
    reason = serializers.CharField(max_length=300, help_text="处理原因（必填，写入记录和审计）")


def _input(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    data = serializer_class(data=request.data if request.data is not None else {})
    data.is_valid(raise_exception=True)
    return dict(data.validated_data)


def _changes(data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    reason = str(data.pop("reason", "") or "")
    return data, reason


class TaskListApi(AccountAPIView):
    """一个客户的待办（默认只列未完成的；`status=done` 已完成，`status=all` 全部），截止时间最早的在前。"""

    pagination_class = LimitOffsetPagination

    @extend_schema_serializer(component_name="TaskCreateInput")
    class InputSerializer(StrictInput):
        title = serializers.CharField(max_length=200)
        note = serializers.CharField(required=False, allow_blank=True, max_length=500, default="")
        due_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
        reason = _reason_field()

    @extend_schema(
        parameters=[OpenApiParameter("status", str, enum=[*TaskStatus.values, "all"], description="按状态筛选")],
        responses=TaskOutputSerializer(many=True),
        summary="待办列表",
    )
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response:
        tasks = task_list(customer=customer_get(conversation_id), status=request.query_params.get("status"))
        return paginated_response(request=request, view=self, queryset=tasks, serializer=TaskOutputSerializer)

    @extend_schema(request=InputSerializer, responses={201: TaskOutputSerializer}, summary="新建待办")
    def post(self, request: Request, account_id: str, conversation_id: str) -> Response:
        customer = customer_get(conversation_id)
        fields, reason = _changes(_input(self.InputSerializer, request))
        task = task_create(customer=customer, actor=request.user, reason=reason, **fields)
        return Response(TaskOutputSerializer(task).data, status=201)


class TaskDetailApi(AccountAPIView):
    @extend_schema_serializer(component_name="TaskUpdateInput")
    class InputSerializer(StrictInput):
        title = serializers.CharField(required=False, max_length=200)
        note = serializers.CharField(required=False, allow_blank=True, max_length=500)
        due_at = serializers.DateTimeField(required=False, allow_null=True)
        reason = _reason_field()

    @extend_schema(responses=TaskOutputSerializer, summary="待办详情")
    def get(self, request: Request, account_id: str, task_id: int) -> Response:
        return Response(TaskOutputSerializer(task_get(task_id)).data)

    @extend_schema(request=InputSerializer, responses=TaskOutputSerializer, summary="修改待办（标题、说明、截止时间）")
    def patch(self, request: Request, account_id: str, task_id: int) -> Response:
        task = task_get(task_id)
        changes, reason = _changes(_input(self.InputSerializer, request))
        return Response(
            TaskOutputSerializer(task_update(task=task, changes=changes, actor=request.user, reason=reason)).data
        )


class TaskResolveApi(AccountAPIView):
    @extend_schema(request=ResolveInputSerializer, responses=TaskOutputSerializer, summary="完成待办（需填写原因）")
    def post(self, request: Request, account_id: str, task_id: int) -> Response:
        task = task_get(task_id)
        reason = _input(ResolveInputSerializer, request)["reason"]
        return Response(TaskOutputSerializer(task_resolve(task=task, actor=request.user, reason=reason)).data)


class AlertListApi(AccountAPIView):
    """一个客户的预警（默认只列未处理的；`resolved=true` 列已处理的，`resolved=all` 全部），可按来源和级别筛选。"""

    pagination_class = LimitOffsetPagination

    @extend_schema_serializer(component_name="AlertCreateInput")
    class InputSerializer(StrictInput):
        text = serializers.CharField(max_length=300)
        level = serializers.ChoiceField(choices=AlertLevel.choices, default=AlertLevel.WARNING)
        reason = _reason_field()

    @extend_schema(
        parameters=[
            OpenApiParameter("resolved", str, enum=["false", "true", "all"], description="按处理状态筛选"),
            OpenApiParameter("kind", str, enum=[*AlertKind.values, "all"], description="按来源筛选"),
            OpenApiParameter("level", str, enum=[*AlertLevel.values, "all"], description="按级别筛选"),
        ],
        responses=AlertOutputSerializer(many=True),
        summary="预警列表",
    )
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response:
        params = request.query_params
        alerts = alert_list(
            customer=customer_get(conversation_id),
            resolved=params.get("resolved"),
            kind=params.get("kind"),
            level=params.get("level"),
        )
        return paginated_response(request=request, view=self, queryset=alerts, serializer=AlertOutputSerializer)

    @extend_schema(request=InputSerializer, responses={201: AlertOutputSerializer}, summary="人工新建预警")
    def post(self, request: Request, account_id: str, conversation_id: str) -> Response:
        customer = customer_get(conversation_id)
        fields, reason = _changes(_input(self.InputSerializer, request))
        alert = alert_create(customer=customer, actor=request.user, reason=reason, **fields)
        return Response(AlertOutputSerializer(alert).data, status=201)


class AlertDetailApi(AccountAPIView):
    @extend_schema_serializer(component_name="AlertUpdateInput")
    class InputSerializer(StrictInput):
        text = serializers.CharField(required=False, max_length=300, help_text="只有人工预警可以改内容")
        level = serializers.ChoiceField(choices=AlertLevel.choices, required=False)
        reason = _reason_field()

    @extend_schema(responses=AlertOutputSerializer, summary="预警详情")
    def get(self, request: Request, account_id: str, alert_id: int) -> Response:
        return Response(AlertOutputSerializer(alert_get(alert_id)).data)

    @extend_schema(
        request=InputSerializer, responses=AlertOutputSerializer, summary="修改预警（级别；人工预警可改内容）"
    )
    def patch(self, request: Request, account_id: str, alert_id: int) -> Response:
        alert = alert_get(alert_id)
        changes, reason = _changes(_input(self.InputSerializer, request))
        return Response(
            AlertOutputSerializer(alert_update(alert=alert, changes=changes, actor=request.user, reason=reason)).data
        )


class AlertResolveApi(AccountAPIView):
    @extend_schema(request=ResolveInputSerializer, responses=AlertOutputSerializer, summary="处理预警（需填写原因）")
    def post(self, request: Request, account_id: str, alert_id: int) -> Response:
        alert = alert_get(alert_id)
        reason = _input(ResolveInputSerializer, request)["reason"]
        return Response(AlertOutputSerializer(alert_resolve(alert=alert, actor=request.user, reason=reason)).data)


class RecommendationListApi(AccountAPIView):
    """一个客户的推荐及其反馈记录（默认只列跟进中的；`status=resolved` 已结束，`status=all` 全部），最新的在前。"""

    pagination_class = LimitOffsetPagination

    @extend_schema_serializer(component_name="RecommendationCreateInput")
    class InputSerializer(StrictInput):
        text = serializers.CharField(max_length=300)
        reason = _reason_field()

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str, enum=[*RecommendationStatus.values, "all"], description="按状态筛选")
        ],
        responses=RecommendationOutputSerializer(many=True),
        summary="推荐列表",
    )
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response:
        recommendations = recommendation_list(
            customer=customer_get(conversation_id), status=request.query_params.get("status")
        )
        return paginated_response(
            request=request, view=self, queryset=recommendations, serializer=RecommendationOutputSerializer
        )

    @extend_schema(request=InputSerializer, responses={201: RecommendationOutputSerializer}, summary="新建推荐")
    def post(self, request: Request, account_id: str, conversation_id: str) -> Response:
        customer = customer_get(conversation_id)
        fields, reason = _changes(_input(self.InputSerializer, request))
        recommendation = recommendation_create(customer=customer, actor=request.user, reason=reason, **fields)
        return Response(RecommendationOutputSerializer(recommendation_get(recommendation.pk)).data, status=201)


class RecommendationDetailApi(AccountAPIView):
    @extend_schema_serializer(component_name="RecommendationUpdateInput")
    class InputSerializer(StrictInput):
        text = serializers.CharField(required=False, max_length=300)
        reason = _reason_field()

    @extend_schema(responses=RecommendationOutputSerializer, summary="推荐详情（含反馈记录）")
    def get(self, request: Request, account_id: str, recommendation_id: int) -> Response:
        return Response(RecommendationOutputSerializer(recommendation_get(recommendation_id)).data)

    @extend_schema(request=InputSerializer, responses=RecommendationOutputSerializer, summary="修改推荐内容")
    def patch(self, request: Request, account_id: str, recommendation_id: int) -> Response:
        recommendation = recommendation_get(recommendation_id)
        changes, reason = _changes(_input(self.InputSerializer, request))
        recommendation_update(recommendation=recommendation, changes=changes, actor=request.user, reason=reason)
        return Response(RecommendationOutputSerializer(recommendation_get(recommendation.pk)).data)


class RecommendationResolveApi(AccountAPIView):
    @extend_schema(
        request=ResolveInputSerializer, responses=RecommendationOutputSerializer, summary="结束推荐（需填写原因）"
    )
    def post(self, request: Request, account_id: str, recommendation_id: int) -> Response:
        recommendation = recommendation_get(recommendation_id)
        reason = _input(ResolveInputSerializer, request)["reason"]
        recommendation_resolve(recommendation=recommendation, actor=request.user, reason=reason)
        return Response(RecommendationOutputSerializer(recommendation_get(recommendation.pk)).data)


class RecommendationFeedbackApi(AccountAPIView):
    """记录客户或客服对推荐的反馈（追加到反馈记录，最新一条进入下一轮上下文）；应答为推荐本身。"""

    @extend_schema_serializer(component_name="RecommendationFeedbackInput")
    class InputSerializer(StrictInput):
        source = serializers.ChoiceField(  # type: ignore[assignment]  # a field named like Field.source
            choices=FeedbackSource.choices, help_text="谁的反馈：customer 客户 / agent 客服"
        )
        verdict = serializers.ChoiceField(choices=FeedbackVerdict.choices)
        comment = serializers.CharField(required=False, allow_blank=True, max_length=300, default="")
        reason = _reason_field()

    @extend_schema(request=InputSerializer, responses={201: RecommendationOutputSerializer}, summary="记录推荐反馈")
    def post(self, request: Request, account_id: str, recommendation_id: int) -> Response:
        recommendation = recommendation_get(recommendation_id)
        fields, reason = _changes(_input(self.InputSerializer, request))
        recommendation_feedback_record(recommendation=recommendation, actor=request.user, reason=reason, **fields)
        return Response(RecommendationOutputSerializer(recommendation_get(recommendation.pk)).data, status=201)


# --- a draft's prompt ------------------------------------------------------------------------------


class DraftPromptSectionOutputSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="段落键，如 core_memory、recalled_history")
    title = serializers.CharField(help_text="段落中文标题")
    start = serializers.IntegerField(help_text="在 prompt 中的起始偏移（含），prompt[start:end] 即本段")
    end = serializers.IntegerField(help_text="结束偏移（不含）")
    chars = serializers.IntegerField()
    budget = serializers.IntegerField(allow_null=True, help_text="本段所属预算的字符上限；输出约束不设上限（null）")
    budget_scope = serializers.CharField(
        help_text="预算名：instructions、core_memory、business_state、conversation（三段共用）、whole"
    )
    trimmed = serializers.BooleanField(help_text="本段是否因预算被截短或删去条目")
    trimmed_ids = serializers.ListField(child=serializers.IntegerField(), help_text="因预算删去的记忆条目或消息 id")
    left_out = serializers.ListField(
        child=serializers.CharField(), help_text="因预算省略的知识库段落标题（仅 instructions）"
    )


class DraftPromptMemoryItemOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    type = serializers.CharField(help_text="fact、preference、constraint、event、hypothesis")
    type_label = serializers.CharField(help_text="类型中文名，如「事实」「推断（待确认）」")
    section = serializers.CharField()


class DraftPromptMessageOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    direction = serializers.CharField()
    section = serializers.CharField()


class DraftPromptBusinessOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=["task", "alert", "recommendation"])
    section = serializers.CharField()


class DraftPromptOutputSerializer(serializers.Serializer):
    draft_id = serializers.IntegerField()
    conversation_id = serializers.CharField()
    available = serializers.BooleanField(help_text="false：旧草稿没有保存提示词")
    prompt = serializers.CharField(allow_blank=True, help_text="模型收到的提示词原文（遗忘后相关引用已替换为标记）")
    prompt_chars = serializers.IntegerField()
    fallback = serializers.BooleanField(help_text="记忆不可用时的最小上下文")
    redacted = serializers.BooleanField(help_text="遗忘操作已替换其中的引用；偏移量对应替换后的文本")
    snapshot_version = serializers.IntegerField(allow_null=True)
    sections = DraftPromptSectionOutputSerializer(many=True)
    memory_items = DraftPromptMemoryItemOutputSerializer(many=True)
    messages = DraftPromptMessageOutputSerializer(many=True)
    business = DraftPromptBusinessOutputSerializer(many=True)


class DraftPromptApi(AccountAPIView):
    """草稿生成时模型收到的提示词原文、各段落的位置、字符数、预算与截断情况，以及其中引用的记忆条目和消息。"""

    @extend_schema(responses=DraftPromptOutputSerializer, summary="草稿的提示词")
    def get(self, request: Request, account_id: str, draft_id: int) -> Response:
        draft = draft_get(draft_id)
        draft_context_read(draft=draft, actor=request.user, purpose=ContextReadPurpose.DRAFT_PROMPT)
        return Response(DraftPromptOutputSerializer(draft_prompt_view(draft)).data)
