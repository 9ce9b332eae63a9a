"""Forgetting one customer message (issue 25, item 4): the message goes, and so does its standing as
evidence.

`message_forget` deletes the message with everything kept beside it (its sealed original, recall
features, capture jobs, search-index entry), takes its id out of every memory item that cites it,
and forgets — through `memory_item_forget`, audited one by one — each automatic item the message
alone supported: a fact nobody said any more is no fact. An item a supervisor wrote or edited
(`created_by=human`) stays with the evidence it has left: a person's decision is its own evidence.
Quotes of the message's words are scrubbed from the audit trail, reasons and kept prompts, as a
forget scrubs an item's.
"""

from __future__ import annotations

import contextlib
from typing import Any

from conversations.models import AuditAction, Message, MessageSecret
from conversations.received import received_text
from memory.governance.scrub import (
    Quotes,
    reasons_scrub,
    search_index_purge,
    secure_delete_on,
    storage_purge_on_commit,
)
from memory.governance.services import memory_item_forget, reason_required
from memory.models import MemoryCreatedBy, MemoryItem
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.history import Actor, stamp_history
from qiwei_site.platform.sealing import SealBroken
from qiwei_site.platform.tenancy import account_atomic

CASCADE_REASON = "唯一的证据消息已被遗忘"


def _cites(item_sources: Any, message_id: int) -> bool:
    return any(str(source) == str(message_id) for source in item_sources or [])


def message_forget(*, message: Message, actor: Actor, reason: str) -> dict[str, Any]:
    """Delete one message and its standing as evidence; returns what went (ids and counts)."""
    reason = reason_required(reason)
    with account_atomic():
        secure_delete_on()
        message = Message.objects.select_for_update().select_related("customer").get(pk=message.pk)
        customer, message_id = message.customer, message.pk
        words = {message.text}
        with contextlib.suppress(SealBroken):  # an original the keys cannot open is deleted all the same
            words.add(received_text(message))
        quotes = Quotes(words)
        reason = quotes.scrub(reason)
        citing = [
            item
            for item in MemoryItem.objects.select_for_update().filter(customer=customer).order_by("pk")
            if _cites(item.source_message_ids, message_id)
        ]
        forgotten: list[int] = []
        trimmed: list[int] = []
        for item in citing:
            left = [source for source in item.source_message_ids if str(source) != str(message_id)]
            if not left and item.created_by != MemoryCreatedBy.HUMAN:
                forgotten.append(item.pk)
                memory_item_forget(item=item, actor=actor, reason=f"{CASCADE_REASON}：{reason}")
                continue
            item.source_message_ids = left
            stamp_history(item, actor=actor, reason=reason)
            item.save(update_fields=["source_message_ids", "updated_at"])
            trimmed.append(item.pk)
        sealed = MessageSecret.objects.filter(message_id=message_id).exists()
        Message.objects.filter(pk=message_id).delete()
        search_index_purge()
        reasons_scrub(customer, quotes)
        audit_record(
            action=AuditAction.MESSAGE_FORGOTTEN,
            conversation_id=customer.conversation_id,
            actor=actor,
            reason=reason,
            payload={
                "message_id": message_id,
                "items_forgotten": forgotten,
                "items_evidence_removed": trimmed,
                "sealed_original_deleted": sealed,
            },
        )
        storage_purge_on_commit(conversation_id=customer.conversation_id, redact=quotes.scrub)
    return {"message_id": message_id, "items_forgotten": forgotten, "items_evidence_removed": trimmed}


__all__ = ["CASCADE_REASON", "message_forget"]
