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

from conversations.models import AuditAction, Delivery, Draft, Message, MessageDirection, MessageSecret
from conversations.received import received_text
from memory.governance.forgetting import forgetting
from memory.governance.scrub import (
    FORGOTTEN_MARK,
    WHOLE_MIN_CHARS,
    Quotes,
    column_rewrite,
    prompt_redact,
)
from memory.governance.services import memory_item_forget, reason_required
from memory.models import CaptureJob, CaptureJobStatus, MemoryCreatedBy, MemoryItem
from qiwei_site.platform.errors import Conflict
from qiwei_site.platform.history import Actor, stamp_history
from qiwei_site.platform.sealing import SealBroken

CASCADE_REASON = "唯一的证据消息已被遗忘"
MIN_QUOTE_CHARS = 8


def _cites(item_sources: Any, message_id: int) -> bool:
    return any(str(source) == str(message_id) for source in item_sources or [])


def _payload_cites(payload: Any, message_id: int) -> bool:
    """Whether a capture job's payload rests on the message anywhere: the turn's evidence, a
    profile proposal's or a hypothesis's message ids."""
    if not isinstance(payload, dict):
        return False
    if _cites(payload.get("source_message_ids"), message_id):
        return True
    proposals = payload.get("profile_proposals")
    entries = list(proposals.values()) if isinstance(proposals, dict) else []
    hypotheses = payload.get("hypotheses")
    entries += hypotheses if isinstance(hypotheses, list) else []
    return any(isinstance(entry, dict) and _cites(entry.get("message_ids"), message_id) for entry in entries)


def _draft_jobs_cancel(customer: Any, message_id: int) -> list[int]:
    """Delete the customer's unfinished capture jobs whose payload cites the message (a model turn's
    profile updates, proposals or hypotheses resting on it), and strip the values and the customer's
    words from the payload of the finished ones (kept as a record, by ids); returns the ids deleted."""
    cancelled: list[int] = []
    for job in CaptureJob.objects.filter(customer=customer):
        if not _payload_cites(job.payload, message_id):
            continue
        if job.status != CaptureJobStatus.DONE:
            cancelled.append(job.pk)
            continue
        kept = {key: value for key, value in job.payload.items() if key not in _WORDS_KEYS}
        CaptureJob.objects.filter(pk=job.pk).update(payload=kept)
    CaptureJob.objects.filter(pk__in=cancelled).delete()
    return cancelled


# What a capture job's payload may say in the customer's words (values, clauses, hypothesis texts).
_WORDS_KEYS = ("profile_updates", "profile_proposals", "hypotheses")


def _trace_cites(trace: Any, message_id: int) -> tuple[bool, set[str]]:
    """(whether a draft's context showed the message, the profile fields whose evidence it was)."""
    if not isinstance(trace, dict):
        return False, set()
    shown = trace.get("latest_message_id") == message_id or any(
        _cites(trace.get(key), message_id) for key in ("recent_message_ids", "recalled_message_ids")
    )
    grounding = trace.get("grounding")
    fields: set[str] = set()
    for part in ("evidence", "proposed"):
        cited = grounding.get(part) if isinstance(grounding, dict) else None
        if isinstance(cited, dict):
            fields |= {str(field) for field, ids in cited.items() if _cites(ids, message_id)}
    return shown, fields


def drafts_scrub_for_message(*, customer: Any, message_id: int, words: set[str]) -> list[int]:
    """Scrub what the customer's drafts made from one forgotten message keep of it, as
    `messages_seal` masks them: a draft answering it loses its reply and final text (and their
    history rows and the delivery's text: made to answer those words, they may say them back) and
    its profile updates; a draft whose context showed it has its words removed from the prompt (its
    customer sections, offsets kept true), from its reply and final text; a profile update resting on
    it as evidence goes. Returns the ids of the drafts changed."""
    shown_words = Quotes(words)
    exact = [word for word in sorted(words, key=len, reverse=True) if len(word.strip()) >= WHOLE_MIN_CHARS]

    def scrub_prompt(text: str) -> str:
        # The prompt quoted this message: its words go whatever their length, then the long quotes.
        for word in exact:
            text = text.replace(word, FORGOTTEN_MARK)
        return shown_words.scrub(text)

    changed: list[int] = []
    rows = Draft.objects.filter(customer=customer).values_list(
        "pk", "reply_to_id", "context_trace", "prompt", "profile_updates", "dropped_updates"
    )
    for pk, reply_to_id, trace, prompt, updates, dropped in rows:
        answering = reply_to_id == message_id
        shown, evidence_fields = _trace_cites(trace, message_id)
        if not (answering or shown or evidence_fields):
            continue
        changes: dict[str, Any] = {}
        if prompt:
            scrubbed, new_trace = prompt_redact(prompt, trace if isinstance(trace, dict) else {}, scrub_prompt)
            if scrubbed != prompt:
                changes.update(prompt=scrubbed, context_trace=new_trace)
        fields = set(updates) if answering and isinstance(updates, dict) else evidence_fields
        if isinstance(updates, dict) and fields & set(updates):
            changes["profile_updates"] = {k: v for k, v in updates.items() if k not in fields}
        if answering and dropped:
            changes["dropped_updates"] = []
        history = Draft.history.filter(id=pk)
        if answering:
            for name in ("reply", "final_text"):
                column_rewrite(Draft.objects.filter(pk=pk), name, lambda value: FORGOTTEN_MARK)
                column_rewrite(history, name, lambda value: FORGOTTEN_MARK)
            column_rewrite(history, "profile_updates", lambda value: {})
            column_rewrite(history, "dropped_updates", lambda value: [])
            column_rewrite(Delivery.objects.filter(draft_id=pk), "text", lambda value: FORGOTTEN_MARK)
        else:
            for name in ("reply", "final_text"):
                column_rewrite(Draft.objects.filter(pk=pk), name, shown_words.scrub)
                column_rewrite(history, name, shown_words.scrub)
            column_rewrite(Delivery.objects.filter(draft_id=pk), "text", shown_words.scrub)
        if changes:
            Draft.objects.filter(pk=pk).update(**changes)
        changed.append(pk)
    return changed


def message_forget(*, message: Message, actor: Actor, reason: str) -> dict[str, Any]:
    """Delete one message and its standing as evidence; returns what went (ids and counts)."""
    reason = reason_required(reason)
    with forgetting(
        customer=message.customer, actor=actor, reason=reason, action=AuditAction.MESSAGE_FORGOTTEN, lock_customer=True
    ) as unit:
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
        unit.quote(word for word in words if len(word) >= MIN_QUOTE_CHARS)
        reason = unit.reason
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
        # What drafts made from it keep of it (issue 36): their prompts, replies, profile updates.
        drafts_scrubbed = drafts_scrub_for_message(customer=customer, message_id=message_id, words=words)
        sealed = MessageSecret.objects.filter(message_id=message_id).exists()
        Message.objects.filter(pk=message_id).delete()
        unit.messages_deleted([message_id])
        unit.payload = {
            "message_id": message_id,
            "items_forgotten": forgotten,
            "items_evidence_removed": trimmed,
            "sealed_original_deleted": sealed,
            "capture_jobs_cancelled": jobs_cancelled,
            "drafts_scrubbed": drafts_scrubbed,
        }
    return {
        "message_id": message_id,
        "items_forgotten": forgotten,
        "items_evidence_removed": trimmed,
        "drafts_scrubbed": drafts_scrubbed,
    }


__all__ = ["CASCADE_REASON", "message_forget"]
