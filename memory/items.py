"""The one write path for a memory item's value: create, add evidence, or supersede (spec §3).

Capture, re-capture, backfill, grounding, profile edits and human additions all go through
`memory_item_put`, so three rules live in one place:

- one active item per (customer, key); a new value supersedes the old one, which is kept and linked;
- an automatic write never undoes a supervisor's decision (`memory.decisions`);
- a `profile:<field>` item and the profile field are one truth: writing the item writes the field
  (and `memory.profile.customer_profile_update`, the other way in, writes both).

Audit payloads carry ids and types, never the content, so a later `forget` leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError

from conversations.models import AuditAction, Customer, CustomerProfile
from conversations.profile_fields import PROFILE_FIELD_LABELS, PROFILE_FIELD_SPECS
from conversations.services import audit_record
from memory.capture.guard import item_refusal
from memory.decisions import automatic_write_refusal, evidence_time
from memory.models import MemoryCreatedBy, MemoryDirection, MemoryItem, MemoryStatus, MemoryType
from memory.snapshots import snapshot_refresh
from memory.text import normalize_content
from qiwei_site.platform.errors import ValidationFailed
from qiwei_site.platform.history import Actor, stamp_history
from qiwei_site.platform.tenancy import account_atomic

CREATED = "created"
EVIDENCE_ADDED = "evidence_added"
SUPERSEDED = "superseded"
UNCHANGED = "unchanged"
REFUSED = "refused"  # an automatic write that would have undone a supervisor's decision, or an instruction

PROFILE_KEY_PREFIX = "profile:"
PROFILE_FIELD_MAX_LENGTH = {spec.name: spec.max_length for spec in PROFILE_FIELD_SPECS}


@dataclass(frozen=True)
class PutResult:
    item: MemoryItem | None  # None only when REFUSED with no active item under the key
    outcome: str  # created | evidence_added | superseded | unchanged | refused
    superseded_ids: tuple[int, ...] = ()
    refusal: str = ""

    @property
    def changed(self) -> bool:
        return self.outcome not in (UNCHANGED, REFUSED)


# --- profile items: `profile:<field>` renders as 「标签：值」 -----------------------------------


def profile_item_key(field: str) -> str:
    return f"{PROFILE_KEY_PREFIX}{field}"


def profile_field_of(key: str) -> str | None:
    """The declared profile field a key stands for (None for any other key)."""
    field = key.removeprefix(PROFILE_KEY_PREFIX)
    return field if key.startswith(PROFILE_KEY_PREFIX) and field in PROFILE_FIELD_LABELS else None


def profile_item_content(field: str, value: str) -> str:
    return f"{PROFILE_FIELD_LABELS[field]}：{value}"


def profile_item_value(field: str, content: str) -> str:
    """The bare value of a profile item's content (a supervisor may type it with or without the label)."""
    content = normalize_content(content)
    for separator in ("：", ":"):
        prefix = f"{PROFILE_FIELD_LABELS[field]}{separator}"
        if content.startswith(prefix):
            return content[len(prefix) :].strip()
    return content


def profile_follow(item: MemoryItem, *, actor: Actor, reason: str) -> None:
    """Write the profile field of a `profile:<field>` item so the two never disagree."""
    field = profile_field_of(item.key)
    if field is None:
        return
    value = profile_item_value(field, item.content)
    profile = CustomerProfile.objects.select_for_update().filter(customer=item.customer).first()
    if profile is None:
        profile = CustomerProfile(customer=item.customer)
    if getattr(profile, field) == value and profile.pk is not None:
        return
    setattr(profile, field, value)
    stamp_history(profile, actor=actor, reason=reason)
    if profile.pk is None:
        profile.save()
    else:
        profile.save(update_fields=[field, "updated_at"])


def profile_field_release(item: MemoryItem, *, actor: Actor, reason: str) -> bool:
    """A `profile:<field>` item left memory (rejected, expired, forgotten): clear the field if it
    still holds that item's value (decision: cleared, not the previous value, which a supervisor or
    the customer already replaced once). Returns whether the field changed."""
    field = profile_field_of(item.key)
    if field is None:
        return False
    profile = CustomerProfile.objects.select_for_update().filter(customer=item.customer).first()
    if profile is None or getattr(profile, field) != profile_item_value(field, item.content):
        return False
    setattr(profile, field, "")
    stamp_history(profile, actor=actor, reason=reason)
    profile.save(update_fields=[field, "updated_at"])
    return True


def item_values_validate(*, type: str, key: str, content: str, confidence: float, importance: int) -> None:
    """Refuse a memory value no write path may store (shared by capture and governance)."""
    field = profile_field_of(key)
    if field is not None:
        value = profile_item_value(field, content)
        if len(value) > PROFILE_FIELD_MAX_LENGTH[field]:
            raise ValidationFailed(
                f"画像字段 {field} 最长 {PROFILE_FIELD_MAX_LENGTH[field]} 个字符 "
                f"({field} is at most {PROFILE_FIELD_MAX_LENGTH[field]} chars).",
                code="profile_value_too_long",
            )
    if type not in MemoryType.values:
        raise ValidationFailed(f"未知的记忆类型 {type!r} (unknown memory type).", code="invalid_type")
    if not key or len(key) > 200:
        raise ValidationFailed("记忆键必须是 1–200 个字符 (key must be 1–200 chars).", code="invalid_key")
    if not content:
        raise ValidationFailed("记忆内容不能为空 (content must not be empty).", code="empty_content")
    if not 0.0 <= float(confidence) <= 1.0:
        raise ValidationFailed("置信度必须在 0 到 1 之间 (confidence must be within 0–1).", code="invalid_confidence")
    if not 1 <= int(importance) <= 5:
        raise ValidationFailed("重要性必须在 1 到 5 之间 (importance must be within 1–5).", code="invalid_importance")


def item_row_save(item: MemoryItem, *, actor: Actor, reason: str, update_fields: list[str] | None = None) -> None:
    """Validate and save one item row with its history user and reason (callers audit)."""
    try:
        # Constraints are the database's job (and item_values_validate's): checking them here
        # costs two queries per save.
        item.full_clean(exclude=["customer", "superseded_by"], validate_constraints=False)
    except ValidationError as exc:
        raise ValidationFailed("; ".join(exc.messages), code="invalid_memory_item") from None
    stamp_history(item, actor=actor, reason=reason)
    if update_fields is not None:
        item.save(update_fields=[*update_fields, "updated_at"])
    else:
        item.save()


def memory_item_put(
    *,
    customer: Customer,
    type: str,
    key: str,
    content: str,
    actor: Actor,
    reason: str,
    source_message_ids: Sequence[int] = (),
    confidence: float = 0.8,
    importance: int = 3,
    direction: str = MemoryDirection.INBOUND,
    created_by: str = MemoryCreatedBy.AUTO,
    expires_at: datetime | None = None,
    supersedes_keys: Sequence[str] = (),
    audit_action: AuditAction = AuditAction.MEMORY_ITEM_CAPTURED,
    refresh_snapshot: bool = True,
    automatic: bool | None = None,
    sync_profile: bool = True,
) -> PutResult:
    """Put a value under `key` for the customer.

    - same content as the active item: its evidence list grows (or nothing changes);
    - different content: the old item becomes `superseded`, linked to the new one;
    - `supersedes_keys`: active items under these keys (e.g. the constraint a new
      preference contradicts) are superseded by the new item too;
    - `automatic` (default: `created_by == auto`): refused, writing nothing, when it would undo
      a supervisor's decision (`memory.decisions.automatic_write_refusal`) or when the value is an
      instruction rather than a fact about the customer's world (`memory.capture.guard.item_refusal`);
    - a `profile:<field>` key writes the profile field too (`sync_profile=False` only for
      `customer_profile_update`, which writes the profile itself).
    """
    content = normalize_content(content)
    field = profile_field_of(key)
    if field is not None:
        content = profile_item_content(field, profile_item_value(field, content))
    item_values_validate(type=type, key=key, content=content, confidence=confidence, importance=importance)
    sources = [int(i) for i in source_message_ids]
    if automatic is None:
        automatic = created_by == MemoryCreatedBy.AUTO
    with account_atomic():
        active = (
            MemoryItem.objects.select_for_update()
            .filter(customer=customer, key=key, status=MemoryStatus.ACTIVE)
            .first()
        )
        if automatic:
            refusal = item_refusal(
                key=key, content=content, value=profile_item_value(field, content) if field is not None else None
            )
            if refusal:
                return PutResult(item=active, outcome=REFUSED, refusal=refusal)
            refusal = automatic_write_refusal(
                customer=customer,
                key=key,
                content=content,
                evidence_at=evidence_time(customer, sources),
                supersedes_keys=supersedes_keys,
            )
            if refusal:
                return PutResult(item=active, outcome=REFUSED, refusal=refusal)
        same_value = active is not None and active.content == content
        # An automatic write of a human item's value only adds evidence, whatever type it reads as.
        if (
            active is not None
            and same_value
            and (active.type == type or (automatic and active.created_by == MemoryCreatedBy.HUMAN))
        ):
            new_sources = [i for i in sources if i not in active.source_message_ids]
            fields: list[str] = []
            if new_sources:
                active.source_message_ids = [*active.source_message_ids, *new_sources]
                fields.append("source_message_ids")
            if not automatic and active.created_by != MemoryCreatedBy.HUMAN:
                # A supervisor vouching for the current value makes it theirs (and outrank older words).
                active.created_by, active.direction = MemoryCreatedBy.HUMAN, direction
                fields += ["created_by", "direction"]
            if confidence > active.confidence and not (automatic and active.created_by == MemoryCreatedBy.HUMAN):
                active.confidence = confidence
                fields.append("confidence")
            if expires_at != active.expires_at and created_by == MemoryCreatedBy.HUMAN:
                active.expires_at = expires_at
                fields.append("expires_at")
            contradicted = _supersede_keys(customer, supersedes_keys, active, actor=actor, reason=reason)
            if not fields and not contradicted:
                return PutResult(item=active, outcome=UNCHANGED)
            if fields:
                item_row_save(active, actor=actor, reason=reason, update_fields=fields)
            result = PutResult(item=active, outcome=EVIDENCE_ADDED, superseded_ids=tuple(contradicted))
            return _finish(
                result, new_sources, action=audit_action, actor=actor, reason=reason, refresh_snapshot=refresh_snapshot
            )

        superseded: list[int] = []
        if active is not None:
            active.status = MemoryStatus.SUPERSEDED
            item_row_save(active, actor=actor, reason=reason, update_fields=["status"])
            superseded.append(active.pk)
        item = MemoryItem(
            customer=customer,
            type=type,
            key=key,
            content=content,
            source_message_ids=sources,
            confidence=confidence,
            importance=importance,
            direction=direction,
            created_by=created_by,
            expires_at=expires_at,
        )
        item_row_save(item, actor=actor, reason=reason)
        if active is not None:
            active.superseded_by = item
            item_row_save(active, actor=actor, reason=reason, update_fields=["superseded_by"])
        superseded += _supersede_keys(customer, supersedes_keys, item, actor=actor, reason=reason)
        if sync_profile:
            profile_follow(item, actor=actor, reason=reason)
        result = PutResult(item=item, outcome=SUPERSEDED if superseded else CREATED, superseded_ids=tuple(superseded))
        return _finish(
            result, sources, action=audit_action, actor=actor, reason=reason, refresh_snapshot=refresh_snapshot
        )


def _finish(
    result: PutResult, sources: list[int], *, action: AuditAction, actor: Actor, reason: str, refresh_snapshot: bool
) -> PutResult:
    """Audit a change (ids and types only, never content) and refresh the snapshot if asked."""
    assert result.item is not None  # only writes are finished
    customer = result.item.customer
    audit_record(
        action=action,
        conversation_id=customer.conversation_id,
        actor=actor,
        reason=reason,
        payload={
            "item_id": result.item.pk,
            "type": result.item.type,
            "outcome": result.outcome,
            "source_message_ids": sources,
            "superseded_ids": list(result.superseded_ids),
        },
    )
    if refresh_snapshot:
        snapshot_refresh(customer=customer, reason=reason)
    return result


def _supersede_keys(
    customer: Customer, keys: Sequence[str], replacement: MemoryItem, *, actor: Actor, reason: str
) -> list[int]:
    done: list[int] = []
    if not keys:
        return done
    for old in (
        MemoryItem.objects.select_for_update()
        .filter(customer=customer, key__in=list(keys), status=MemoryStatus.ACTIVE)
        .exclude(pk=replacement.pk)
    ):
        old.status = MemoryStatus.SUPERSEDED
        old.superseded_by = replacement
        item_row_save(old, actor=actor, reason=reason, update_fields=["status", "superseded_by"])
        done.append(old.pk)
    return done


def memory_item_supersede(*, item: MemoryItem, actor: Actor, reason: str, audit_action: AuditAction) -> MemoryItem:
    """Retire an active item without a replacement (expiry, a cleared profile field)."""
    if item.status != MemoryStatus.ACTIVE:
        return item
    with account_atomic():
        item.status = MemoryStatus.SUPERSEDED
        item_row_save(item, actor=actor, reason=reason, update_fields=["status"])
        audit_record(
            action=audit_action,
            conversation_id=item.customer.conversation_id,
            actor=actor,
            reason=reason,
            payload={"item_id": item.pk, "type": item.type},
        )
        snapshot_refresh(customer=item.customer, reason=reason)
    return item
