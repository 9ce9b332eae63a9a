"""Reads behind memory's admin pages: a snapshot's items by their text, what changed between two
versions item by item, and the messages a supervisor can cite when adding an item (issue 24,
item 3). Texts are masked; ids link to the items.

A snapshot's text lists one bullet per item in the order of `item_ids` (`memory.snapshots.render_snapshot`),
so the n-th bullet is the n-th id. Forgetting an item takes its line and its id out of every version
(`memory.governance.services._snapshots_redact`): what it said cannot be shown, but that it was
forgotten, when, by whom and why is in the audit, and the diff says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import QuerySet
from django.utils import timezone

from conversations.models import Message
from memory.models import MemoryItem, MemorySnapshot, MemoryStatus, MemoryType
from memory.snapshots import SECTION_TITLES
from qiwei_site.platform.models import AuditAction, AuditEvent
from qiwei_site.reading.masking import mask_sensitive

_SECTION_BY_TITLE = {f"## {title}": str(title) for _type, title in SECTION_TITLES}
_TYPE_LABELS = {str(value): str(label) for value, label in MemoryType.choices}


@dataclass(frozen=True)
class SnapshotLine:
    """One item as a snapshot version shows it: its section, its text (masked), its id if known."""

    item_id: int | None
    section: str
    text: str


@dataclass(frozen=True)
class SnapshotChange:
    kind: str  # added | removed | edited | moved
    label: str  # 新增 / 移出 / 内容修改 / 类型变更
    item_id: int | None
    section: str
    text: str
    old_section: str = ""
    old_text: str = ""
    why: str = ""  # for a removed item: what became of it


@dataclass(frozen=True)
class ForgottenNote:
    """An item forgotten between the two versions: no text (it is gone), only the audit's record."""

    at: datetime
    item_id: int | None
    type_label: str
    actor: str
    reason: str


@dataclass
class SnapshotDiff:
    changes: list[SnapshotChange] = field(default_factory=list)
    forgotten: list[ForgottenNote] = field(default_factory=list)
    unchanged: int = 0
    identical: bool = False
    reordered: bool = False

    @property
    def summary(self) -> str:
        counts = {
            kind: sum(1 for c in self.changes if c.kind == kind) for kind in ("added", "removed", "edited", "moved")
        }
        parts = [
            f"{label} {counts[kind]} 条"
            for kind, label in (("added", "新增"), ("removed", "移出"), ("edited", "内容修改"), ("moved", "类型变更"))
            if counts[kind]
        ]
        if self.forgotten:
            parts.append(f"遗忘 {len(self.forgotten)} 条（内容已删除）")
        if not parts:
            if self.reordered:
                return f"条目相同（{self.unchanged} 条），只是顺序调整（重要性或置信度变化）。"
            return "两个版本内容相同。"
        tail = f"；未变 {self.unchanged} 条" if self.unchanged else ""
        return "、".join(parts) + tail + "。"


def snapshot_lines(snapshot: MemorySnapshot | None) -> list[SnapshotLine]:
    """The version's items in order, each with its section and masked text; ids when the bullets and
    `item_ids` still line up (they always do for versions this code wrote)."""
    if snapshot is None:
        return []
    section = ""
    bullets: list[tuple[str, str]] = []
    for line in snapshot.content.splitlines():
        if line in _SECTION_BY_TITLE:
            section = _SECTION_BY_TITLE[line]
        elif line.startswith("- "):
            bullets.append((section, mask_sensitive(line[2:])))
    ids: list[int | None] = list(snapshot.item_ids or [])
    if len(ids) != len(bullets):
        ids = [None] * len(bullets)
    return [SnapshotLine(item_id=i, section=s, text=t) for i, (s, t) in zip(ids, bullets, strict=True)]


def snapshot_left_out(snapshot: MemorySnapshot) -> list[SnapshotLine]:
    """Items that were active but did not fit the core limit, by their current text (masked)."""
    ids = [i for i in snapshot.left_out_ids or [] if isinstance(i, int)]
    items = {item.pk: item for item in MemoryItem.objects.filter(customer_id=snapshot.customer_id, pk__in=ids)}
    return [
        SnapshotLine(
            item_id=i,
            section=_TYPE_LABELS.get(items[i].type, items[i].type) if i in items else "",
            text=mask_sensitive(items[i].content) if i in items else "（条目已不存在）",
        )
        for i in ids
    ]


def _why_removed(item: MemoryItem | None, left_out: set[int], item_id: int) -> str:
    if item_id in left_out:
        return "超出核心记忆字数上限，未收录"
    if item is None:
        return "条目已删除"
    if item.status == MemoryStatus.REJECTED:
        return "已拒绝"
    if item.status == MemoryStatus.SUPERSEDED:
        return f"已被新值替代（#{item.superseded_by_id}）" if item.superseded_by_id else "已失效"
    if item.expires_at is not None and item.expires_at <= timezone.now():
        return "已过期"
    return "不在该版本中"


def _forgotten_between(
    snapshot: MemorySnapshot, older: MemorySnapshot | None, newer: MemorySnapshot
) -> list[ForgottenNote]:
    """Forgets recorded after `older` was written and before the version after `newer` was: each
    forget writes its version first and its audit row right after, in one transaction."""
    versions = MemorySnapshot.objects.filter(customer_id=snapshot.customer_id)
    start = versions.filter(version__gt=older.version).order_by("version").first() if older else None
    after = versions.filter(version__gt=newer.version).order_by("version").first()
    events = AuditEvent.objects.filter(
        conversation_id=snapshot.customer.conversation_id, action=AuditAction.MEMORY_ITEM_FORGOTTEN
    )
    if start is not None:
        events = events.filter(created_at__gte=start.created_at)
    elif older is not None:
        return []
    if after is not None:
        events = events.filter(created_at__lt=after.created_at)
    notes = []
    for event in events.order_by("created_at", "pk"):
        payload = event.payload if isinstance(event.payload, dict) else {}
        item_id = payload.get("item_id")
        memory_type = str(payload.get("type") or "")
        notes.append(
            ForgottenNote(
                at=event.created_at,
                item_id=item_id if isinstance(item_id, int) else None,
                type_label=_TYPE_LABELS.get(memory_type, memory_type),
                actor=event.actor_name,
                reason=event.reason,
            )
        )
    return notes


def snapshot_diff(*, snapshot: MemorySnapshot, against: MemorySnapshot | None) -> SnapshotDiff:
    """What changed from `against` to `snapshot`, item by item (texts masked), and the items forgotten
    in between (their text gone from both, so only the audit can tell)."""
    old, new = snapshot_lines(against), snapshot_lines(snapshot)
    diff = SnapshotDiff(identical=against is not None and against.content == snapshot.content)
    if any(line.item_id is None for line in [*old, *new]):
        # Ids no longer line up with the text: compare the lines themselves.
        old_texts, new_texts = [(x.section, x.text) for x in old], [(x.section, x.text) for x in new]
        for section, text in new_texts:
            if (section, text) not in old_texts:
                diff.changes.append(SnapshotChange("added", "新增", None, section, text))
        for section, text in old_texts:
            if (section, text) not in new_texts:
                diff.changes.append(SnapshotChange("removed", "移出", None, section, text))
        diff.unchanged = sum(1 for pair in new_texts if pair in old_texts)
    else:
        old_by_id = {line.item_id: line for line in old}
        new_by_id = {line.item_id: line for line in new}
        removed_ids = [i for i in old_by_id if i not in new_by_id]
        items = {item.pk: item for item in MemoryItem.objects.filter(pk__in=[i for i in removed_ids if i is not None])}
        left_out = {i for i in snapshot.left_out_ids or [] if isinstance(i, int)}
        for line in new:
            before = old_by_id.get(line.item_id)
            if before is None:
                diff.changes.append(SnapshotChange("added", "新增", line.item_id, line.section, line.text))
            elif before.text != line.text:
                diff.changes.append(
                    SnapshotChange(
                        "edited", "内容修改", line.item_id, line.section, line.text, before.section, before.text
                    )
                )
            elif before.section != line.section:
                diff.changes.append(
                    SnapshotChange("moved", "类型变更", line.item_id, line.section, line.text, before.section)
                )
            else:
                diff.unchanged += 1
        for item_id in removed_ids:
            line = old_by_id[item_id]
            why = _why_removed(items.get(item_id) if item_id is not None else None, left_out, item_id or 0)
            diff.changes.append(SnapshotChange("removed", "移出", item_id, line.section, line.text, why=why))
        diff.reordered = not diff.changes and [x.item_id for x in old] != [x.item_id for x in new]
    if against is not None:
        older, newer = (against, snapshot) if against.version < snapshot.version else (snapshot, against)
        diff.forgotten = _forgotten_between(snapshot, older, newer)
    return diff


# The add form lists this many of the customer's latest messages to cite as evidence.
SOURCE_PICKER_LIMIT = 100
SOURCE_LABEL_CHARS = 60


def source_message_choices(*, customer_id: int | None) -> QuerySet[Message]:
    """The customer's latest messages, newest first, that the add form offers as sources (none
    until a customer is chosen)."""
    if customer_id is None:
        return Message.objects.none()
    latest = Message.objects.filter(customer_id=customer_id).order_by("-sent_at", "-id")
    ids = list(latest.values_list("pk", flat=True)[:SOURCE_PICKER_LIMIT])
    return Message.objects.filter(pk__in=ids).order_by("-sent_at", "-id")


def source_message_label(message: Message) -> str:
    """「11-02 10:01 · 客户 王先生：预算八千左右…」, masked."""
    text = " ".join(mask_sensitive(message.text).split())
    text = text if len(text) <= SOURCE_LABEL_CHARS else text[:SOURCE_LABEL_CHARS] + "…"
    when = timezone.localtime(message.sent_at).strftime("%Y-%m-%d %H:%M")
    sender = f" {message.sender}" if message.sender else ""
    return f"{when} · {message.get_direction_display()}{sender}：{text}"
