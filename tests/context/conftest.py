"""Fixtures for context assembly: conversations with realistic history and a throw-away knowledge base."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from conversations.models import Customer, Message, MessageDirection
from tests.factories import BASE_TIME, CustomerFactory, MessageFactory

FILLER = [
    "好的，我看一下",
    "嗯嗯",
    "收到，谢谢",
    "您稍等，我查一下",
    "明白了",
    "好的没问题",
]


@pytest.fixture
def chat(account) -> Callable[..., list[Message]]:
    """Write a conversation: (direction, text) pairs one minute apart, oldest first."""

    def write(customer: Customer, turns: Sequence[tuple[str, str]], start: dt.datetime = BASE_TIME) -> list[Message]:
        messages = []
        for offset, (direction, text) in enumerate(turns):
            sender = "客户" if direction == MessageDirection.INBOUND else "客服小安"
            messages.append(
                MessageFactory(
                    customer=customer,
                    direction=direction,
                    sender=sender,
                    text=text,
                    sent_at=start + dt.timedelta(minutes=offset),
                )
            )
        return messages

    return write


@pytest.fixture
def customer(account) -> Customer:
    return CustomerFactory(conversation_id="wm_wang", display_name="王先生")


def filler(count: int) -> list[tuple[str, str]]:
    """Small talk that shares nothing with the topics under test."""
    turns = []
    for i in range(count):
        direction = MessageDirection.OUTBOUND if i % 2 else MessageDirection.INBOUND
        turns.append((direction, FILLER[i % len(FILLER)]))
    return turns


@pytest.fixture
def knowledge_root(tmp_path, settings) -> Path:
    """An empty knowledge directory selected as QIWEI_KNOWLEDGE_DIR."""
    root = tmp_path / "kb"
    root.mkdir()
    settings.QIWEI_KNOWLEDGE_DIR = root
    return root


POSTGRES = ("127.0.0.1", 5432)


@pytest.fixture
def postgres_account_url(settings):
    """Account databases on the machine's PostgreSQL (qiwei_test_<account>), dropped afterwards.

    Skips with a reason when PostgreSQL is unreachable; fails instead under QIWEI_REQUIRE_INTEGRATION=1.
    """
    import os
    import socket
    import uuid

    try:
        with socket.create_connection(POSTGRES, timeout=1):
            pass
    except OSError as exc:
        message = f"PostgreSQL is not reachable at {POSTGRES[0]}:{POSTGRES[1]} ({exc})"
        if os.environ.get("QIWEI_REQUIRE_INTEGRATION") == "1":
            pytest.fail(f"{message}; QIWEI_REQUIRE_INTEGRATION=1 forbids skipping")
        pytest.skip(message)
    import psycopg
    from psycopg import sql

    from qiwei_site import tenancy

    settings.QIWEI_ACCOUNT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/qiwei_test_{account}"
    account_id = f"ctx{uuid.uuid4().hex[:8]}"
    yield account_id
    tenancy.unregister_account_database(account_id)
    tenancy._migrated.discard(tenancy.alias_for(account_id))
    with psycopg.connect(
        host=POSTGRES[0], port=POSTGRES[1], user="postgres", dbname="postgres", autocommit=True
    ) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(f"qiwei_test_{account_id}"))
        )
