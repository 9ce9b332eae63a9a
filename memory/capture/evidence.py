"""Is this message admissible evidence, and what does the reader read in it (issue 35, item 2)?

The one place every path asks: capture and re-capture (`capture_plan`), backfill (through capture),
the grounding of a model's profile updates and of its hypotheses (`memory.capture.grounding`), and
the reading jobs that read ahead of them. A message is evidence only when it is this customer's own
effective inbound message, its words as received can be opened, they are within the reader's bound
(`qiwei_site.reading.extract.bound`: a longer message is not read at all, and is no evidence), and
the safety gate lets them through (a credential, or a secret announced in the message before,
blocks it). What is read is read from those words with personal numbers cut out, by `extract` with
the message's `ExtractContext`: the candidates capture may write by itself, and the proposals held
back for a supervisor.

A message is read once (issue 36, item 9): the gate's verdict and what extraction read are kept
beside it (`memory.models.MessageReading`) and used again while they still hold — the same reader
(`reader_version`) and, for extraction, the same context (`context_key`). A message with no reading
that holds is read now, and the reading kept. A request reads afresh only within its
`ReadingBudget` (characters); past it the message is `NOT_READ_YET`, and the caller queues a reading
job so the next request finds it read.

`value_tier` answers for one value: written by itself (AUTO), only proposed (PROPOSED, with the
reading that held it back), or not read at all (None).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from conversations.models import Customer, MessageDirection
from conversations.received import received_text, wholly_masked
from memory.models import MessageReading
from qiwei_site.platform.sealing import SealBroken
from qiwei_site.platform.sql import insert
from qiwei_site.reading.extract import Candidate, ExtractContext, Extraction, extract
from qiwei_site.reading.extract.bound import TOO_LONG, unreadable
from qiwei_site.reading.extract.stored import context_key, extraction_data, extraction_of, reader_version
from qiwei_site.reading.grounding import carries_content, is_small_talk, read_field
from qiwei_site.reading.safety import CREDENTIAL, ScanResult, Span, scan, without_personal_numbers

NOT_FOUND = "依据的消息不存在"
OTHER_CUSTOMER = "依据的消息属于其他客户"
NOT_INBOUND = "依据的消息不是客户原话"
NOT_EFFECTIVE = "依据的消息已失效"
UNSEALABLE = "依据的消息原文无法解封，无法核对"
BLOCKED = "依据的消息被安全闸拦截"
SMALL_TALK = "依据的消息只是寒暄或应答，不含客户情况"
NO_CONTENT = "依据的消息除被遮蔽的个人号码外没有内容"
NOT_READ_YET = "依据的消息尚未读取（本次读取额度已用完），已安排稍后读取"
# TOO_LONG ("消息过长，未读取"): past the reader's bound, never read.

AUTO, PROPOSED = "auto", "proposed"

# This module's own rules of evidence (the announced secret, what is kept), beside the reader's
# source digest: bump it when they change, and every kept reading is read again once.
EVIDENCE_RULES = "1"


def current_reader_version() -> str:
    return f"{EVIDENCE_RULES}.{reader_version()}"


@dataclass
class ReadingBudget:
    """How many characters a request may still read afresh (the words of messages with no reading
    that holds). A message that does not fit is left unread (`NOT_READ_YET`) and `exhausted` says so."""

    chars: int
    spent: int = 0
    read: int = 0  # messages read afresh
    exhausted: bool = False

    def take(self, chars: int) -> bool:
        if self.spent + chars > self.chars:
            self.exhausted = True
            return False
        self.spent += chars
        self.read += 1
        return True


_active_budget: contextvars.ContextVar[ReadingBudget | None] = contextvars.ContextVar(
    "qiwei_reading_budget", default=None
)


@contextlib.contextmanager
def reading_budget(chars: int) -> Iterator[ReadingBudget]:
    """Every message judged inside this block reads afresh only within `chars` characters in all
    (a request's bound); a block inside another shares the outer one's budget."""
    active = _active_budget.get()
    if active is not None:
        yield active
        return
    budget = ReadingBudget(chars=chars)
    token = _active_budget.set(budget)
    try:
        yield budget
    finally:
        _active_budget.reset(token)


@dataclass(frozen=True)
class Evidence:
    """One message judged as evidence: why it is none (`refusal`), the gate's verdict, the words the
    reader read (personal numbers cut out) and what it read there. `fresh`: the reading made now and
    not kept yet (a caller that keeps it in its own transaction asked for it: `keep=False`)."""

    message_id: int | None
    refusal: str | None = None
    scan: ScanResult | None = None
    words: str = ""
    context: ExtractContext | None = None
    extraction: Extraction | None = None
    fresh: MessageReading | None = None

    @property
    def admissible(self) -> bool:
        return self.refusal is None

    @property
    def candidates(self) -> list[Candidate]:
        return self.extraction.candidates if self.extraction is not None else []

    @property
    def proposals(self) -> list[Candidate]:
        return self.extraction.proposals if self.extraction is not None else []

    @property
    def content_refusal(self) -> str | None:
        """Why the admissible words carry nothing an inference could rest on (small talk, or only the
        label of a cut-out number), or None."""
        if is_small_talk(self.words):
            return SMALL_TALK
        if not carries_content(self.words):
            return NO_CONTENT
        return None


# --- the kept reading -----------------------------------------------------------------------------


def _kept(message: Any) -> MessageReading | None:
    """The message's kept reading (loaded with it by `select_related("reading")`, else one query)."""
    try:
        return message.reading  # type: ignore[no-any-return]
    except MessageReading.DoesNotExist:
        return None


def _scan_data(result: ScanResult) -> dict[str, Any]:
    return {
        "blocked": result.blocked,
        "categories": list(result.categories),
        "rules": list(result.rules),
        "spans": [[span.start, span.end, span.category, span.rule] for span in result.spans],
    }


def _scan_of(data: dict[str, Any]) -> ScanResult:
    return ScanResult(
        blocked=bool(data.get("blocked")),
        categories=list(data.get("categories") or []),
        rules=list(data.get("rules") or []),
        spans=tuple(Span(int(s[0]), int(s[1]), str(s[2]), str(s[3])) for s in data.get("spans") or []),
    )


def keep_reading(reading: MessageReading | None) -> None:
    """Keep a reading made now (insert, or replace the stale one), in the caller's transaction."""
    if reading is None:
        return
    insert(
        [reading],
        unique_fields=["message"],
        update_fields=["reader_version", "refusal", "gate", "context_key", "extraction", "read_at"],
    )


# --- the check ------------------------------------------------------------------------------------


def _judged_before_reading(message: Any, customer: Customer) -> Evidence | None:
    if message is None:
        return Evidence(message_id=None, refusal=NOT_FOUND)
    message_id = message.pk
    if message.customer_id != customer.pk:
        return Evidence(message_id=message_id, refusal=OTHER_CUSTOMER)
    if message.direction != MessageDirection.INBOUND:
        return Evidence(message_id=message_id, refusal=NOT_INBOUND)
    if not message.is_effective:
        return Evidence(message_id=message_id, refusal=NOT_EFFECTIVE)
    return None


def message_evidence(
    message: Any,
    *,
    customer: Customer,
    context: ExtractContext | None = None,
    budget: ReadingBudget | None = None,
    bounded: bool = True,
    keep: bool = True,
) -> Evidence:
    """Judge one message (a `Message`, or None when the cited id names none) as this customer's
    evidence, and read it when it is. `context` is what extraction reads beside the words; without
    one the message is judged by the gate but not extracted. The reading kept beside the message is
    used while it holds; otherwise the message is read now — within `budget`, or the budget of the
    `reading_budget` block it runs in (`bounded=False`: none, as capture in a worker reads every
    message it is given) — and the reading kept (`keep=False`: handed back in `Evidence.fresh` for
    the caller to keep)."""
    judged = _judged_before_reading(message, customer)
    if judged is not None:
        return judged
    if not bounded:
        budget = None
    elif budget is None:
        budget = _active_budget.get()
    message_id = message.pk
    version = current_reader_version()
    kept = _kept(message)
    if kept is not None and kept.reader_version != version:
        kept = None  # read by another reader: read again
    if kept is not None and kept.refusal:
        return Evidence(message_id=message_id, refusal=kept.refusal, scan=_scan_of(kept.gate) if kept.gate else None)
    try:
        received = received_text(message)
    except SealBroken:
        return Evidence(message_id=message_id, refusal=UNSEALABLE)
    key = context_key(context)
    extraction = (
        extraction_of(kept.extraction)
        if kept is not None and context is not None and kept.extraction is not None and kept.context_key == key
        else None
    )
    to_read = kept is None or (context is not None and extraction is None)
    if to_read and budget is not None and not unreadable(received) and not budget.take(len(received)):
        return Evidence(message_id=message_id, refusal=NOT_READ_YET)
    fresh: MessageReading | None = None
    if kept is None:
        result, refusal = _gate(message, received)
        fresh = MessageReading(message_id=message_id, reader_version=version, refusal=refusal or "")
        fresh.gate = _scan_data(result) if result is not None else {}
        if refusal:
            return _kept_now(
                message, fresh, keep, Evidence(message_id=message_id, refusal=refusal, scan=result, fresh=fresh)
            )
    else:
        result = _scan_of(kept.gate)
    assert result is not None
    words = without_personal_numbers(received, result.spans)
    if context is not None and extraction is None:
        extraction = extract(words, context)
        fresh = fresh or MessageReading(
            message_id=message_id, reader_version=version, refusal="", gate=kept.gate if kept else {}
        )
        fresh.context_key, fresh.extraction = key, extraction_data(extraction)
    evidence = Evidence(
        message_id=message_id, scan=result, words=words, context=context, extraction=extraction, fresh=fresh
    )
    return _kept_now(message, fresh, keep, evidence) if fresh is not None else evidence


def _gate(message: Any, received: str) -> tuple[ScanResult | None, str | None]:
    """(the gate's verdict, the refusal) for words not read before: past the bound, not read at
    all (no scan is needed to keep them out: nothing of them becomes anything)."""
    if unreadable(received):
        return None, TOO_LONG
    result = scan(received)
    if not result.blocked and wholly_masked(message.text):
        # A secret announced in the message before: blocked (and alerted) as the credential it is.
        result = ScanResult(blocked=True, categories=[CREDENTIAL], rules=["announced_secret"], spans=result.spans)
    return result, BLOCKED if result.blocked else None


def _kept_now(message: Any, fresh: MessageReading, keep: bool, evidence: Evidence) -> Evidence:
    message.reading = fresh  # the message object answers with its new reading from now on
    if keep:
        keep_reading(fresh)
    return evidence


def value_tier(evidence: Evidence, field: str, value: str) -> tuple[str, Candidate] | None:
    """Whether this message is evidence for `field` = `value`: (AUTO, the candidate) when capture
    would write it by itself, (PROPOSED, the candidate) when the reader reads it only as a proposal,
    None when it does not read it there (or the message is no evidence)."""
    if not evidence.admissible or evidence.extraction is None or evidence.context is None:
        return None
    for tier, candidates in ((AUTO, evidence.candidates), (PROPOSED, evidence.proposals)):
        for candidate in candidates:
            if read_field(field, value, [candidate], evidence.context):
                return tier, candidate
    return None


__all__ = [
    "AUTO",
    "BLOCKED",
    "NOT_EFFECTIVE",
    "NOT_FOUND",
    "NOT_INBOUND",
    "NOT_READ_YET",
    "NO_CONTENT",
    "OTHER_CUSTOMER",
    "PROPOSED",
    "SMALL_TALK",
    "TOO_LONG",
    "UNSEALABLE",
    "Evidence",
    "ReadingBudget",
    "current_reader_version",
    "keep_reading",
    "message_evidence",
    "reading_budget",
    "value_tier",
]
