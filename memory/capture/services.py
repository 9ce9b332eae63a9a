"""The capture service: one inbound customer message → safety gate → extraction → memory writes.

Everything the message yields is written in one transaction with the message id as evidence,
and the snapshot is refreshed once at the end; a blocked message writes nothing but an audit row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conversations.models import AlertKind, AlertLevel, AuditAction, AuditEvent, Message, MessageDirection
from conversations.services import alert_raise, audit_record
from memory.capture.extract import FACT, Candidate, extract_candidates
from memory.capture.safety import PERSONAL_NUMBER_CATEGORIES, scan, without_personal_numbers
from memory.items import CREATED, EVIDENCE_ADDED, REFUSED, SUPERSEDED, UNCHANGED, memory_item_put
from memory.models import MemoryCreatedBy, MemoryDirection, MemoryItem, MemoryStatus
from memory.snapshots import snapshot_refresh
from qiwei_site.platform.errors import ValidationFailed
from qiwei_site.platform.history import Actor
from qiwei_site.platform.tenancy import account_atomic

CAPTURE_REASON = "客户原话自动提取"
STALE = "stale"


@dataclass
class CaptureOutcome:
    message_id: int
    blocked: bool = False
    categories: list[str] = field(default_factory=list)
    candidates: int = 0
    # outcome of each put: created | evidence_added | superseded | unchanged
    outcomes: dict[str, int] = field(default_factory=dict)
    item_ids: list[int] = field(default_factory=list)

    @property
    def written(self) -> int:
        return sum(n for outcome, n in self.outcomes.items() if outcome not in {UNCHANGED, STALE, REFUSED})

    @property
    def unchanged(self) -> int:
        return sum(self.outcomes.get(outcome, 0) for outcome in (UNCHANGED, STALE, REFUSED))


def _audit_blocked(message: Message, categories: list[str], actor: Actor) -> None:
    # Re-capturing the same message (a retry, a second backfill) must not pile up audit rows.
    already = AuditEvent.objects.filter(
        action=AuditAction.MEMORY_CAPTURE_BLOCKED,
        conversation_id=message.customer.conversation_id,
        payload__message_id=message.pk,
    ).exists()
    if not already:
        audit_record(
            action=AuditAction.MEMORY_CAPTURE_BLOCKED,
            conversation_id=message.customer.conversation_id,
            actor=actor,
            reason="安全扫描拦截：提示注入或凭证，不写入记忆",
            payload={"message_id": message.pk, "categories": categories},
        )


def _is_stale(candidate: Candidate, message: Message) -> bool:
    """True when newer knowledge already governs this key: an older message never overrides it.

    Retried jobs run out of order, and a backfill replays history after staff edited the profile;
    in both cases the newer statement (or the human edit) must stand.
    """
    keys = [candidate.key, *candidate.supersedes_keys]
    for item in MemoryItem.objects.filter(customer=message.customer, key__in=keys, status=MemoryStatus.ACTIVE):
        if item.key == candidate.key and item.type == candidate.type and item.content == candidate.content:
            continue  # the same statement again only adds evidence
        sources = [int(i) for i in item.source_message_ids or []]
        if sources:
            if Message.objects.filter(pk__in=sources, sent_at__gt=message.sent_at).exists():
                return True
        elif item.updated_at > message.sent_at:
            return True
    return False


def _put(candidate: Candidate, *, message: Message, actor: Actor) -> Any:
    return memory_item_put(
        customer=message.customer,
        type=candidate.type,
        key=candidate.key,
        content=candidate.content,
        actor=actor,
        reason=CAPTURE_REASON,
        source_message_ids=[message.pk],
        confidence=candidate.confidence,
        importance=candidate.importance,
        direction=MemoryDirection.INBOUND,
        created_by=MemoryCreatedBy.AUTO,
        supersedes_keys=candidate.supersedes_keys,
        refresh_snapshot=False,
    )


def _put_profile(candidate: Candidate, *, message: Message, actor: Actor) -> tuple[str, int | None]:
    """A declared profile fact updates the profile and its `profile:<field>` item together, so the
    structured profile and long-term memory never disagree (spec §3)."""
    from memory.profile import customer_profile_update, profile_item_key

    field_name = candidate.field or ""
    key = profile_item_key(field_name)

    def state() -> tuple[int, str, list[int]] | None:
        item = MemoryItem.objects.filter(customer=message.customer, key=key, status=MemoryStatus.ACTIVE).first()
        return (item.pk, item.content, list(item.source_message_ids)) if item else None

    before = state()
    customer_profile_update(
        customer=message.customer,
        changes={field_name: candidate.value},
        actor=actor,
        reason=CAPTURE_REASON,
        source_message_ids=[message.pk],
        refresh_snapshot=False,  # capture refreshes once per message
    )
    after = state()
    if after is None or after == before:
        return UNCHANGED, after[0] if after else None
    if before is None:
        return CREATED, after[0]
    return (EVIDENCE_ADDED if before[0] == after[0] else SUPERSEDED), after[0]


def capture_message(*, message: Message, actor: Actor = "capture", refresh_snapshot: bool = True) -> CaptureOutcome:
    """Capture what an inbound customer message explicitly states. Idempotent per message."""
    if message.direction != MessageDirection.INBOUND:
        raise ValidationFailed(
            "只从客户发来的消息提取记忆 (capture reads inbound customer messages only).", code="not_inbound"
        )
    outcome = CaptureOutcome(message_id=message.pk)
    if not message.is_effective:
        return outcome
    result = scan(message.text)
    if result.blocked:
        outcome.blocked = True
        outcome.categories = list(result.categories)
        with account_atomic():
            _audit_blocked(message, outcome.categories, actor)
            alert_raise(
                customer=message.customer,
                kind=AlertKind.MESSAGE_BLOCKED,
                level=AlertLevel.WARNING,
                text=(
                    f"客户消息 #{message.pk} 被安全扫描拦截（{'、'.join(outcome.categories)}），"
                    "未写入记忆，请人工查看"
                ),
                cause=f"message:{message.pk}",
                actor=actor,
                reason="安全扫描拦截",
            )
        return outcome
    if any(span.category in PERSONAL_NUMBER_CATEGORIES for span in result.spans):
        with account_atomic():
            alert_raise(
                customer=message.customer,
                kind=AlertKind.PERSONAL_NUMBER,
                level=AlertLevel.INFO,
                text=f"客户消息 #{message.pk} 含个人号码（身份证/银行卡/手机号），展示时已遮蔽，未写入记忆",
                cause=f"message:{message.pk}",
                actor=actor,
                reason="消息含个人号码",
            )
    candidates = extract_candidates(without_personal_numbers(message.text, result.spans))
    # Facts are never written from hedged or inferred values: extraction already drops those.
    outcome.candidates = len(candidates)
    if not candidates:
        return outcome
    with account_atomic():
        for candidate in candidates:
            if _is_stale(candidate, message):
                outcome.outcomes[STALE] = outcome.outcomes.get(STALE, 0) + 1
                continue
            if candidate.field and candidate.value:
                written, item_id = _put_profile(candidate, message=message, actor=actor)
            else:
                put = _put(candidate, message=message, actor=actor)
                written, item_id = put.outcome, (put.item.pk if put.item is not None else None)
            outcome.outcomes[written] = outcome.outcomes.get(written, 0) + 1
            if item_id is not None:
                outcome.item_ids.append(item_id)
        if refresh_snapshot and outcome.written:
            snapshot_refresh(customer=message.customer, reason=CAPTURE_REASON)
    return outcome


__all__ = [
    "CAPTURE_REASON",
    "CREATED",
    "EVIDENCE_ADDED",
    "FACT",
    "STALE",
    "SUPERSEDED",
    "UNCHANGED",
    "CaptureOutcome",
    "capture_message",
]
