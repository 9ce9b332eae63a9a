"""Supervisors' decisions are final for automatic paths (DESIGN §7).

Governance records a `MemoryDecision` for every add, edit, confirm, reject, expire and forget;
`memory_item_put` asks `automatic_write_refusal` before any automatic write (capture, re-capture,
backfill, grounding), so every path is held to the same rules:

- a rejected or forgotten (key, value) never comes back automatically, whatever the evidence;
- an expired (key, value) comes back only from a customer message newer than the expiry;
- a human add, edit or confirm outranks automatic evidence older than it; a newer customer
  statement of a different value supersedes it (the customer changed their mind).

Decisions keep no content: only keyed fingerprints (HMAC-SHA256 with a server-side key) of the
key and of (key, value), so a forgotten value is recognised without being kept.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from datetime import datetime

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from conversations.models import Customer, Message
from memory.models import DecisionKind, MemoryCreatedBy, MemoryDecision, MemoryItem, MemoryStatus
from memory.text import normalize_content

HUMAN_KINDS = (DecisionKind.ADDED, DecisionKind.EDITED, DecisionKind.CONFIRMED)
FINAL_KINDS = (DecisionKind.REJECTED, DecisionKind.FORGOTTEN)


def _fingerprint(customer: Customer, *parts: str) -> str:
    secret = (settings.QIWEI_MEMORY_FINGERPRINT_KEY or settings.SECRET_KEY).encode("utf-8")
    message = "\x1f".join([str(customer.pk), *parts]).encode("utf-8")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def key_fingerprint(customer: Customer, key: str) -> str:
    return _fingerprint(customer, "key", key)


def value_fingerprint(customer: Customer, key: str, content: str) -> str:
    return _fingerprint(customer, "value", key, normalize_content(content))


def decision_record(*, item: MemoryItem, kind: DecisionKind, at: datetime | None = None) -> MemoryDecision:
    """Remember a governance decision about `item` (its key and current value), content-free."""
    customer = item.customer
    return MemoryDecision.objects.create(
        customer=customer,
        kind=kind,
        key_fingerprint=key_fingerprint(customer, item.key),
        value_fingerprint=value_fingerprint(customer, item.key, item.content),
        decided_at=at or timezone.now(),
    )


def evidence_time(customer: Customer, source_message_ids: Sequence[int]) -> datetime | None:
    """When the newest cited message was sent (None: no message evidence, e.g. a profile backfill)."""
    ids = [int(i) for i in source_message_ids]
    if not ids:
        return None
    return Message.objects.filter(customer=customer, pk__in=ids).aggregate(newest=Max("sent_at"))["newest"]


def _last_human_decision(customer: Customer, key: str) -> datetime | None:
    return (
        MemoryDecision.objects.filter(
            customer=customer, key_fingerprint=key_fingerprint(customer, key), kind__in=HUMAN_KINDS
        )
        .order_by("-decided_at")
        .values_list("decided_at", flat=True)
        .first()
    )


def _older(evidence_at: datetime | None, decided_at: datetime) -> bool:
    return evidence_at is None or evidence_at <= decided_at


def automatic_write_refusal(
    *, customer: Customer, key: str, content: str, evidence_at: datetime | None, supersedes_keys: Sequence[str] = ()
) -> str | None:
    """Why an automatic write of (key, content) would undo a decision, or None when it may proceed."""
    value = value_fingerprint(customer, key, content)
    decisions = MemoryDecision.objects.filter(customer=customer, value_fingerprint=value)
    if decisions.filter(kind__in=FINAL_KINDS).exists():
        return "该值已被主管拒绝或遗忘"
    expired_at = (
        decisions.filter(kind=DecisionKind.EXPIRED).aggregate(last=Max("decided_at"))["last"]
    )
    if expired_at is not None and _older(evidence_at, expired_at):
        return "该值已过期，证据早于过期时间"
    for governed_key in (key, *supersedes_keys):
        active = MemoryItem.objects.filter(customer=customer, key=governed_key, status=MemoryStatus.ACTIVE).first()
        if active is None or active.created_by != MemoryCreatedBy.HUMAN:
            continue
        if governed_key == key and normalize_content(active.content) == normalize_content(content):
            continue  # the same value again: evidence for the human's item, not a change
        decided_at = _last_human_decision(customer, governed_key) or active.updated_at
        if _older(evidence_at, decided_at):
            return "人工确认的内容优先于更早的自动证据"
    return None
