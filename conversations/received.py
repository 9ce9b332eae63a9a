"""What a customer sent, and what of it is stored.

Ingest stores a message's text masked (`stored_form`: the reader's `masked_with_categories`) and,
when something was masked, the words as received sealed in `MessageSecret`. Nothing else keeps
them: search, recall features, the prompt, the admin and every API read the masked row.

`received_text` opens the seal for the only readers that must judge what the customer actually
sent — the safety gate and extraction (capture, re-capture and backfill, the grounding of a model's
proposals, a hypothesis's evidence), which then never store or show it — and for the audited staff
reveal (`conversations.services.message_reveal`). A loader may put the sealed value on the message
beforehand (`message.sealed_text`, None when there is none) to spare the lookup."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from conversations.models import MessageSecret
from qiwei_site.platform.keyfiles import KeyUnavailable
from qiwei_site.platform.sealing import SealBroken, seal, unseal
from qiwei_site.reading.masking import HIDDEN, masked_after

logger = logging.getLogger(__name__)
_UNREAD = object()


def stored_form(
    text: str, previous: str | None = None, *, original_required: bool = True
) -> tuple[str, str | None, tuple[str, ...]]:
    """(the text to store, the original sealed or None when nothing needed masking, the categories
    masked). `previous`: the customer's message before, which may announce a secret this one is.

    When the sealing key cannot be used (issue 36), a customer's message is refused with
    `KeyUnavailable`, a retriable 503, before anything is stored: its sender keeps it and sends it
    again, and no original is lost. `original_required=False` (our own reply, already delivered)
    stores it masked without the original instead, and logs so."""
    masked, categories = masked_after(text, previous)
    if not categories or masked == text:
        return text, None, ()
    try:
        return masked, seal(text), categories
    except KeyUnavailable:
        if original_required:
            raise
        logger.error("sealing: key unavailable; an outbound message is stored masked without its original")
        return masked, None, categories


def wholly_masked(stored_text: str) -> bool:
    """Whether the whole stored message is one mask: a secret the customer announced in the message
    before ("密码发你" … "Lm20461qa"), which the gate, reading one message, cannot see as one."""
    return (stored_text or "").strip() == HIDDEN


def sealed_originals(message_ids: Iterable[int]) -> dict[int, str | None]:
    """The words as received of those of these messages that were sealed, opened (None: the seal
    could not be opened with the configured keys — logged; a caller must then refuse the message)."""
    ids = list(message_ids)
    if not ids:
        return {}
    rows = MessageSecret.objects.filter(message_id__in=ids).values_list("message_id", "sealed")
    originals: dict[int, str | None] = {}
    for message_id, sealed in rows:
        try:
            originals[message_id] = unseal(sealed)
        except SealBroken:
            logger.error("sealing: the original of message %s cannot be opened with the configured keys", message_id)
            originals[message_id] = None
    return originals


def received_text(message: Any) -> str:
    """The message's words as the customer sent them (its stored text when nothing was sealed)."""
    sealed = getattr(message, "sealed_text", _UNREAD)
    if sealed is _UNREAD:
        row = MessageSecret.objects.filter(message_id=message.pk).values_list("sealed", flat=True).first()
        sealed = row
    return message.text if sealed is None else unseal(str(sealed))  # SealBroken: the caller fails


def received_text_of_row(row: dict[str, Any], originals: dict[int, str | None]) -> str | None:
    """For a `values()` row of a message: its words as received, given `sealed_originals` of its
    batch (None: sealed, but the seal cannot be opened)."""
    return originals[row["id"]] if row["id"] in originals else row["text"]


__all__ = ["received_text", "received_text_of_row", "sealed_originals", "stored_form", "wholly_masked"]
