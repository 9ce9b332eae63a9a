"""API plumbing shared by every app: the error format and account-scoped views (DESIGN §12)."""

from __future__ import annotations

import contextvars
import logging
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions as drf_exceptions
from rest_framework import permissions
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from conversations.selectors import user_can_access_account
from qiwei_site.errors import ApplicationError
from qiwei_site.tenancy import _current_account, ensure_account_database, validate_account_id

logger = logging.getLogger(__name__)

_DRF_CODES = {
    400: "invalid",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    415: "unsupported_media_type",
    429: "throttled",
}


def _flatten(detail: Any) -> str:
    if isinstance(detail, dict):
        return "; ".join(f"{key}: {_flatten(value)}" for key, value in detail.items())
    if isinstance(detail, list):
        return " ".join(_flatten(item) for item in detail)
    return str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Every error is `{"code", "detail"}` with a 4xx status; field errors ride along in `errors`."""
    if isinstance(exc, ApplicationError):
        return Response({"code": exc.code, "detail": exc.detail, **exc.extra}, status=exc.status_code)
    if isinstance(exc, DjangoValidationError):
        exc = drf_exceptions.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    if isinstance(exc, Http404):
        exc = drf_exceptions.NotFound(str(exc) or "未找到 (not found).")
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    detail = getattr(exc, "detail", response.data)
    body: dict[str, Any] = {
        "code": _DRF_CODES.get(response.status_code, "error"),
        "detail": _flatten(detail),
    }
    if isinstance(exc, drf_exceptions.ValidationError) and isinstance(exc.detail, dict):
        body["errors"] = exc.detail
    response.data = body
    return response


class IsStaffForGovernance(permissions.BasePermission):
    """Governance writes need staff; reads need only a member of the account."""

    message = "治理操作需要后台员工权限 (governance needs a staff user)."

    def has_permission(self, request: Request, view: Any) -> bool:
        governance_methods = getattr(view, "governance_methods", ())
        if request.method in governance_methods:
            return bool(request.user and request.user.is_staff)
        return True


class AccountAPIView(APIView):
    """A view under /api/accounts/<account_id>/: 404 unless the user may see the account,
    and every query inside runs on that account's database."""

    permission_classes = [permissions.IsAuthenticated, IsStaffForGovernance]
    governance_methods: tuple[str, ...] = ()
    _account_token: contextvars.Token[str | None] | None = None
    account_id: str = ""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        account_id = kwargs.get("account_id", "")
        try:
            validate_account_id(account_id)
        except ValueError:
            raise drf_exceptions.NotFound("账号不存在 (no such account).") from None
        if not user_can_access_account(request.user, account_id):
            raise drf_exceptions.NotFound("账号不存在 (no such account).")
        self.check_governance(request)
        ensure_account_database(account_id)
        self._account_token = _current_account.set(account_id)
        self.account_id = account_id

    def check_permissions(self, request: Request) -> None:
        # Authentication first; staff checks wait until the account is known to be visible,
        # so a stranger learns nothing (404) and a member without staff gets 403.
        if not request.user or not request.user.is_authenticated:
            self.permission_denied(request, message="需要登录 (authentication required).")

    def check_governance(self, request: Request) -> None:
        for permission in self.get_permissions():
            if not permission.has_permission(request, self):
                self.permission_denied(request, message=getattr(permission, "message", None))

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        self._account_token = None
        try:
            return super().dispatch(request, *args, **kwargs)
        finally:
            if self._account_token is not None:
                _current_account.reset(self._account_token)
