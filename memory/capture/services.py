"""The capture service: one inbound customer message → safety gate → extraction → memory writes.

Two phases, so no write lock is held while the message is read: `capture_plan` scans and extracts
(reads only), `capture_apply` writes what the plan found in one transaction with the message id as
evidence — every value through the one write path (`memory.items.MemoryWrites`, the batched form of
`memory_item_put`: the customer's memory read once, each value decided in memory, items, history
and audit rows written in bulk, the snapshot rendered once). A blocked message writes nothing but
an audit row and an alert.

Extraction is given what the message alone does not say (`ExtractContext`): when it was sent, in
local time (relative dates resolve against it), the agent's message just before it (a bare answer
answers that question), and the account's place names from the knowledge base (parsed once per
knowledge-index version). A dated fact is written with its `expires_at`; an acceptance ("其实一楼也
可以考虑") is written only where it supersedes an active item, through the same path.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, cast

from django.conf import settings
from django.utils import timezone

from conversations.models import (
    AlertKind,
    AlertLevel,
    AuditAction,
    AuditEvent,
    CustomerProfile,
    Message,
    MessageDirection,
)
from conversations.services import alert_raise
from knowledge.context import knowledge_version_token
from knowledge.models import KnowledgeSection
from memory.capture.evidence import UNSEALABLE, keep_reading, message_evidence
from memory.capture.selectors import message_previous, messages_before, previous_message_fields
from memory.items import (
    CREATED,
    EVIDENCE_ADDED,
    PROPOSAL_EVIDENCE,
    PROPOSED,
    REFUSED,
    SUPERSEDED,
    UNCHANGED,
    ItemPut,
    MemoryWrites,
)
from memory.models import MemoryCreatedBy, MemoryDirection, MemoryItem, MessageReading
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.errors import ValidationFailed
from qiwei_site.platform.history import Actor
from qiwei_site.platform.sealing import SealBroken
from qiwei_site.platform.tenancy import account_atomic
from qiwei_site.reading.extract import (
    FACT,
    RELEASE_ALONE,
    Candidate,
    ExtractContext,
    extended_value,
    extract_candidates,
    release_targets,
)
from qiwei_site.reading.safety import PERSONAL_NUMBER_CATEGORIES, ScanResult, category_label
from qiwei_site.reading.values import PlaceNames, parse_place_list
from qiwei_site.reading.values.places import PLACE_HEADING_RE
from qiwei_site.reading.values.vocabulary import VOCABULARY_HEADING_RE, Vocabulary, parse_vocabulary

CAPTURE_REASON = "客户原话自动提取"
PROPOSAL_REASON = "客户原话中像是需求，但不满足自动写入的条件，待主管审核"
STALE = "stale"


@dataclass
class CaptureOutcome:
    message_id: int
    blocked: bool = False
    categories: list[str] = field(default_factory=list)
    candidates: int = 0
    # outcome of each put: created | evidence_added | superseded | unchanged
    outcomes: dict[str, int] = field(default_factory=dict)
    item_ids: list[int] = field(default_factory=list)

    @property
    def written(self) -> int:
        return sum(
            n
            for outcome, n in self.outcomes.items()
            if outcome not in {UNCHANGED, STALE, REFUSED, PROPOSED, PROPOSAL_EVIDENCE}
        )

    @property
    def proposed(self) -> int:
        """Proposals written for a supervisor (new ones; a repeated one only adds evidence)."""
        return self.outcomes.get(PROPOSED, 0)

    @property
    def unchanged(self) -> int:
        return sum(self.outcomes.get(outcome, 0) for outcome in (UNCHANGED, STALE, REFUSED))


@dataclass(frozen=True)
class CapturePlan:
    """What one message asks capture to write, found before any write transaction opens: the safety
    scan's verdict and the extracted candidates (`scan` is None for a message not in effect, or not
    read: past the reader's bound, `unread` says so), and the reading made now, kept by
    `capture_apply` with the writes (None when the message's kept reading held)."""

    message: Message
    scan: ScanResult | None = None
    candidates: tuple[Candidate, ...] = ()
    releases: tuple[Candidate, ...] = ()
    proposals: tuple[Candidate, ...] = ()  # held back for a supervisor (issue 35)
    reading: MessageReading | None = None
    unread: str = ""

    @property
    def blocked(self) -> bool:
        return self.scan is not None and self.scan.blocked

    @property
    def personal_numbers(self) -> bool:
        return self.scan is not None and any(span.category in PERSONAL_NUMBER_CATEGORIES for span in self.scan.spans)

    @property
    def writes_nothing(self) -> bool:
        return not (self.blocked or self.personal_numbers or self.candidates or self.releases or self.proposals)


def _audit_blocked(message: Message, categories: list[str], actor: Actor) -> None:
    # Re-capturing the same message (a retry, a second backfill) must not pile up audit rows.
    already = AuditEvent.objects.filter(
        action=AuditAction.MEMORY_CAPTURE_BLOCKED,
        conversation_id=message.customer.conversation_id,
        payload__message_id=message.pk,
    ).exists()
    if not already:
        audit_record(
            action=AuditAction.MEMORY_CAPTURE_BLOCKED,
            conversation_id=message.customer.conversation_id,
            actor=actor,
            reason="安全扫描拦截：提示注入或凭证，不写入记忆",
            payload={"message_id": message.pk, "categories": categories},
        )


def _is_stale(candidate: Candidate, message: Message, writes: MemoryWrites) -> bool:
    """True when newer knowledge already governs this key: an older message never overrides it.

    Retried jobs run out of order, and a backfill replays history after staff edited the profile;
    in both cases the newer statement (or the human edit) must stand.
    """
    for key in dict.fromkeys([candidate.key, *candidate.supersedes_keys]):
        item = writes.active(key)
        if item is None:
            continue
        if item.key == candidate.key and item.type == candidate.type and item.content == candidate.content:
            continue  # the same statement again only adds evidence
        sources = [int(i) for i in item.source_message_ids or []]
        if sources:
            if writes.sent_after(sources, message.sent_at):
                return True
        elif item.updated_at > message.sent_at:
            return True
    return False


def _evidence_to_read(candidates: list[Candidate], writes: MemoryWrites) -> set[int]:
    """The messages cited by active items a candidate would change: their times decide staleness
    and "a newer customer statement stands", so they are read at once, in one query."""
    ids: set[int] = set()
    for candidate in candidates:
        for key in (candidate.key, *candidate.supersedes_keys):
            item = writes.active(key)
            if item is None or (item.key == candidate.key and item.content == candidate.content):
                continue
            sources = [int(i) for i in item.source_message_ids or []]
            if not writes.evidence_known(sources):  # read with the item already
                ids.update(sources)
    return ids


def _item_put(candidate: Candidate, message: Message) -> ItemPut:
    """What capture puts for one candidate read from one inbound message (automatic or proposed)."""
    return ItemPut(
        type=candidate.type,
        key=candidate.key,
        content=candidate.content,
        source_message_ids=[message.pk],
        confidence=candidate.confidence,
        importance=candidate.importance,
        direction=MemoryDirection.INBOUND,
        created_by=MemoryCreatedBy.AUTO,
        expires_at=candidate.expires_at,
        supersedes_keys=candidate.supersedes_keys,
        held_back=candidate.held_back,
        clause=candidate.clause if candidate.held_back else "",
    )


def _put(
    candidate: Candidate, *, message: Message, actor: Actor, writes: MemoryWrites
) -> tuple[str, MemoryItem | None]:
    result = writes.put(_item_put(candidate, message), actor=actor, reason=CAPTURE_REASON)
    return result.outcome, result.item


def _propose(candidate: Candidate, *, message: Message, actor: Actor, writes: MemoryWrites) -> str:
    """Hold a reading back for a supervisor: a proposal with the clause and the rule (issue 35).

    Its review period runs from when we learnt it (the message's sending, or its arrival when it came
    later, as an import of older history does), so a message that arrived long ago, read again by
    backfill or re-capture, proposes nothing, and an expired proposal does not come back. An
    alternative ("如果便宜，滨江那边也行") is proposed as the field's value with it added, so accepting
    it adds the area instead of replacing the others."""
    from memory.profile import profile_item_content

    learnt = max(filter(None, [message.sent_at, message.created_at]))
    expires_at = learnt + timedelta(days=settings.QIWEI_MEMORY_PROPOSAL_TTL_DAYS)
    if expires_at <= timezone.now():
        return STALE
    if candidate.extends and candidate.field:
        current = (
            CustomerProfile.objects.filter(customer=message.customer).values_list(candidate.field, flat=True).first()
        )
        value = extended_value(current or "", candidate)
        candidate = dataclasses.replace(
            candidate, value=value, content=profile_item_content(candidate.field, value), extends=False
        )
    result = writes.propose(_item_put(candidate, message), actor=actor, reason=PROPOSAL_REASON, expires_at=expires_at)
    return result.outcome


def _put_profile(
    candidate: Candidate, *, message: Message, actor: Actor, writes: MemoryWrites
) -> tuple[str, MemoryItem | None]:
    """A declared profile fact updates the profile and its `profile:<field>` item together, so the
    structured profile and long-term memory never disagree (spec §3)."""
    from memory.profile import customer_profile_update, profile_item_key

    field_name = candidate.field or ""
    key = profile_item_key(field_name)

    def state() -> tuple[MemoryItem, str, list[int]] | None:
        item = writes.active(key)
        return (item, item.content, list(item.source_message_ids)) if item else None

    before = state()
    value = candidate.value
    if candidate.extends:  # "滨江那边也行": one more area beside those the profile holds
        profile = CustomerProfile.objects.filter(customer=message.customer).values_list(field_name, flat=True).first()
        value = extended_value(profile or "", candidate)
    customer_profile_update(
        customer=message.customer,
        changes={field_name: value},
        actor=actor,
        reason=CAPTURE_REASON,
        source_message_ids=[message.pk],
        expires_at=candidate.expires_at,
        writes=writes,  # capture writes the message's batch and refreshes the snapshot once
    )
    after = state()
    if after is None:
        return UNCHANGED, None
    if before is None:
        return CREATED, after[0]
    if after[0] is not before[0]:
        return SUPERSEDED, after[0]
    return (UNCHANGED if after[1:] == before[1:] else EVIDENCE_ADDED), after[0]


# --- what extraction reads beside the words ------------------------------------------------

_knowledge_lock = threading.Lock()
_knowledge_cache: dict[str, tuple[Any, Any]] = {}


def _from_knowledge(name: str, heading_re: re.Pattern[str], build: Callable[[list[tuple[str, str]]], Any]) -> Any:
    """What `build` makes of the knowledge-base sections whose heading matches, read and parsed once
    per knowledge-index version (its token, kept in Django's cache: `knowledge_version_token`)."""
    version = knowledge_version_token()
    cached = _knowledge_cache.get(name)
    if cached is not None and cached[0] == version:
        return cached[1]
    sections = list(
        KnowledgeSection.objects.filter(heading__regex=heading_re.pattern)
        .order_by("document_id", "order")
        .values_list("heading", "text")
    )
    value = build(sections)
    with _knowledge_lock:
        _knowledge_cache[name] = (version, value)
    return value


def account_place_names() -> PlaceNames:
    """The place names of the knowledge base's place sections (片区, 板块, 商圈…), on top of the
    gazetteer."""
    return cast(
        PlaceNames,
        _from_knowledge(
            "places",
            PLACE_HEADING_RE,
            lambda sections: PlaceNames(
                [name for heading, text in sections for name in parse_place_list(text, heading=heading)]
            ),
        ),
    )


def _vocabulary_of(sections: list[tuple[str, str]]) -> Vocabulary:
    groups: dict[str, list[str]] = {}
    for heading, text in sections:
        for group, words in parse_vocabulary(text, heading=heading).items():
            groups.setdefault(group, []).extend(words)
    return Vocabulary(groups)


def account_vocabulary() -> Vocabulary:
    """The trade vocabulary of the knowledge base's vocabulary sections (业务词汇, 售后方式, 科目…), on
    top of the built-in one (sizes, colours, carriers)."""
    return cast(Vocabulary, _from_knowledge("vocabulary", VOCABULARY_HEADING_RE, _vocabulary_of))


def extract_context(
    message: Message,
    *,
    previous: tuple[str | None, str | None] | None = None,
    places: PlaceNames | None = None,
    vocabulary: Vocabulary | None = None,
) -> ExtractContext:
    """What extraction needs beside the words: the local send time, the agent's message right before
    this one (if the message before it is the agent's), and the account's place names.

    `previous`: (direction, text) of the message before — (None, None) when there is none — if the
    caller read it already (a job reads it with its message); otherwise it is read here. `places` and
    `vocabulary`: the account's, if the caller reads many messages at once (grounding)."""
    if previous is None:
        previous = message_previous(message)
    direction, text = previous
    return ExtractContext(
        sent_at=timezone.localtime(message.sent_at),
        previous_outbound=(text or "") if direction == MessageDirection.OUTBOUND else "",
        places=places if places is not None else account_place_names(),
        vocabulary=vocabulary if vocabulary is not None else account_vocabulary(),
    )


# --- the two phases ----------------------------------------------------------------------------


def capture_plan(message: Message, *, context: ExtractContext | None = None) -> CapturePlan:
    """Scan and extract one inbound message, writing nothing (`context`: the caller's, if it has one).
    The message is judged and read by the one evidence check (`memory.capture.evidence`)."""
    if message.direction != MessageDirection.INBOUND:
        raise ValidationFailed(
            "只从客户发来的消息提取记忆 (capture reads inbound customer messages only).", code="not_inbound"
        )
    if not message.is_effective:
        return CapturePlan(message=message)
    # What the customer sent (a sealed original opened): the gate and extraction judge that, and
    # store nothing of it but what the guard lets through (a credential blocks, numbers are cut out).
    # Read once: a re-run (a retry, backfill) uses the reading kept beside the message while it holds.
    evidence = message_evidence(
        message,
        customer=message.customer,
        context=context if context is not None else extract_context(message),
        bounded=False,  # a worker's reading: no request waits on it
        keep=False,  # kept by capture_apply, with the writes
    )
    if evidence.refusal == UNSEALABLE:
        raise SealBroken(f"the original of message {message.pk} cannot be opened")  # retried, then alerted
    if evidence.scan is not None and evidence.scan.blocked:
        return CapturePlan(message=message, scan=evidence.scan, reading=evidence.fresh)
    if evidence.scan is None:  # past the reader's bound: not read, no memory
        return CapturePlan(message=message, reading=evidence.fresh, unread=evidence.refusal or "")
    extraction = evidence.extraction
    assert extraction is not None
    # Facts are never written from hedged or inferred values: extraction holds those back.
    return CapturePlan(
        message=message,
        scan=evidence.scan,
        candidates=tuple(extraction.candidates),
        releases=tuple(extraction.releases),
        proposals=tuple(extraction.proposals),
        reading=evidence.fresh,
    )


def capture_apply(plan: CapturePlan, *, actor: Actor = "capture", refresh_snapshot: bool = True) -> CaptureOutcome:
    """Write what a plan found, in the caller's transaction (or one of its own), and keep the reading
    it made. Idempotent per message."""
    message = plan.message
    outcome = CaptureOutcome(message_id=message.pk, candidates=len(plan.candidates))
    keep_reading(plan.reading)
    if plan.scan is None or plan.writes_nothing:
        return outcome  # no transaction of its own: SQLite would take its write lock for nothing
    with account_atomic(savepoint=False):
        if plan.blocked:
            outcome.blocked = True
            outcome.categories = list(plan.scan.categories)
            _audit_blocked(message, outcome.categories, actor)
            alert_raise(
                customer=message.customer,
                kind=AlertKind.MESSAGE_BLOCKED,
                level=AlertLevel.WARNING,
                text=(
                    f"客户消息 #{message.pk} 被安全扫描拦截"
                    f"（{'、'.join(category_label(c) for c in outcome.categories)}），未写入记忆，请人工查看"
                ),
                cause=f"message:{message.pk}",
                actor=actor,
                reason="安全扫描拦截",
            )
            return outcome
        if plan.personal_numbers:
            alert_raise(
                customer=message.customer,
                kind=AlertKind.PERSONAL_NUMBER,
                level=AlertLevel.INFO,
                text=f"客户消息 #{message.pk} 含个人号码（身份证/银行卡/手机号），展示时已遮蔽，未写入记忆",
                cause=f"message:{message.pk}",
                actor=actor,
                reason="消息含个人号码",
            )
        if not plan.candidates and not plan.releases and not plan.proposals:
            return outcome
        writes = MemoryWrites.load(message.customer, messages=[message])
        # An acceptance is written only where it relaxes an active item ("不考虑：一楼" → "可以接受：一楼");
        # with nothing to relax it is only something a supervisor may want to know: a proposal.
        releases: list[Candidate] = []
        lone: list[Candidate] = []
        for release in plan.releases:
            (releases if any(writes.active(key) for key in release_targets(release)) else lone).append(release)
        todo = [*plan.candidates, *releases]
        proposals = [*plan.proposals, *(dataclasses.replace(r, held_back=RELEASE_ALONE) for r in lone)]
        for proposal in proposals:
            proposed = _propose(proposal, message=message, actor=actor, writes=writes)
            outcome.outcomes[proposed] = outcome.outcomes.get(proposed, 0) + 1
        if not todo:
            writes.flush(refresh_snapshot=False, reason=PROPOSAL_REASON)
            return outcome
        outcome.candidates += len(releases)
        writes.messages_prefetch(_evidence_to_read(todo, writes))
        items: list[MemoryItem] = []
        for candidate in todo:
            if _is_stale(candidate, message, writes):
                outcome.outcomes[STALE] = outcome.outcomes.get(STALE, 0) + 1
                continue
            put = _put_profile if candidate.field and candidate.value else _put
            written, item = put(candidate, message=message, actor=actor, writes=writes)
            outcome.outcomes[written] = outcome.outcomes.get(written, 0) + 1
            if item is not None:
                items.append(item)
        writes.flush(refresh_snapshot=refresh_snapshot, reason=CAPTURE_REASON)
        outcome.item_ids = [item.pk for item in items]
    return outcome


def capture_message(
    *,
    message: Message,
    actor: Actor = "capture",
    refresh_snapshot: bool = True,
    context: ExtractContext | None = None,
    within: Callable[[], None] | None = None,
) -> CaptureOutcome:
    """Capture what an inbound customer message explicitly states. Idempotent per message.

    The message is scanned and extracted before the write transaction opens (`capture_plan`);
    `within`, if given, runs inside that transaction after the writes — a job marks itself done
    there, so its effects and its `done` commit together, or neither does — and with no transaction
    open when the message writes nothing and its kept reading held (a reading made now is kept in
    the same transaction). `context`: what extraction reads beside the words, when the caller read
    it already."""
    plan = capture_plan(message, context=context)
    if plan.writes_nothing and plan.reading is None:
        outcome = capture_apply(plan, actor=actor, refresh_snapshot=refresh_snapshot)
        if within is not None:
            within()
        return outcome
    with account_atomic():
        outcome = capture_apply(plan, actor=actor, refresh_snapshot=refresh_snapshot)
        if within is not None:
            within()
    return outcome


__all__ = [
    "CAPTURE_REASON",
    "CREATED",
    "EVIDENCE_ADDED",
    "FACT",
    "STALE",
    "SUPERSEDED",
    "UNCHANGED",
    "CaptureOutcome",
    "CapturePlan",
    "account_place_names",
    "account_vocabulary",
    "capture_apply",
    "capture_message",
    "capture_plan",
    "extract_candidates",
    "extract_context",
    "messages_before",
    "previous_message_fields",
]
