"""One way to page a list answer: `{"count", "next", "previous", "results"}` by limit/offset."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response

__all__ = ["LimitOffsetPagination", "paginated_response"]


def paginated_response(
    *, request: Request, view: Any, queryset: Any, serializer: type[serializers.BaseSerializer]
) -> Response:
    """The page of `queryset` that the request's limit/offset select, serialized and wrapped."""
    paginator = view.pagination_class()
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response(serializer(page, many=True).data)
