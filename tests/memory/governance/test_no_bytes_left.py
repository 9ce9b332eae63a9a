"""Forget and erase leave no bytes (issue 14, item 7): a raw scan of every file under the data dir —
account databases with their -wal/-shm, the loopback outbox — finds neither the content nor any part
a reason quoted, while another connection keeps reading the account database."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections
from django.db.backends.signals import connection_created

from conversations.gateway import LoopbackGateway
from conversations.models import AuditEvent, Message
from memory.governance.erasure import customer_erase
from memory.governance.scrub import FORGOTTEN_MARK, Quotes
from memory.governance.services import memory_item_add, memory_item_edit, memory_item_forget, memory_item_reject
from memory.models import MemorySnapshot
from memory.profile import customer_profile_update
from memory.snapshots import snapshot_current
from qiwei_site.platform.tenancy import current_alias
from tests.factories import CustomerFactory, DraftFactory, MessageFactory
from tests.memory.governance.test_audit_trail import dump_account_database

# --- helpers --------------------------------------------------------------------------------------


def data_files() -> list[Path]:
    """Every file under the data dir: account databases with -wal/-shm, the loopback outbox, caches.
    (The test run's `default` database lives outside it; it holds no customer data by design.)"""
    files = [p for p in Path(settings.QIWEI_DATA_DIR).rglob("*") if p.is_file()]
    assert any(p.name.endswith(".sqlite3-wal") for p in files) or any(p.suffix == ".sqlite3" for p in files)
    return files


def encodings(text: str) -> list[bytes]:
    """The UTF-8 bytes, and the \\u escapes a JSON column stores non-ASCII text as."""
    return [text.encode("utf-8"), json.dumps(text)[1:-1].encode("ascii")]


def files_containing(needles: Iterable[str]) -> dict[str, list[str]]:
    blobs = {str(path.relative_to(path.anchor)): path.read_bytes() for path in data_files()}
    found: dict[str, list[str]] = {}
    for needle in needles:
        where = [name for name, blob in blobs.items() if any(form in blob for form in encodings(needle))]
        if where:
            found[needle] = where
    return found


def windows(text: str, size: int) -> set[str]:
    return {text[i : i + size] for i in range(len(text) - size + 1)}


@pytest.fixture
def secure_delete_off_by_default(account) -> Iterator[None]:
    """As on SQLite builds without SQLITE_SECURE_DELETE (Debian's has it on): every new connection
    starts with it off, and only the project's own setting turns it on."""
    from memory.apps import _account_sqlite_secure_delete

    def off(sender, connection, **kwargs) -> None:
        if connection.vendor == "sqlite":
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA secure_delete=OFF")

    connection_created.disconnect(dispatch_uid="memory.sqlite_secure_delete")
    connection_created.connect(off, dispatch_uid="test.secure_delete_off")
    connection_created.connect(_account_sqlite_secure_delete, dispatch_uid="memory.sqlite_secure_delete")
    connections[current_alias()].close()
    with connections[current_alias()].cursor() as cursor:
        cursor.execute("PRAGMA secure_delete")
        assert cursor.fetchone()[0] == 1
    yield
    connection_created.disconnect(dispatch_uid="test.secure_delete_off")


@pytest.fixture
def second_reader(account) -> Iterator[dict]:
    """Another connection to the account database (as a worker process would hold), reading in a
    loop from its own thread during the whole test."""
    connection = connections[current_alias()]
    connection.ensure_connection()
    path = connection.settings_dict["NAME"]
    reader = sqlite3.connect(path, check_same_thread=False, timeout=30)
    state: dict = {"reads": 0, "errors": [], "connection": reader}
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                reader.execute("SELECT group_concat(content) FROM memory_memoryitem").fetchall()
                reader.execute("SELECT count(*) FROM conversations_message").fetchall()
                state["reads"] += 1
            except sqlite3.Error as exc:  # pragma: no cover - reported by the assertion below
                state["errors"].append(exc)
            time.sleep(0.002)

    thread = threading.Thread(target=read, daemon=True)
    state["start"] = thread.start
    yield state
    stop.set()
    if thread.is_alive():
        thread.join(timeout=5)
    reader.close()


def wal_size() -> int:
    wal = Path(f"{connections[current_alias()].settings_dict['NAME']}-wal")
    return wal.stat().st_size if wal.exists() else 0


# --- the quote rule -------------------------------------------------------------------------------


def test_quotes_scrub_replaces_runs_of_four_chinese_characters_and_keeps_shorter_ones():
    # Given a forgotten note
    quotes = Quotes(["离婚后独自带孩子住，周末才方便看房"])
    # When reasons quoting it are scrubbed
    # Then a run of 4+ shared characters goes, a run of 3 and unrelated words stay
    assert quotes.scrub("主管回访：独自带孩子，需要学区") == f"主管回访：{FORGOTTEN_MARK}，需要学区"
    assert quotes.scrub("离婚后要注意措辞") == "离婚后要注意措辞"
    assert quotes.scrub("客户要求删除该备注") == "客户要求删除该备注"


def test_quotes_scrub_needs_eight_latin_characters_and_replaces_short_contents_whole():
    # Given an English note, a short bare value and a 3-character name
    quotes = Quotes(["prefers the metro line", "徐汇", "老王头"])
    # Then English words in common with unrelated reasons stay, an 8-character run goes
    assert quotes.scrub("audit 3 memory_item_forgotten, the end") == "audit 3 memory_item_forgotten, the end"
    assert quotes.scrub("he said: the metro line") == f"he said:{FORGOTTEN_MARK}"
    # And short contents go wherever they appear whole
    assert quotes.scrub("想去徐汇看房，找老王头") == f"想去{FORGOTTEN_MARK}看房，找{FORGOTTEN_MARK}"


# --- forget ----------------------------------------------------------------------------------------

NOTE = "离婚后独自带孩子住，周末才方便看房"
NOTE_EDITED = "离婚后独自带孩子住，只有周日下午方便看房"
QUOTED = ["独自带孩子住", "只有周日下午"]


def test_memory_item_forget_leaves_no_byte_of_the_note_or_its_quotes_under_the_data_dir(
    customer, messages, staff_user, secure_delete_off_by_default, second_reader, caplog
):
    # Given a supervisor's note (in no message), edited, quoted in reasons, in snapshots, in a
    # draft's reasons and in a reply sent through the loopback gateway
    caplog.set_level(logging.DEBUG)
    item = memory_item_add(customer=customer, content=NOTE, actor=staff_user, reason=f"主管电话回访：{NOTE}")
    memory_item_edit(item=item, content=NOTE_EDITED, actor=staff_user, reason="改为只有周日下午")
    memory_item_add(customer=customer, content="预算4500", actor=staff_user, reason="和独自带孩子住那条一起记")
    DraftFactory(
        customer=customer, reply="王先生您好，两居室我约了两套", reasons=["客户独自带孩子住，优先推荐周日可看的房源"]
    )
    gateway = LoopbackGateway()
    gateway.send(
        conversation_id=customer.conversation_id, text="王先生您好，只有周日下午的话我约两套", idempotency_key="d-1"
    )
    gateway.send(conversation_id="wm_zhao_002", text="赵女士您好，徐汇一居室明天可看", idempotency_key="d-2")
    second_reader["connection"].execute("SELECT content FROM memory_memoryitem").fetchall()
    second_reader["start"]()
    time.sleep(0.05)
    reads_before = second_reader["reads"]
    needles = {NOTE, NOTE_EDITED, *QUOTED, *windows(NOTE, 4), *windows(NOTE_EDITED, 4)}
    assert files_containing([NOTE_EDITED, "只有周日下午"])  # the scan sees them before
    # When the note is forgotten, with a reason that quotes it too
    memory_item_forget(item=item, actor=staff_user, reason="客户要求删除「独自带孩子住」这条")
    # Then no file under the data dir holds the note or any quoted part, WAL and outbox included
    assert files_containing(needles) == {}
    assert wal_size() == 0
    # And no log line carried it
    assert not [r for r in caplog.records if any(n in r.getMessage() for n in needles)]
    # And what was not forgotten is still there, on disk and in the outbox
    assert files_containing(["预算4500", "不考虑顶楼", "赵女士您好"]).keys() == {"预算4500", "不考虑顶楼", "赵女士您好"}
    texts = [r["text"] for r in LoopbackGateway.sent_records()]
    assert texts == [f"王先生您好{FORGOTTEN_MARK}的话我约两套", "赵女士您好，徐汇一居室明天可看"]
    audit = AuditEvent.objects.get(action="memory_item_forgotten")
    assert audit.reason == f"客户要求删除「{FORGOTTEN_MARK}」这条"
    # And the other connection kept reading throughout, without an error
    assert 0 < reads_before < second_reader["reads"] and second_reader["errors"] == []


def test_memory_item_forget_writes_a_new_snapshot_version_and_redacts_the_older_ones(customer, preference, staff_user):
    # Given the preference in v1 and v2 (v2 adds the budget)
    memory_item_add(customer=customer, content="预算4500", actor=staff_user, reason="电话")
    assert snapshot_current(customer).version == 2
    before = {s.version: s.content for s in MemorySnapshot.objects.filter(customer=customer)}
    # When the preference is forgotten
    result = memory_item_forget(item=preference, actor=staff_user, reason="客户要求删除该偏好")
    # Then a new version v3 without it is current
    current = snapshot_current(customer)
    assert result["snapshot_version"] == current.version == 3
    assert "地铁" not in current.content and preference.pk not in current.item_ids
    assert "预算4500" in current.content and current.reason == "客户要求删除该偏好"
    # And v1 and v2 keep their numbers, lose only the forgotten line
    older = {s.version: s for s in MemorySnapshot.objects.filter(customer=customer, version__lt=3)}
    assert sorted(older) == [1, 2] and result["snapshots_redacted"] == 2
    for version, snapshot in older.items():
        assert "地铁" not in snapshot.content and preference.pk not in snapshot.item_ids
        kept = [line for line in before[version].split("\n") if "地铁" not in line and line != "## 偏好"]
        assert snapshot.content == "\n".join(kept)
    assert "预算4500" in older[2].content


def test_memory_item_forget_of_an_item_not_in_the_snapshot_reuses_the_current_version(customer, staff_user):
    # Given an item that was shown in v1 and v2, then rejected (v3 leaves it out)
    first = memory_item_add(customer=customer, content="周末看房", actor=staff_user, reason="电话")
    memory_item_add(customer=customer, content="预算4500", actor=staff_user, reason="电话")
    memory_item_reject(item=first, actor=staff_user, reason="客户改口")
    version = snapshot_current(customer).version
    # When the rejected item (already out of the current version) is forgotten
    result = memory_item_forget(item=first, actor=staff_user, reason="清理")
    # Then nothing changed in what the model sees: the current version is reused
    assert result["snapshot_version"] == version == snapshot_current(customer).version
    assert all("周末看房" not in s.content for s in MemorySnapshot.objects.filter(customer=customer))


def test_memory_item_forget_waits_for_a_reader_holding_an_old_snapshot_then_truncates_the_wal(
    customer, staff_user, second_reader
):
    # Given a note, and another connection in the middle of a read transaction that still sees it
    item = memory_item_add(customer=customer, content=NOTE, actor=staff_user, reason="主管回访")
    reader = second_reader["connection"]
    reader.execute("BEGIN")
    assert reader.execute("SELECT content FROM memory_memoryitem").fetchall() == [(NOTE,)]
    threading.Timer(0.3, reader.commit).start()
    started = time.monotonic()
    # When the note is forgotten
    memory_item_forget(item=item, actor=staff_user, reason="客户要求删除")
    # Then the checkpoint waited for that reader to finish, and the WAL no longer holds the note
    assert time.monotonic() - started >= 0.25
    assert wal_size() == 0 and files_containing(windows(NOTE, 4)) == {}


# --- erase ----------------------------------------------------------------------------------------


def test_customer_erase_leaves_no_byte_of_the_customer_under_the_data_dir(
    customer, messages, staff_user, secure_delete_off_by_default, second_reader, caplog
):
    # Given a customer with messages (in the full-text index), memory quoting them, a profile,
    # a draft, sent replies, and an earlier audit reason quoting their words
    caplog.set_level(logging.DEBUG)
    own = MessageFactory(customer=customer, text="我女儿明年在张江上小学，想找学区附近的", sender="王先生")
    customer_profile_update(customer=customer, changes={"budget": "4800元"}, actor=staff_user, reason="电话")
    memory_item_add(
        customer=customer, content="女儿明年在张江上小学", actor=staff_user, reason="客户原话：女儿明年在张江上小学"
    )
    DraftFactory(customer=customer, reply="王先生您好，张江附近的学区两居室我整理了三套")
    bystander = CustomerFactory(conversation_id="wm_zhao_002", display_name="赵女士")
    MessageFactory(customer=bystander, text="想看看徐汇的一居室，最好近一点", sender="赵女士")
    gateway = LoopbackGateway()
    gateway.send(conversation_id=customer.conversation_id, text="王先生您好，张江附近有三套", idempotency_key="d-1")
    gateway.send(conversation_id="wm_zhao_002", text="赵女士您好，徐汇一居室明天可看", idempotency_key="d-2")
    erased_texts = [m.text for m in Message.objects.filter(customer=customer)]
    assert own.text in erased_texts and len(erased_texts) == 5
    second_reader["connection"].execute("SELECT text FROM conversations_message").fetchall()
    second_reader["start"]()
    time.sleep(0.05)
    reads_before = second_reader["reads"]
    # And trigrams of the erased messages that no remaining text contains (the FTS5 index holds them)
    trigrams = set().union(*(windows(t, 3) for t in erased_texts))
    assert len(files_containing(trigrams)) > 0
    # When the customer is erased
    customer_erase(customer=customer, actor=staff_user, reason="客户王先生要求删除全部数据")
    # Then no file under the data dir holds anything they said or we kept about them
    remaining = dump_account_database() + "\n".join(r["text"] for r in LoopbackGateway.sent_records())
    gone_trigrams = {t for t in trigrams if t not in remaining}
    assert len(gone_trigrams) > 20
    needles = {*erased_texts, "女儿明年在张江", "4800元", "张江附近的学区两居室", "王先生", *gone_trigrams}
    assert files_containing(needles) == {}
    assert wal_size() == 0
    assert not [r for r in caplog.records if any(n in r.getMessage() for n in needles)]
    # And the bystander is intact, on disk and in the outbox; the audit keeps the erasure without quotes
    assert files_containing(["想看看徐汇的一居室"]) != {}
    assert [r["conversation_id"] for r in LoopbackGateway.sent_records()] == ["wm_zhao_002"]
    assert AuditEvent.objects.get(action="customer_erased").reason == f"客户{FORGOTTEN_MARK}要求删除全部数据"
    earlier = AuditEvent.objects.filter(action="memory_item_added", reason__startswith="客户原话").get()
    assert earlier.reason == f"客户原话：{FORGOTTEN_MARK}"
    assert 0 < reads_before < second_reader["reads"] and second_reader["errors"] == []


def test_loopback_outbox_scrub_drops_or_redacts_one_conversation_and_keeps_sending(account):
    # Given sends to three conversations, two of them quoting a forgotten note
    gateway = LoopbackGateway()
    gateway.send(conversation_id="wm_wang_001", text="王先生您好，周六见", idempotency_key="a")
    gateway.send(conversation_id="wm_zhao_002", text="赵女士您好，独自带孩子的话选电梯房", idempotency_key="b")
    gateway.send(conversation_id="wm_li_003", text="李女士您好，独自带孩子的话选电梯房", idempotency_key="c")
    # When one conversation is dropped and another has its quotes redacted
    dropped = LoopbackGateway.outbox_scrub(conversation_id="wm_wang_001", drop=True)
    redacted = LoopbackGateway.outbox_scrub(conversation_id="wm_zhao_002", redact=Quotes(["独自带孩子住"]).scrub)
    # Then only those lines changed, and a later send appends as before
    assert (dropped, redacted) == (1, 1)
    gateway.send(conversation_id="wm_zhao_002", text="明天见", idempotency_key="d")
    records = LoopbackGateway.sent_records()
    assert [r["text"] for r in records] == [
        f"赵女士您好，{FORGOTTEN_MARK}的话选电梯房",
        "李女士您好，独自带孩子的话选电梯房",
        "明天见",
    ]
    assert [r["idempotency_key"] for r in records] == ["b", "c", "d"]
