"""The one family of domain errors: the API maps them to 4xx, admin shows them, commands exit non-zero."""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    code = "application_error"
    status_code = 400

    def __init__(self, detail: str, *, code: str | None = None, extra: dict[str, Any] | None = None):
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        self.extra = extra or {}


class ValidationFailed(ApplicationError):
    code = "invalid"


class NotFound(ApplicationError):
    code = "not_found"
    status_code = 404


class PermissionDenied(ApplicationError):
    code = "permission_denied"
    status_code = 403


class Conflict(ApplicationError):
    code = "conflict"
    status_code = 409


class UpstreamUnavailable(ApplicationError):
    code = "upstream_unavailable"
    status_code = 503
