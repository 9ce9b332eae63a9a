"""Forgetting and erasing keep their promise under any sequence of operations (issue 40): after
ingests, captures and re-captures, model turns (drafts whose model quotes what it was shown), item
forgets, message forgets and customer erasure, no forgotten word is left where a reader or a byte
scan can find it — any table of the account database (every text and JSON value, history rows,
snapshots, drafts and their prompts, audit reasons), the full-text search index, the stored recall
features, and the raw bytes of every file under the data dir (SQLite file, WAL and outbox) once the
service has run its secure delete and WAL truncation.

Each forgettable word is a made-up street (「㐀㐁路10弄」, of rare characters) that appears in one place only: one
customer message, or one supervisor's note. It is gone once that carrier is forgotten or its
customer erased. An automatic item's content ("偏好：鹬鸮路12弄附近") is gone once the item is
forgotten, while the message it was read from keeps the street (forgetting memory and keeping
messages are two policies, spec §3.1). As a control, every word still carried is found by the same
scans, so a scan that cannot see is caught too. Audit rows keep ids, never words.

Runs QIWEI_PROPERTY_EXAMPLES sequences of 25 steps (12 by default, about 7 s).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import json
import os
import re
from collections.abc import Mapping

import pytest
from django.db import connections
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from conversations.models import Customer, Message, MessageDirection
from memory.capture.backfill import Totals, customer_backfill
from memory.capture.ingest import messages_ingest
from memory.capture.services import capture_message
from memory.context.search import search_messages
from memory.governance.erasure import customer_erase
from memory.governance.messages import message_forget
from memory.governance.services import memory_item_add, memory_item_forget
from memory.models import MemoryItem, MessageRecallFeatures
from qiwei_site.platform.tenancy import current_alias
from sessions_epoch.clients import ModelClient, ModelResult, SessionRef
from sessions_epoch.pipeline import draft_generate
from tests.memory.governance.test_no_bytes_left import data_files, encodings

EXAMPLES = int(os.environ.get("QIWEI_PROPERTY_EXAMPLES", "12"))
SUPERVISOR = "主管"
# Two rare characters (CJK extension A) of its own per street: its name, its trigram and the
# bytes of its second character with 路 occur nowhere else. The last matter for the full-text
# index, whose terms are stored after the bytes they share with the term before them.
RARE_FROM = 0x3400
STREET_RE = re.compile(r"[\u3400-\u4dbf]{2}路\d+弄")
# How a customer names a street; the first four are read into memory items that quote it.
SAYINGS = (
    "想在{}附近找房，最好两居室",
    "不考虑{}那边，太吵了",
    "我喜欢{}那一带的老小区",
    "最好离{}近一点，上班方便",
    "我住在{}，想换个大一点的",
)
SMALL_TALK = ("好的，我帮您看看有哪些房源", "您稍等，我查一下", "收到，周末可以安排看房")
_streets = itertools.count()
_conversations = itertools.count(1)
_clock = itertools.count()
BASE = dt.datetime(2026, 11, 2, 10, 0, tzinfo=dt.UTC)


def new_street() -> str:
    n = next(_streets)
    return f"{chr(RARE_FROM + 2 * n)}{chr(RARE_FROM + 2 * n + 1)}路{10 + n % 90}弄"


def trigram(street: str) -> str:
    return street[:3]


def byte_needles(street: str) -> list[bytes]:
    """What a scan of raw bytes looks for: the name and its trigram in UTF-8 and as JSON escapes,
    and the tail of the trigram as an index page stores it."""
    return [*encodings(street), *encodings(trigram(street)), street[1:3].encode()]


class QuotingClient(ModelClient):
    """A model that quotes every street it was shown in its reasons, and the customer's own in its
    reply, as a model answering a customer does. (`notes_in_reply`: a supervisor's note in the reply
    too, which a forget leaves there: `test_forgetting_a_note_scrubs_a_draft_reply_that_quotes_it`.)"""

    name = "quoting"

    def __init__(self, notes_in_reply: bool = False, notes: frozenset[str] = frozenset()) -> None:
        self.notes_in_reply = notes_in_reply
        self.notes = notes

    def generate(self, *, prompt: str, session: SessionRef, hints: Mapping[str, str] | None = None) -> ModelResult:
        streets = sorted(set(STREET_RE.findall(prompt)))
        said = [street for street in streets if self.notes_in_reply or street not in self.notes]
        output = {
            "reply": "您好，" + ("、".join(said) + "附近的房源我整理一下" if said else "我整理一下房源"),
            "confidence": 0.3,
            "requiresHuman": True,
            "profileUpdates": {},
            "reasons": [f"客户提到{street}" for street in streets] or ["客户在问房源"],
        }
        return ModelResult(client=self.name, raw_text=str(output), output=output, session_id=session.session_id)


# Derived from a message and kept while it is: its reading (what capture read in it, items'
# contents included) holds an automatic item's words as long as the message does.
MESSAGE_DERIVED = frozenset({"memory_messagereading"})


def dump_tables(skip: frozenset[str] = frozenset()) -> str:
    """Every value of every table (but `skip`) of the selected account database, as one string;
    JSON values read as text too (they store non-ASCII text as \\u escapes)."""
    connection = connections[current_alias()]
    parts: list[str] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            if table in skip:
                continue
            cursor.execute(f'SELECT * FROM "{table}"')
            for row in cursor.fetchall():
                for value in row:
                    parts.append(str(value))
                    if isinstance(value, str) and value[:1] in '[{"':
                        with contextlib.suppress(ValueError):
                            parts.append(json.dumps(json.loads(value), ensure_ascii=False))
    return "\n".join(parts)


def _fts_rowids(term: str) -> set[int]:
    connection = connections[current_alias()]
    with connection.cursor() as cursor:
        cursor.execute("SELECT rowid FROM memory_message_fts WHERE memory_message_fts MATCH %s", ['"' + term + '"'])
        return {row[0] for row in cursor.fetchall()}


class ForgetAndErase(RuleBasedStateMachine):
    # SQLite: the full-text index and the raw bytes of the files are scanned too (PostgreSQL keeps
    # dead row versions until VACUUM: tests/integration/test_forget_property_pg.py scans live rows).
    scan_files = True

    def __init__(self) -> None:
        super().__init__()
        self.customers: list[Customer] = []
        self.message_streets: dict[int, str] = {}  # live inbound message id -> its street
        self.note_streets: dict[int, str] = {}  # live supervisor note id -> its street
        self.gone: set[str] = set()  # streets whose only carrier was forgotten or erased
        self.forgotten_contents: set[str] = set()  # contents of forgotten automatic items
        self.carrier_customer: dict[str, int] = {}  # street -> customer id

    @initialize()
    def two_customers(self) -> None:
        self.customers = [self._new_customer(), self._new_customer()]

    def _new_customer(self) -> Customer:
        conversation_id = f"wm_forget_prop_{next(_conversations):05d}"
        self._ingest(conversation_id, MessageDirection.INBOUND, "你好，我想租房")
        return Customer.objects.get(conversation_id=conversation_id)

    def _ingest(self, conversation_id: str, direction: str, text: str) -> Message:
        n = next(_clock)
        result = messages_ingest(
            conversation_id=conversation_id,
            messages=[
                {
                    "external_id": f"wx_forget_prop_{n:07d}",
                    "direction": direction,
                    "text": text,
                    "sender": "王先生" if direction == MessageDirection.INBOUND else "客服小李",
                    "sent_at": (BASE + dt.timedelta(minutes=n)).isoformat(),
                }
            ],
            actor="wecom-webhook",
        )
        return result.created[0]

    # --- writes ------------------------------------------------------------------------------------

    @rule(who=st.integers(0, 1), saying=st.sampled_from(SAYINGS))
    def customer_names_a_street(self, who: int, saying: str) -> None:
        street = new_street()
        customer = self.customers[who]
        message = self._ingest(customer.conversation_id, MessageDirection.INBOUND, saying.format(street))
        self.message_streets[message.pk] = street
        self.carrier_customer[street] = customer.pk

    @rule(who=st.integers(0, 1), text=st.sampled_from(SMALL_TALK))
    def agent_replies(self, who: int, text: str) -> None:
        self._ingest(self.customers[who].conversation_id, MessageDirection.OUTBOUND, text)

    @rule(who=st.integers(0, 1))
    def supervisor_notes_a_street(self, who: int) -> None:
        street = new_street()
        customer = self.customers[who]
        note = f"客户的亲戚住在{street}，周末常去"
        item = memory_item_add(customer=customer, content=note, actor=SUPERVISOR, reason=f"电话得知：{note}")
        self.note_streets[item.pk] = street
        self.carrier_customer[street] = customer.pk

    @rule(who=st.integers(0, 1))
    def model_drafts_a_reply(self, who: int) -> None:
        client = QuotingClient(notes=frozenset(self.note_streets.values()))
        draft_generate(customer=self.customers[who], actor="pipeline", client=client, regenerate=True)

    @rule(data=st.data())
    def a_message_is_captured_again(self, data: st.DataObject) -> None:
        if self.message_streets:
            message_id = data.draw(st.sampled_from(sorted(self.message_streets)))
            capture_message(message=Message.objects.get(pk=message_id))

    @rule(who=st.integers(0, 1))
    def backfill_runs(self, who: int) -> None:
        customer_backfill(customer=self.customers[who], totals=Totals())

    # --- forgetting ----------------------------------------------------------------------------------

    @rule(data=st.data())
    def supervisor_forgets_an_item(self, data: st.DataObject) -> None:
        items = list(MemoryItem.objects.filter(customer__in=self.customers).order_by("pk"))
        if not items:
            return
        item = data.draw(st.sampled_from(items))
        memory_item_forget(item=item, actor=SUPERVISOR, reason=f"客户要求删除「{item.content}」")
        if item.pk in self.note_streets:
            self.gone.add(self.note_streets.pop(item.pk))
        elif STREET_RE.search(item.content):
            self.forgotten_contents.add(item.content)

    @rule(data=st.data())
    def supervisor_forgets_a_message(self, data: st.DataObject) -> None:
        if self.message_streets:
            message_id = data.draw(st.sampled_from(sorted(self.message_streets)))
            message = Message.objects.get(pk=message_id)
            message_forget(message=message, actor=SUPERVISOR, reason=f"客户要求删除：{message.text}")
            self.gone.add(self.message_streets.pop(message_id))

    @rule(who=st.integers(0, 1))
    def customer_is_erased(self, who: int) -> None:
        customer = self.customers[who]
        customer_erase(customer=customer, actor=SUPERVISOR, reason=f"客户{customer.display_name}要求删除全部数据")
        for carriers in (self.message_streets, self.note_streets):
            for carrier, street in list(carriers.items()):
                if self.carrier_customer[street] == customer.pk:
                    self.gone.add(street)
                    del carriers[carrier]
        self.customers[who] = self._new_customer()

    # --- the promise -----------------------------------------------------------------------------------

    @precondition(lambda self: bool(self.customers))
    @invariant()
    def forgotten_words_are_nowhere(self) -> None:
        dump = dump_tables()
        blobs = [path.read_bytes() for path in data_files()] if self.scan_files else []
        features = "\n".join(MessageRecallFeatures.objects.values_list("features", flat=True))
        live = {*self.message_streets.values(), *self.note_streets.values()}
        for street in self.gone:
            # no table holds it (history, snapshots, drafts, prompts, audit included)
            assert street not in dump and trigram(street) not in dump, street
            # the reader's search and the full-text index find nothing
            assert search_messages(query=street, conversation_id=None) == [], street
            assert not self.scan_files or _fts_rowids(trigram(street)) == set(), street
            # no stored recall feature keeps its rare bigram
            assert f"b:{street[:2]}" not in features, street
            # and no byte of any file under the data dir, in either encoding
            for needle in byte_needles(street):
                assert not any(needle in blob for blob in blobs), (street, needle.decode(errors="replace"))
        memory_dump = dump_tables(skip=MESSAGE_DERIVED)
        for content in self.forgotten_contents:
            assert content not in memory_dump, content
        # the control: what is still carried is found by the same scans
        for street in live:
            assert street in dump, street
            assert not self.scan_files or any(form in blob for blob in blobs for form in encodings(street)), street
            assert f"b:{street[:2]}" in features or street in self.note_streets.values(), street
        for message_id, street in self.message_streets.items():
            assert [m.pk for m in search_messages(query=street, conversation_id=None)] == [message_id]
            assert not self.scan_files or _fts_rowids(trigram(street)) == {message_id}


@pytest.mark.long
def test_forgotten_and_erased_words_are_nowhere_after_any_sequence(account):
    run_state_machine_as_test(
        ForgetAndErase,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=25,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


def test_forgetting_a_note_scrubs_a_draft_reply_that_quotes_it(account):
    # Given a supervisor's note, and a draft whose model quoted it in the reply
    machine = ForgetAndErase()
    machine.two_customers()
    customer = machine.customers[0]
    street = new_street()
    note = f"客户的亲戚住在{street}，周末常去"
    item = memory_item_add(customer=customer, content=note, actor=SUPERVISOR, reason="电话得知")
    client = QuotingClient(notes_in_reply=True)
    draft = draft_generate(customer=customer, actor="pipeline", client=client, regenerate=True)
    assert street in draft.reply
    # When the note is forgotten
    memory_item_forget(item=item, actor=SUPERVISOR, reason="客户要求删除")
    # Then no table keeps the street (it stays in conversations_draft.reply and its history)
    assert street not in dump_tables()
