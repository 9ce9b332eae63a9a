"""The one write path for a memory item's value: create, add evidence, or supersede (spec §3).

Capture, re-capture, backfill, grounding, profile edits and human additions all go through
`memory_item_put`, so three rules live in one place:

- one active item per (customer, key); a new value supersedes the old one, which is kept and linked;
- an automatic write never undoes a supervisor's decision (`memory.decisions`);
- a `profile:<field>` item and the profile field are one truth: writing the item writes the field
  (and `memory.profile.customer_profile_update`, the other way in, writes both).

Audit payloads carry ids and types, never the content, so a later `forget` leaves nothing behind.

`memory_items_put` is the batched form of the same path (`memory_item_put` is it with one value):
`MemoryWrites` reads the customer's active items, whether any decision exists and the current
snapshot head once, inside the write transaction; each value is decided in memory, in order, so
each sees the ones before it; then `flush` writes the items, their history rows (the rows
simple-history's `bulk_history_create` makes, '+' and '~' together in one statement) and the audit
rows in bulk, and renders the snapshot once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connections
from django.utils import timezone

from conversations.models import AuditAction, Customer, CustomerProfile, Message
from memory import sql
from memory.decisions import CustomerDecisions, automatic_write_refusal, same_meaning
from memory.models import (
    MemoryCreatedBy,
    MemoryDirection,
    MemoryItem,
    MemoryStatus,
    MemoryType,
)
from memory.selectors import (
    customer_lock,
    customer_profile_locked,
    memory_decision_rows,
    memory_items_active_locked,
    snapshot_head_read,
)
from memory.snapshots import SnapshotHead, snapshot_write
from qiwei_site.platform.audit import AuditEntry, audit_records_bulk
from qiwei_site.platform.errors import ValidationFailed
from qiwei_site.platform.history import Actor, history_rows, history_rows_insert, stamp_history
from qiwei_site.platform.sql import insert, update_rows
from qiwei_site.platform.tenancy import account_atomic, current_alias
from qiwei_site.reading.fields import (
    PROFILE_FIELD_SPECS,
    profile_field_of,
    profile_item_content,
    profile_item_value,
)
from qiwei_site.reading.guard import item_refusal
from qiwei_site.reading.normalise import normalize_content

CREATED = "created"
EVIDENCE_ADDED = "evidence_added"
SUPERSEDED = "superseded"
UNCHANGED = "unchanged"
REFUSED = "refused"  # an automatic write that would have undone a supervisor's decision, or an instruction
PROPOSED = "proposed"  # held back for a supervisor: a proposal in the review queue (issue 35)
PROPOSAL_EVIDENCE = "proposal_evidence_added"  # the same proposal again: its evidence grew, no memory changed

PROFILE_FIELD_MAX_LENGTH = {spec.name: spec.max_length for spec in PROFILE_FIELD_SPECS}


@dataclass(frozen=True)
class PutResult:
    item: MemoryItem | None  # None only when REFUSED with no active item under the key
    outcome: str  # created | evidence_added | superseded | unchanged | refused
    superseded: tuple[MemoryItem, ...] = ()
    refusal: str = ""

    @property
    def changed(self) -> bool:
        return self.outcome not in (UNCHANGED, REFUSED, PROPOSED, PROPOSAL_EVIDENCE)

    @property
    def superseded_ids(self) -> tuple[int, ...]:
        """Ids of the items this put retired (known once the batch is flushed)."""
        return tuple(item.pk for item in self.superseded)


@dataclass(frozen=True)
class ItemPut:
    """One value to put under a key: the arguments of `memory_item_put` besides customer, actor, reason."""

    type: str
    key: str
    content: str
    source_message_ids: Sequence[int] = ()
    confidence: float = 0.8
    importance: int = 3
    direction: str = MemoryDirection.INBOUND
    created_by: str = MemoryCreatedBy.AUTO
    expires_at: datetime | None = None
    supersedes_keys: Sequence[str] = ()
    audit_action: AuditAction = AuditAction.MEMORY_ITEM_CAPTURED
    automatic: bool | None = None
    sync_profile: bool = True
    # A proposal's reading (`propose`): the row that held it back and the customer's clause.
    held_back: str = ""
    clause: str = ""


# --- profile items: the field and its `profile:<field>` item, written together ---------------


def profile_follow(item: MemoryItem, *, actor: Actor, reason: str) -> None:
    """Write the profile field of a `profile:<field>` item so the two never disagree (for writes
    outside a batch; `MemoryWrites` stages the same change and saves the profile once)."""
    field = profile_field_of(item.key)
    if field is None:
        return
    value = profile_item_value(field, item.content)
    profile = CustomerProfile.objects.select_for_update().filter(customer=item.customer).first()
    if profile is None:
        profile = CustomerProfile(customer=item.customer)
    if getattr(profile, field) == value and profile.pk is not None:
        return
    setattr(profile, field, value)
    stamp_history(profile, actor=actor, reason=reason)
    if profile.pk is None:
        profile.save()
    else:
        profile.save(update_fields=[field, "updated_at"])


def profile_field_release(item: MemoryItem, *, actor: Actor, reason: str) -> bool:
    """A `profile:<field>` item left memory (rejected, expired, forgotten): clear the field if it
    still holds that item's value (decision: cleared, not the previous value, which a supervisor or
    the customer already replaced once). Returns whether the field changed."""
    field = profile_field_of(item.key)
    if field is None:
        return False
    profile = CustomerProfile.objects.select_for_update().filter(customer=item.customer).first()
    if profile is None or getattr(profile, field) != profile_item_value(field, item.content):
        return False
    setattr(profile, field, "")
    stamp_history(profile, actor=actor, reason=reason)
    profile.save(update_fields=[field, "updated_at"])
    return True


def item_values_validate(*, type: str, key: str, content: str, confidence: float, importance: int) -> None:
    """Refuse a memory value no write path may store (shared by capture and governance)."""
    field = profile_field_of(key)
    if field is not None:
        value = profile_item_value(field, content)
        if len(value) > PROFILE_FIELD_MAX_LENGTH[field]:
            raise ValidationFailed(
                f"画像字段 {field} 最长 {PROFILE_FIELD_MAX_LENGTH[field]} 个字符 "
                f"({field} is at most {PROFILE_FIELD_MAX_LENGTH[field]} chars).",
                code="profile_value_too_long",
            )
    if type not in MemoryType.values:
        raise ValidationFailed(f"未知的记忆类型 {type!r} (unknown memory type).", code="invalid_type")
    if not key or len(key) > 200:
        raise ValidationFailed("记忆键必须是 1–200 个字符 (key must be 1–200 chars).", code="invalid_key")
    if not content:
        raise ValidationFailed("记忆内容不能为空 (content must not be empty).", code="empty_content")
    if not 0.0 <= float(confidence) <= 1.0:
        raise ValidationFailed("置信度必须在 0 到 1 之间 (confidence must be within 0–1).", code="invalid_confidence")
    if not 1 <= int(importance) <= 5:
        raise ValidationFailed("重要性必须在 1 到 5 之间 (importance must be within 1–5).", code="invalid_importance")


def _item_validate(item: MemoryItem) -> None:
    try:
        # Constraints are the database's job (and item_values_validate's): checking them here
        # costs two queries per save.
        item.full_clean(exclude=["customer", "superseded_by"], validate_constraints=False)
    except ValidationError as exc:
        raise ValidationFailed("; ".join(exc.messages), code="invalid_memory_item") from None


def item_row_save(item: MemoryItem, *, actor: Actor, reason: str, update_fields: list[str] | None = None) -> None:
    """Validate and save one item row with its history user and reason (callers audit)."""
    _item_validate(item)
    stamp_history(item, actor=actor, reason=reason)
    if update_fields is not None:
        item.save(update_fields=[*update_fields, "updated_at"])
    else:
        item.save()


def _normalised(key: str, content: str) -> tuple[str | None, str]:
    """(profile field or None, the content as stored: `标签：值` for a profile item)."""
    content = normalize_content(content)
    field_name = profile_field_of(key)
    if field_name is not None:
        content = profile_item_content(field_name, profile_item_value(field_name, content))
    return field_name, content


@dataclass
class _StagedAudit:
    action: AuditAction
    actor: Actor
    reason: str
    payload: dict[str, Any]
    item: MemoryItem | None = None  # its id goes into the payload once the item is written
    superseded: tuple[MemoryItem, ...] = ()


@dataclass
class _Changed:
    item: MemoryItem
    fields: set[str] = field(default_factory=set)


# Of an item's sources (its message ids, in order) that are the customer's messages: the newest time
# one reached us and the newest sent time (None: none is).
EvidenceTimes = tuple[datetime | None, datetime | None]


@dataclass
class _State:
    items: list[MemoryItem]
    decisions: CustomerDecisions | None  # None: the customer has none
    snapshot_head: SnapshotHead  # on PostgreSQL read at flush instead, under the customer's lock
    profile: CustomerProfile | None = None
    profile_read: bool = False  # whether `profile` was read with the state (None then: there is none)
    evidence: dict[tuple[int, ...], EvidenceTimes] = field(default_factory=dict)  # read with the items


def _sources(item: MemoryItem) -> tuple[int, ...] | None:
    """The item's sources as the evidence times were read for them (a JSON list of integers), or None
    for anything else (a string id, a value that is no list): its times are then read when asked."""
    ids = item.source_message_ids
    if not isinstance(ids, list) or not all(type(i) is int for i in ids):
        return None
    return tuple(ids)


def _state_joined(customer: Customer, alias: str) -> _State:
    rows = sql.memory_state(customer.pk)
    head = rows[0]
    items: list[MemoryItem] = []
    evidence: dict[tuple[int, ...], EvidenceTimes] = {}
    for row in rows:
        item = sql.STATE_ITEM.optional(row, alias)
        if item is not None:
            items.append(item)
            sources = _sources(item)
            if sources is not None:
                evidence[sources] = (row.evidence_received, row.evidence_sent)
    return _State(
        items=items,
        decisions=CustomerDecisions(rows=memory_decision_rows(customer_id=customer.pk)) if head.has_decisions else None,
        snapshot_head=(head.head_version, head.head_sha256) if head.head_version is not None else None,
        profile=sql.STATE_PROFILE.optional(head, alias),
        profile_read=True,
        evidence=evidence,
    )


def _state_locked(customer: Customer, alias: str) -> _State:
    return _State(
        items=memory_items_active_locked(customer_id=customer.pk),
        decisions=CustomerDecisions(rows=memory_decision_rows(customer_id=customer.pk)),
        snapshot_head=None,
    )


class MemoryWrites:
    """One customer's memory for a batch of writes, read once inside the caller's write transaction.

    Reads (`load`), on SQLite: the customer with its profile, its active items, the snapshot head
    and whether any decision exists, in one statement (`memory.sql.memory_state`; the write transaction holds
    the database's only write lock), then the decisions if there are any. On PostgreSQL: the active
    items locked (as `memory_item_put` always locked the item it changed), then the decisions, in a
    statement of their own so they include whatever a writer holding one of those locks committed
    meanwhile; the head is read at `flush` under the customer's lock. Cited messages' times are read
    when a rule needs them, all missing ones at once. Every put is decided against this state as the
    puts before it left it, exactly as the same puts one by one would be; `flush` then writes:

    items leaving `active` where a new item takes their key (the unique index is checked per
    statement) → new items → links to new items and every other changed item → the items' history
    rows, `+` (as inserted) and `~` together in one statement → the profile and its history row →
    the audit rows → the snapshot, rendered once.
    """

    def __init__(
        self,
        customer: Customer,
        *,
        items: Iterable[MemoryItem],
        decisions: CustomerDecisions,
        snapshot_head: SnapshotHead,
        messages: Iterable[Message] = (),
        evidence: dict[tuple[int, ...], EvidenceTimes] | None = None,
    ) -> None:
        self.customer = customer
        self.decisions = decisions
        self.snapshot_head = snapshot_head
        self._active: dict[str, MemoryItem] = {}
        self._proposed: dict[str, MemoryItem] = {}  # pending proposals (issue 35)
        for item in items:
            item.customer = customer  # the caller's instance: no lazy reload per item
            (self._proposed if item.status == MemoryStatus.PROPOSED else self._active)[item.key] = item
        self._new: list[MemoryItem] = []
        self._changed: dict[int, _Changed] = {}
        self._links: list[tuple[MemoryItem, MemoryItem]] = []
        self._audits: list[_StagedAudit] = []
        self._times: dict[int, tuple[datetime, datetime]] = {}
        self._evidence = evidence or {}  # per loaded item's sources, when their times were read with it
        self._unknown_messages: set[int] = set()
        self._profile: CustomerProfile | None = None
        self._profile_fields: set[str] = set()
        self._promoted: set[str] = set()  # keys a proposal takes as it becomes active
        self._memory_changed = False
        self._reason = ""
        self.messages_seed((m.pk, m.sent_at, m.created_at) for m in messages if m.customer_id == customer.pk)

    @classmethod
    def load(cls, customer: Customer, *, messages: Iterable[Message] = ()) -> MemoryWrites:
        """Read the customer's memory state in the current write transaction (`messages`: ones the
        caller already holds and may cite, e.g. the message being captured)."""
        connection = connections[current_alias()]
        if not connection.in_atomic_block:
            raise RuntimeError("MemoryWrites.load() must run inside account_atomic(): decisions are atomic with writes")
        read = _state_locked if connection.features.has_select_for_update else _state_joined
        state = read(customer, connection.alias)
        writes = cls(
            customer,
            items=state.items,
            decisions=state.decisions or CustomerDecisions(),
            snapshot_head=state.snapshot_head,
            messages=messages,
            evidence=state.evidence,
        )
        if state.profile_read:
            writes._profile = state.profile or CustomerProfile(customer=customer)
            writes._profile.customer = customer
        return writes

    # --- reads over the state ------------------------------------------------------------------

    def active(self, key: str) -> MemoryItem | None:
        """The active item under `key` as the batch left it so far."""
        return self._active.get(key)

    @property
    def active_items(self) -> Mapping[str, MemoryItem]:
        return self._active

    def messages_seed(self, rows: Iterable[tuple[int, datetime, datetime]]) -> None:
        """Times (id, sent_at, created_at) of this customer's messages the caller read already."""
        for pk, sent_at, created_at in rows:
            self._times[pk] = (sent_at, created_at)

    def _evidence_of(self, ids: Sequence[int]) -> EvidenceTimes | None:
        """The times read with the item whose sources these ids are (in its order), or None."""
        return self._evidence.get(tuple(int(i) for i in ids))

    def evidence_known(self, ids: Sequence[int]) -> bool:
        """Whether `received` and `sent_after` answer for these ids (an item's sources, in its order)
        without reading their messages: their times were read with the item."""
        return self._evidence_of(ids) is not None

    def messages_prefetch(self, ids: Iterable[int]) -> None:
        """Read the times of these messages (the ones not known yet) in one query."""
        missing = {int(i) for i in ids} - self._times.keys() - self._unknown_messages
        if not missing:
            return
        self.messages_seed(
            Message.objects.filter(customer=self.customer, pk__in=sorted(missing)).values_list(
                "pk", "sent_at", "created_at"
            )
        )
        self._unknown_messages |= missing - self._times.keys()

    def messages_of_customer(self, ids: Iterable[int]) -> set[int]:
        """Which of these ids are this customer's messages."""
        wanted = [int(i) for i in ids]
        self.messages_prefetch(wanted)
        return {i for i in wanted if i in self._times}

    def received(self, ids: Sequence[int]) -> datetime | None:
        """When the newest cited message reached us (`memory.decisions.evidence_time`, from memory)."""
        known = self._evidence_of(ids)
        if known is not None:
            return known[0]
        self.messages_prefetch(ids)
        times = [min(self._times[int(i)]) for i in ids if int(i) in self._times]
        return max(times, default=None)

    def sent_after(self, ids: Sequence[int], moment: datetime) -> bool:
        """Whether any of these messages was sent after `moment`."""
        known = self._evidence_of(ids)
        if known is not None:
            return known[1] is not None and known[1] > moment
        self.messages_prefetch(ids)
        return any(self._times[int(i)][0] > moment for i in ids if int(i) in self._times)

    def profile(self) -> CustomerProfile:
        """The customer's profile, read (and locked on PostgreSQL) on first use; a new one if none."""
        if self._profile is None:
            self._profile = customer_profile_locked(customer_id=self.customer.pk) or CustomerProfile(
                customer=self.customer
            )
            self._profile.customer = self.customer
        return self._profile

    # --- staged writes ----------------------------------------------------------------------

    def put(self, put: ItemPut, *, actor: Actor, reason: str) -> PutResult:
        """`memory_item_put` on the batch: decided now, written by `flush`."""
        field_name, content = _normalised(put.key, put.content)
        key, type_ = put.key, put.type
        item_values_validate(type=type_, key=key, content=content, confidence=put.confidence, importance=put.importance)
        sources = [int(i) for i in put.source_message_ids]
        automatic = put.created_by == MemoryCreatedBy.AUTO if put.automatic is None else put.automatic
        active = self._active.get(key)
        if automatic:
            refusal = item_refusal(
                key=key,
                content=content,
                value=profile_item_value(field_name, content) if field_name is not None else None,
            )
            if refusal:
                return PutResult(item=active, outcome=REFUSED, refusal=refusal)
            refusal = automatic_write_refusal(
                customer=self.customer,
                key=key,
                content=content,
                evidence_at=self.received(sources),
                supersedes_keys=put.supersedes_keys,
                decisions=self.decisions,
                active=self._active.get,
                received=self.received,
            )
            if refusal:
                return PutResult(item=active, outcome=REFUSED, refusal=refusal)
        same_value = active is not None and active.content == content
        # An automatic write of a human item's value only adds evidence, whatever type it reads as.
        if (
            active is not None
            and same_value
            and (active.type == type_ or (automatic and active.created_by == MemoryCreatedBy.HUMAN))
        ):
            new_sources = [i for i in sources if i not in active.source_message_ids]
            fields: list[str] = []
            if new_sources:
                active.source_message_ids = [*active.source_message_ids, *new_sources]
                fields.append("source_message_ids")
            if not automatic and active.created_by != MemoryCreatedBy.HUMAN:
                # A supervisor vouching for the current value makes it theirs (and outrank older words).
                active.created_by, active.direction = MemoryCreatedBy.HUMAN, put.direction
                fields += ["created_by", "direction"]
            if put.confidence > active.confidence and not (automatic and active.created_by == MemoryCreatedBy.HUMAN):
                active.confidence = put.confidence
                fields.append("confidence")
            if put.expires_at != active.expires_at and put.created_by == MemoryCreatedBy.HUMAN:
                active.expires_at = put.expires_at
                fields.append("expires_at")
            contradicted = self._supersede_keys(put.supersedes_keys, active, actor=actor, reason=reason)
            if not fields and not contradicted:
                return PutResult(item=active, outcome=UNCHANGED)
            if fields:
                self._change(active, fields, actor=actor, reason=reason)
            self._proposals_settle(key, put.supersedes_keys, active, actor=actor, reason=reason)
            result = PutResult(item=active, outcome=EVIDENCE_ADDED, superseded=tuple(contradicted))
            self._audit_put(result, new_sources, action=put.audit_action, actor=actor, reason=reason)
            return result

        superseded: list[MemoryItem] = []
        item = MemoryItem(
            customer=self.customer,
            type=type_,
            key=key,
            content=content,
            source_message_ids=sources,
            confidence=put.confidence,
            importance=put.importance,
            direction=put.direction,
            created_by=put.created_by,
            expires_at=put.expires_at,
        )
        _item_validate(item)
        if active is not None:
            self._retire(active, replacement=item, actor=actor, reason=reason)
            superseded.append(active)
        self._create(item, actor=actor, reason=reason)
        self._proposals_settle(key, put.supersedes_keys, item, actor=actor, reason=reason)
        superseded += self._supersede_keys(put.supersedes_keys, item, actor=actor, reason=reason)
        if put.sync_profile:
            self.profile_follow(item, actor=actor, reason=reason)
        result = PutResult(item=item, outcome=SUPERSEDED if superseded else CREATED, superseded=tuple(superseded))
        self._audit_put(result, sources, action=put.audit_action, actor=actor, reason=reason)
        return result

    def proposed(self, key: str) -> MemoryItem | None:
        """The pending proposal under `key` as the batch left it so far."""
        return self._proposed.get(key)

    def propose(self, put: ItemPut, *, actor: Actor, reason: str, expires_at: datetime) -> PutResult:
        """Hold a value back for a supervisor (issue 35): a `proposed` item, never active, never in the
        profile or the snapshot. The automatic rules hold as for any automatic write (nothing
        instruction-like; a rejected or forgotten value never comes back, not even as a proposal);
        what memory already says is not proposed again; one pending proposal per key (the same value
        again adds evidence, another value replaces it)."""
        field_name, content = _normalised(put.key, put.content)
        key = put.key
        item_values_validate(
            type=put.type, key=key, content=content, confidence=put.confidence, importance=put.importance
        )
        sources = [int(i) for i in put.source_message_ids]
        active = self._active.get(key)
        if active is not None and (active.content == content or same_meaning(active.content, content)):
            return PutResult(item=active, outcome=UNCHANGED)  # memory says it already, in some spelling
        refusal = item_refusal(
            key=key, content=content, value=profile_item_value(field_name, content) if field_name is not None else None
        )
        if not refusal:
            refusal = (
                automatic_write_refusal(
                    customer=self.customer,
                    key=key,
                    content=content,
                    evidence_at=self.received(sources),
                    supersedes_keys=(),
                    decisions=self.decisions,
                    active=self._active.get,
                    received=self.received,
                )
                or ""
            )
        if refusal:
            return PutResult(item=None, outcome=REFUSED, refusal=refusal)
        pending = self.proposed(key)
        if pending is not None and (pending.content == content or same_meaning(pending.content, content)):
            new_sources = [i for i in sources if i not in pending.source_message_ids]
            if not new_sources:
                return PutResult(item=pending, outcome=UNCHANGED)
            pending.source_message_ids = [*pending.source_message_ids, *new_sources]
            pending.expires_at = max(filter(None, [pending.expires_at, expires_at]))
            self._change(pending, ["source_message_ids", "expires_at"], actor=actor, reason=reason, memory=False)
            result = PutResult(item=pending, outcome=PROPOSAL_EVIDENCE)
            self._audit_put(result, new_sources, action=AuditAction.MEMORY_ITEM_PROPOSED, actor=actor, reason=reason)
            return result
        item = MemoryItem(
            customer=self.customer,
            type=put.type,
            key=key,
            content=content,
            source_message_ids=sources,
            confidence=min(put.confidence, 0.6),
            importance=put.importance,
            status=MemoryStatus.PROPOSED,
            direction=put.direction,
            created_by=MemoryCreatedBy.AUTO,
            expires_at=expires_at,
            held_back=put.held_back[:32],
            clause=put.clause[:300],
        )
        _item_validate(item)
        superseded: list[MemoryItem] = []
        if pending is not None:  # a newer reading of the same key replaces the waiting one
            pending.status = MemoryStatus.SUPERSEDED
            self._change(pending, ["status"], actor=actor, reason=reason, memory=False)
            self._links.append((pending, item))
            superseded.append(pending)
        self._touch(item, actor=actor, reason=reason, memory=False)
        item.created_at = item.updated_at
        self._new.append(item)
        self._proposed[key] = item
        result = PutResult(item=item, outcome=PROPOSED, superseded=tuple(superseded))
        self._audit_put(result, sources, action=AuditAction.MEMORY_ITEM_PROPOSED, actor=actor, reason=reason)
        return result

    def _proposals_settle(
        self, key: str, supersedes_keys: Sequence[str], item: MemoryItem, *, actor: Actor, reason: str
    ) -> None:
        """A value written under `key` settles the proposals waiting under it, under the keys it
        supersedes and under its opposite polarity ("我不要朝南的" settles 偏好：朝南 read from an earlier
        "有没有朝南的？"): accepted later, the older reading would undo the newer words."""
        for other in dict.fromkeys([key, *supersedes_keys, *_opposite_keys(key)]):
            self._proposal_settle(other, item, actor=actor, reason=reason)

    def _proposal_settle(self, key: str, item: MemoryItem, *, actor: Actor, reason: str) -> None:
        """A value written under `key` settles the proposal waiting there: the customer (or a
        supervisor) has now said what the key holds, so the older reading leaves the queue, linked."""
        pending = self._proposed.pop(key, None)
        if pending is None or pending is item:
            return
        pending.status = MemoryStatus.SUPERSEDED
        self._change(pending, ["status"], actor=actor, reason=reason, memory=False)
        self._links.append((pending, item))

    def promote(self, proposal: MemoryItem, *, type: str, content: str, actor: Actor, reason: str) -> MemoryItem:
        """A supervisor accepts a proposal: it becomes the active item under its key, vouched for by a
        person (created_by=human, confidence 1), the customer's message still its evidence; the
        value it replaces (and the opposite polarity on the same object) is superseded and linked,
        the profile follows a `profile:<field>` key. Audited by the caller."""
        _field_name, content = _normalised(proposal.key, content)
        item_values_validate(
            type=type, key=proposal.key, content=content, confidence=1.0, importance=proposal.importance
        )
        key = proposal.key
        for other_key in dict.fromkeys([key, *_opposite_keys(key)]):
            old = self._active.get(other_key)
            if old is not None and old.pk != proposal.pk:
                self._retire(old, replacement=proposal, actor=actor, reason=reason)
        proposal.customer = self.customer
        proposal.status, proposal.type, proposal.content = MemoryStatus.ACTIVE, type, content
        proposal.created_by, proposal.confidence, proposal.expires_at = MemoryCreatedBy.HUMAN, 1.0, None
        # A person's item now: no rule held it back, and the clause (a second copy of the customer's
        # words, kept for the review) has done its work.
        proposal.held_back, proposal.clause = "", ""
        self._change(
            proposal,
            ["status", "type", "content", "created_by", "confidence", "expires_at", "held_back", "clause"],
            actor=actor,
            reason=reason,
        )
        self._active[key] = proposal
        self._promoted.add(key)
        if self._proposed.get(key) is proposal:
            del self._proposed[key]
        self.profile_follow(proposal, actor=actor, reason=reason)
        return proposal

    def retire(self, item: MemoryItem, *, actor: Actor, reason: str, audit_action: AuditAction) -> None:
        """`memory_item_supersede` on the batch: an active item leaves memory with no replacement."""
        target = self._active.get(item.key)
        if target is None or target.pk != item.pk:
            target = item
        self._retire(target, replacement=None, actor=actor, reason=reason)
        item.status = target.status
        self.audit(audit_action, actor=actor, reason=reason, payload={"type": target.type}, item=target)

    def profile_follow(self, item: MemoryItem, *, actor: Actor, reason: str) -> None:
        """Stage the profile field of a `profile:<field>` item (`profile_follow`, saved once by `flush`)."""
        field_name = profile_field_of(item.key)
        if field_name is None:
            return
        value = profile_item_value(field_name, item.content)
        profile = self.profile()
        if getattr(profile, field_name) == value and profile.pk is not None:
            return
        self.profile_set({field_name: value}, actor=actor, reason=reason)

    def profile_set(self, values: Mapping[str, str], *, actor: Actor, reason: str) -> None:
        """Stage profile field values (the profile is saved once, with one history row, by `flush`)."""
        profile = self.profile()
        for name, value in values.items():
            setattr(profile, name, value)
            self._profile_fields.add(name)
        stamp_history(profile, actor=actor, reason=reason)
        self._reason = self._reason or reason

    def audit(
        self,
        action: AuditAction,
        *,
        actor: Actor,
        reason: str,
        payload: dict[str, Any],
        item: MemoryItem | None = None,
        superseded: Sequence[MemoryItem] = (),
    ) -> None:
        """Stage an audit row (`item_id` and `superseded_ids` are filled in once the items are written)."""
        self._audits.append(_StagedAudit(action, actor, reason, payload, item, tuple(superseded)))

    def _audit_put(
        self, result: PutResult, sources: list[int], *, action: AuditAction, actor: Actor, reason: str
    ) -> None:
        assert result.item is not None  # only writes are audited
        payload: dict[str, Any] = {"type": result.item.type, "outcome": result.outcome, "source_message_ids": sources}
        if result.item.held_back:
            payload["held_back"] = result.item.held_back  # a rule's name: no customer words
        self.audit(
            action,
            actor=actor,
            reason=reason,
            payload=payload,
            item=result.item,
            superseded=result.superseded,
        )

    def _touch(self, item: MemoryItem, *, actor: Actor, reason: str, memory: bool = True) -> None:
        """Stamp a staged row; `memory=False` for a proposal, which changes no snapshot."""
        stamp_history(item, actor=actor, reason=reason)
        item.updated_at = timezone.now()
        self._memory_changed = self._memory_changed or memory
        self._reason = self._reason or reason

    def _change(
        self, item: MemoryItem, fields: Iterable[str], *, actor: Actor, reason: str, memory: bool = True
    ) -> None:
        _item_validate(item)
        self._touch(item, actor=actor, reason=reason, memory=memory)
        if item.pk is not None:
            self._changed.setdefault(id(item), _Changed(item)).fields.update(fields)

    def _create(self, item: MemoryItem, *, actor: Actor, reason: str) -> None:
        self._touch(item, actor=actor, reason=reason)
        item.created_at = item.updated_at
        self._new.append(item)
        self._active[item.key] = item

    def _retire(self, item: MemoryItem, *, replacement: MemoryItem | None, actor: Actor, reason: str) -> None:
        item.status = MemoryStatus.SUPERSEDED
        if self._active.get(item.key) is item:
            del self._active[item.key]
        self._change(item, ["status"], actor=actor, reason=reason)
        if replacement is not None:
            self._links.append((item, replacement))

    def _supersede_keys(
        self, keys: Sequence[str], replacement: MemoryItem, *, actor: Actor, reason: str
    ) -> list[MemoryItem]:
        done: list[MemoryItem] = []
        for key in dict.fromkeys(keys):
            old = self._active.get(key)
            if old is None or old is replacement:
                continue
            self._retire(old, replacement=replacement, actor=actor, reason=reason)
            done.append(old)
        return done

    # --- the writes -----------------------------------------------------------------------------

    def flush(self, *, refresh_snapshot: bool = True, reason: str = "") -> None:
        """Write what the batch staged (nothing when nothing changed), then the snapshot once."""
        new_active_keys = {item.key for item in self._new if item.status == MemoryStatus.ACTIVE} | self._promoted
        blocking = [
            change.item
            for change in self._changed.values()
            if change.item.status != MemoryStatus.ACTIVE and change.item.key in new_active_keys
        ]
        # A proposal replaced by a newer one leaves `proposed` before the new one is inserted.
        new_proposed_keys = {item.key for item in self._new if item.status == MemoryStatus.PROPOSED}
        blocking += [
            change.item
            for change in self._changed.values()
            if change.item.status == MemoryStatus.SUPERSEDED
            and change.item.key in new_proposed_keys
            and change.item not in blocking
        ]
        if blocking:
            update_rows(blocking, ["status", "updated_at"])
        history: list[Any] = []  # the items' history rows, '+' and '~', written in one statement
        if self._new:
            insert(self._new)
            history += history_rows(self._new, update=False)  # as they were inserted
        for old, replacement in self._links:
            old.superseded_by = replacement
            self._changed.setdefault(id(old), _Changed(old)).fields.add("superseded_by")
        if self._changed:
            changed = [change.item for change in self._changed.values()]
            fields = sorted({name for change in self._changed.values() for name in change.fields} | {"updated_at"})
            update_rows(changed, fields)
            history += history_rows(changed, update=True)
        history_rows_insert(history)
        if self._profile_fields:
            profile = self.profile()
            if profile.pk is None:
                profile.save()  # its history row comes from simple-history's signal
            else:
                profile.updated_at = timezone.now()
                update_rows([profile], [*sorted(self._profile_fields), "updated_at"])
                history_rows_insert(history_rows([profile], update=True))
        audit_records_bulk([self._audit_entry(staged) for staged in self._audits])
        if refresh_snapshot and self._memory_changed:
            if connections[current_alias()].features.has_select_for_update:
                customer_lock(customer_id=self.customer.pk)
                self.snapshot_head = snapshot_head_read(customer_id=self.customer.pk)
            snapshot, created = snapshot_write(
                customer=self.customer,
                items=self._active.values(),
                head=self.snapshot_head,
                reason=reason or self._reason,
            )
            if created and snapshot is not None:
                self.snapshot_head = (snapshot.version, snapshot.sha256)
        self._new, self._changed, self._links, self._audits = [], {}, [], []
        self._profile_fields, self._promoted = set(), set()
        self._memory_changed = False

    def _audit_entry(self, staged: _StagedAudit) -> AuditEntry:
        payload = dict(staged.payload)
        if staged.item is not None:
            payload = {"item_id": staged.item.pk, **payload}
            if "outcome" in payload:
                payload["superseded_ids"] = [item.pk for item in staged.superseded]
        return AuditEntry(
            action=staged.action,
            conversation_id=self.customer.conversation_id,
            actor=staged.actor,
            reason=staged.reason,
            payload=payload,
        )


def _opposite_keys(key: str) -> tuple[str, ...]:
    """The other polarity of a preference or constraint on the same object ("不考虑：顶楼" against
    "偏好：顶楼"): accepting one retires the other, as capture's `supersedes_keys` do."""
    kind, _, obj = key.partition(":")
    opposite = {"preference": "constraint", "constraint": "preference"}.get(kind)
    return (f"{opposite}:{obj}",) if opposite and obj else ()


def memory_items_put(
    *,
    customer: Customer,
    puts: Sequence[ItemPut],
    actor: Actor,
    reason: str,
    refresh_snapshot: bool = True,
) -> list[PutResult]:
    """Put several values for one customer in one transaction: each decided as `memory_item_put`
    would decide it after the ones before it, all written in bulk, the snapshot rendered once."""
    for put in puts:
        _field, content = _normalised(put.key, put.content)
        item_values_validate(
            type=put.type, key=put.key, content=content, confidence=put.confidence, importance=put.importance
        )
    with account_atomic():
        writes = MemoryWrites.load(customer)
        results = [writes.put(put, actor=actor, reason=reason) for put in puts]
        writes.flush(refresh_snapshot=refresh_snapshot, reason=reason)
    return results


def memory_item_put(
    *,
    customer: Customer,
    type: str,
    key: str,
    content: str,
    actor: Actor,
    reason: str,
    source_message_ids: Sequence[int] = (),
    confidence: float = 0.8,
    importance: int = 3,
    direction: str = MemoryDirection.INBOUND,
    created_by: str = MemoryCreatedBy.AUTO,
    expires_at: datetime | None = None,
    supersedes_keys: Sequence[str] = (),
    audit_action: AuditAction = AuditAction.MEMORY_ITEM_CAPTURED,
    refresh_snapshot: bool = True,
    automatic: bool | None = None,
    sync_profile: bool = True,
) -> PutResult:
    """Put a value under `key` for the customer.

    - same content as the active item: its evidence list grows (or nothing changes);
    - different content: the old item becomes `superseded`, linked to the new one;
    - `supersedes_keys`: active items under these keys (e.g. the constraint a new
      preference contradicts) are superseded by the new item too;
    - `automatic` (default: `created_by == auto`): refused, writing nothing, when it would undo
      a supervisor's decision (`memory.decisions.automatic_write_refusal`) or when the value is an
      instruction rather than a fact about the customer's world (`qiwei_site.reading.guard.item_refusal`);
    - a `profile:<field>` key writes the profile field too (`sync_profile=False` only for
      `customer_profile_update`, which writes the profile itself).
    """
    put = ItemPut(
        type=type,
        key=key,
        content=content,
        source_message_ids=source_message_ids,
        confidence=confidence,
        importance=importance,
        direction=direction,
        created_by=created_by,
        expires_at=expires_at,
        supersedes_keys=supersedes_keys,
        audit_action=audit_action,
        automatic=automatic,
        sync_profile=sync_profile,
    )
    return memory_items_put(
        customer=customer, puts=[put], actor=actor, reason=reason, refresh_snapshot=refresh_snapshot
    )[0]


def proposals_settle(*, item: MemoryItem, actor: Actor, reason: str) -> list[int]:
    """A value a person wrote under `item.key` outside a batch (an edit in place) settles the
    proposals waiting there, as `MemoryWrites.put` does: superseded, linked to the item. Returns their ids."""
    pending = list(
        MemoryItem.objects.select_for_update()
        .filter(customer_id=item.customer_id, key=item.key, status=MemoryStatus.PROPOSED)
        .exclude(pk=item.pk)
    )
    for proposal in pending:
        proposal.status, proposal.superseded_by = MemoryStatus.SUPERSEDED, item
        item_row_save(proposal, actor=actor, reason=reason, update_fields=["status", "superseded_by"])
    return [proposal.pk for proposal in pending]


def memory_item_supersede(
    *, item: MemoryItem, actor: Actor, reason: str, audit_action: AuditAction, writes: MemoryWrites | None = None
) -> MemoryItem:
    """Retire an active item without a replacement (expiry, a cleared profile field); on `writes`,
    staged with the rest of that batch."""
    if item.status != MemoryStatus.ACTIVE:
        return item
    if writes is not None:
        writes.retire(item, actor=actor, reason=reason, audit_action=audit_action)
        return item
    with account_atomic():
        own = MemoryWrites.load(item.customer)
        own.retire(item, actor=actor, reason=reason, audit_action=audit_action)
        own.flush(reason=reason)
    return item
