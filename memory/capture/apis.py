"""Message ingest and listing API (DESIGN §12): any member of the account may ingest and read.

POST stores one message or a list (idempotent on external_id) and queues capture; GET lists the
customer's messages newest first, filtered by direction, or searched with `?q=`. Every answer
quotes the text masked; the search still matches the text as stored.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.models import Message, MessageDirection
from conversations.selectors import customer_get
from conversations.serializers import MaskedTextField
from memory.capture.ingest import messages_ingest
from qiwei_site.platform.api import AccountAPIView
from qiwei_site.platform.errors import ValidationFailed

SEARCH_LIMIT_MAX = 100


class MessageOutputSerializer(serializers.Serializer):
    """One message as the API shows it. Declared fields rather than a ModelSerializer: every ingest
    answer builds one, and a ModelSerializer introspects the model each time (issue 38: a tenth of
    an ingest's CPU)."""

    id = serializers.IntegerField(read_only=True)
    external_id = serializers.CharField(read_only=True)
    direction = serializers.ChoiceField(choices=MessageDirection.choices, read_only=True)
    sender = serializers.CharField(read_only=True)
    text = MaskedTextField(read_only=True)
    sent_at = serializers.DateTimeField(read_only=True)
    is_effective = serializers.BooleanField(read_only=True)


class MessageInputSerializer(serializers.Serializer):
    """Documentation of one message; validation lives in `messages_ingest` so every caller shares it."""

    external_id = serializers.CharField(max_length=128)
    direction = serializers.ChoiceField(choices=MessageDirection.choices, default=MessageDirection.INBOUND)
    text = serializers.CharField()
    sent_at = serializers.DateTimeField(required=False)
    sender = serializers.CharField(required=False, allow_blank=True, max_length=100)


def _search(query: str, conversation_id: str, limit: int) -> list[Message]:
    try:
        from memory.context.search import search_messages
    except ImportError:
        customer = customer_get(conversation_id)
        return list(
            Message.objects.filter(customer=customer, text__icontains=query).order_by("-sent_at", "-id")[:limit]
        )
    return list(search_messages(query=query, conversation_id=conversation_id, limit=limit))


class MessageListApi(AccountAPIView):
    pagination_class = LimitOffsetPagination

    @extend_schema(
        request=MessageInputSerializer(many=True),
        responses={
            201: inline_serializer(
                "MessageIngestOutput",
                {
                    "created": serializers.IntegerField(),
                    "duplicates": serializers.IntegerField(),
                    "messages": MessageOutputSerializer(many=True),
                },
            )
        },
        summary="入库企微消息（单条或列表，按 external_id 幂等）",
    )
    def post(self, request: Request, account_id: str, conversation_id: str) -> Response:
        data: Any = request.data
        items = data if isinstance(data, list) else [data]
        result = messages_ingest(
            conversation_id=conversation_id, messages=list(items), actor=request.user, reason="企微消息入库"
        )
        return Response(
            {
                "created": len(result.created),
                "duplicates": len(result.duplicates),
                "messages": MessageOutputSerializer(result.messages, many=True).data,
            },
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(
        parameters=[
            OpenApiParameter("direction", OpenApiTypes.STR, enum=MessageDirection.values),
            OpenApiParameter("q", OpenApiTypes.STR, description="按相关性搜索该客户的消息"),
            OpenApiParameter("limit", OpenApiTypes.INT),
            OpenApiParameter("offset", OpenApiTypes.INT),
        ],
        responses=MessageOutputSerializer(many=True),
        summary="客户消息列表（新的在前）",
    )
    def get(self, request: Request, account_id: str, conversation_id: str) -> Response:
        customer = customer_get(conversation_id)
        direction = request.query_params.get("direction")
        if direction and direction not in MessageDirection.values:
            raise ValidationFailed(
                "direction 必须是 inbound、outbound 或 system (direction must be inbound|outbound|system)."
            )
        query = (request.query_params.get("q") or "").strip()
        if query:
            try:
                limit = int(request.query_params.get("limit") or 20)
            except ValueError:
                raise ValidationFailed("limit 必须是整数 (limit must be an integer).") from None
            if not 1 <= limit <= SEARCH_LIMIT_MAX:
                raise ValidationFailed(f"limit 必须在 1–{SEARCH_LIMIT_MAX} 之间 (limit must be 1–{SEARCH_LIMIT_MAX}).")
            found = _search(query, conversation_id, limit)
            if direction:
                found = [m for m in found if m.direction == direction]
            # The same page shape as the plain listing, so clients read one schema.
            results = MessageOutputSerializer(found, many=True).data
            return Response({"count": len(results), "next": None, "previous": None, "results": results})
        messages = Message.objects.filter(customer=customer).order_by("-sent_at", "-id")
        if direction:
            messages = messages.filter(direction=direction)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(messages, request, view=self)
        return paginator.get_paginated_response(MessageOutputSerializer(page, many=True).data)
