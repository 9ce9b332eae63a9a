"""One way to page a list answer: `{"count", "next", "previous", "results"}` by limit/offset.
Out-of-range or malformed `limit`/`offset` are a 400 (DRF's own class silently falls back to the
default, and passes a 20-digit limit on to the database)."""

from __future__ import annotations

from typing import Any

from rest_framework import pagination, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from qiwei_site.platform.errors import ValidationFailed

__all__ = ["MAX_LIMIT", "MAX_OFFSET", "LimitOffsetPagination", "paginated_response"]

MAX_LIMIT = 500
MAX_OFFSET = 2**63 - 1


def _bounded_int(request: Request, name: str, *, low: int, high: int, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw.strip() == "":
        return default
    raw = raw.strip()
    value = int(raw) if raw.lstrip("+-").isdecimal() and len(raw) <= 40 else None
    if value is None or not low <= value <= high:
        raise ValidationFailed(
            f"{name} 必须是 {low}–{high} 之间的整数 ({name} must be an integer within {low}–{high}).",
            code="invalid_pagination",
        )
    return value


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    max_limit = MAX_LIMIT

    def get_limit(self, request: Request) -> int:
        default = min(self.default_limit or MAX_LIMIT, MAX_LIMIT)
        return _bounded_int(request, self.limit_query_param, low=1, high=MAX_LIMIT, default=default)

    def get_offset(self, request: Request) -> int:
        return _bounded_int(request, self.offset_query_param, low=0, high=MAX_OFFSET, default=0)


def paginated_response(
    *, request: Request, view: Any, queryset: Any, serializer: type[serializers.BaseSerializer]
) -> Response:
    """The page of `queryset` that the request's limit/offset select, serialized and wrapped."""
    paginator = view.pagination_class()
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response(serializer(page, many=True).data)
