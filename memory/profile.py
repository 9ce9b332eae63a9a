"""Profile edits and their stable memory items `profile:<field>`, kept in step in one transaction (spec §3).

Human edits and grounded model updates (called by capture with the customer's message ids)
share this service, so the profile and long-term memory never disagree. Its memory writes are
`memory.items.MemoryWrites` puts, the same path as every other value, and capture stages them in
its own batch for the message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from conversations.models import AuditAction, Customer, CustomerProfile
from memory.decisions import decision_record, same_meaning
from memory.items import (
    REFUSED,
    ItemPut,
    MemoryWrites,
    memory_item_supersede,
)
from memory.models import DecisionKind, MemoryCreatedBy, MemoryDirection, MemoryType
from qiwei_site.platform.errors import ValidationFailed
from qiwei_site.platform.history import Actor
from qiwei_site.platform.tenancy import account_atomic
from qiwei_site.reading.fields import PROFILE_FIELDS, profile_item_content, profile_item_key
from qiwei_site.reading.normalise import normalize_content

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
    expires_at: datetime | None = None,
    writes: MemoryWrites | None = None,
) -> CustomerProfile:
    """Update declared profile fields and their `profile:<field>` memory items; an empty value clears.

    With `source_message_ids` (a grounded update from the model) the items are
    `created_by=auto, direction=inbound` and cite those messages; otherwise they are human edits.
    `expires_at` dates the items written (a move-in date that has passed goes stale).
    On `writes` (a caller's batch, e.g. capture's) the changes are staged there and written by the
    caller's `flush`; otherwise this opens its own transaction and batch.
    """
    cleaned = _clean_changes(changes)
    grounded = source_message_ids is not None
    with account_atomic(savepoint=writes is None):
        own = writes is None
        batch = MemoryWrites.load(customer) if writes is None else writes
        sources: list[int] = []
        if grounded:
            sources = [int(i) for i in source_message_ids or ()]
            if not sources or set(sources) - batch.messages_of_customer(sources):
                raise ValidationFailed(
                    "画像更新的来源消息必须是该客户的消息 (grounded updates must cite this customer's messages).",
                    code="invalid_source_message",
                )
        profile = batch.profile()
        changed = [field for field, value in cleaned.items() if getattr(profile, field) != value]
        # A grounded repeat of the current value still adds evidence (idempotent backfill).
        touched = [field for field in cleaned if field in changed or (grounded and cleaned[field])]
        if not touched:
            return profile
        # Memory first: an automatic (grounded) value that would undo a supervisor's decision is
        # refused there, and then the profile field must not change either.
        for field in touched:
            value = cleaned[field]
            if value:
                before = batch.active(profile_item_key(field))
                result = batch.put(
                    ItemPut(
                        type=MemoryType.FACT,
                        key=profile_item_key(field),
                        content=profile_item_content(field, value),
                        source_message_ids=sources,
                        confidence=0.9 if grounded else 1.0,
                        importance=PROFILE_ITEM_IMPORTANCE,
                        direction=MemoryDirection.INBOUND if grounded else MemoryDirection.INTERNAL,
                        created_by=MemoryCreatedBy.AUTO if grounded else MemoryCreatedBy.HUMAN,
                        audit_action=AuditAction.MEMORY_ITEM_CAPTURED if grounded else AuditAction.MEMORY_ITEM_ADDED,
                        sync_profile=False,
                        expires_at=expires_at,
                    ),
                    actor=actor,
                    reason=reason,
                )
                if result.outcome == REFUSED:
                    changed = [name for name in changed if name != field]
                elif not grounded and result.item is not None and field in changed:
                    batch.decisions.add(decision_record(item=result.item, kind=DecisionKind.EDITED))
                    if before is not None and not same_meaning(before.content, result.item.content):
                        # The value the supervisor replaced: customer words repeating it do not undo the edit.
                        batch.decisions.add(
                            decision_record(
                                customer=customer,
                                key=profile_item_key(field),
                                kind=DecisionKind.REPLACED,
                                contents=[before.content],
                            )
                        )
            elif grounded:
                changed = [name for name in changed if name != field]  # the model never clears a field
            else:
                old = batch.active(profile_item_key(field))
                if old is not None:
                    memory_item_supersede(
                        item=old,
                        actor=actor,
                        reason=reason,
                        audit_action=AuditAction.MEMORY_ITEM_SUPERSEDED,
                        writes=batch,
                    )
                if field in changed:
                    # A supervisor emptied the field: older words must not fill it again.
                    batch.decisions.add(
                        decision_record(
                            customer=customer,
                            key=profile_item_key(field),
                            kind=DecisionKind.CLEARED,
                            contents=[old.content] if old is not None else (),
                        )
                    )
        if changed:
            batch.profile_set({field: cleaned[field] for field in changed}, actor=actor, reason=reason)
            # Field names only: values live in the profile and its history, which `forget` can scrub.
            batch.audit(
                AuditAction.CUSTOMER_PROFILE_UPDATED,
                actor=actor,
                reason=reason,
                payload={"fields": changed, "grounded": grounded, "source_message_ids": sources},
            )
        if own:
            batch.flush(refresh_snapshot=refresh_snapshot, reason=reason)
    return profile
