"""The memory write state's evidence times (issue 38): each loaded item's sources' newest received
and sent times come with the state, so the staleness check and "a newer customer statement stands"
read no messages; they answer as reading the messages would, and an item whose sources are not a
list of integers (a string id, a value that is no list) is read when asked, never a crash."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connections

from memory.decisions import evidence_time
from memory.items import MemoryWrites
from memory.models import MemoryItem
from qiwei_site.platform.tenancy import account_atomic, current_alias
from tests.factories import CustomerFactory, MemoryItemFactory, MessageFactory

AT = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def world(account):
    customer = CustomerFactory(conversation_id="wm_zhou_evidence", display_name="周女士")
    other = CustomerFactory(conversation_id="wm_wu_evidence", display_name="吴先生")
    said = [
        MessageFactory(customer=customer, text=text, sent_at=AT + dt.timedelta(hours=n))
        for n, text in enumerate(["预算五千", "最好近地铁", "不要一楼"])
    ]
    theirs = MessageFactory(customer=other, text="我要三居", sent_at=AT + dt.timedelta(days=3))
    sources = {
        "one": [said[0].pk],
        "two": [said[0].pk, said[2].pk],
        "foreign": [said[1].pk, theirs.pk],  # another customer's message never counts
        "missing": [said[1].pk, 987654],
        "none": [],
        "string": [str(said[2].pk)],  # an id stored as text
        "scalar": said[1].pk,  # a value that is no list
    }
    for key, ids in sources.items():
        MemoryItemFactory(customer=customer, key=f"preference:{key}", content=f"偏好{key}", source_message_ids=ids)
    return customer, said


def _both(customer, said):
    """(with the times read with the state, with the messages read when asked) for every item."""
    with account_atomic():
        writes = MemoryWrites.load(customer)
        read = MemoryWrites.load(customer)
        read._evidence.clear()
        items = MemoryItem.objects.filter(customer=customer).order_by("pk")
        answers = []
        for item in items:
            ids = item.source_message_ids if isinstance(item.source_message_ids, list) else []
            ids = [int(i) for i in ids]
            moment = said[1].sent_at
            answers.append(
                (
                    item.key,
                    (writes.received(ids), writes.sent_after(ids, moment)),
                    (read.received(ids), read.sent_after(ids, moment)),
                    evidence_time(customer, ids),
                )
            )
    return writes, answers


def test_memory_writes_evidence_times_answer_as_the_messages_do(world):
    # Given a customer's items citing one, two, another customer's, missing, no, string and scalar ids
    customer, said = world
    # When the write state is loaded (on SQLite: with the items' evidence times)
    writes, answers = _both(customer, said)
    # Then every item's answers equal reading the messages, and the decisions' own evidence time
    for key, with_state, when_asked, decided in answers:
        assert with_state == when_asked, key
        assert with_state[0] == decided, key
    # And on SQLite the integer-list items need no read (their times came with the state); the item
    # citing an id stored as text is read when asked
    if connections[current_alias()].vendor == "sqlite":
        items = {item.key: item for item in writes.active_items.values()}
        for key in ("one", "two", "foreign", "missing", "none"):
            assert writes.evidence_known(_ids(items[f"preference:{key}"])), key
        assert not writes.evidence_known(_ids(items["preference:string"]))


def _ids(item: MemoryItem) -> list[int]:
    ids = item.source_message_ids
    return [int(i) for i in ids] if isinstance(ids, list) else []
