"""Grounding a model's profile updates in the customer's own messages, read the way capture reads them.

Which messages: this customer's effective inbound messages that the safety gate lets through, the
newest `GROUNDING_WINDOW` of them, newest first. How each is read: exactly as `capture_plan` reads
it — personal numbers cut out, `extract_candidates` with the `ExtractContext` of `extract_context`
(its local send time, the agent's message just before it, the account's places). Whether a read
field agrees with the model's value is the reader's call (`qiwei_site.reading.grounding.reads_same`).

The newest statement of a field decides: a value the customer stated once but has since restated
differently ("预算4500" … "预算改成6000") is dropped. Bounded: each message is read at most once per
call, and reading stops as soon as every proposed field is decided.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import F

from conversations.models import Customer, Message, MessageDirection
from conversations.received import received_text, wholly_masked
from memory.capture.selectors import previous_message_fields
from memory.capture.services import account_place_names, account_vocabulary, extract_context
from qiwei_site.reading.extract import extract_candidates
from qiwei_site.reading.grounding import read_field
from qiwei_site.reading.guard import value_refusal
from qiwei_site.reading.safety import scan, without_personal_numbers

# How far back a model's value may find its evidence: the customer's last 200 inbound messages.
GROUNDING_WINDOW = 200
NOT_READ = "客户原话中找不到该值"
INSTRUCTION_LIKE = "该值像指令或角色，不是客户情况"
RESTATED = "客户最近一次说的是另一个值"


@dataclass(frozen=True)
class ProfileGrounding:
    """The model's profile updates as the reader judged them: those kept, the message each rests on
    (per field), and those dropped with the reason (`{"field", "value", "reason"}`)."""

    kept: dict[str, str] = field(default_factory=dict)
    evidence: dict[str, list[int]] = field(default_factory=dict)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    messages_read: int = 0


def _newest_inbound(customer: Customer) -> Any:
    """The customer's effective inbound messages, newest first, each with (`previous_direction`,
    `previous_text`) the message before it (what extraction reads beside the words); read lazily."""
    return (
        Message.objects.filter(customer=customer, direction=MessageDirection.INBOUND, is_effective=True)
        .only("id", "customer_id", "text", "sent_at")
        .annotate(sealed_text=F("secret__sealed"), **previous_message_fields("customer_id", "sent_at", "id"))
        .order_by("-sent_at", "-id")[:GROUNDING_WINDOW]
        .iterator(chunk_size=20)
    )


def profile_updates_ground(*, customer: Customer, updates: dict[str, str]) -> ProfileGrounding:
    """Keep a proposed value only where the reader reads that field with an equal canonical value
    from one of the customer's own gate-passed messages; drop the rest with a reason."""
    dropped: list[dict[str, Any]] = []
    pending: dict[str, str] = {}
    for key, value in updates.items():
        if value_refusal(key, value):
            dropped.append({"field": key, "value": value, "reason": INSTRUCTION_LIKE})
        else:
            pending[key] = value
    kept: dict[str, str] = {}
    evidence: dict[str, list[int]] = {}
    restated: dict[str, str] = {}  # the newest statement says otherwise: kept out, reason still to find
    read = 0
    if pending:
        places, vocabulary = account_place_names(), account_vocabulary()
        for message in _newest_inbound(customer):
            received = received_text(message)
            result = scan(received)
            read += 1
            if result.blocked or wholly_masked(message.text):
                continue
            context = extract_context(
                message,
                previous=(message.previous_direction, message.previous_text),
                places=places,
                vocabulary=vocabulary,
            )
            candidates = extract_candidates(without_personal_numbers(received, result.spans), context)
            for key, value in list(restated.items()):
                if read_field(key, value, candidates, context):  # said once, since restated otherwise
                    dropped.append({"field": key, "value": value, "reason": RESTATED})
                    del restated[key]
            for key, value in list(pending.items()):
                if read_field(key, value, candidates, context):
                    kept[key], evidence[key] = value, [message.pk]
                    del pending[key]
                elif any(c.field == key and c.value and not c.extends for c in candidates):
                    # The customer's newest statement of this field says otherwise: it decides.
                    restated[key] = pending.pop(key)
            if not pending and not restated:
                break
    unread = {**pending, **restated}
    dropped.extend({"field": key, "value": value, "reason": NOT_READ} for key, value in unread.items())
    # In the model's order, for the draft and the trace.
    order = {key: index for index, key in enumerate(updates)}
    dropped.sort(key=lambda item: order[item["field"]])
    kept = {key: kept[key] for key in updates if key in kept}
    return ProfileGrounding(kept=kept, evidence=evidence, dropped=dropped, messages_read=read)
