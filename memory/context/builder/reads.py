"""What a build reads (`AgentContextBuilder._read`): the bounds of the window read, what a build
holds once it has read (`_Read`), and rows made into messages.

The reads themselves are hand-written SQL (`memory.sql`: the ORM's per-call compile cost more than
the database on a cold build); their ORM twins live beside their tests (`tests/memory/sql_twins.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from conversations.models import Customer, Message
from memory.context import recall as recall_module
from memory.context.builder.layout import _Business, _Instructions
from memory.sql import WindowRow

# --- what a build reads ------------------------------------------------------------------------

# Rows read past the recent window and the recall candidates when the latest inbound message is
# not given: it is found among the newest messages (usually the first or second), so one query
# reads it, its window and its candidates. Further back than this, it is read on its own.
LATEST_SLACK = 8
# At most this many messages after the one being answered (our replies to it, newest kept) join
# the recent window (issue 39): the same bound as the slack, so both ways of reading agree.
REPLIES_AFTER_LIMIT = LATEST_SLACK


@dataclass
class _Read:
    """Everything a build reads, before anything is computed from it."""

    instructions: _Instructions
    knowledge_report: dict[str, Any]
    core: tuple[Any, ...] | None  # (snapshot version, content, item ids, human item ids); None: failed
    latest: Message | None
    # The effective messages (RECALL_COLUMNS), newest first: the `after` newest ones follow
    # `latest` (what was said after it, before the customer's next message), then up to `latest`.
    window_rows: list[WindowRow]
    business: _Business
    # When the context stops being what these reads give with nothing written: the earliest expiry
    # among the items rendered without a snapshot (a snapshot's content is fixed); None: never.
    valid_until: datetime | None = None
    after: int = 0

    def window(self) -> list[WindowRow]:
        return self.window_rows


def _message_from_row(customer: Customer, row: WindowRow, alias: str) -> Message:
    """The latest inbound message, from its window row (the builder quotes and recalls with it)."""
    message = Message(
        id=row.id, customer=customer, direction=row.direction, sender=row.sender, text=row.text, sent_at=row.sent_at
    )
    message._state.adding, message._state.db = False, alias
    return message


def _recent_message(row: WindowRow) -> recall_module.RecalledMessage:
    return recall_module.RecalledMessage(
        id=row.id, direction=row.direction, sender=row.sender, text=row.text, sent_at=row.sent_at
    )
