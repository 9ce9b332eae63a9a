"""Profile edits and their stable memory items `profile:<field>`, kept in step in one transaction (spec §3).

Human edits and grounded model updates (called by capture with the customer's message ids)
share this service, so the profile and long-term memory never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conversations.models import AuditAction, Customer, CustomerProfile, Message
from conversations.profile_fields import PROFILE_FIELDS
from conversations.services import audit_record
from memory.decisions import decision_record
from memory.items import (
    REFUSED,
    memory_item_put,
    memory_item_supersede,
    profile_item_content,
    profile_item_key,
)
from memory.models import DecisionKind, MemoryCreatedBy, MemoryDirection, MemoryItem, MemoryStatus, MemoryType
from memory.snapshots import snapshot_refresh
from memory.text import normalize_content
from qiwei_site.platform.errors import ValidationFailed
from qiwei_site.platform.history import Actor, stamp_history
from qiwei_site.platform.tenancy import account_atomic

PROFILE_LABELS: dict[str, str] = dict(PROFILE_FIELDS)
PROFILE_ITEM_IMPORTANCE = 4

__all__ = ["customer_profile_update", "profile_item_content", "profile_item_key"]


def _clean_changes(changes: Mapping[str, Any]) -> dict[str, str]:
    if not isinstance(changes, Mapping) or not changes:
        raise ValidationFailed("没有要修改的画像字段 (no profile fields given).", code="empty_changes")
    unknown = sorted(set(changes) - set(PROFILE_LABELS))
    if unknown:
        raise ValidationFailed(
            f"未知的画像字段 {unknown}，可用字段：{sorted(PROFILE_LABELS)} (unknown profile fields).",
            code="unknown_profile_field",
        )
    cleaned: dict[str, str] = {}
    for field, value in changes.items():
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise ValidationFailed(f"画像字段 {field} 必须是文本 (profile values must be strings).")
        value = normalize_content(value)
        max_length = getattr(CustomerProfile._meta.get_field(field), "max_length", None) or 0
        if len(value) > max_length:
            raise ValidationFailed(
                f"画像字段 {field} 最长 {max_length} 个字符 ({field} is at most {max_length} chars).",
                code="profile_value_too_long",
            )
        cleaned[field] = value
    return cleaned


def customer_profile_update(
    *,
    customer: Customer,
    changes: Mapping[str, Any],
    actor: Actor,
    reason: str,
    source_message_ids: Sequence[int] | None = None,
    refresh_snapshot: bool = True,
) -> CustomerProfile:
    """Update declared profile fields and their `profile:<field>` memory items; an empty value clears.

    With `source_message_ids` (a grounded update from the model) the items are
    `created_by=auto, direction=inbound` and cite those messages; otherwise they are human edits.
    """
    cleaned = _clean_changes(changes)
    grounded = source_message_ids is not None
    with account_atomic():
        sources: list[int] = []
        if grounded:
            sources = [int(i) for i in source_message_ids or ()]
            found = set(Message.objects.filter(customer=customer, pk__in=sources).values_list("pk", flat=True))
            if not sources or set(sources) - found:
                raise ValidationFailed(
                    "画像更新的来源消息必须是该客户的消息 (grounded updates must cite this customer's messages).",
                    code="invalid_source_message",
                )
        profile = CustomerProfile.objects.select_for_update().filter(customer=customer).first()
        if profile is None:
            profile = CustomerProfile(customer=customer)
        changed = [field for field, value in cleaned.items() if getattr(profile, field) != value]
        # A grounded repeat of the current value still adds evidence (idempotent backfill).
        touched = [field for field in cleaned if field in changed or (grounded and cleaned[field])]
        if not touched:
            return profile
        # Memory first: an automatic (grounded) value that would undo a supervisor's decision is
        # refused there, and then the profile field must not change either.
        memory_changed = False
        for field in touched:
            value = cleaned[field]
            if value:
                result = memory_item_put(
                    customer=customer,
                    type=MemoryType.FACT,
                    key=profile_item_key(field),
                    content=profile_item_content(field, value),
                    actor=actor,
                    reason=reason,
                    source_message_ids=sources,
                    confidence=0.9 if grounded else 1.0,
                    importance=PROFILE_ITEM_IMPORTANCE,
                    direction=MemoryDirection.INBOUND if grounded else MemoryDirection.INTERNAL,
                    created_by=MemoryCreatedBy.AUTO if grounded else MemoryCreatedBy.HUMAN,
                    audit_action=AuditAction.MEMORY_ITEM_CAPTURED if grounded else AuditAction.MEMORY_ITEM_ADDED,
                    refresh_snapshot=False,
                    sync_profile=False,
                )
                if result.outcome == REFUSED:
                    changed = [name for name in changed if name != field]
                elif not grounded and result.item is not None and field in changed:
                    decision_record(item=result.item, kind=DecisionKind.EDITED)
                memory_changed = memory_changed or result.changed
            elif grounded:
                changed = [name for name in changed if name != field]  # the model never clears a field
            else:
                old = MemoryItem.objects.filter(
                    customer=customer, key=profile_item_key(field), status=MemoryStatus.ACTIVE
                ).first()
                if old is not None:
                    memory_item_supersede(
                        item=old, actor=actor, reason=reason, audit_action=AuditAction.MEMORY_ITEM_SUPERSEDED
                    )
                    memory_changed = True
                if field in changed:
                    # A supervisor emptied the field: older words must not fill it again.
                    decision_record(
                        customer=customer,
                        key=profile_item_key(field),
                        kind=DecisionKind.CLEARED,
                        contents=[old.content] if old is not None else (),
                    )
        if changed:
            for field in changed:
                setattr(profile, field, cleaned[field])
            stamp_history(profile, actor=actor, reason=reason)
            if profile.pk is None:
                profile.save()
            else:
                profile.save(update_fields=[*changed, "updated_at"])
        if changed:
            # Field names only: values live in the profile and its history, which `forget` can scrub.
            audit_record(
                action=AuditAction.CUSTOMER_PROFILE_UPDATED,
                conversation_id=customer.conversation_id,
                actor=actor,
                reason=reason,
                payload={"fields": changed, "grounded": grounded, "source_message_ids": sources},
            )
        if memory_changed and refresh_snapshot:
            snapshot_refresh(customer=customer, reason=reason)
    return profile
