"""Supervisors' decisions are final for automatic paths (DESIGN §7).

Governance records a `MemoryDecision` for every add, edit, confirm, reject, expire and forget;
`memory_item_put` asks `automatic_write_refusal` before any automatic write (capture, re-capture,
backfill, grounding), so every path is held to the same rules:

- a rejected or forgotten (key, value) never comes back automatically, whatever the evidence, and
  no automatic value under that key rests on evidence older than the decision (so the same words
  written another way — 8000元 for 8000左右 — do not bring it back either);
- an expired (key, value), or a profile field a supervisor cleared, comes back only from a customer
  message newer than the decision;
- a human add, edit or confirm outranks automatic evidence older than it; a newer customer
  statement of a different value supersedes it (the customer changed their mind), but not one
  that repeats the value the human replaced (刘姐 edited to 刘女士: "叫我刘姐" again is refused,
  "叫我小刘" is captured) unless a supervisor set that value back;
- an older statement never overrides a newer one (retried jobs run out of order, backfill replays).

Evidence time is when we received the message, or when it says it was sent if that is earlier:
a client clock in the future cannot make old words look newer than a decision.

Decisions keep no content: only keyed fingerprints (HMAC-SHA256 with a server-side key) of the
key and of (key, value) — each value twice, by its words and by its meaning
(`qiwei_site.reading.meaning`: 八千 = 8000元左右 = 8k, 下个月15号 said in November = 2026-12-15,
浦东 = 浦东新区) — so a forgotten value is recognised, in any spelling, without being kept.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db.models import Max
from django.db.models.functions import Least
from django.utils import timezone

from conversations.models import Customer, Message
from memory.models import DecisionKind, MemoryCreatedBy, MemoryDecision, MemoryItem, MemoryStatus
from qiwei_site.platform import keyfiles
from qiwei_site.platform.keyfiles import KeySpec
from qiwei_site.reading.meaning import meaning
from qiwei_site.reading.normalise import normalize_content

HUMAN_KINDS = (DecisionKind.ADDED, DecisionKind.EDITED, DecisionKind.CONFIRMED)
FINAL_KINDS = (DecisionKind.REJECTED, DecisionKind.FORGOTTEN)
# Final for the value only (a declined proposal): no other value of the key is held back by it.
FINAL_VALUE_KINDS = (*FINAL_KINDS, DecisionKind.DECLINED)
DATED_KINDS = (DecisionKind.EXPIRED, DecisionKind.CLEARED)
_key_cache: dict[str, bytes] = {}


MEMORY_FINGERPRINT = KeySpec(
    purpose="memory_fingerprint",
    label="记忆指纹密钥",
    file_name="memory-fingerprint.key",
    setting="QIWEI_MEMORY_FINGERPRINT_KEY",
    cost="已驳回或遗忘的内容将无法识别，可能被再次写入",
    cost_en="every rejected or forgotten value unrecognisable, free to be written again",
    generate=lambda: secrets.token_hex(32),
    valid=lambda key: bool(key.strip()),
)


def fingerprint_key() -> bytes:
    """The server-side key of the fingerprints: QIWEI_MEMORY_FINGERPRINT_KEY, or else a random key
    made once and kept in the data dir (never the public development SECRET_KEY), read once per
    process. Never made again once one was on record (`qiwei_site.platform.keyfiles`): a lost file
    is refused, not silently replaced by a key that recognises no decision."""
    configured = settings.QIWEI_MEMORY_FINGERPRINT_KEY
    if configured:
        return configured.encode("utf-8")
    path = str(keyfiles.key_path(MEMORY_FINGERPRINT))
    cached = _key_cache.get(path)
    if cached is not None:
        return cached
    key = keyfiles.read_keys(MEMORY_FINGERPRINT)[0].encode("utf-8")
    _key_cache[path] = key
    return key


keyfiles.verifier_register(MEMORY_FINGERPRINT.purpose, lambda: keyfiles.keys_verify(MEMORY_FINGERPRINT))


def _fingerprint(customer: Customer, *parts: str) -> str:
    message = "\x1f".join([str(customer.pk), *parts]).encode("utf-8")
    return hmac.new(fingerprint_key(), message, hashlib.sha256).hexdigest()


def key_fingerprint(customer: Customer, key: str) -> str:
    return _fingerprint(customer, "key", key)


def value_fingerprint(customer: Customer, key: str, content: str) -> str:
    return _fingerprint(customer, "value", key, normalize_content(content))


def meaning_fingerprint(customer: Customer, key: str, content: str, *, on: datetime | None) -> str:
    """The value's meaning, keyed (`qiwei_site.reading.meaning`): any spelling of one amount,
    date, place or wording gives the same fingerprint. `on`: when relative dates in it were said."""
    today = timezone.localdate(on) if on is not None else None
    return _fingerprint(customer, "meaning", key, meaning(content, today=today))


def same_meaning(first: str, second: str) -> bool:
    """Whether two contents are one value however spelt (relative dates read as of today)."""
    today = timezone.localdate()
    return meaning(normalize_content(first), today=today) == meaning(normalize_content(second), today=today)


def value_fingerprints(customer: Customer, key: str, content: str, *, on: datetime | None) -> frozenset[str]:
    """Both keys of a value: its words (what decisions recorded before meanings existed) and its meaning."""
    return frozenset({value_fingerprint(customer, key, content), meaning_fingerprint(customer, key, content, on=on)})


def decision_record(
    *,
    item: MemoryItem | None = None,
    kind: DecisionKind,
    at: datetime | None = None,
    customer: Customer | None = None,
    key: str = "",
    contents: Iterable[str] = (),
) -> list[MemoryDecision]:
    """Remember a governance decision about an item's key and value(s), content-free: by default
    the item's current value; `contents` adds others (forget covers every value the item ever had)."""
    customer = customer or (item.customer if item is not None else None)
    key = key or (item.key if item is not None else "")
    assert customer is not None and key
    values = {normalize_content(c) for c in contents if c}
    if item is not None:
        values.add(normalize_content(item.content))
    at = at or timezone.now()
    # Each value by its words and by its meaning (relative dates read as of when it was said, or
    # else as of the decision), so no other spelling of it passes either.
    said_on = _said_on(item) or at
    fingerprints = sorted({fp for value in values for fp in value_fingerprints(customer, key, value, on=said_on)})
    key_fp = key_fingerprint(customer, key)
    return MemoryDecision.objects.bulk_create(
        MemoryDecision(customer=customer, kind=kind, key_fingerprint=key_fp, value_fingerprint=fp, decided_at=at)
        for fp in fingerprints
    )


def _said_on(item: MemoryItem | None) -> datetime | None:
    """When the item's newest cited message was sent (relative dates in it mean that day's)."""
    if item is None or not item.source_message_ids:
        return None
    ids = [int(i) for i in item.source_message_ids if str(i).lstrip("-").isdigit()]
    return Message.objects.filter(customer_id=item.customer_id, pk__in=ids).aggregate(newest=Max("sent_at"))["newest"]


def _received(customer: Customer, ids: Sequence[int]) -> datetime | None:
    if not ids:
        return None
    return Message.objects.filter(customer=customer, pk__in=list(ids)).aggregate(
        newest=Max(Least("sent_at", "created_at"))
    )["newest"]


def evidence_time(customer: Customer, source_message_ids: Sequence[int]) -> datetime | None:
    """When the newest cited message reached us (None: no message evidence, e.g. a profile backfill)."""
    return _received(customer, [int(i) for i in source_message_ids])


def _older(evidence_at: datetime | None, decided_at: datetime) -> bool:
    return evidence_at is None or evidence_at <= decided_at


@dataclass
class CustomerDecisions:
    """A customer's decisions, read once (kinds, fingerprints and times; never content), so a batch
    of automatic writes asks about each of its keys without a query per question."""

    rows: list[tuple[str, str, str, datetime]] = field(default_factory=list)

    @classmethod
    def load(cls, customer: Customer) -> CustomerDecisions:
        return cls(
            rows=list(
                MemoryDecision.objects.filter(customer=customer).values_list(
                    "kind", "key_fingerprint", "value_fingerprint", "decided_at"
                )
            )
        )

    def add(self, decisions: Iterable[MemoryDecision]) -> None:
        """Decisions recorded during the batch count for its later writes too."""
        self.rows += [(d.kind, d.key_fingerprint, d.value_fingerprint, d.decided_at) for d in decisions]

    def last(self, kinds: Sequence[str], *, key: str = "", values: frozenset[str] = frozenset()) -> datetime | None:
        """When the latest decision of these kinds on this key fingerprint (or any of these value
        fingerprints) was made."""
        return max(
            (
                decided_at
                for kind, key_fp, value_fp, decided_at in self.rows
                if kind in kinds and (key_fp == key if key else value_fp in values)
            ),
            default=None,
        )


def _is_current(
    active: Callable[[str], MemoryItem | None] | None,
    customer: Customer,
    key: str,
    values: frozenset[str],
    on: datetime | None,
) -> bool:
    """Whether the active item under `key` holds this value (a supervisor set it back)."""
    item = active(key) if active is not None else None
    return item is not None and bool(value_fingerprints(customer, key, item.content, on=on) & values)


def automatic_write_refusal(
    *,
    customer: Customer,
    key: str,
    content: str,
    evidence_at: datetime | None,
    supersedes_keys: Sequence[str] = (),
    decisions: CustomerDecisions | None = None,
    active: Callable[[str], MemoryItem | None] | None = None,
    received: Callable[[Sequence[int]], datetime | None] | None = None,
) -> str | None:
    """Why an automatic write of (key, content) would undo a decision, or None when it may proceed.

    A batched writer passes what it already holds: the customer's `decisions`, its view of the
    `active` item under a key and the `received` time of cited messages; otherwise they are read here.
    """
    if decisions is None:
        decisions = CustomerDecisions.load(customer)
    if active is None:

        def active(governed_key: str) -> MemoryItem | None:
            return MemoryItem.objects.filter(customer=customer, key=governed_key, status=MemoryStatus.ACTIVE).first()

    if received is None:

        def received(ids: Sequence[int]) -> datetime | None:
            return _received(customer, ids)

    content = normalize_content(content)
    if decisions.rows:
        values = value_fingerprints(customer, key, content, on=evidence_at)
        if decisions.last(FINAL_VALUE_KINDS, values=values) is not None:
            return "该值已被主管拒绝或遗忘"
        replaced_at = decisions.last((DecisionKind.REPLACED,), values=values)
        if replaced_at is not None and not _is_current(active, customer, key, values, evidence_at):
            return "主管已把该值改成了别的值"
        dated_at = decisions.last(DATED_KINDS, values=values)
        if dated_at is not None and _older(evidence_at, dated_at):
            return "该值已过期或被清空，证据早于该决定"
        key_fp = key_fingerprint(customer, key)
        final_on_key = decisions.last(FINAL_KINDS, key=key_fp)
        if final_on_key is not None and _older(evidence_at, final_on_key):
            return "该键上的值已被主管拒绝或遗忘，证据早于该决定"
        cleared_on_key = decisions.last((DecisionKind.CLEARED,), key=key_fp)
        if cleared_on_key is not None and _older(evidence_at, cleared_on_key):
            return "主管已清空该画像字段，证据早于该决定"
    for governed_key in (key, *supersedes_keys):
        item = active(governed_key)
        if item is None:
            continue
        same_value = governed_key == key and normalize_content(item.content) == content
        if item.created_by == MemoryCreatedBy.HUMAN:
            if same_value:
                continue  # the same value again: evidence for the human's item, never a change of it
            human_at = (
                decisions.last(HUMAN_KINDS, key=key_fingerprint(customer, governed_key)) if decisions.rows else None
            )
            decided_at = max(filter(None, [human_at, item.updated_at]))
            if _older(evidence_at, decided_at):
                return "人工确认的内容优先于更早的自动证据"
        elif not same_value:
            newest = received([int(i) for i in item.source_message_ids or []])
            if newest is not None and evidence_at is not None and evidence_at < newest:
                return "更新的客户原话已覆盖该值"
    return None
