"""The context version's PostgreSQL trigger takes the customer row before the version row, so an
ingest (customer locked, then a message inserted) and a capture flush (an item updated, then the
customer locked) cannot deadlock (found by a read-only review: they did)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from conversations import context_version
from tests.integration.conftest import POSTGRES, require_server

pytestmark = pytest.mark.integration

MESSAGE_COLUMNS = ["customer_id", "direction", "sender", "text", "sent_at", "is_effective"]


@pytest.fixture
def scratch_database() -> Iterator[dict]:
    require_server("PostgreSQL", POSTGRES)
    name = f"qiwei_it_ctxv_{uuid.uuid4().hex[:8]}"
    admin = dict(host=POSTGRES[0], port=POSTGRES[1], user="postgres", dbname="postgres", autocommit=True)
    with psycopg.connect(**admin) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = dict(host=POSTGRES[0], port=POSTGRES[1], user="postgres", dbname=name)
    try:
        with psycopg.connect(**url, autocommit=True) as conn:
            conn.execute("CREATE TABLE conversations_customer (id bigint PRIMARY KEY)")
            conn.execute(
                "CREATE TABLE conversations_message (id serial PRIMARY KEY, customer_id bigint, direction text, "
                "sender text, text text, sent_at timestamptz, is_effective bool)"
            )
            conn.execute("CREATE TABLE memory_memoryitem (id serial PRIMARY KEY, customer_id bigint, confidence float)")
            conn.execute(
                f"CREATE TABLE {context_version.VERSION_TABLE} "
                "(customer_id bigint PRIMARY KEY, version bigint NOT NULL)"
            )
            conn.execute(context_version._PG_FUNCTION_SQL)
            for table, columns in {"conversations_message": MESSAGE_COLUMNS, "memory_memoryitem": None}.items():
                for statement in context_version._pg_statements(table, columns):
                    conn.execute(statement)
            conn.execute("INSERT INTO conversations_customer VALUES (1)")
            conn.execute("INSERT INTO memory_memoryitem (customer_id, confidence) VALUES (1, 0.5)")
        yield url
    finally:
        with psycopg.connect(**admin) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_context_version_trigger_ingest_and_capture_flush_do_not_deadlock(scratch_database):
    # Given a capture flush that has updated an item (more evidence) and an ingest about to lock
    # the customer and insert the customer's next message
    url = scratch_database
    errors: dict[str, str] = {}
    item_updated = threading.Event()

    def capture_flush() -> None:
        with psycopg.connect(**url) as conn:
            try:
                conn.execute("SET lock_timeout = '5s'")
                conn.execute("UPDATE memory_memoryitem SET confidence = 0.9 WHERE id = 1")
                item_updated.set()
                time.sleep(0.3)
                conn.execute("SELECT id FROM conversations_customer WHERE id = 1 FOR UPDATE")
                conn.commit()
            except psycopg.Error as exc:
                errors["capture"] = type(exc).__name__
                item_updated.set()

    def ingest() -> None:
        item_updated.wait(5)
        with psycopg.connect(**url) as conn:
            try:
                conn.execute("SET lock_timeout = '5s'")
                conn.execute("SELECT id FROM conversations_customer WHERE id = 1 FOR UPDATE")
                conn.execute(
                    "INSERT INTO conversations_message (customer_id, direction, sender, text, sent_at, is_effective) "
                    "VALUES (1, 'inbound', '客户', '好的，明天下午看房', now(), true)"
                )
                conn.commit()
            except psycopg.Error as exc:
                errors["ingest"] = type(exc).__name__

    # When both run at once
    threads = [threading.Thread(target=capture_flush), threading.Thread(target=ingest)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    # Then both commit, and each write counted once in the version (the item's insert, its update,
    # the message)
    assert errors == {}
    with psycopg.connect(**url) as conn:
        version = conn.execute(f"SELECT version FROM {context_version.VERSION_TABLE}").fetchone()
        messages = conn.execute("SELECT count(*) FROM conversations_message").fetchone()
    assert version == (3,) and messages == (1,)
