"""Conversations' API (DESIGN §12): customers, drafts (read, approve, reject, send) and the audit
trail. Views validate, call one service or selector and serialize."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.drafts import draft_approve, draft_reject, draft_send
from conversations.models import Alert, AuditEvent, Customer, Delivery, Draft, DraftStatus
from conversations.selectors import alert_get, alert_list, audit_event_list, customer_get, draft_get, draft_list
from conversations.services import alert_resolve
from qiwei_site.platform.api import AccountAPIView, ErrorOutputSerializer
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


class DeliveryOutputSerializer(serializers.ModelSerializer):
    draft_id = serializers.IntegerField()
    status_label = serializers.CharField(source="get_status_display")

    class Meta:
        model = Delivery
        fields = [
            "id",
            "draft_id",
            "idempotency_key",
            "status",
            "status_label",
            "upstream_id",
            "text",
            "auto",
            "attempts",
            "last_error",
            "sent_at",
            "created_at",
        ]


class DraftOutputSerializer(serializers.ModelSerializer):
    """A draft as the API, the Workbench and the review queue show it (one serializer for all)."""

    status_label = serializers.CharField(source="get_status_display")
    conversation_id = serializers.CharField(source="customer.conversation_id")
    reply_to_message_id = serializers.IntegerField(source="reply_to_id", allow_null=True)
    reasons = serializers.ListField(child=serializers.CharField())
    profile_updates = serializers.DictField(child=serializers.CharField())
    dropped_updates = serializers.ListField(child=serializers.DictField())
    context_trace = serializers.DictField()
    delivery = serializers.SerializerMethodField()

    class Meta:
        model = Draft
        fields = [
            "id",
            "conversation_id",
            "status",
            "status_label",
            "reply",
            "final_text",
            "confidence",
            "requires_human",
            "reasons",
            "profile_updates",
            "dropped_updates",
            "error",
            "session_id",
            "client",
            "reply_to_message_id",
            "context_trace",
            "delivery",
            "reviewed_at",
            "created_at",
            "updated_at",
        ]

    @extend_schema_field(DeliveryOutputSerializer(allow_null=True))
    def get_delivery(self, obj: Draft) -> dict[str, Any] | None:
        delivery = getattr(obj, "delivery", None)
        return dict(DeliveryOutputSerializer(delivery).data) if delivery is not None else None


class ReasonInputSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=300)


class DraftListApi(AccountAPIView):
    """草稿列表；生成草稿（POST）由 sessions_epoch 的回合流水线在同一路径上提供。"""

    pagination_class = LimitOffsetPagination

    @extend_schema(
        parameters=[OpenApiParameter("status", str, enum=DraftStatus.values, description="按状态筛选")],
        responses=DraftOutputSerializer(many=True),
        summary="草稿列表",
    )
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response:
        customer = customer_get(conversation_id)
        drafts = draft_list(customer=customer, status=request.query_params.get("status") or None)
        return paginated_response(request=request, view=self, queryset=drafts, serializer=DraftOutputSerializer)


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


# --- alerts ------------------------------------------------------------------------------


class AlertOutputSerializer(serializers.ModelSerializer):
    conversation_id = serializers.CharField(source="customer.conversation_id")
    level_label = serializers.CharField(source="get_level_display")
    kind_label = serializers.CharField(source="get_kind_display")

    class Meta:
        model = Alert
        fields = [
            "id",
            "conversation_id",
            "kind",
            "kind_label",
            "level",
            "level_label",
            "text",
            "resolved",
            "created_at",
            "updated_at",
        ]


class AlertListApi(AccountAPIView):
    """一个客户的预警（默认只列未处理的；`resolved=true` 列已处理的，`resolved=all` 全部）。"""

    pagination_class = LimitOffsetPagination

    @extend_schema(
        parameters=[OpenApiParameter("resolved", str, enum=["false", "true", "all"], description="按处理状态筛选")],
        responses=AlertOutputSerializer(many=True),
        summary="预警列表",
    )
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response:
        alerts = alert_list(
            customer=customer_get(conversation_id), resolved=request.query_params.get("resolved", "false")
        )
        return paginated_response(request=request, view=self, queryset=alerts, serializer=AlertOutputSerializer)


class AlertResolveApi(AccountAPIView):
    @extend_schema(request=ReasonInputSerializer, responses=AlertOutputSerializer, summary="处理预警")
    def post(self, request: Request, account_id: str, alert_id: int) -> Response:
        data = ReasonInputSerializer(data=request.data or {})
        data.is_valid(raise_exception=True)
        alert = alert_resolve(
            alert=alert_get(alert_id), actor=request.user, reason=data.validated_data.get("reason") or "已处理"
        )
        return Response(AlertOutputSerializer(alert).data)
