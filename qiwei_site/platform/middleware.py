"""Request plumbing: admin pages run inside the account the supervisor picked (kept in the
session), and every answer under the API prefixes is JSON: malformed requests are refused before any
view runs, storage faults are 503s, and anything unforeseen is a logged JSON 500 with a request id."""

from __future__ import annotations

import itertools
import logging
import re
import sys
import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.core.signals import got_request_exception
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import is_valid_path

from qiwei_site.platform.api import error_headers, known_error, request_too_large
from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.selectors import user_can_access_account
from qiwei_site.platform.tenancy import no_account, use_account

logger = logging.getLogger(__name__)

SESSION_KEY = "qiwei_account"


class AdminAccountMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        account_id = None
        if request.path.startswith("/admin/") and getattr(request, "user", None) is not None:
            chosen = request.session.get(SESSION_KEY)
            if chosen and user_can_access_account(request.user, chosen):
                account_id = chosen
            elif chosen:
                request.session.pop(SESSION_KEY, None)
        request.qiwei_account = account_id  # type: ignore[attr-defined]
        if account_id is None:
            with no_account():
                return self.get_response(request)
        with use_account(account_id):
            return self.get_response(request)


API_PATH_PREFIXES = ("/api/", "/workbench/api/")


class ApiJsonNotFoundMiddleware:
    """A URL under /api/ that no route matches (`drafts/abc/` where an integer id is expected)
    gets the API's `{"code", "detail"}` 404 instead of Django's HTML page."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code == 404
            and request.path.startswith(API_PATH_PREFIXES)
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            return JsonResponse({"code": "not_found", "detail": "未找到 (not found)."}, status=404)
        return response


REQUEST_ID_HEADER = "X-Request-ID"
_REQUEST_ID_RE = re.compile(r"\A[A-Za-z0-9._-]{1,64}\Z")
# Paths take no control character at all; query values may carry tab and line breaks (search text).
_PATH_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_QUERY_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_INT64_MAX = 2**63 - 1
_PAGE_PARAMETERS = frozenset({"limit", "offset"})
_INTEGER_ID_COLLECTIONS = frozenset({"drafts", "memory"})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_STATUS_CODES = {
    400: ("bad_request", "请求无效 (bad request)."),
    403: ("permission_denied", "没有权限 (forbidden)."),
    404: ("not_found", "未找到 (not found)."),
    405: ("method_not_allowed", "不支持该请求方法 (method not allowed)."),
    413: ("request_too_large", "请求体过大 (request body too large)."),
}


def is_api_request(request: HttpRequest) -> bool:
    return request.path.startswith(API_PATH_PREFIXES)


def _json_error(
    status: int, code: str, detail: str, *, extra: dict[str, Any] | None = None, headers: dict[str, str] | None = None
) -> JsonResponse:
    response = JsonResponse(
        {"code": code, "detail": detail, **(extra or {})}, status=status, json_dumps_params={"ensure_ascii": False}
    )
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _error_response(error: ApplicationError) -> JsonResponse:
    return _json_error(error.status_code, error.code, error.detail, extra=error.extra, headers=error_headers(error))


def _invalid_characters(where: str, code: str = "invalid_characters") -> JsonResponse:
    return _json_error(400, code, f"{where}含有空字符或控制字符 ({where} contains NUL or control characters).")


def _beyond_int64(value: str) -> bool:
    """An integer literal no 64-bit column or LIMIT can take (checked without int() on a
    4,300-digit string, which Python refuses)."""
    digits = value.strip().lstrip("+-").lstrip("0")
    if not digits.isdecimal():
        return False
    return len(digits) > 19 or int(digits) > _INT64_MAX


def _page_number(value: str) -> bool:
    """A `limit`/`offset` value any list can take: absent, or a plain non-negative 64-bit integer."""
    value = value.strip()
    return value == "" or (value.isascii() and value.isdecimal() and not _beyond_int64(value))


def _missing_slash(request: HttpRequest) -> str | None:
    """The path with its trailing slash when only that one is a route. Django's APPEND_SLASH
    would answer an HTML 301 there, and a client following it re-sends a POST as a GET; the API
    answers a JSON 404 naming the right path instead."""
    path = request.path_info
    if path.endswith("/"):
        return None
    urlconf = getattr(request, "urlconf", None)
    if is_valid_path(path, urlconf) or not is_valid_path(f"{path}/", urlconf):
        return None
    return f"{request.path}/"


def _early_refusal(request: HttpRequest) -> HttpResponse | None:
    """What can be refused from the request line and headers alone."""
    if _PATH_CONTROL.search(request.path):
        return _invalid_characters("路径")
    right_path = _missing_slash(request)
    if right_path is not None:
        return _json_error(
            404,
            "not_found",
            f"未找到：请求路径应以 / 结尾：{right_path} (not found: API paths end with a slash: {right_path}).",
        )
    segments = request.path.split("/")
    for collection, segment in itertools.pairwise(segments):
        if collection in _INTEGER_ID_COLLECTIONS and _beyond_int64(segment):
            # A draft or memory id no database integer can hold names nothing. (Conversation ids
            # are strings and may well be long numbers.)
            return _json_error(404, "not_found", "未找到 (not found).")
    try:
        query = request.GET
    except SuspiciousOperation as exc:  # too many fields
        return _json_error(400, "bad_request", f"查询参数无效 (invalid query string: {exc}).")
    for key, values in query.lists():
        if _QUERY_CONTROL.search(key) or any(_QUERY_CONTROL.search(value) for value in values):
            return _invalid_characters(f"查询参数 {key[:40]!r} ", code="invalid_query")
        if key in _PAGE_PARAMETERS and not all(_page_number(value) for value in values):
            # Every list pages by these two; some views hand them to DRF's paginator unchecked,
            # which passes a 20-digit limit to the database and silently ignores "-5" or "abc".
            return _json_error(
                400,
                "invalid_query",
                f"{key} 必须是 0 到 {_INT64_MAX} 之间的整数 ({key} must be an integer within 0–{_INT64_MAX}).",
            )
    raw_length = request.META.get("CONTENT_LENGTH") or "0"
    try:
        length = int(raw_length)
    except ValueError:
        return _json_error(400, "bad_request", "Content-Length 无效 (invalid Content-Length).")
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if limit is not None and length > limit:
        return _error_response(request_too_large(limit))
    if length > 0 and request.method in _BODY_METHODS:
        media_type = (request.content_type or "").split(";")[0].strip().lower()
        if media_type != "application/json":
            return _json_error(
                415,
                "unsupported_media_type",
                f"请求体必须是 application/json，收到 {media_type or '（未声明）'} "
                f"(the body must be application/json, not {media_type or 'undeclared'}).",
            )
    return None


def _server_error(request: HttpRequest) -> JsonResponse:
    request_id = getattr(request, "request_id", "")
    return _json_error(
        500,
        "server_error",
        f"服务器内部错误，请把请求编号 {request_id} 告诉管理员 (internal error; quote request id {request_id}).",
        extra={"request_id": request_id},
    )


class ApiErrorMiddleware:
    """Outermost middleware for /api/ and /workbench/api/ (HTML pages are left alone): a request id
    on every answer (`X-Request-ID`, taken from the client when sane), refusals of malformed requests
    (control characters in the path or query, a missing trailing slash → a JSON 404 naming the
    right path rather than a redirect, ids beyond 64 bits, bodies over the upload limit → 413,
    non-JSON bodies → 415), and no HTML error page ever: a view's unforeseen exception becomes a
    logged JSON 500 naming the request id, a storage fault a 503."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not is_api_request(request):
            return self.get_response(request)
        offered = request.META.get("HTTP_X_REQUEST_ID", "")
        request_id = offered if _REQUEST_ID_RE.match(offered) else uuid.uuid4().hex
        request.request_id = request_id  # type: ignore[attr-defined]
        response = _early_refusal(request) or self.get_response(request)
        if response.status_code >= 400 and not response.get("Content-Type", "").startswith("application/json"):
            response = self._as_json(request, response)
        response[REQUEST_ID_HEADER] = request_id
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_api_request(request):
            return None
        known = known_error(exception)
        if known is not None:
            return _error_response(known)
        if isinstance(exception, Http404 | PermissionDenied | SuspiciousOperation | BadRequest):
            return None  # Django's own 4xx, turned into JSON on the way out
        logger.error(
            "unhandled exception, request %s %s %s",
            getattr(request, "request_id", ""),
            request.method,
            request.path,
            exc_info=exception,
        )
        return _server_error(request)

    def _as_json(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        """An HTML error page produced below the views (an inner middleware failed, Django refused
        the request) in the API's format."""
        if response.status_code >= 500:
            failure = getattr(request, "_qiwei_exception", None)
            known = known_error(failure) if failure is not None else None
            if known is not None:
                return _error_response(known)
            logger.error(
                "request %s %s %s answered %s outside a view",
                getattr(request, "request_id", ""),
                request.method,
                request.path,
                response.status_code,
            )
            return _server_error(request)
        code, detail = _STATUS_CODES.get(response.status_code, ("error", response.reason_phrase))
        rewritten = _json_error(response.status_code, code, detail)
        if response.has_header("Allow"):
            rewritten["Allow"] = response["Allow"]
        return rewritten


def _remember_exception(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    """Django turns an exception raised outside the view into an HTML 500 before our middleware
    sees it; keep the exception so the JSON answer can still say what it was (a storage fault)."""
    if request is not None and is_api_request(request):
        request._qiwei_exception = sys.exc_info()[1]  # type: ignore[attr-defined]


got_request_exception.connect(_remember_exception, dispatch_uid="qiwei_api_remember_exception")
