"""AgentContextBuilder and build_context: the context version read first, then the answer cache;
on a miss the reads, the computation (recall, quoting, fitting) and the answer cached under the
version read (package docstring)."""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from conversations.models import (
    AuditAction,
    Customer,
    Message,
    MessageDirection,
)
from conversations.selectors import message_latest_inbound
from memory import sql
from memory.context import recall as recall_module
from memory.context.builder.layout import (
    ALREADY_ANSWERED_NOTE,
    BUSINESS_STATE,
    CORE_MEMORY,
    DEGRADED_NOTICE,
    INSTRUCTIONS,
    KNOWLEDGE_READ_LIMIT,
    RECALLED_HISTORY,
    RECENT_CONVERSATION,
    BuiltContext,
    MemoryFailure,
    Section,
    _Business,
    _business_state,
    _core_block,
    _Gathered,
    _Instructions,
    _Layout,
    _memory_block,
    _messages_block,
    _prompt_sections,
    _Quoted,
    core_contents,
)
from memory.context.builder.quoting import (
    _quote,
)
from memory.context.builder.reads import (
    LATEST_SLACK,
    REPLIES_AFTER_LIMIT,
    _message_from_row,
    _Read,
    _recent_message,
)
from memory.models import MemoryCreatedBy, MemoryItem
from memory.snapshots import effective_in, render_snapshot
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.tenancy import current_alias

logger = logging.getLogger("memory.context.builder")

T = TypeVar("T")

# --- the answer cache --------------------------------------------------------------------------

# Bytes of cached answers per process; 0 turns the cache off.
CONTEXT_CACHE_BYTES_DEFAULT = 8 * 1024 * 1024


@dataclass(frozen=True)
class _Answer:
    sections: tuple[Section, ...]
    prompt: str
    trace_json: str
    size: int
    valid_until: datetime | None


def _approximate_size(prompt: str, trace_json: str) -> int:
    """An upper estimate in bytes: 4 per character of the texts held."""
    return 4 * (len(prompt) + len(trace_json)) + 4096


class _AnswerCache:
    """Built contexts, per process, least recently used first out within a byte budget.

    An answer is keyed by the database, the customer (its id, conversation id and creation time),
    the message asked for, the customer's context version (`conversations.context_version`: the
    database bumps it on every write of anything the context reads, in the writer's transaction),
    the knowledge-index version and the settings. The version is read before anything else, so an
    answer built from reads newer than its key is only ever filed under a version nobody asks for
    again. An answer rendered from items that expire is served only until the first of them
    expires. Failed builds are not cached.
    """

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[Any, ...], _Answer] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @staticmethod
    def limit() -> int:
        return int(getattr(settings, "QIWEI_AGENT_CONTEXT_CACHE_BYTES", CONTEXT_CACHE_BYTES_DEFAULT))

    def get(self, key: tuple[Any, ...]) -> BuiltContext | None:
        with self._lock:
            answer = self._entries.get(key)
            if answer is None:
                return None
            if answer.valid_until is not None and timezone.now() >= answer.valid_until:
                self._drop(key)
                return None
            self._entries.move_to_end(key)
        return BuiltContext(sections=list(answer.sections), prompt=answer.prompt, trace=json.loads(answer.trace_json))

    def put(self, key: tuple[Any, ...], built: BuiltContext, valid_until: datetime | None = None) -> None:
        limit = self.limit()
        if limit <= 0:
            return
        trace_json = json.dumps(built.trace, ensure_ascii=False)
        if json.loads(trace_json) != built.trace:  # only plain JSON comes back equal
            return
        size = _approximate_size(built.prompt, trace_json)
        if size > limit:
            return
        answer = _Answer(tuple(built.sections), built.prompt, trace_json, size, valid_until)
        with self._lock:
            self._drop(key)
            self._entries[key] = answer
            self._bytes += size
            while self._bytes > limit and self._entries:
                self._drop(next(iter(self._entries)))

    def _drop(self, key: tuple[Any, ...]) -> None:
        answer = self._entries.pop(key, None)
        if answer is not None:
            self._bytes -= answer.size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)


_ANSWERS = _AnswerCache()


def context_cache_clear() -> None:
    """Forget every cached answer (benchmarks' cold runs; never needed for correctness)."""
    _ANSWERS.clear()


def _answer_key(customer: Customer, latest_message: Message | None, version: int) -> tuple[Any, ...]:
    from knowledge.context import knowledge_version_token

    alias = current_alias()
    database = connections[alias].settings_dict
    return (
        alias,
        database.get("NAME"),
        database.get("HOST"),
        database.get("PORT"),
        customer.pk,
        customer.conversation_id,
        customer.created_at,
        None if latest_message is None else latest_message.pk,
        version,
        knowledge_version_token(),
        _settings_key(),
    )


class AgentContextBuilder:
    """Builds the context for one turn of one customer. Reads only; writes only a failure audit
    (and, through recall, the stored features of messages that had none).

    A build reads everything first (`_read`: the knowledge version, the snapshot, one query for
    the recent window and the recall candidates, the business state), then computes the context
    from what it read, or takes it from the answer cache when the reads are unchanged."""

    def build(self, *, customer: Customer, latest_message: Message | None = None) -> BuiltContext:
        """The full context; `latest_message` None means the customer's latest inbound message.

        Warm: one indexed read (the context version, with the profile row) and the answer cache.
        Cold: the reads, then the computation; the answer is cached under the version read first."""
        trace = self._new_trace(customer)
        version, profile = sql.version_and_profile(customer.pk)
        # Inside a transaction the version may count writes that are later rolled back, and a
        # rolled-back number is handed out again: such a build neither reads nor fills the cache.
        cacheable = not connections[current_alias()].in_atomic_block
        key = _answer_key(customer, latest_message, version)
        cached = _ANSWERS.get(key) if cacheable else None
        if cached is not None:
            return cached
        read = self._read(customer, latest_message, trace, profile)
        gathered = self._gather(customer, read, trace)
        built = self._assemble(gathered, read.latest, trace)
        if cacheable and not built.trace["failures"]:
            _ANSWERS.put(key, built, read.valid_until)
        return built

    def build_degraded(
        self, *, customer: Customer, latest_message: Message | None, failure: MemoryFailure
    ) -> BuiltContext:
        """The context when memory could not be read at all (the caller has audited `failure`):
        instructions with a notice, the latest customer message and the output contract, through
        the same budgets and quoting. Reads no customer data; the trace says it was degraded."""
        trace = self._new_trace(customer)
        trace["failures"].append(failure.as_dict())
        trace["fallback"] = True
        trace["memory_recall_failed"] = failure.as_dict()
        instructions, knowledge_report, _version = self._instructions(trace, notice=DEGRADED_NOTICE)
        gathered = _Gathered(
            instructions=instructions,
            knowledge_report=knowledge_report,
            core=_memory_block(),
            recalled=_Quoted(RECALLED_HISTORY),
            state="",
            recent=_Quoted(RECENT_CONVERSATION),
            latest_line=_quote(latest_message) if latest_message is not None else "",
        )
        return self._assemble(gathered, latest_message, trace)

    # --- steps -------------------------------------------------------------------------

    @staticmethod
    def _new_trace(customer: Customer) -> dict[str, Any]:
        return {"conversation_id": customer.conversation_id, "failures": []}

    def _read(
        self,
        customer: Customer,
        latest_message: Message | None,
        trace: dict[str, Any],
        profile: tuple[str, ...] | None,
    ) -> _Read:
        """Every read of a build (the profile came with the version); a failing memory read is
        audited and left empty."""
        instructions, knowledge_report, _version = self._instructions(trace)
        expiries: list[datetime] = []
        core = self._guarded(customer, trace, "snapshot", lambda: self._core_read(customer, trace, expiries), None)
        latest, window, after = self._window(customer, latest_message)
        return _Read(
            instructions=instructions,
            knowledge_report=knowledge_report,
            core=core,
            latest=latest,
            window_rows=window,
            business=self._business_read(customer, profile),
            valid_until=min(expiries) if expiries else None,
            after=after,
        )

    def _gather(self, customer: Customer, read: _Read, trace: dict[str, Any]) -> _Gathered:
        """Every section's text from what was read; a failing recall is audited and left empty."""
        latest = read.latest
        # The recent window is what followed the latest message (our replies to it) and the
        # RECENT_MESSAGES up to it; the recall candidates are the rows before those, as before.
        recent_size = read.after + settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES
        window = read.window()
        candidates = window[recent_size:]
        replies = [row.id for row in reversed(window[: read.after]) if row.direction == MessageDirection.OUTBOUND]
        trace["already_answered"] = bool(replies)
        trace["answered_by_message_ids"] = replies
        no_recall: list[recall_module.RecalledMessage] = []
        recalled = self._guarded(
            customer,
            trace,
            "recall",
            lambda: recall_module.recall_for(customer, latest, window=candidates),
            no_recall,
        )
        state, state_refs = _business_state(read.business, core_contents(read.core))
        recent = [_recent_message(row) for row in reversed(window[:recent_size])]
        return _Gathered(
            instructions=read.instructions,
            knowledge_report=read.knowledge_report,
            core=_core_block(read.core),
            recalled=_messages_block(RECALLED_HISTORY, recalled),
            state=state,
            recent=_messages_block(RECENT_CONVERSATION, [m for m in recent if latest is None or m.id != latest.id]),
            latest_line=_quote(latest) if latest is not None else "",
            state_refs=state_refs,
            latest_note=ALREADY_ANSWERED_NOTE if replies and latest is not None else "",
        )

    def _assemble(self, gathered: _Gathered, latest: Message | None, trace: dict[str, Any]) -> BuiltContext:
        """Fit the gathered sections into the budgets, join them into the prompt, finish the trace."""
        layout = _Layout(gathered, self._budgets())
        layout.drop_oldest_history()
        layout.shorten_sections()
        sections = [Section(name=name, text=text, chars=len(text)) for name, text in layout.ordered()]
        prompt = "\n\n".join(section.text for section in sections)
        knowledge_report = dict(gathered.knowledge_report)
        if knowledge_report and INSTRUCTIONS in layout.truncated:
            knowledge_report["truncated"] = True
        trace.update(
            {
                "sections": {section.name: section.chars for section in sections},
                "prompt_chars": len(prompt),
                "budgets": layout.budgets,
                "recalled_message_ids": layout.recalled.ids(),
                "recent_message_ids": layout.recent.ids(),
                "latest_message_id": latest.id if latest is not None else None,
                "latest_message_truncated": layout.latest_truncated,
                "trimmed": {
                    RECALLED_HISTORY: layout.recalled.trimmed,
                    RECENT_CONVERSATION: layout.recent.trimmed,
                    CORE_MEMORY: sorted(layout.core.trimmed),
                },
                "instructions_left_out": gathered.instructions.left_out,
                "truncated_sections": sorted(set(layout.truncated)),
                "knowledge": knowledge_report,
                "prompt_sections": _prompt_sections(layout, gathered, latest),
            }
        )
        trace.setdefault("snapshot_version", None)
        trace.setdefault("memory_item_ids", [])
        if layout.core.trimmed:
            trace["memory_item_ids"] = sorted(layout.core.ids())
        return BuiltContext(sections=sections, prompt=prompt, trace=trace)

    @staticmethod
    def _budgets() -> dict[str, int]:
        return {
            INSTRUCTIONS: settings.QIWEI_AGENT_CONTEXT_CHAR_LIMIT,
            CORE_MEMORY: settings.QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT,
            BUSINESS_STATE: settings.QIWEI_AGENT_STATE_CHAR_LIMIT,
            "conversation": settings.QIWEI_AGENT_CONVERSATION_CHAR_LIMIT,
            "prompt": settings.QIWEI_AGENT_PROMPT_CHAR_LIMIT,
        }

    # --- reads -------------------------------------------------------------------------

    def _guarded(self, customer: Customer, trace: dict[str, Any], stage: str, func: Callable[[], T], empty: T) -> T:
        """Run a memory stage; a failure is audited and the context is built without it."""
        connection = connections[current_alias()]
        # Inside a caller's transaction, a savepoint keeps a failed query from breaking it; outside
        # one, no transaction is opened (an IMMEDIATE SQLite transaction would take the write lock).
        scope = transaction.atomic(using=connection.alias) if connection.in_atomic_block else nullcontext()
        try:
            with scope:
                return func()
        except Exception as exc:
            logger.exception("context: %s stage failed for %s", stage, customer.conversation_id)
            trace["failures"].append({"stage": stage, "error": exc.__class__.__name__})
            try:
                audit_record(
                    action=AuditAction.MEMORY_RECALL_FAILED,
                    conversation_id=customer.conversation_id,
                    actor="context",
                    reason="上下文组装时记忆读取失败，已跳过该部分",
                    payload={"stage": stage, "error": exc.__class__.__name__},
                )
            except Exception:
                logger.exception("context: could not audit the %s failure", stage)
            return empty

    def _instructions(self, trace: dict[str, Any], *, notice: str = "") -> tuple[_Instructions, dict[str, Any], Any]:
        """Persona, rules and safety boundary from the knowledge base, read whole (the layout fits
        them by priority; cached per knowledge-index version), and a notice, if any, first. Also
        returns what the section depends on, for the answer cache."""
        from knowledge.context import project_context_cached

        instructions = _Instructions(notice=notice)
        report: dict[str, Any] = {}
        try:
            knowledge = project_context_cached(limit=KNOWLEDGE_READ_LIMIT)
        except Exception as exc:
            logger.exception("context: knowledge context failed")
            trace["failures"].append({"stage": "knowledge", "error": exc.__class__.__name__})
            return instructions, report, None
        report = knowledge.report.as_dict()
        instructions.knowledge = knowledge.text
        return instructions, report, (knowledge.text, report)

    def _core_read(self, customer: Customer, trace: dict[str, Any], expiries: list[datetime]) -> tuple[Any, ...]:
        """The current snapshot (or the items a snapshot would hold, rendered without writing):
        (version, content, item ids, human-written item ids)."""
        snapshot = sql.current_snapshot(customer.pk)
        if snapshot:
            version: int | None = snapshot[0].version
            content, item_ids = snapshot[0].content, list(snapshot[0].item_ids)
            trace["snapshot_version"] = version
            # The snapshot's items are the customer's own: its human-written ones among them.
            human = {row.id for row in sql.human_items(customer.pk)}.intersection(item_ids) if item_ids else set()
        else:
            # None yet (a new customer): the items a snapshot would hold, rendered without writing.
            rows = sql.active_items(customer.pk)
            items = effective_in([MemoryItem(**row._asdict()) for row in rows])
            rendered = render_snapshot(items)
            expiries.extend(item.expires_at for item in items if item.expires_at is not None)
            version, content, item_ids = None, rendered.content, rendered.item_ids
            trace["snapshot_version"] = None
            human = {item.pk for item in items if item.created_by == MemoryCreatedBy.HUMAN}
        trace["memory_item_ids"] = sorted(item_ids)
        return (version, content, tuple(item_ids), tuple(sorted(human)))

    def _window(self, customer: Customer, latest: Message | None) -> tuple[Message | None, list[sql.WindowRow], int]:
        """The message being answered, in one query the window around it, newest first, and how
        many of its rows come after the message: the newest REPLIES_AFTER_LIMIT messages after it
        and before the customer's next one (what we already replied: issue 39), then the newest
        effective messages up to it, the first RECENT_MESSAGES of which are the recent window (the
        latest one included) and the next HISTORY_SCAN_LIMIT the recall candidates, the same rows
        `recall_for` would read.

        With no message given, the latest inbound one is found among the newest LATEST_SLACK
        extra rows of the same query (the rows before it are the replies after it); only when it
        lies further back is it read on its own."""
        recent = settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES
        scan = settings.QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT
        size = recent + (scan if settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT > 0 else 0)
        if latest is not None:
            return latest, *self._around(customer, latest, size)
        limit = size + LATEST_SLACK
        rows = sql.window_newest(customer.pk, limit)
        complete = len(rows) < limit  # every effective message was read
        first = next((index for index, row in enumerate(rows) if row.direction == MessageDirection.INBOUND), None)
        if first is None and complete:
            return None, rows[:size], 0
        if first is not None and (complete or first + size <= len(rows)):
            after = min(first, REPLIES_AFTER_LIMIT)
            message = _message_from_row(customer, rows[first], current_alias())
            return message, rows[:after] + rows[first : first + size], after
        found = message_latest_inbound(customer)
        if found is None:
            return None, rows[:size], 0
        return found, *self._around(customer, found, size)

    @staticmethod
    def _around(customer: Customer, latest: Message, size: int) -> tuple[list[sql.WindowRow], int]:
        rows = sql.window_up_to(customer.pk, latest.sent_at, latest.pk, size, REPLIES_AFTER_LIMIT)
        position = (latest.sent_at, latest.pk)
        after = next((index for index, row in enumerate(rows) if (row.sent_at, row.id) <= position), len(rows))
        return rows, after

    def _business_read(self, customer: Customer, profile: tuple[str, ...] | None) -> _Business:
        """Profile, open tasks, open alerts and the open recommendations with their latest
        feedback: one query per table, the quoted columns only, as tuples."""
        return _Business(
            profile=profile,
            tasks=tuple(sql.open_tasks(customer.pk)),
            alerts=tuple(sql.open_alerts(customer.pk)),
            recommendations=tuple(sql.open_recommendations(customer.pk)),
        )


def _settings_key() -> tuple[Any, ...]:
    return (
        tuple(AgentContextBuilder._budgets().items()),
        settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES,
        settings.QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT,
        settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT,
        tuple(settings.QIWEI_AGENT_CONTEXT_FILES),
    )


def build_context(*, customer: Customer, latest_message: Message | None = None) -> BuiltContext:
    return AgentContextBuilder().build(customer=customer, latest_message=latest_message)
