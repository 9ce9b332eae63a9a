"""Fixtures shared by the memory tests: ingest helpers with realistic WeCom messages (capture and
snapshots), and a customer with a realistic renting conversation (governance and profile).

tests/memory/context/conftest.py defines its own `customer`, which the context tests keep using."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from conversations.models import MessageDirection
from memory.capture.ingest import messages_ingest
from tests.factories import CustomerFactory, MessageFactory

_counter = itertools.count(1)
BASE = dt.datetime(2026, 11, 2, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=8)))


def wecom_message(text: str, *, direction: str = "inbound", external_id: str | None = None, minutes: int = 0) -> dict:
    n = next(_counter)
    return {
        "external_id": external_id or f"wx_msg_{n:06d}",
        "direction": direction,
        "text": text,
        "sender": "王先生" if direction == "inbound" else "客服小李",
        "sent_at": (BASE + dt.timedelta(minutes=minutes or n)).isoformat(),
    }


@pytest.fixture
def ingest(account):
    """Ingest customer messages into conversation `wm_conv_capture` (capture runs eagerly)."""

    def _ingest(*texts: str, conversation_id: str = "wm_conv_capture", direction: str = "inbound"):
        return messages_ingest(
            conversation_id=conversation_id,
            messages=[wecom_message(t, direction=direction) for t in texts],
            actor="wecom-webhook",
        )

    return _ingest


@pytest.fixture
def customer(account):
    return CustomerFactory(conversation_id="wm_wang_001", display_name="王先生")


@pytest.fixture
def messages(customer):
    return [
        MessageFactory(customer=customer, text="你好，我想在浦东租个两居室，预算4500左右"),
        MessageFactory(customer=customer, text="我更喜欢地铁附近的，上班方便", direction=MessageDirection.INBOUND),
        MessageFactory(customer=customer, text="好的，我帮您看看2号线沿线的房源", direction=MessageDirection.OUTBOUND),
        MessageFactory(customer=customer, text="不考虑顶楼，夏天太热"),
    ]
