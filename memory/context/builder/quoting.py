"""How a customer's, a staff member's or memory's words are quoted in a prompt: `quote_line` and
`memory_line`, with speaker, time and label; the words themselves go through the reader's
`quoted_text` (masking, then `neutralise`: `qiwei_site/reading/quoting.py`)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from django.conf import settings

from conversations.models import (
    Message,
    MessageDirection,
)
from memory.context import recall as recall_module
from memory.models import MemoryType
from qiwei_site.reading.quoting import MEMORY_LABELS as READER_MEMORY_LABELS
from qiwei_site.reading.quoting import NOTE_LABEL, OTHER_MEMORY_LABEL, neutralise, quoted_text

DISPLAY_TZ = ZoneInfo(settings.TIME_ZONE)

# How each memory item is introduced: what it is, never an imperative (the reader's, so the guard
# refuses customer words that copy them).
MEMORY_LABELS: dict[str, str] = {str(memory_type): READER_MEMORY_LABELS[str(memory_type)] for memory_type in MemoryType}
HUMAN_KINDS: dict[str, str] = {
    MemoryType.FACT: "事实",
    MemoryType.PREFERENCE: "偏好",
    MemoryType.CONSTRAINT: "约束",
    MemoryType.EVENT: "事件",
}


def _speaker(direction: str, sender: str) -> str:
    roles: dict[str, str] = {MessageDirection.INBOUND: "客户", MessageDirection.OUTBOUND: "客服"}
    role = roles.get(direction, "系统")
    name = neutralise(sender)[:30]
    return f"{role}（{name}）" if name and name != role else role


def _when(moment: datetime) -> str:
    return moment.astimezone(DISPLAY_TZ).strftime("%Y-%m-%d %H:%M")


def quote_line(*, direction: str, sender: str, text: str, sent_at: datetime, message_id: int | None = None) -> str:
    """One quoted message; a customer's carries its id, the one a hypothesis must cite (`messageIds`)."""
    cited = f" | id={message_id}" if message_id is not None and direction == MessageDirection.INBOUND else ""
    return f"> [{_when(sent_at)}{cited}] {_speaker(direction, sender)}：{quoted_text(text)}"


def _quote(message: Message | recall_module.RecalledMessage) -> str:
    return quote_line(
        direction=message.direction,
        sender=message.sender,
        text=message.text,
        sent_at=message.sent_at,
        message_id=message.id,
    )


def memory_line(*, memory_type: str, content: str, human: bool = False) -> str:
    """One core-memory item, introduced as what it is (a hypothesis stays 待确认推断 whoever added it)."""
    if human and memory_type in HUMAN_KINDS:
        label = f"{NOTE_LABEL}（{HUMAN_KINDS[memory_type]}）"
    else:
        label = MEMORY_LABELS.get(memory_type, OTHER_MEMORY_LABEL)
    return f"- {label}：{quoted_text(content)}"
