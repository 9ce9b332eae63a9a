"""Core-memory snapshots (spec §2, §3.1): an immutable, versioned rendering of a customer's
active memory, grouped by type, within QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT.

Every change to memory calls `snapshot_refresh` (or, for a batched write that already holds the
customer's active items, `snapshot_write`); when the rendered text is unchanged the current version
is reused, so a version number identifies exactly what a model saw.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from conversations.models import Customer
from memory.models import MemoryItem, MemorySnapshot, MemoryStatus, MemoryType
from qiwei_site.platform.sql import insert
from qiwei_site.platform.tenancy import account_atomic

# Confirmed knowledge first; hypotheses stand apart, only as questions to confirm.
SECTION_TITLES: tuple[tuple[str, str], ...] = (
    (MemoryType.FACT, "已确认事实"),
    (MemoryType.PREFERENCE, "偏好"),
    (MemoryType.CONSTRAINT, "约束（排除项）"),
    (MemoryType.EVENT, "重要事件"),
    (MemoryType.HYPOTHESIS, "待确认（模型推断，仅可用于向客户确认，不是事实）"),
)


@dataclass
class RenderedSnapshot:
    content: str
    item_ids: list[int] = field(default_factory=list)
    left_out_ids: list[int] = field(default_factory=list)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content.encode("utf-8")).hexdigest()


def effective_items(customer: Customer) -> Iterable[MemoryItem]:
    """Active items that have not expired, in snapshot order within each type."""
    now = timezone.now()
    return (
        MemoryItem.objects.filter(customer=customer, status=MemoryStatus.ACTIVE)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .order_by("-importance", "-confidence", "-updated_at", "-id")
    )


def effective_in(items: Iterable[MemoryItem], now: datetime | None = None) -> list[MemoryItem]:
    """`effective_items` over items already in memory, in the same order."""
    now = now or timezone.now()
    kept = [
        item
        for item in items
        if item.status == MemoryStatus.ACTIVE and (item.expires_at is None or item.expires_at > now)
    ]
    return sorted(kept, key=lambda item: (item.importance, item.confidence, item.updated_at, item.pk), reverse=True)


def render_snapshot(items: Iterable[MemoryItem], limit: int | None = None) -> RenderedSnapshot:
    """Render items grouped by type; whatever does not fit in `limit` characters is left out."""
    limit = limit if limit is not None else settings.QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT
    by_type: dict[str, list[MemoryItem]] = {}
    for item in items:
        by_type.setdefault(item.type, []).append(item)
    lines: list[str] = []
    used = 0
    rendered = RenderedSnapshot(content="")
    for memory_type, title in SECTION_TITLES:
        group = by_type.get(memory_type, [])
        heading = f"## {title}"
        heading_written = False
        for item in group:
            line = f"- {' '.join(item.content.split())}"
            cost = len(line) + 1 + (0 if heading_written else len(heading) + 1)
            if used + cost > limit:
                rendered.left_out_ids.append(item.pk)
                continue
            if not heading_written:
                lines.append(heading)
                heading_written = True
            lines.append(line)
            used += cost
            rendered.item_ids.append(item.pk)
    rendered.content = "\n".join(lines)
    return rendered


def snapshot_current(customer: Customer) -> MemorySnapshot | None:
    return MemorySnapshot.objects.filter(customer=customer).order_by("-version").first()


def snapshot_refresh(*, customer: Customer, reason: str) -> tuple[MemorySnapshot, bool]:
    """Write a new snapshot version if the rendered memory changed; returns (snapshot, created)."""
    with account_atomic():
        # Serialise snapshot writers per customer (a no-op lock on SQLite, which serialises writers anyway).
        Customer.objects.select_for_update().filter(pk=customer.pk).first()
        rendered = render_snapshot(effective_items(customer))
        current = snapshot_current(customer)
        if current is not None and current.sha256 == rendered.sha256:
            return current, False
        snapshot = MemorySnapshot.objects.create(
            customer=customer,
            version=(current.version + 1) if current else 1,
            content=rendered.content,
            sha256=rendered.sha256,
            char_count=len(rendered.content),
            item_ids=rendered.item_ids,
            left_out_ids=rendered.left_out_ids,
            reason=reason[:200],
        )
        return snapshot, True


# (version, sha256) of a customer's current snapshot; None when it has none yet.
SnapshotHead = tuple[int, str] | None


def snapshot_write(
    *, customer: Customer, items: Iterable[MemoryItem], head: SnapshotHead, reason: str
) -> tuple[MemorySnapshot | None, bool]:
    """`snapshot_refresh` for a writer that holds the customer's active items as they will commit,
    inside its own write transaction: render them once and write a version only if the text changed.

    `head` must be current: read in that transaction on SQLite (which then holds the database's only
    write lock), and under the customer's row lock where rows are locked one by one (PostgreSQL), as
    `snapshot_refresh` reads it (`memory.items.MemoryWrites.flush` does both). Returns (the new
    snapshot or None, created).
    """
    rendered = render_snapshot(effective_in(items))
    if head is not None and head[1] == rendered.sha256:
        return None, False
    snapshot = MemorySnapshot(
        customer=customer,
        version=head[0] + 1 if head is not None else 1,
        content=rendered.content,
        sha256=rendered.sha256,
        char_count=len(rendered.content),
        item_ids=rendered.item_ids,
        left_out_ids=rendered.left_out_ids,
        reason=reason[:200],
    )
    return insert([snapshot])[0], True
