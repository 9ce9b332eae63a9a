"""`GET /api/status`: the upstream WeCom gateway's status. `?fast=true` answers from the shared
cache without probing (spec §9); otherwise it probes within 2.5 s and refreshes the cache.
`?account=<id>`: that account's own upstream (its WeCom kf connection, issue 37) when it has one,
for a user who may see the account; otherwise the shared upstream."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions as drf_exceptions
from rest_framework import permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.gateway import UpstreamStatus, upstream_status_cached, upstream_status_refresh
from qiwei_site.platform.selectors import user_can_access_account
from qiwei_site.platform.tenancy import InvalidAccountId, validate_account_id

_TRUE = {"1", "true", "yes", "on"}


class StatusOutputSerializer(serializers.Serializer):
    online = serializers.BooleanField(allow_null=True)
    logged_in = serializers.BooleanField(allow_null=True)
    subscription = serializers.CharField(allow_null=True)
    checked_at = serializers.DateTimeField(allow_null=True)
    stale = serializers.BooleanField()
    detail = serializers.CharField(allow_blank=True)


class UpstreamStatusApi(APIView):
    permission_classes = [permissions.IsAuthenticated]
    error_status_codes = (404,)  # ?account= naming an account the user may not see

    @extend_schema(
        parameters=[
            OpenApiParameter("fast", bool, description="true：只读缓存，不探测上游（立即返回）"),
            OpenApiParameter("account", str, description="账号 ID：该账号自己的上游（如企业微信客服）"),
        ],
        responses=StatusOutputSerializer,
        summary="企微上游状态（登录、订阅）",
    )
    def get(self, request: Request) -> Response:
        fast = request.query_params.get("fast", "").lower() in _TRUE
        account_id = request.query_params.get("account") or None
        if account_id is not None:
            try:
                validate_account_id(account_id)
            except InvalidAccountId:
                raise drf_exceptions.NotFound("账号不存在 (no such account).") from None
            if not user_can_access_account(request.user, account_id):
                raise drf_exceptions.NotFound("账号不存在 (no such account).")
        current: UpstreamStatus = (
            (upstream_status_cached(account_id) or UpstreamStatus.unknown())
            if fast
            else upstream_status_refresh(account_id=account_id)
        )
        return Response(
            {
                "online": current.online,
                "logged_in": current.logged_in,
                "subscription": current.subscription,
                "checked_at": current.checked_at.isoformat() if current.checked_at else None,
                "stale": current.is_stale(),
                "detail": current.detail,
            }
        )
