"""Is this message admissible evidence, and what does the reader read in it (issue 35, item 2)?

The one place every path asks: capture and re-capture (`capture_plan`), backfill (through capture),
the grounding of a model's profile updates and of its hypotheses (`memory.capture.grounding`). A
message is evidence only when it is this customer's own effective inbound message, its words as
received can be opened, and the safety gate lets them through (a credential, or a secret announced
in the message before, blocks it). What is read is read from those words with personal numbers cut
out, by `extract` with the message's `ExtractContext`: the candidates capture may write by itself,
and the proposals held back for a supervisor.

`value_tier` answers for one value: written by itself (AUTO), only proposed (PROPOSED, with the
reading that held it back), or not read at all (None).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conversations.models import Customer, MessageDirection
from conversations.received import received_text, wholly_masked
from qiwei_site.platform.sealing import SealBroken
from qiwei_site.reading.extract import Candidate, ExtractContext, Extraction, extract
from qiwei_site.reading.grounding import carries_content, is_small_talk, read_field
from qiwei_site.reading.safety import CREDENTIAL, ScanResult, scan, without_personal_numbers

NOT_FOUND = "依据的消息不存在"
OTHER_CUSTOMER = "依据的消息属于其他客户"
NOT_INBOUND = "依据的消息不是客户原话"
NOT_EFFECTIVE = "依据的消息已失效"
UNSEALABLE = "依据的消息原文无法解封，无法核对"
BLOCKED = "依据的消息被安全闸拦截"
SMALL_TALK = "依据的消息只是寒暄或应答，不含客户情况"
NO_CONTENT = "依据的消息除被遮蔽的个人号码外没有内容"

AUTO, PROPOSED = "auto", "proposed"


@dataclass(frozen=True)
class Evidence:
    """One message judged as evidence: why it is none (`refusal`), the gate's verdict, the words the
    reader read (personal numbers cut out) and what it read there."""

    message_id: int | None
    refusal: str | None = None
    scan: ScanResult | None = None
    words: str = ""
    context: ExtractContext | None = None
    extraction: Extraction | None = None

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


def message_evidence(message: Any, *, customer: Customer, context: ExtractContext | None = None) -> Evidence:
    """Judge one message (a `Message`, or None when the cited id names none) as this customer's
    evidence, and read it when it is. `context` is what extraction reads beside the words; without
    one the message is judged but not read."""
    if message is None:
        return Evidence(message_id=None, refusal=NOT_FOUND)
    message_id = message.pk
    if message.customer_id != customer.pk:
        return Evidence(message_id=message_id, refusal=OTHER_CUSTOMER)
    if message.direction != MessageDirection.INBOUND:
        return Evidence(message_id=message_id, refusal=NOT_INBOUND)
    if not message.is_effective:
        return Evidence(message_id=message_id, refusal=NOT_EFFECTIVE)
    try:
        received = received_text(message)
    except SealBroken:
        return Evidence(message_id=message_id, refusal=UNSEALABLE)
    result = scan(received)
    if not result.blocked and wholly_masked(message.text):
        # A secret announced in the message before: blocked (and alerted) as the credential it is.
        result = ScanResult(blocked=True, categories=[CREDENTIAL], rules=["announced_secret"], spans=result.spans)
    if result.blocked:
        return Evidence(message_id=message_id, refusal=BLOCKED, scan=result)
    words = without_personal_numbers(received, result.spans)
    extraction = extract(words, context) if context is not None else None
    return Evidence(message_id=message_id, scan=result, words=words, context=context, extraction=extraction)


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
    "NO_CONTENT",
    "OTHER_CUSTOMER",
    "PROPOSED",
    "SMALL_TALK",
    "UNSEALABLE",
    "Evidence",
    "message_evidence",
    "value_tier",
]
