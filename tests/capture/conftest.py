"""Fixtures for capture tests: ingest helpers with realistic WeCom messages."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from memory.capture.ingest import messages_ingest

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
