"""Reads for capture: a job with its message and the message before it (what extraction reads
beside the words)."""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, Q, QuerySet, Subquery

from conversations.models import Message, MessageDirection


def messages_before(customer: Any, sent_at: Any, pk: Any) -> QuerySet[Message]:
    """The customer's effective, non-system messages before a message, newest first (`customer`,
    `sent_at` and `pk` are values or `OuterRef`s, so a job reads the one before with its message)."""
    return (
        Message.objects.filter(customer=customer, is_effective=True)
        .filter(Q(sent_at__lt=sent_at) | Q(sent_at=sent_at, pk__lt=pk))
        .exclude(direction=MessageDirection.SYSTEM)
        .order_by("-sent_at", "-pk")
    )


def previous_message_fields(customer_ref: str, sent_at_ref: str, pk_ref: str) -> dict[str, Any]:
    """Annotations giving the direction and text of the message before another (see `messages_before`),
    for a query that reads that message's row (`*_ref`: the outer query's field names)."""
    before = messages_before(OuterRef(customer_ref), OuterRef(sent_at_ref), OuterRef(pk_ref))
    return {
        "previous_direction": Subquery(before.values("direction")[:1]),
        "previous_text": Subquery(before.values("text")[:1]),
    }


def message_previous(message: Message) -> tuple[str | None, str | None]:
    """(direction, text) of the message before this one; (None, None) when there is none."""
    row = messages_before(message.customer_id, message.sent_at, message.pk).values_list("direction", "text").first()
    return (row[0], row[1]) if row is not None else (None, None)
