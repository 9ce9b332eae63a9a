"""Draft, review, send and epoch endpoints for the Workbench (DESIGN §12). Views only validate,
call one service or selector and serialize."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.drafts import draft_approve, draft_reject, draft_send
from conversations.models import Delivery, Draft, DraftStatus
from conversations.selectors import customer_get
from qiwei_site.platform.api import AccountAPIView, ErrorOutputSerializer
from sessions_epoch.models import SessionEpoch
from sessions_epoch.pipeline import draft_generate
from sessions_epoch.selectors import draft_get, draft_list, epoch_list


class DeliveryOutputSerializer(serializers.ModelSerializer):
    draft_id = serializers.IntegerField()

    class Meta:
        model = Delivery
        fields = [
            "id",
            "draft_id",
            "idempotency_key",
            "status",
            "upstream_id",
            "text",
            "auto",
            "attempts",
            "last_error",
            "sent_at",
            "created_at",
        ]


class DraftOutputSerializer(serializers.ModelSerializer):
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


class EpochOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = SessionEpoch
        fields = [
            "id",
            "session_id",
            "parent_session_id",
            "memory_version",
            "client",
            "started_at",
            "closed_at",
            "turns",
            "close_reason",
        ]


class ReasonInputSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=300)


class DraftListApi(AccountAPIView):
    pagination_class = LimitOffsetPagination

    class GenerateInputSerializer(serializers.Serializer):
        reason = serializers.CharField(required=False, allow_blank=True, max_length=300)

    @extend_schema(
        parameters=[OpenApiParameter("status", str, enum=DraftStatus.values, description="按状态筛选")],
        responses=DraftOutputSerializer(many=True),
        summary="草稿列表",
    )
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response:
        customer = customer_get(conversation_id)
        drafts = draft_list(customer=customer, status=request.query_params.get("status") or None)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(drafts, request, view=self)
        return paginator.get_paginated_response(DraftOutputSerializer(page, many=True).data)

    @extend_schema(request=GenerateInputSerializer, responses={201: DraftOutputSerializer}, summary="生成回复草稿")
    def post(self, request: Request, account_id: str, conversation_id: str) -> Response:
        data = self.GenerateInputSerializer(data=request.data or {})
        data.is_valid(raise_exception=True)
        customer = customer_get(conversation_id)
        draft = draft_generate(
            customer=customer, actor=request.user, reason=data.validated_data.get("reason") or "生成回复草稿"
        )
        return Response(DraftOutputSerializer(draft_get(draft.pk)).data, status=status.HTTP_201_CREATED)


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


class EpochListApi(AccountAPIView):
    pagination_class = LimitOffsetPagination

    @extend_schema(responses=EpochOutputSerializer(many=True), summary="模型会话 Epoch 列表")
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response:
        epochs = epoch_list(customer=customer_get(conversation_id))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(epochs, request, view=self)
        return paginator.get_paginated_response(EpochOutputSerializer(page, many=True).data)
