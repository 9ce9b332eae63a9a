"""Request plumbing: admin pages run inside the account the supervisor picked (kept in the
session), and unmatched API URLs answer JSON."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from qiwei_site.platform.selectors import user_can_access_account
from qiwei_site.platform.tenancy import no_account, use_account

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
