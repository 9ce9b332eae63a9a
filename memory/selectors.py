"""Reads for memory governance: items, their history and evidence, and snapshots."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from django.db import connections
from django.db.models import QuerySet

from conversations.models import Customer, CustomerProfile, Message
from conversations.selectors import filter_errors_text
from memory.models import MemoryDecision, MemoryItem, MemorySnapshot, MemoryStatus
from qiwei_site.platform.errors import NotFound, ValidationFailed
from qiwei_site.platform.selectors import account_samples
from qiwei_site.platform.tenancy import current_alias


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


# --- reads inside a memory write (`memory.items.MemoryWrites`), on the write transaction --------


def memory_items_active_locked(*, customer_id: int) -> list[MemoryItem]:
    """PostgreSQL: the customer's active items and pending proposals, locked.

    Lock order, the same on every write path: the customer's row first (`customer_lock`), then its
    items by id. The customer's row serialises the writers of one customer, so two captures cannot
    both find no proposal under a key and both insert one (`uniq_proposed_memory_key`), and items
    locked by id cannot deadlock against a writer that locks them in another order (the model's
    default ordering, by importance and update time, changes between transactions)."""
    customer_lock(customer_id=customer_id)
    return list(
        MemoryItem.objects.select_for_update()
        .filter(customer_id=customer_id, status__in=[MemoryStatus.ACTIVE, MemoryStatus.PROPOSED])
        .order_by("pk")
    )


def memory_decision_rows(*, customer_id: int) -> list[tuple[Any, ...]]:
    """The customer's decisions as (kind, key fingerprint, value fingerprint, decided at)."""
    return list(
        MemoryDecision.objects.filter(customer_id=customer_id)
        .order_by()
        .values_list("kind", "key_fingerprint", "value_fingerprint", "decided_at")
    )


def customer_lock(*, customer_id: int) -> None:
    """PostgreSQL: the customer's row locked (serialising snapshot writers, as `snapshot_refresh` does,
    and every writer of the customer's memory before it locks an item). SQLite: nothing (its writers
    are serialised by the database lock)."""
    if not connections[current_alias()].features.has_select_for_update:
        return
    list(Customer.objects.select_for_update().filter(pk=customer_id).values_list("pk"))


def snapshot_head_read(*, customer_id: int) -> tuple[int, str] | None:
    """The newest snapshot's (version, sha256), or None."""
    row = (
        MemorySnapshot.objects.filter(customer_id=customer_id)
        .order_by("-version")
        .values_list("version", "sha256")
        .first()
    )
    return (row[0], row[1]) if row is not None else None


def customer_profile_locked(*, customer_id: int) -> CustomerProfile | None:
    """The customer's profile, locked on PostgreSQL; None when it has none."""
    return CustomerProfile.objects.select_for_update().filter(customer_id=customer_id).first()


def decision_samples() -> Iterator[str]:
    """A decision's fingerprint from each account that has any: the memory fingerprint key's probe
    (`qiwei_site.platform.keyfiles`): while decisions exist, a lost key is refused, not remade."""
    return account_samples(lambda: MemoryDecision.objects.values_list("key_fingerprint", flat=True).first())
