"""API plumbing shared by every app: the error format and account-scoped views (DESIGN §12)."""

from __future__ import annotations

import contextvars
import inspect
import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DatabaseError, DataError
from django.http import Http404
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework import permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from qiwei_site.platform.errors import (
    ApplicationError,
    RequestTooLarge,
    StorageUnavailable,
    ValidationFailed,
    storage_fault,
    validate_identifier,
)
from qiwei_site.platform.selectors import user_can_access_account
from qiwei_site.platform.tenancy import _current_account, ensure_account_database, validate_account_id

logger = logging.getLogger(__name__)

_DRF_CODES = {
    400: "invalid",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "request_too_large",
    415: "unsupported_media_type",
    429: "throttled",
}


def _flatten(detail: Any) -> str:
    if isinstance(detail, dict):
        return "; ".join(f"{key}: {_flatten(value)}" for key, value in detail.items())
    if isinstance(detail, list):
        return " ".join(_flatten(item) for item in detail)
    return str(detail)


def request_too_large(limit: int | None = None) -> RequestTooLarge:
    limit = limit or settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return RequestTooLarge(
        f"请求体超过上限 {limit} 字节（{limit / 1048576:.0f} MB）(request body exceeds the limit of {limit} bytes).",
        extra={"limit_bytes": limit},
    )


def known_error(exc: BaseException) -> ApplicationError | None:
    """The domain error an exception stands for: our own, a storage fault (503 with its cause), or
    input that only failed deep down (a number or date out of range, a lone surrogate, NUL on
    PostgreSQL). None means unforeseen: the caller answers a logged 500."""
    if isinstance(exc, ApplicationError):
        return exc
    if isinstance(exc, RequestDataTooBig):
        return request_too_large()
    if isinstance(exc, DatabaseError):
        cause = storage_fault(exc)
        if cause is not None:
            logger.warning("account storage fault (%s): %s", cause, exc)
            return StorageUnavailable(cause)
        if isinstance(exc, DataError):  # PostgreSQL refusing a value: NUL, out of range, too long
            logger.info("database refused a value: %s", exc)
            return ValidationFailed(
                "输入的值无法保存或查询 (a value is out of range or not storable).", code="invalid_value"
            )
        return None
    if isinstance(exc, OverflowError):  # SQLite binding an integer beyond 64 bits; datetime arithmetic
        return ValidationFailed("数值或日期超出范围 (a number or date is out of range).", code="out_of_range")
    if isinstance(exc, UnicodeEncodeError) and "surrogates not allowed" in str(exc):
        return ValidationFailed("文本含有孤立的代理字符 (text contains a lone surrogate).", code="invalid_unicode")
    return None


def error_headers(error: ApplicationError) -> dict[str, str]:
    retry_after = getattr(error, "retry_after", None)
    return {"Retry-After": str(retry_after)} if retry_after else {}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Every error is `{"code", "detail"}` with a 4xx status (503 for storage faults); field errors
    ride along in `errors`. Unforeseen exceptions go on to the JSON 500 of `ApiErrorMiddleware`."""
    known = known_error(exc)
    if known is not None:
        return Response(
            {"code": known.code, "detail": known.detail, **known.extra},
            status=known.status_code,
            headers=error_headers(known),
        )
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


class TextField(serializers.CharField):
    """A string, and only a string: DRF's CharField turns 5 or true into "5" or "True", so a client's
    wrong type would be stored as words (`"content": 5` → 户型：5). Anything else is a 400."""

    default_error_messages = {"not_a_string": "必须是字符串 (must be a string)."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_a_string")
        return str(super().to_internal_value(data))


class ErrorOutputSerializer(serializers.Serializer):
    """所有错误应答的正文：4xx，以及企微上游不可用时的 503 (the body of every error answer)."""

    code = serializers.CharField(help_text="稳定的错误码，如 invalid、not_found、conflict")
    detail = serializers.CharField(help_text="错误说明（中文在前，括号内英文）")

    def get_fields(self) -> dict[str, serializers.Field]:
        # Declared here because a class attribute `errors` would shadow `Serializer.errors`.
        fields = super().get_fields()
        fields["errors"] = serializers.DictField(required=False, help_text="字段级错误（仅 400 校验失败时）")
        return fields


_ERROR_DESCRIPTIONS = {
    400: "请求参数或请求体无效 (invalid input)",
    401: "未登录或令牌无效 (authentication required)",
    403: "治理操作需要后台员工权限 (governance needs a staff user)",
    404: "账号或对象不存在 (not found)",
    409: "当前状态不允许该操作 (conflict)",
    413: "请求体超过上限 (request body too large)",
    415: "请求体必须是 JSON (the body must be application/json)",
    503: "账号数据库暂时不可用，见 cause 与 Retry-After (storage unavailable)",
}


class QiweiAutoSchema(AutoSchema):
    """drf-spectacular's schema plus the error answers every view can give, so clients (and
    schemathesis) know each status code and its `{"code", "detail"}` body."""

    def get_operation_id(self) -> str:
        operation_id = super().get_operation_id()
        # `/api/status` is an alias of `/api/status/`; both are routed, each needs its own id.
        return operation_id if self.path.endswith("/") else f"{operation_id}_noslash"

    def get_description(self) -> str:  # type: ignore[override]
        # Only a view's own docstring: the one inherited from AccountAPIView is plumbing, not API docs.
        own = type(self.view).__dict__.get("__doc__") or ""
        return inspect.cleandoc(own) if own else ""

    def error_status_codes(self) -> list[int]:
        codes = [400, 401]
        # A view outside /api/accounts/ that still names an account (`/api/status?account=`) says 404
        # for one the user may not see, as every account view does.
        extra = getattr(self.view, "error_status_codes", ())
        codes.extend(code for code in extra if code not in codes)
        if isinstance(self.view, AccountAPIView):
            if self.method in self.view.governance_methods:
                codes.append(403)
            codes.append(404)
            if self.method in ("POST", "PATCH", "PUT", "DELETE"):
                codes.append(409)
        if self.method in ("POST", "PATCH", "PUT"):
            codes.extend([413, 415])
        if isinstance(self.view, AccountAPIView):
            codes.append(503)
        return codes

    def _map_basic_serializer(self, serializer: Any, direction: Any) -> dict[str, Any]:
        schema = super()._map_basic_serializer(serializer, direction)
        # Inputs that answer 400 to an unknown field say so, so clients don't send typos.
        if direction == "request" and getattr(serializer, "rejects_unknown_fields", False):
            schema["additionalProperties"] = False
        return schema

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for code in self.error_status_codes():
            if str(code) not in responses:
                response = OpenApiResponse(ErrorOutputSerializer, description=_ERROR_DESCRIPTIONS[code])
                responses[str(code)] = self._get_response_for_code(response, str(code), direction=direction)
        return responses


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
        if "conversation_id" in kwargs:
            validate_identifier(kwargs["conversation_id"], field="conversation_id", code="invalid_conversation_id")
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
