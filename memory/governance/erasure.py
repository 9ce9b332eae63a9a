"""Erasing a customer on request (spec §3.1): every row about them, history included, in one transaction,
and no byte of what they said or what we kept about them left under the data dir.

Only one `customer_erased` audit row (conversation id, who, why, counts) is added; audit rows hold
ids and types, and the customer's earlier audit trail is kept with every quote of their data
replaced (rule: `memory.governance.scrub.Quotes`).
"""

from __future__ import annotations

from conversations.models import AuditAction, Customer, Message
from memory.governance.forgetting import forgetting
from memory.governance.scrub import (
    customer_texts,
    historical_models_with_customer,
)
from qiwei_site.platform.history import Actor


def customer_erase(*, customer: Customer, actor: Actor, reason: str) -> dict[str, int]:
    """Delete the customer and everything about them; returns the number of rows per model.

    On SQLite the deleted bytes are zeroed (`secure_delete`), the message search index is merged
    without them, and after commit the loopback outbox loses the conversation's lines and the WAL
    is truncated.
    """
    customer_pk = customer.pk
    with forgetting(
        customer=customer, actor=actor, reason=reason, action=AuditAction.CUSTOMER_ERASED, erase=True
    ) as unit:
        # Every word kept about the customer, read before it goes: the audit rows that stay must not quote it.
        unit.quote(customer_texts(customer))
        message_ids = list(Message.objects.filter(customer_id=customer_pk).values_list("pk", flat=True))
        _total, per_model = Customer.objects.filter(pk=customer_pk).delete()
        counts = {label: n for label, n in per_model.items() if n}
        history_rows = 0
        # Deleting wrote "-" history rows too; remove every past version of the customer's data.
        for model in historical_models_with_customer():
            deleted, _ = model._default_manager.filter(customer_id=customer_pk).delete()
            history_rows += deleted
        deleted, _ = Customer.history.filter(id=customer_pk).delete()
        history_rows += deleted
        counts["history_rows"] = history_rows
        unit.messages_deleted(message_ids)
        unit.payload = {"counts": counts}
    return counts
