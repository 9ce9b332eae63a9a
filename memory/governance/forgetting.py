"""The forget sequence as one unit of work (issue 39, item 7; STYLE 14): forgetting an item,
forgetting a message and erasing a customer each run inside `forgetting(...)`, which owns the
order no path may skip or change — in one transaction on the account's database:

1. deleted pages zeroed from here on (`secure_delete_on`; SQLite) and, for a message, the
   customer's row locked first, as every memory writer locks it;
2. the caller gathers the words to forget (`unit.quote`) and deletes what it deletes, using
   `unit.reason` (the reason with those words already taken out) for whatever it records;
3. the messages it deleted leave the recall cache and the search index;
4. every kept text that quotes the words is scrubbed: the reasons and explanations kept about the
   customer (`reasons_scrub`), or, when the customer is gone, the conversation's audit rows;
5. one audit row says what happened, in the scrubbed reason, never the words;
6. after commit, the storage purge: the loopback outbox's lines dropped or redacted and the WAL
   truncated (a blocked checkpoint recorded and retried).

A unit inside another (an item forgotten because its last message was) runs its own steps in the
outer transaction."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from conversations.models import Customer
from memory.context.recall import decoded_cache_forget
from memory.governance.scrub import (
    Quotes,
    audit_scrub,
    reasons_scrub,
    search_index_purge,
    secure_delete_on,
    storage_purge_on_commit,
)
from memory.selectors import customer_lock
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.history import Actor
from qiwei_site.platform.models import AuditAction
from qiwei_site.platform.tenancy import account_atomic


@dataclass
class Forgetting:
    conversation_id: str
    customer: Customer
    given_reason: str
    erase: bool = False
    quotes: Quotes = field(default_factory=lambda: Quotes(()))
    message_ids: list[int] = field(default_factory=list)
    payload: dict[str, Any] = field(default_factory=dict)

    def quote(self, words: Iterable[str]) -> None:
        """Words no kept text may quote any more (the item's contents, the message's words…)."""
        for word in words:
            self.quotes.add(word)

    @property
    def reason(self) -> str:
        """The reason as it may be kept: without the words being forgotten."""
        return self.quotes.scrub(self.given_reason)

    def messages_deleted(self, message_ids: Iterable[int]) -> None:
        self.message_ids.extend(message_ids)


@contextmanager
def forgetting(
    *,
    customer: Customer,
    actor: Actor,
    reason: str,
    action: AuditAction,
    erase: bool = False,
    lock_customer: bool = False,
) -> Iterator[Forgetting]:
    """Run one forget or erasure in the module's order; the caller fills in the unit (words,
    deleted message ids, the audit payload) inside the block."""
    with account_atomic():
        secure_delete_on()
        if lock_customer:
            customer_lock(customer_id=customer.pk)
        unit = Forgetting(conversation_id=customer.conversation_id, customer=customer, given_reason=reason, erase=erase)
        yield unit
        if unit.message_ids:
            decoded_cache_forget(message_ids=unit.message_ids)
            search_index_purge()
        if erase:
            audit_scrub(unit.conversation_id, unit.quotes)
        else:
            reasons_scrub(unit.customer, unit.quotes)
        audit_record(
            action=action,
            conversation_id=unit.conversation_id,
            actor=actor,
            reason=unit.reason,
            payload=unit.payload,
        )
        storage_purge_on_commit(
            conversation_id=unit.conversation_id,
            drop=erase,
            redact=None if erase else unit.quotes.scrub,
            cause="erase" if erase else "forget",
        )


__all__ = ["Forgetting", "forgetting"]
