"""Context and session-search endpoints (DESIGN §12): thin views over the builder and search."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.models import Message
from conversations.serializers import MaskedTextField
from memory.providers import PrefetchRequest, SearchScope, context_read, get_provider
from qiwei_site.platform.api import AccountAPIView


class SectionOutputSerializer(serializers.Serializer):
    name = serializers.CharField()
    text = serializers.CharField()
    chars = serializers.IntegerField()


class ContextOutputSerializer(serializers.Serializer):
    sections = SectionOutputSerializer(many=True)
    prompt = serializers.CharField()
    trace = serializers.DictField()


class MessageSearchOutputSerializer(serializers.ModelSerializer):
    conversation_id = serializers.CharField(source="customer.conversation_id")
    text = MaskedTextField(read_only=True)

    class Meta:
        model = Message
        fields = ["id", "conversation_id", "external_id", "direction", "sender", "text", "sent_at", "is_effective"]


class MessageSearchResultsSerializer(serializers.Serializer):
    results = MessageSearchOutputSerializer(many=True)


class MessageSearchInputSerializer(serializers.Serializer):
    q = serializers.CharField(max_length=200, trim_whitespace=True, help_text="关键词，空格分隔多个词（需同时出现）")
    limit = serializers.IntegerField(min_value=1, max_value=200, default=50, help_text="最多返回条数，1–200，默认 50")


class ContextInputSerializer(serializers.Serializer):
    message_id = serializers.IntegerField(
        min_value=1, required=False, help_text="要回复的客户消息 ID；默认最新一条客户消息"
    )


class ConversationContextApi(AccountAPIView):
    @extend_schema(
        summary="本轮上下文（AgentContextBuilder）",
        # The query serializer itself, so the documented bounds are the validated ones.
        parameters=[ContextInputSerializer],
        responses=ContextOutputSerializer,
    )
    def get(self, request: Request, account_id: str, conversation_id: str, **kwargs: Any) -> Response:
        params = ContextInputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        context = PrefetchRequest.for_conversation(conversation_id, params.validated_data.get("message_id"))
        built = context_read(context, actor=request.user)
        return Response(built.as_dict())


def search_response(request: Request, conversation_id: str | None) -> Response:
    """Shared by the account-wide search here and the per-conversation messages endpoint."""
    params = MessageSearchInputSerializer(data=request.query_params)
    params.is_valid(raise_exception=True)
    scope = SearchScope(conversation_id=conversation_id, limit=params.validated_data["limit"])
    messages = get_provider().search(params.validated_data["q"], scope)
    return Response({"results": MessageSearchOutputSerializer(messages, many=True).data})


class AccountMessageSearchApi(AccountAPIView):
    @extend_schema(
        summary="全账号消息搜索（支持两个字的中文词）",
        parameters=[MessageSearchInputSerializer],
        responses=MessageSearchResultsSerializer,
    )
    def get(self, request: Request, account_id: str, **kwargs: Any) -> Response:
        return search_response(request, None)
