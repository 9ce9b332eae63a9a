"""Erasing a customer on request (spec §3.1): every row about them, history included, in one transaction,
and no byte of what they said or what we kept about them left under the data dir.

Only one `customer_erased` audit row (conversation id, who, why, counts) is added; audit rows hold
ids and types, and the customer's earlier audit trail is kept with every quote of their data
replaced (rule: `memory.governance.scrub.Quotes`).
"""

from __future__ import annotations

from conversations.models import AuditAction, Customer, Message
from memory.context.recall import decoded_cache_forget
from memory.governance.scrub import (
    Quotes,
    audit_scrub,
    customer_texts,
    historical_models_with_customer,
    search_index_purge,
    secure_delete_on,
    storage_purge_on_commit,
)
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.history import Actor
from qiwei_site.platform.tenancy import account_atomic


def customer_erase(*, customer: Customer, actor: Actor, reason: str) -> dict[str, int]:
    """Delete the customer and everything about them; returns the number of rows per model.

    On SQLite the deleted bytes are zeroed (`secure_delete`), the message search index is merged
    without them, and after commit the loopback outbox loses the conversation's lines and the WAL
    is truncated.
    """
    conversation_id, customer_pk = customer.conversation_id, customer.pk
    with account_atomic():
        secure_delete_on()
        # Every word kept about the customer, read before it goes: the audit rows that stay must not quote it.
        quotes = Quotes(customer_texts(customer))
        audit_scrub(conversation_id, quotes)
        message_ids = list(Message.objects.filter(customer_id=customer_pk).values_list("pk", flat=True))
        _total, per_model = Customer.objects.filter(pk=customer_pk).delete()
        decoded_cache_forget(message_ids=message_ids)
        counts = {label: n for label, n in per_model.items() if n}
        history_rows = 0
        # Deleting wrote "-" history rows too; remove every past version of the customer's data.
        for model in historical_models_with_customer():
            deleted, _ = model._default_manager.filter(customer_id=customer_pk).delete()
            history_rows += deleted
        deleted, _ = Customer.history.filter(id=customer_pk).delete()
        history_rows += deleted
        counts["history_rows"] = history_rows
        if counts.get("conversations.Message"):
            search_index_purge()
        audit_record(
            action=AuditAction.CUSTOMER_ERASED,
            conversation_id=conversation_id,
            actor=actor,
            reason=quotes.scrub(reason),
            payload={"counts": counts},
        )
        storage_purge_on_commit(conversation_id=conversation_id, drop=True, cause="erase")
    return counts
