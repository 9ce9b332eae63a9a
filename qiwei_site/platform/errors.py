"""The one family of domain errors: the API maps them to 4xx, admin shows them, commands exit non-zero.
Also the checks every entry point shares: identifiers (`validate_identifier`) and which database
errors are the storage's state (`storage_fault`) rather than a bug."""

from __future__ import annotations

import re
from typing import Any

IDENTIFIER_MAX_CHARS = 128


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


class ProvisioningUnavailable(ApplicationError):
    """This process may not make an account's role and schema (issue 36: provisioning apart from
    running); the provisioning command can."""

    code = "provisioning_required"
    status_code = 503


class RequestTooLarge(ApplicationError):
    code = "request_too_large"
    status_code = 413


class StorageUnavailable(ApplicationError):
    """The account database cannot take the request now (read-only, full, locked, unreachable, or
    writes kept colliding after bounded retries): a 503 naming the cause, with a Retry-After."""

    code = "storage_unavailable"
    status_code = 503

    DETAILS = {
        "read_only": "账号数据库当前只读，暂时无法写入 (the account database is read-only).",
        "full": "账号数据库所在磁盘已满，暂时无法写入 (the account database is full).",
        "locked": "账号数据库正被其他写入占用，请稍后重试 (the account database is locked; retry shortly).",
        "contention": "并发写入反复冲突，重试后仍未完成，请稍后重试 (concurrent writes kept conflicting; retry).",
        "unavailable": "账号数据库暂时无法访问 (the account database is unavailable).",
    }
    RETRY_AFTER_SECONDS = {"read_only": 30, "full": 60, "locked": 2, "contention": 1, "unavailable": 10}

    def __init__(self, cause: str, *, detail: str | None = None):
        self.cause = cause if cause in self.DETAILS else "unavailable"
        self.retry_after = self.RETRY_AFTER_SECONDS[self.cause]
        super().__init__(
            detail or self.DETAILS[self.cause], extra={"cause": self.cause, "retry_after": self.retry_after}
        )


# SQLite primary result codes (extended codes carry them in the low byte).
_SQLITE_CAUSES = {
    3: "unavailable",
    5: "locked",
    6: "locked",
    8: "read_only",
    10: "unavailable",
    13: "full",
    14: "unavailable",
}
# PostgreSQL SQLSTATEs and classes.
_PG_CAUSES = {
    "40001": "contention",  # serialization_failure
    "40P01": "contention",  # deadlock_detected
    "55P03": "locked",  # lock_not_available (lock_timeout)
    "57014": "locked",  # query_canceled (statement_timeout)
    "25006": "read_only",  # read_only_sql_transaction
    "53100": "full",  # disk_full
}
_PG_CLASS_CAUSES = {"08": "unavailable", "53": "full", "57": "unavailable", "58": "unavailable"}


def storage_fault(exc: BaseException) -> str | None:
    """The cause of a database error that is the storage's state rather than a bug or bad input:
    `read_only`, `full`, `locked`, `contention` or `unavailable`; None for anything else."""
    driver_error = exc.__cause__ if exc.__cause__ is not None else exc
    sqlite_code = getattr(driver_error, "sqlite_errorcode", None)
    if isinstance(sqlite_code, int):
        return _SQLITE_CAUSES.get(sqlite_code & 0xFF)
    sqlstate = getattr(driver_error, "sqlstate", None)
    if isinstance(sqlstate, str):
        return _PG_CAUSES.get(sqlstate) or _PG_CLASS_CAUSES.get(sqlstate[:2])
    module = type(driver_error).__module__ or ""
    if module.startswith("psycopg") and type(driver_error).__name__ == "OperationalError":
        return "unavailable"  # no SQLSTATE: the server could not be reached at all
    return None


_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def validate_identifier(
    value: object, *, field: str, code: str = "invalid", max_chars: int = IDENTIFIER_MAX_CHARS
) -> str:
    """A conversation or message id: a string of 1–`max_chars` printable characters (surrounding
    ASCII spaces dropped) with no control, format (bidi, zero-width) or path characters (`/`, `\\`, `..`)
    and no `%XX` escape (what is left of a path that was not valid UTF-8).
    Anything else — a bool or number included — is refused, never coerced."""
    if not isinstance(value, str):
        raise ValidationFailed(f"{field} 必须是字符串 ({field} must be a string).", code=code)
    cleaned = value.strip(" ")  # only spaces: a tab or newline at either end is refused, not hidden
    if not 1 <= len(cleaned) <= max_chars:
        raise ValidationFailed(f"{field} 必须是 1–{max_chars} 个字符 ({field} must be 1–{max_chars} chars).", code=code)
    # isprintable() is False for control (Cc), format (Cf: bidi overrides, zero-width), surrogate,
    # private-use, unassigned, line/paragraph separators and every space but U+0020.
    if _PERCENT_ESCAPE.search(cleaned):
        # Django keeps the bytes of a path that is not valid UTF-8 as "%FF" text, and a doubly
        # encoded id arrives the same way: either names nothing, and must not become a customer.
        raise ValidationFailed(
            f"{field} 不是有效的 UTF-8 文本（含 %XX 转义）({field} must be UTF-8 text, not %XX escapes).",
            code=code,
        )
    if not cleaned.isprintable() or "/" in cleaned or "\\" in cleaned or ".." in cleaned:
        raise ValidationFailed(
            f"{field} 不能包含控制字符、双向或零宽字符、特殊空白或路径字符（/ \\ ..）"
            f"({field} must not contain control, bidi or path characters).",
            code=code,
        )
    return cleaned
