"""Forgetting one customer message (issue 25, item 4): the message goes, and so does its standing as
evidence.

`message_forget` deletes the message with everything kept beside it (its sealed original, recall
features, capture jobs, search-index entry), takes its id out of every memory item that cites it,
and forgets — through `memory_item_forget`, audited one by one, recording no decision (the customer may
say it again) — each automatic item the message alone supported: a fact nobody said any more is no
fact. Only customer messages are forgotten here (our replies live on in their drafts); a model
turn's pending write citing the message is cancelled. An item a supervisor wrote or edited
(`created_by=human`) stays with the evidence it has left: a person's decision is its own evidence.
Quotes of the message's words are scrubbed from the audit trail, reasons and kept prompts, as a
forget scrubs an item's.
"""

from __future__ import annotations

import contextlib
from typing import Any

from conversations.models import AuditAction, Message, MessageDirection, MessageSecret
from conversations.received import received_text
from memory.governance.scrub import (
    Quotes,
    reasons_scrub,
    search_index_purge,
    secure_delete_on,
    storage_purge_on_commit,
)
from memory.governance.services import memory_item_forget, reason_required
from memory.models import CaptureJob, CaptureJobStatus, MemoryCreatedBy, MemoryItem
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.errors import Conflict
from qiwei_site.platform.history import Actor, stamp_history
from qiwei_site.platform.sealing import SealBroken
from qiwei_site.platform.tenancy import account_atomic

CASCADE_REASON = "唯一的证据消息已被遗忘"
MIN_QUOTE_CHARS = 8


def _cites(item_sources: Any, message_id: int) -> bool:
    return any(str(source) == str(message_id) for source in item_sources or [])


def _draft_jobs_cancel(customer: Any, message_id: int) -> list[int]:
    """Delete the customer's unfinished capture jobs whose payload cites the message (a model turn's
    profile updates or hypotheses resting on it); returns their ids."""
    cancelled = [
        job.pk
        for job in CaptureJob.objects.filter(customer=customer).exclude(status=CaptureJobStatus.DONE)
        if _cites((job.payload or {}).get("source_message_ids"), message_id)
    ]
    CaptureJob.objects.filter(pk__in=cancelled).delete()
    return cancelled


def message_forget(*, message: Message, actor: Actor, reason: str) -> dict[str, Any]:
    """Delete one message and its standing as evidence; returns what went (ids and counts)."""
    reason = reason_required(reason)
    with account_atomic():
        secure_delete_on()
        message = Message.objects.select_for_update().select_related("customer").get(pk=message.pk)
        customer, message_id = message.customer, message.pk
        if message.direction != MessageDirection.INBOUND:
            # Our own reply lives on in its draft and delivery: forgetting it is the draft's business.
            raise Conflict(
                "只能遗忘客户发来的消息；我方回复请在草稿中处理 (only customer messages can be forgotten).",
                code="not_inbound",
            )
        words = {message.text}
        with contextlib.suppress(SealBroken):  # an original the keys cannot open is deleted all the same
            words.add(received_text(message))
        # A short message ("好的") would match everywhere: only a message long enough to be told apart
        # is scrubbed from reasons and prompts (the message itself and its evidence go whatever its length).
        quotes = Quotes({word for word in words if len(word) >= MIN_QUOTE_CHARS})
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
                memory_item_forget(item=item, actor=actor, reason=f"{CASCADE_REASON}：{reason}", decide=False)
                continue
            item.source_message_ids = left
            fields = ["source_message_ids", "updated_at"]
            if item.clause:
                # A proposal's clause quotes one of its messages, perhaps this one: it goes, from the
                # item and from every history row of it (issue 35).
                item.clause = ""
                fields.append("clause")
                MemoryItem.history.filter(id=item.pk).update(clause="")
            stamp_history(item, actor=actor, reason=reason)
            item.save(update_fields=fields)
            trimmed.append(item.pk)
        # A model turn's pending write that cites the message would write its value back: cancelled.
        jobs_cancelled = _draft_jobs_cancel(customer, message_id)
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
                "capture_jobs_cancelled": jobs_cancelled,
            },
        )
        storage_purge_on_commit(conversation_id=customer.conversation_id, redact=quotes.scrub)
    return {"message_id": message_id, "items_forgotten": forgotten, "items_evidence_removed": trimmed}


__all__ = ["CASCADE_REASON", "message_forget"]
