"""Customer read endpoints (the Workbench's conversation list)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.models import Customer
from conversations.selectors import customer_get
from qiwei_site.platform.api import AccountAPIView


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
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(customers, request, view=self)
        return paginator.get_paginated_response(CustomerOutputSerializer(page, many=True).data)


class CustomerDetailApi(AccountAPIView):
    @extend_schema(responses=CustomerOutputSerializer, summary="客户（会话）详情")
    def get(self, request: Request, account_id: str, conversation_id: str, **kwargs: Any) -> Response:
        return Response(CustomerOutputSerializer(customer_get(conversation_id)).data)
