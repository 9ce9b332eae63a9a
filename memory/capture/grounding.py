"""Grounding a model's profile updates and hypotheses in the customer's own messages, read the way
capture reads them.

Which messages: this customer's effective inbound messages, judged and read by the one evidence
check (`memory.capture.evidence`: gate-passed, personal numbers cut out, `extract` with the
`ExtractContext` of `extract_context` — the local send time, the agent's message just before it, the
account's places). Profile updates look at the newest `GROUNDING_WINDOW` of them, newest first;
whether a read field agrees with the model's value is the reader's call
(`qiwei_site.reading.grounding.reads_same`). A value the reader reads there as something capture
writes by itself is kept; one it reads only as a proposal (asked about, bargained over…) is
proposed to a supervisor, not written (issue 35); one it does not read is dropped.

The newest statement of a field decides: a value the customer stated once but has since restated
differently ("预算4500" … "预算改成6000") is dropped. Bounded: each message is judged at most once
per call, and judging stops as soon as every proposed field is decided.

Read once (issue 36, item 9): each message is judged through the reading capture kept beside it;
one with no reading that holds is read inside the request only within `READ_IN_REQUEST_CHARS`
characters in all (`evidence.reading_budget`). Past that, judging stops — an older message never
decides over a newer one left unread — the values still undecided are dropped (`NOT_READ_NOW`),
and a reading job reads the rest outside the request (`jobs.readings_job_enqueue`).

A hypothesis is kept only when every message it cites is this customer's admissible evidence that
carries content, it is about what those messages talk about (a shared topic, place or trade term:
`qiwei_site.reading.hypotheses`), it is no sensitive category of PIPL art. 28 and no claim of a
completed transaction, and it is not instruction-like.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from conversations.models import Customer, Message
from memory.capture.evidence import AUTO, NOT_READ_YET, PROPOSED, message_evidence, reading_budget, value_tier
from memory.capture.jobs import readings_job_enqueue
from memory.capture.readings import newest_inbound, reading_context
from memory.capture.services import account_place_names, account_vocabulary
from qiwei_site.reading.extract.bound import READ_LIMIT_CHARS
from qiwei_site.reading.grounding import read_field
from qiwei_site.reading.guard import object_refusal, value_refusal
from qiwei_site.reading.hypotheses import sensitive, shared_topics

# What one call may read afresh: one message at the reader's bound. Capture reads every message when
# it arrives, so a request meets at most the newest one or two unread; history older than the kept
# readings (or read by an older reader) is read by a reading job instead (`readings_refresh`).
READ_IN_REQUEST_CHARS = READ_LIMIT_CHARS
NOT_READ = "客户原话中找不到该值"
NOT_READ_NOW = "客户较早的消息尚未读取完毕，本次未能核对该值（已安排读取，下次生成时再核对）"
INSTRUCTION_LIKE = "该值像指令或角色，不是客户情况"
RESTATED = "客户最近一次说的是另一个值"
PROPOSED_TO_REVIEW = "客户只在问句、议价等说法中提到该值，已作为提议交主管审核，未写入画像"
# A turn's hypotheses beyond this many are dropped (a chatty model cannot flood the review queue).
HYPOTHESES_PER_TURN = 3
OFF_TOPIC = "推断与所依据的客户消息谈的不是同一件事"


@dataclass(frozen=True)
class ProfileGrounding:
    """The model's profile updates as the reader judged them: those kept, the message each rests on
    (per field), and those dropped with the reason (`{"field", "value", "reason"}`)."""

    kept: dict[str, str] = field(default_factory=dict)
    evidence: dict[str, list[int]] = field(default_factory=dict)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    messages_read: int = 0  # judged, through their kept readings or read now
    # Read only as a proposal (issue 35): {field: {"value", "message_ids", "held_back", "clause"}}.
    proposed: dict[str, dict[str, Any]] = field(default_factory=dict)
    messages_read_now: int = 0  # of those, read inside this call (no reading that held)
    unread_left: bool = False  # judging stopped at a message the budget left unread


def profile_updates_ground(*, customer: Customer, updates: dict[str, str]) -> ProfileGrounding:
    """Keep a proposed value only where the reader reads that field with an equal canonical value
    from one of the customer's own gate-passed messages; drop the rest with a reason."""
    dropped: list[dict[str, Any]] = []
    pending: dict[str, str] = {}
    for key, value in updates.items():
        if value_refusal(key, value):
            dropped.append({"field": key, "value": value, "reason": INSTRUCTION_LIKE})
        else:
            pending[key] = value
    kept: dict[str, str] = {}
    evidence: dict[str, list[int]] = {}
    proposed: dict[str, dict[str, Any]] = {}
    restated: dict[str, str] = {}  # the newest statement says otherwise: kept out, reason still to find
    read = read_now = 0
    unread_left = False
    if pending:
        places, vocabulary = account_place_names(), account_vocabulary()
        with reading_budget(READ_IN_REQUEST_CHARS) as budget:
            before = budget.read
            for message in newest_inbound(customer):
                context = reading_context(message, places, vocabulary)
                judged = message_evidence(message, customer=customer, context=context)
                if judged.refusal == NOT_READ_YET:
                    unread_left = True  # an older message must not decide over this one
                    break
                read += 1
                if not judged.admissible:
                    continue
                candidates = judged.candidates
                for key, value in list(restated.items()):
                    if read_field(key, value, candidates, context):  # said once, since restated otherwise
                        dropped.append({"field": key, "value": value, "reason": RESTATED})
                        del restated[key]
                for key, value in list(pending.items()):
                    tier = value_tier(judged, key, value)
                    if tier is not None and tier[0] == AUTO:
                        kept[key], evidence[key] = value, [message.pk]
                        del pending[key]
                    elif tier is not None and tier[0] == PROPOSED:
                        candidate = tier[1]
                        proposed[key] = {
                            "value": value,
                            "message_ids": [message.pk],
                            "held_back": candidate.held_back,
                            "clause": candidate.clause[:300],
                        }
                        dropped.append({"field": key, "value": value, "reason": PROPOSED_TO_REVIEW})
                        del pending[key]
                    elif any(c.field == key and c.value and not c.extends for c in candidates):
                        # The customer's newest statement of this field says otherwise: it decides.
                        restated[key] = pending.pop(key)
                if not pending and not restated:
                    break
            read_now = budget.read - before
    if unread_left:
        readings_job_enqueue(customer=customer)
    dropped.extend(
        {"field": key, "value": value, "reason": NOT_READ_NOW if unread_left else NOT_READ}
        for key, value in pending.items()
    )
    dropped.extend({"field": key, "value": value, "reason": NOT_READ} for key, value in restated.items())
    # In the model's order, for the draft and the trace.
    order = {key: index for index, key in enumerate(updates)}
    dropped.sort(key=lambda item: order[item["field"]])
    kept = {key: kept[key] for key in updates if key in kept}
    return ProfileGrounding(
        kept=kept,
        evidence=evidence,
        dropped=dropped,
        messages_read=read,
        proposed=proposed,
        messages_read_now=read_now,
        unread_left=unread_left,
    )


# --- hypotheses ---------------------------------------------------------------------------------


class Hypothesis(Protocol):
    """What grounding needs of a model's hypothesis (the pipeline's `TurnHypothesis`)."""

    @property
    def key(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def message_ids(self) -> tuple[int, ...]: ...


def hypotheses_ground(
    *, customer: Customer, hypotheses: Sequence[Hypothesis]
) -> tuple[list[int], list[tuple[int, str]]]:
    """(indexes of the hypotheses kept, (index, reason) of those dropped), at most
    `HYPOTHESES_PER_TURN` kept. Each cited message is judged by the one evidence check and must carry
    content; the hypothesis must share a topic with what those messages say, fall under no
    sensitive category and claim no completed transaction, and describe the customer's world
    rather than instruct us (`object_refusal`). Our own replies are outbound: they never count."""
    if not hypotheses:
        return [], []
    ids = {message_id for hypothesis in hypotheses for message_id in hypothesis.message_ids}
    messages = {
        message.pk: message for message in Message.objects.filter(pk__in=ids).select_related("secret", "reading")
    }
    for message in messages.values():
        secret = getattr(message, "secret", None)
        message.sealed_text = secret.sealed if secret is not None else None  # type: ignore[attr-defined]
    places, vocabulary = account_place_names(), account_vocabulary()
    judged: dict[int, Any] = {}
    kept: list[int] = []
    dropped: list[tuple[int, str]] = []
    with reading_budget(READ_IN_REQUEST_CHARS) as budget:
        for message_id in sorted(ids, reverse=True):  # the newest first, if the budget runs out
            judged[message_id] = message_evidence(messages.get(message_id), customer=customer)
    if budget.exhausted:
        readings_job_enqueue(customer=customer)
    for index, hypothesis in enumerate(hypotheses):
        refusal = None
        words: list[str] = []
        for message_id in hypothesis.message_ids:
            evidence = judged[message_id]
            refusal = evidence.refusal or evidence.content_refusal
            if refusal:
                break
            words.append(evidence.words)
        if refusal is None and (guard := object_refusal(hypothesis.text)):
            refusal = f"推断像指令，不是客户情况（{guard}）"
        category = None if refusal else sensitive(hypothesis.text)
        if category is not None:
            refusal = f"推断涉及{category.label}，不作为推断记录（须由人确认并记入业务状态或不记录）"
        if refusal is None and not shared_topics(hypothesis.text, words, places=places, vocabulary=vocabulary):
            refusal = OFF_TOPIC
        if refusal is None and len(kept) >= HYPOTHESES_PER_TURN:
            refusal = f"本轮推断超过 {HYPOTHESES_PER_TURN} 条上限"
        if refusal:
            dropped.append((index, refusal))
        else:
            kept.append(index)
    return kept, dropped
