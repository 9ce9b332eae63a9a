"""Reads for memory governance: items, their history and evidence, and snapshots."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet

from conversations.models import Customer, Message
from conversations.selectors import filter_errors_text
from memory.models import MemoryItem, MemorySnapshot
from qiwei_site.platform.errors import NotFound, ValidationFailed


def memory_item_list(*, customer: Customer, filters: Mapping[str, Any] | None = None) -> QuerySet[MemoryItem]:
    from memory.filters import MemoryItemFilter

    queryset = MemoryItem.objects.filter(customer=customer).order_by("-importance", "-confidence", "-updated_at", "-id")
    filterset = MemoryItemFilter(filters or {}, queryset=queryset)
    if not filterset.is_valid():
        raise ValidationFailed(filter_errors_text(filterset.errors), code="invalid_filter")
    return filterset.qs


def memory_item_get(*, customer: Customer, item_id: int | str) -> MemoryItem:
    """An item of this customer; another customer's item is as unknown as a missing one."""
    try:
        pk = int(item_id)
    except (TypeError, ValueError):
        pk = 0
    item = MemoryItem.objects.select_related("customer").filter(customer=customer, pk=pk).first()
    if item is None:
        raise NotFound(f"记忆条目 {item_id} 不存在 (no such memory item).", code="memory_item_not_found")
    return item


def memory_item_history(*, item: MemoryItem) -> QuerySet[Any]:
    return MemoryItem.history.filter(id=item.pk).order_by("-history_date", "-history_id")


def memory_item_sources(*, item: MemoryItem) -> list[Message]:
    """The messages an item cites, oldest first (only this customer's)."""
    ids = [int(i) for i in item.source_message_ids or [] if str(i).lstrip("-").isdigit()]
    if not ids:
        return []
    return list(Message.objects.filter(customer_id=item.customer_id, pk__in=ids).order_by("sent_at", "id"))


def snapshot_list(*, customer: Customer) -> QuerySet[MemorySnapshot]:
    return MemorySnapshot.objects.filter(customer=customer).order_by("-version")


def snapshot_get(*, customer: Customer, version: int | None = None) -> MemorySnapshot:
    snapshots = snapshot_list(customer=customer)
    snapshot = snapshots.filter(version=version).first() if version is not None else snapshots.first()
    if snapshot is None:
        raise NotFound("该客户还没有记忆快照 (no memory snapshot yet).", code="snapshot_not_found")
    return snapshot
