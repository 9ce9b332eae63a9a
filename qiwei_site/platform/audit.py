"""The audit trail's writers: one row per write, saying which action, who and why (never
forgotten content or secrets). `audit_record` writes in the selected account's database,
`registry_audit_record` in `default` (the registry's journal)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qiwei_site.platform.history import Actor, actor_identity
from qiwei_site.platform.models import AuditAction, AuditEvent, RegistryAuditEvent


def audit_fields(
    action: AuditAction | str, actor: Actor, reason: str, payload: dict[str, Any] | None
) -> dict[str, Any]:
    """The columns every audit row shares. The action list is fixed: an unknown action is a
    programming error (ValueError), never silently stored."""
    actor_id, actor_name = actor_identity(actor)
    return {
        "action": AuditAction(action),
        "actor_id": actor_id,
        "actor_name": actor_name[:150],
        "reason": (reason or "")[:300],
        "payload": payload or {},
    }


def audit_record(
    *,
    action: AuditAction | str,
    conversation_id: str = "",
    actor: Actor = None,
    reason: str = "",
    payload: dict[str, Any] | None = None,
) -> AuditEvent:
    """Write one audit row in the selected account's database."""
    return AuditEvent.objects.create(conversation_id=conversation_id, **audit_fields(action, actor, reason, payload))


@dataclass(frozen=True)
class AuditEntry:
    """One audit row to write with `audit_records_bulk` (the arguments of `audit_record`)."""

    action: AuditAction | str
    conversation_id: str = ""
    actor: Actor = None
    reason: str = ""
    payload: dict[str, Any] | None = None


def audit_records_bulk(entries: Sequence[AuditEntry]) -> list[AuditEvent]:
    """Write several audit rows in the selected account's database in one statement (a batched
    memory write audits each of its changes, in order)."""
    if not entries:
        return []
    return AuditEvent.objects.bulk_create(
        AuditEvent(
            conversation_id=entry.conversation_id,
            **audit_fields(entry.action, entry.actor, entry.reason, entry.payload),
        )
        for entry in entries
    )


def registry_audit_record(
    *,
    action: AuditAction | str,
    account_id: str,
    actor: Actor = None,
    reason: str = "",
    payload: dict[str, Any] | None = None,
) -> RegistryAuditEvent:
    """Write one row of the registry's audit journal (in `default`)."""
    return RegistryAuditEvent.objects.create(account_id=account_id, **audit_fields(action, actor, reason, payload))
