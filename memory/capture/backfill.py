"""Backfill memory from existing profiles and stored customer words (spec §8: idempotent backfill).

Profile values become `profile:<field>` items (typed by staff: human, internal); inbound history
goes through the same capture service and safety gate as live messages. A second run writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F

from conversations.models import AuditAction, Customer, CustomerProfile, Message, MessageDirection
from memory.capture.services import capture_message
from memory.items import CREATED, EVIDENCE_ADDED, PROPOSED, REFUSED, SUPERSEDED, UNCHANGED, memory_item_put
from memory.models import MemoryCreatedBy, MemoryDirection, MemoryItem, MemoryStatus, MemoryType
from memory.profile import profile_item_content, profile_item_key
from memory.snapshots import snapshot_refresh
from qiwei_site.reading.normalise import normalize_content

ACTOR = "backfill"
REASON = "历史画像与客户原话回填"


@dataclass
class Totals:
    """What a backfill did, by outcome (issue 24, item 8): items created, old values superseded,
    evidence added to an item already there, items already there unchanged, messages blocked."""

    customers: int = 0
    messages: int = 0
    created: int = 0
    superseded: int = 0
    evidence_added: int = 0
    present: int = 0
    blocked: int = 0
    # Readings held back for a supervisor (issue 35): proposals, not memory.
    proposed: int = 0

    @property
    def written(self) -> int:
        """Items written: created, or a new value superseding an old one."""
        return self.created + self.superseded

    def count(self, outcomes: dict[str, int]) -> None:
        self.created += outcomes.get(CREATED, 0)
        self.superseded += outcomes.get(SUPERSEDED, 0)
        self.evidence_added += outcomes.get(EVIDENCE_ADDED, 0)
        self.proposed += outcomes.get(PROPOSED, 0)


def customer_backfill(*, customer: Customer, totals: Totals) -> None:
    """Write one customer's profile values and explicit inbound words as memory; idempotent."""
    changed = False
    profile = CustomerProfile.objects.filter(customer=customer).first()
    for field, value in (profile.as_dict() if profile else {}).items():
        if not value.strip():
            continue
        content = profile_item_content(field, normalize_content(value))
        if MemoryItem.objects.filter(
            customer=customer, key=profile_item_key(field), content=content, status=MemoryStatus.ACTIVE
        ).exists():
            # Memory already says it (the profile mirrors memory: perhaps this very backfill's
            # capture wrote it). Replaying it as staff's would only raise the item's confidence.
            totals.present += 1
            continue
        result = memory_item_put(
            customer=customer,
            type=MemoryType.FACT,
            key=profile_item_key(field),
            content=content,
            actor=ACTOR,
            reason=REASON,
            confidence=1.0,
            importance=4,
            direction=MemoryDirection.INTERNAL,
            created_by=MemoryCreatedBy.HUMAN,
            audit_action=AuditAction.MEMORY_ITEM_BACKFILLED,
            refresh_snapshot=False,
            automatic=True,  # a replay, not a decision: it never undoes a supervisor's
        )
        if result.outcome in (UNCHANGED, REFUSED):
            totals.present += 1
        else:
            totals.count({result.outcome: 1})
            changed = True
    # Each with its sealed original on the row (`conversations.received`), not one lookup per message.
    inbound = (
        Message.objects.filter(customer=customer, direction=MessageDirection.INBOUND, is_effective=True)
        .annotate(sealed_text=F("secret__sealed"))
        .order_by("sent_at", "id")
    )
    for message in inbound.iterator():
        totals.messages += 1
        outcome = capture_message(message=message, actor=ACTOR, refresh_snapshot=False)
        totals.blocked += int(outcome.blocked)
        totals.count(outcome.outcomes)
        totals.present += outcome.unchanged
        changed = changed or outcome.written > 0
    if changed:
        snapshot_refresh(customer=customer, reason=REASON)
