"""The turn's endpoints (DESIGN §12): the drafts path (GET lists through conversations' selector, POST
generates a draft) and the model-session epochs. Reviewing and sending drafts is conversations' API."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.models import DraftStatus
from conversations.selectors import customer_get, draft_get, draft_list
from conversations.serializers import DraftOutputSerializer
from qiwei_site.platform.api import AccountAPIView
from qiwei_site.platform.pagination import LimitOffsetPagination, paginated_response
from sessions_epoch.health import model_health
from sessions_epoch.models import SessionEpoch
from sessions_epoch.pipeline import draft_generate
from sessions_epoch.selectors import epoch_list


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


class DraftListGenerateApi(AccountAPIView):
    """草稿列表（GET）与生成回复草稿（POST：回合流水线）。"""

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

    class GenerateInputSerializer(serializers.Serializer):
        reason = serializers.CharField(required=False, allow_blank=True, max_length=300)
        regenerate = serializers.BooleanField(
            required=False, default=False, help_text="客户的最新消息已回复时仍要重新生成（否则 409）"
        )

    @extend_schema(request=GenerateInputSerializer, responses={201: DraftOutputSerializer}, summary="生成回复草稿")
    def post(self, request: Request, account_id: str, conversation_id: str) -> Response:
        data = self.GenerateInputSerializer(data=request.data or {})
        data.is_valid(raise_exception=True)
        customer = customer_get(conversation_id)
        draft = draft_generate(
            customer=customer,
            actor=request.user,
            reason=data.validated_data.get("reason") or "生成回复草稿",
            regenerate=data.validated_data["regenerate"],
        )
        return Response(DraftOutputSerializer(draft_get(draft.pk)).data, status=status.HTTP_201_CREATED)


class EpochListApi(AccountAPIView):
    pagination_class = LimitOffsetPagination

    @extend_schema(responses=EpochOutputSerializer(many=True), summary="模型会话 Epoch 列表")
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response:
        epochs = epoch_list(customer=customer_get(conversation_id))
        return paginated_response(request=request, view=self, queryset=epochs, serializer=EpochOutputSerializer)


class ModelStatusOutputSerializer(serializers.Serializer):
    client = serializers.CharField()
    state = serializers.ChoiceField(choices=["ok", "offline", "missing", "unreachable"])
    ok = serializers.BooleanField()
    title = serializers.CharField()
    action = serializers.CharField(allow_blank=True)


class ModelStatusApi(APIView):
    """Whether the configured model client is connected, in Chinese with what to do (cached a minute)."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=ModelStatusOutputSerializer, summary="模型连接状态")
    def get(self, request: Request) -> Response:
        return Response(model_health().as_dict())
