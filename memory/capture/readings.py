"""The customer's messages as the evidence check reads them, newest first, and the reading job's
work: read what has no kept reading yet (or one an older reader made), outside any request.
Grounding (`memory.capture.grounding`) judges through the same walk; a capture job
(`memory.capture.jobs`) runs `readings_refresh`. Its own module so neither imports the other back."""

from __future__ import annotations

from typing import Any

from django.db.models import F

from conversations.models import Customer, Message, MessageDirection
from memory.capture.evidence import message_evidence
from memory.capture.selectors import previous_message_fields
from memory.capture.services import account_place_names, account_vocabulary, extract_context

# How far back a model's value may find its evidence: the customer's last 200 inbound messages.
GROUNDING_WINDOW = 200


def newest_inbound(customer: Customer) -> Any:
    """The customer's effective inbound messages, newest first, each with its kept reading and
    (`previous_direction`, `previous_text`) the message before it (what extraction reads beside the
    words); read lazily."""
    return (
        Message.objects.filter(customer=customer, direction=MessageDirection.INBOUND, is_effective=True)
        .select_related("reading")
        .annotate(sealed_text=F("secret__sealed"), **previous_message_fields("customer_id", "sent_at", "id"))
        .order_by("-sent_at", "-id")[:GROUNDING_WINDOW]
        .iterator(chunk_size=20)
    )


def reading_context(message: Any, places: Any, vocabulary: Any) -> Any:
    return extract_context(
        message, previous=(message.previous_direction, message.previous_text), places=places, vocabulary=vocabulary
    )


def readings_refresh(*, customer: Customer) -> int:
    """Read every message of the customer's window whose kept reading does not hold, keeping the
    readings (what a request would otherwise have to read); returns how many were read. A reading
    job's work (`memory.capture.jobs.readings_job_enqueue`), outside any request."""
    places, vocabulary = account_place_names(), account_vocabulary()
    read = 0
    for message in newest_inbound(customer):
        judged = message_evidence(
            message, customer=customer, context=reading_context(message, places, vocabulary), bounded=False
        )
        read += int(judged.fresh is not None)
    return read
