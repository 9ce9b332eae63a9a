"""The embedded broker's transport: complete files only, one reader per message, nothing fatal."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections.abc import Iterator
from pathlib import Path
from queue import Empty

import kombu
import pytest
from kombu.exceptions import ChannelError

from qiwei_site import broker

QUEUE = "celery"


def options(root: Path) -> dict[str, str]:
    return {
        "data_folder_in": str(root / "queue"),
        "data_folder_out": str(root / "queue"),
        "processed_folder": str(root / "processed"),
        "control_folder": str(root / "control"),
        "corrupt_folder": str(root / "corrupt"),
    }


@pytest.fixture
def root(tmp_path) -> Path:
    (tmp_path / "queue").mkdir()
    (tmp_path / "control").mkdir()
    return tmp_path


@pytest.fixture
def channel(root) -> Iterator[broker.Channel]:
    with kombu.Connection("filesystem://", transport_options=options(root)) as conn:
        yield conn.channel()


def _produce(root: Path, label: str, count: int) -> None:
    with kombu.Connection("filesystem://", transport_options=options(root)) as conn:
        channel = conn.channel()
        for n in range(count):
            channel._put(QUEUE, {"id": f"{label}-{n}", "pad": "x" * 1500})


def _consume(root: Path, deadline: float, out: multiprocessing.Queue) -> None:
    seen, errors = [], 0
    with kombu.Connection("filesystem://", transport_options=options(root)) as conn:
        channel = conn.channel()
        while time.monotonic() < deadline:
            try:
                seen.append(channel._get(QUEUE)["id"])
            except Empty:
                if not any(name.endswith(".msg") for name in os.listdir(root / "queue")) and (root / "done").exists():
                    break
                time.sleep(0.0005)
            except Exception:
                errors += 1
    out.put((seen, errors))


def test_filesystem_scheme_is_served_by_the_atomic_transport():
    # Given the Celery app is loaded (it registers the transport)
    import qiwei_site.celery  # noqa: F401

    # When a filesystem:// connection is made, then it is ours
    assert type(kombu.Connection("filesystem://").transport) is broker.Transport


@pytest.mark.long
def test_broker_concurrent_writers_and_readers_lose_and_duplicate_nothing(root):
    # Given two processes writing 1,500 messages each while two processes poll the same folder
    context = multiprocessing.get_context("fork")
    out: multiprocessing.Queue = context.Queue()
    deadline = time.monotonic() + 60
    readers = [context.Process(target=_consume, args=(root, deadline, out)) for _ in range(2)]
    writers = [context.Process(target=_produce, args=(root, label, 1500)) for label in "ab"]
    for process in readers + writers:
        process.start()
    for process in writers:
        process.join()
    (root / "done").touch()
    results = [out.get(timeout=90) for _ in readers]
    for process in readers:
        process.join()
    # Then every message was read exactly once and no read failed (kombu's own loses a few here)
    ids = [message_id for seen, _ in results for message_id in seen]
    assert sum(errors for _, errors in results) == 0
    assert len(ids) == len(set(ids)) == 3000
    assert not list((root / "queue").iterdir())


def test_broker_put_leaves_only_complete_files_under_a_message_name(channel, root):
    # When a message is put
    channel._put(QUEUE, {"hello": "世界"})
    # Then the folder holds one complete message file and no temporary one
    names = os.listdir(root / "queue")
    assert len(names) == 1 and names[0].endswith(f".{QUEUE}.msg")
    assert json.loads((root / "queue" / names[0]).read_text()) == {"hello": "世界"}


def test_broker_sets_aside_an_old_unparseable_file_and_delivers_the_next(channel, root):
    # Given a damaged message file, written long ago, ahead of a good one
    damaged = root / "queue" / f"1_damaged.{QUEUE}.msg"
    damaged.write_text('{"body": "eyJ')
    os.utime(damaged, (time.time() - 60, time.time() - 60))
    channel._put(QUEUE, {"n": 2})
    # When the queue is read
    payload = channel._get(QUEUE)
    # Then the good message is delivered and the bad file is kept aside, not raised
    assert payload == {"n": 2}
    assert os.listdir(root / "corrupt") == [damaged.name]
    with pytest.raises(Empty):
        channel._get(QUEUE)


def test_broker_leaves_a_young_unparseable_file_for_its_writer_to_finish(channel, root):
    # Given a message file that kombu's own (in-place) writer is still writing
    partial = root / "queue" / f"1_partial.{QUEUE}.msg"
    partial.write_text('{"n": ')
    # When the queue is read, then nothing is delivered and the file stays queued
    with pytest.raises(Empty):
        channel._get(QUEUE)
    assert partial.exists()
    # And once the writer has finished, the message is delivered
    partial.write_text('{"n": 1}')
    assert channel._get(QUEUE) == {"n": 1}


def test_broker_queues_again_a_message_claimed_by_a_reader_that_died(channel, root):
    # Given a message claimed (renamed) by a reader killed before it read it, long enough ago
    stale = time.time_ns() - int((broker.STALE_SECONDS + 5) * 1e9)
    name = f"5_lost.{QUEUE}.msg"
    (root / "queue" / f".claimed-{stale}-{name}").write_text(json.dumps({"n": "lost"}))
    # When readers poll, then the next poll delivers it again
    with pytest.raises(Empty):
        channel._get(QUEUE)
    assert channel._get(QUEUE) == {"n": "lost"}


def test_broker_leaves_a_fresh_claim_alone_and_drops_stale_temp_files(channel, root):
    # Given a claim being read right now and a temporary file of a writer killed long ago
    now, stale = time.time_ns(), time.time_ns() - int((broker.STALE_SECONDS + 5) * 1e9)
    fresh = root / "queue" / f".claimed-{now}-6_busy.{QUEUE}.msg"
    fresh.write_text("{}")
    (root / "queue" / f".tmp-{stale}-abc").write_text('{"half')
    # When a reader polls
    with pytest.raises(Empty):
        channel._get(QUEUE)
    # Then the other reader's claim is untouched and the dead writer's file is gone
    assert sorted(os.listdir(root / "queue")) == [fresh.name]


def test_broker_binds_again_when_the_exchange_table_has_gone(root):
    # Given a queue declared and bound in this process, then the broker folder's table deleted
    with kombu.Connection("filesystem://", transport_options=options(root)) as conn:
        conn.SimpleQueue("again").put({"n": 1})
        conn.SimpleQueue("again").get(timeout=1).ack()
    for table in (root / "control").iterdir():
        table.unlink()
    # When a new connection publishes to it
    with kombu.Connection("filesystem://", transport_options=options(root)) as conn:
        conn.SimpleQueue("again").put({"n": 2})
        # Then the message is routed, not silently dropped for want of a binding
        message = conn.SimpleQueue("again").get(timeout=1)
        message.ack()
        assert message.payload == {"n": 2}


def test_broker_exchange_table_is_replaced_whole(channel, root):
    # When two queues are bound to one exchange
    channel._queue_bind("events", "a", "", "qa")
    channel._queue_bind("events", "b", "", "qb")
    channel._queue_bind("events", "a", "", "qa")
    # Then the table holds both bindings once, and no temporary file is left beside it
    assert sorted(row.queue for row in channel.get_table("events")) == ["qa", "qb"]
    assert sorted(os.listdir(root / "control")) == [".events.exchange.lock", "events.exchange"]


def test_broker_missing_queue_folder_is_a_channel_error(channel, root):
    # Given the queue folder has been deleted under a running process
    os.rmdir(root / "queue")
    # When the queue is read, sized, purged or written, then it is a broker error (a worker
    # reconnects), never a bare OSError (a worker dies)
    for operation in (
        lambda: channel._get(QUEUE),
        lambda: channel._size(QUEUE),
        lambda: channel._purge(QUEUE),
        lambda: channel._put(QUEUE, {"n": 1}),
    ):
        with pytest.raises(ChannelError):
            operation()


def test_broker_reads_messages_in_stamp_order_across_digit_counts(channel, root):
    # Given two messages whose stamps differ in length, the shorter one older (written first)
    for stamp, n in (("1000", 2), ("999", 1)):
        (root / "queue" / f"{stamp}_{n}.{QUEUE}.msg").write_text(json.dumps({"n": n}))
    # When the queue is read twice
    first, second = channel._get(QUEUE), channel._get(QUEUE)
    # Then the older message comes first, as the stamps say (text order would put 1000 first)
    assert [first, second] == [{"n": 1}, {"n": 2}]
