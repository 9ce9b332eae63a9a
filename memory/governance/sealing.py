"""Sealing what is already stored (`manage.py messages_seal`): messages stored before ingest masked
them, or before the reader learned a shape, are re-read with the current reader; what it now finds
is masked in the row and the words as received are sealed (`conversations.received`). Drafts kept
from those messages are re-read too: the prompt the model was shown (every draft, section offsets
kept true) and, once a draft is done (sent or rejected), its reply, final text, their history rows
and the delivery's text; a pending or approved draft is still to be sent as written. Key rotation
re-seals every sealed original with the newest key.

A bare value right after the customer's announcement of it ("密码发你" … "Lm20461qa") is masked whole,
as ingest does now. Idempotent (a masked text masks to itself; a message sealed before keeps its
first, true original) and resumable: each batch commits on its own, so a run that stops is simply
run again. Audited per customer with the message ids and categories, never the text. On SQLite the
old bytes go too (`secure_delete`, the search index merged, the WAL truncated); on PostgreSQL the
old row versions stay until VACUUM (README, production deployment).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from conversations.models import (
    AuditAction,
    Customer,
    Delivery,
    Draft,
    DraftStatus,
    Message,
    MessageDirection,
    MessageSecret,
)
from memory.capture.ingest import ANNOUNCEMENT_WINDOW
from memory.context.recall import decoded_cache_forget, recall_features_store
from memory.governance.scrub import column_rewrite, prompt_redact, search_index_purge, secure_delete_on, wal_truncate
from memory.models import MemoryItem, MessageReading
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.history import Actor
from qiwei_site.platform.sealing import SealBroken, reseal, seal, unseal
from qiwei_site.platform.tenancy import account_atomic, current_alias
from qiwei_site.reading.masking import mask_sensitive, masked_after, masked_with_categories
from qiwei_site.reading.safety import CREDENTIAL, VERIFICATION_CODE, bare_secret

SEAL_REASON = "按当前读取规则遮蔽存量消息中的凭证与个人号码，原文密封保存"


@dataclass(frozen=True)
class SealCheck:
    """`messages_seal --check` in one account: how many originals are sealed, and whether the
    newest of them opens with the configured keys (None: there is none to open)."""

    sealed: int
    opens: bool | None


def sealed_original_check() -> SealCheck:
    """Open the newest sealed original of the selected account (issue 36: a key that opens nothing
    shows here, before anyone needs an original)."""
    sealed = MessageSecret.objects.count()
    token = MessageSecret.objects.order_by("-message_id").values_list("sealed", flat=True).first()
    if token is None:
        return SealCheck(sealed=sealed, opens=None)
    try:
        unseal(token)
    except SealBroken:
        return SealCheck(sealed=sealed, opens=False)
    return SealCheck(sealed=sealed, opens=True)


@dataclass
class SealReport:
    messages_read: int = 0
    messages_masked: int = 0
    originals_sealed: int = 0
    originals_resealed: int = 0
    drafts_masked: int = 0
    clauses_masked: int = 0  # memory items' kept clauses (rows and history rows)
    customers: set[int] = field(default_factory=set)


def messages_seal(*, actor: Actor, batch_size: int = 500, rotate: bool = False) -> SealReport:
    """Mask and seal, in the selected account, every stored message the reader now finds a
    credential or a personal number in; with `rotate`, re-seal every original with the newest key."""
    report = SealReport()
    last = 0
    while True:
        rows = list(
            Message.objects.filter(pk__gt=last)
            .order_by("pk")
            .values_list("pk", "customer_id", "text", "direction", "sent_at")[:batch_size]
        )
        if not rows:
            break
        last = rows[-1][0]
        report.messages_read += len(rows)
        found = []
        for pk, customer_id, text, direction, sent_at in rows:
            masked, categories = masked_with_categories(text)
            if not categories and direction == MessageDirection.INBOUND:
                masked, categories = masked_after(text, _announcement(pk, customer_id, text, sent_at))
            if categories and masked != text:
                found.append((pk, customer_id, text, masked, categories))
        if found:
            _seal_batch(found, actor, report)
    _drafts_mask(batch_size, actor, report)
    if rotate:
        _reseal_all(batch_size, report)
    if report.messages_masked or report.originals_resealed or report.drafts_masked:
        search_index_purge()
        wal_truncate(current_alias())
    return report


def _announcement(pk: int, customer_id: int, text: str, sent_at: datetime) -> str | None:
    """The customer's message just before this one, when it may have announced it as a secret
    ("密码发你" … "Lm20461qa"): theirs, within the window, with nothing of ours between — as ingest
    reads it. Looked up only for a message that could be a bare secret."""
    if not (bare_secret(text, CREDENTIAL) or bare_secret(text, VERIFICATION_CODE)):
        return None
    before = (
        Message.objects.filter(customer_id=customer_id, sent_at__lte=sent_at)
        .exclude(pk=pk)
        .order_by("-sent_at", "-pk")
        .values_list("direction", "text", "sent_at")
        .first()
    )
    if before is None or before[0] != MessageDirection.INBOUND or sent_at - before[2] > ANNOUNCEMENT_WINDOW:
        return None
    return str(before[1])


def _seal_batch(found: list[tuple[int, int, str, str, tuple[str, ...]]], actor: Actor, report: SealReport) -> None:
    with account_atomic():
        secure_delete_on()
        ids = [pk for pk, *_ in found]
        kept = dict(MessageSecret.objects.filter(message_id__in=ids).values_list("message_id", "categories"))
        masked_messages: list[Message] = []
        per_customer: dict[int, list[tuple[int, tuple[str, ...]]]] = defaultdict(list)
        for pk, customer_id, text, masked, categories in found:
            # Conditional on the text read: a message changed meanwhile is left for the next run.
            if not Message.objects.filter(pk=pk, text=text).update(text=masked):
                continue
            if pk in kept:  # masked before, now more: its sealed original stays the one received
                merged = sorted({*kept[pk], *categories})
                MessageSecret.objects.filter(message_id=pk).update(categories=merged)
            else:
                MessageSecret.objects.create(message_id=pk, sealed=seal(text), categories=list(categories))
                report.originals_sealed += 1
            masked_messages.append(Message(pk=pk, text=masked))
            per_customer[customer_id].append((pk, categories))
        recall_features_store(messages=masked_messages)
        decoded_cache_forget(message_ids=[message.pk for message in masked_messages])
        # A reading kept before the gate knew this shape may hold the secret in a value or clause:
        # it goes, and the message is read again when next needed (issue 36, item 9).
        MessageReading.objects.filter(message_id__in=[message.pk for message in masked_messages]).delete()
        # So may the customer's clause a held-back item or proposal keeps (and its history's copies).
        for rows in (MemoryItem.objects, MemoryItem.history):
            report.clauses_masked += column_rewrite(
                rows.filter(customer_id__in=list(per_customer)).exclude(clause=""), "clause", mask_sensitive
            )
        conversations = dict(Customer.objects.filter(pk__in=per_customer).values_list("pk", "conversation_id"))
        for customer_id, sealed in per_customer.items():
            audit_record(
                action=AuditAction.MESSAGES_SEALED,
                conversation_id=conversations.get(customer_id, ""),
                actor=actor,
                reason=SEAL_REASON,
                payload={
                    "message_ids": [pk for pk, _ in sealed],
                    "categories": sorted({category for _, categories in sealed for category in categories}),
                },
            )
        report.messages_masked += len(masked_messages)
        report.customers.update(per_customer)


_DONE = (DraftStatus.SENT, DraftStatus.REJECTED)


def _drafts_mask(batch_size: int, actor: Actor, report: SealReport) -> None:
    last = 0
    while True:
        rows = list(
            Draft.objects.filter(pk__gt=last)
            .order_by("pk")
            .values_list("pk", "customer_id", "status", "prompt", "context_trace", "reply", "final_text")[:batch_size]
        )
        if not rows:
            return
        last = rows[-1][0]
        per_customer: dict[int, list[int]] = defaultdict(list)
        with account_atomic():
            secure_delete_on()
            for pk, customer_id, status, prompt, trace, reply, final_text in rows:
                if _draft_mask(pk, status, prompt, trace, reply, final_text):
                    per_customer[customer_id].append(pk)
            conversations = dict(Customer.objects.filter(pk__in=per_customer).values_list("pk", "conversation_id"))
            for customer_id, draft_ids in per_customer.items():
                audit_record(
                    action=AuditAction.MESSAGES_SEALED,
                    conversation_id=conversations.get(customer_id, ""),
                    actor=actor,
                    reason=SEAL_REASON,
                    payload={"draft_ids": draft_ids},
                )
        report.drafts_masked += sum(len(ids) for ids in per_customer.values())
        report.customers.update(per_customer)


def _draft_mask(pk: int, status: str, prompt: str, trace: object, reply: str, final_text: str) -> bool:
    """Mask one draft's kept texts; True when anything changed. Queryset updates: no history row
    records the old value (the history's own copies are masked too)."""
    changes: dict[str, object] = {}
    if prompt:
        masked_prompt, masked_trace = prompt_redact(prompt, trace if isinstance(trace, dict) else {}, mask_sensitive)
        if masked_prompt != prompt:
            changes.update(prompt=masked_prompt, context_trace=masked_trace)
    changed = 0
    if status in _DONE:
        changes.update(
            {
                name: masked
                for name, value in (("reply", reply), ("final_text", final_text))
                if (masked := mask_sensitive(value)) != value
            }
        )
        for name in ("reply", "final_text"):
            changed += column_rewrite(Draft.history.filter(id=pk), name, mask_sensitive)
        changed += column_rewrite(Delivery.objects.filter(draft_id=pk), "text", mask_sensitive)
    if changes:
        Draft.objects.filter(pk=pk).update(**changes)
    return bool(changes) or changed > 0


def _reseal_all(batch_size: int, report: SealReport) -> None:
    last = 0
    while True:
        rows = list(MessageSecret.objects.filter(pk__gt=last).order_by("pk").values_list("pk", "sealed")[:batch_size])
        if not rows:
            return
        last = rows[-1][0]
        with account_atomic():
            secure_delete_on()
            for pk, sealed in rows:
                MessageSecret.objects.filter(pk=pk, sealed=sealed).update(sealed=reseal(sealed))
        report.originals_resealed += len(rows)
