"""The per-customer context version (conversations/context_version.py): the database bumps it on
every write of what a context reads, whichever way the write is made, and on nothing else."""

from __future__ import annotations

import datetime as dt

from conversations.models import CustomerContextVersion, Message, MessageDirection, Task
from memory.models import MemoryItem, MemoryType
from tests.factories import CustomerFactory, MemoryItemFactory, MessageFactory


def _version(customer) -> int:
    row = CustomerContextVersion.objects.filter(customer_id=customer.pk).first()
    return row.version if row is not None else 0


def test_context_version_bumps_on_every_kind_of_write(account):
    # Given a customer and another one
    customer, other = CustomerFactory(), CustomerFactory()
    seen, other_before = [_version(customer)], _version(other)
    # When rows the context reads are inserted, updated in place and deleted
    message = MessageFactory(customer=customer, direction=MessageDirection.INBOUND, text="想租两居室")
    seen.append(_version(customer))
    Message.objects.filter(pk=message.pk).update(text="（内容已按客户要求删除）")
    seen.append(_version(customer))
    item = MemoryItemFactory(customer=customer, type=MemoryType.FACT, key="fact:pet", content="有一只猫")
    seen.append(_version(customer))
    MemoryItem.objects.filter(pk=item.pk).delete()
    seen.append(_version(customer))
    Task.objects.create(customer=customer, title="周六带看", due_at=dt.datetime(2026, 3, 7, tzinfo=dt.UTC))
    seen.append(_version(customer))
    # Then each write moved the customer's version on, and the other customer's not at all
    assert seen == sorted(set(seen)) and len(seen) == 6
    assert _version(other) == other_before


def test_context_version_ignores_a_message_column_the_context_does_not_read(account):
    # Given a message
    customer = CustomerFactory()
    message = MessageFactory(customer=customer, direction=MessageDirection.INBOUND, text="预算六千")
    before = _version(customer)
    # When only its storage time changes
    Message.objects.filter(pk=message.pk).update(created_at=message.created_at + dt.timedelta(seconds=1))
    # Then the version stays
    assert _version(customer) == before
