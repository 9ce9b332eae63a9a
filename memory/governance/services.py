"""Staff curation of customer memory (spec §3.1, DESIGN §7): add, edit, confirm, reject, expire, forget.

Each service takes `actor` and `reason`, runs in one account transaction, stamps history,
writes one audit row per item (ids and types, never the content) and refreshes the snapshot.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from django.conf import settings
from django.utils import timezone

from conversations.models import AuditAction, AuditEvent, Customer, CustomerProfile, Draft, Message, MessageSecret
from memory.capture.jobs import HYPOTHESIS_KEY_PREFIX
from memory.decisions import decision_record, same_meaning
from memory.governance.forgetting import forgetting
from memory.governance.scrub import (
    FORGOTTEN_MARK,
    Quotes,
)
from memory.governance.wording import confirmed_wording
from memory.items import (
    MemoryWrites,
    item_row_save,
    item_values_validate,
    memory_item_put,
    profile_field_release,
    profile_follow,
    proposals_settle,
)
from memory.models import (
    CaptureJob,
    DecisionKind,
    MemoryCreatedBy,
    MemoryDirection,
    MemoryItem,
    MemorySnapshot,
    MemoryStatus,
    MemoryType,
)
from memory.selectors import customer_lock
from memory.snapshots import SECTION_TITLES, snapshot_refresh
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.errors import Conflict, ValidationFailed
from qiwei_site.platform.history import Actor, stamp_history
from qiwei_site.platform.tenancy import account_atomic
from qiwei_site.reading.fields import PROFILE_FIELDS, profile_field_of, profile_item_content, profile_item_value
from qiwei_site.reading.normalise import normalize_content
from qiwei_site.reading.safety import CATEGORY_LABELS, scan

# A supervisor's own hypothesis ("to ask the customer") is no surer than a model's.
HAND_HYPOTHESIS_CONFIDENCE = 0.5
SNAPSHOT_HEADINGS = frozenset(f"## {title}" for _type, title in SECTION_TITLES)


class _Unset(enum.Enum):
    TOKEN = 0


UNSET = _Unset.TOKEN


# --- helpers ---------------------------------------------------------------------------------


def _locked(item: MemoryItem) -> MemoryItem:
    """Re-read the item under a row lock, so two supervisors cannot act on a stale state. The
    customer's row is locked first, as every writer of a customer's memory locks it
    (`memory_items_active_locked`): one lock order, so a supervisor's edit and a capture cannot deadlock."""
    customer_lock(customer_id=item.customer_id)
    fresh = MemoryItem.objects.select_for_update().select_related("customer").filter(pk=item.pk).first()
    if fresh is None:
        raise Conflict(f"记忆条目 {item.pk} 已不存在 (memory item no longer exists).", code="memory_item_gone")
    return fresh


def _require_active(item: MemoryItem, operation: str) -> None:
    if item.status != MemoryStatus.ACTIVE:
        raise Conflict(
            f"只能{operation}有效的记忆条目，该条目状态为「{item.get_status_display()}」"
            f" (only active items can be changed; this one is {item.status}).",
            code="memory_item_not_active",
        )


def _validate_expiry(expires_at: datetime | None) -> None:
    if expires_at is None:
        return
    if timezone.is_naive(expires_at):
        raise ValidationFailed("过期时间必须带时区 (expires_at must be timezone-aware).", code="invalid_expires_at")
    if expires_at <= timezone.now():
        raise ValidationFailed("过期时间必须晚于现在 (expires_at must be in the future).", code="invalid_expires_at")


def _validate_sources(customer: Customer, source_message_ids: Sequence[int]) -> list[int]:
    try:
        ids = [int(i) for i in source_message_ids]
    except (TypeError, ValueError):
        raise ValidationFailed("来源消息 ID 必须是整数 (source message ids must be integers).") from None
    if not ids:
        return []
    found = set(Message.objects.filter(customer=customer, pk__in=ids).values_list("pk", flat=True))
    missing = [i for i in ids if i not in found]
    if missing:
        raise ValidationFailed(
            f"来源消息 {missing} 不属于该客户 (source messages do not belong to this customer).",
            code="invalid_source_message",
        )
    return list(dict.fromkeys(ids))


def _audit(action: AuditAction, item: MemoryItem, *, actor: Actor, reason: str, **extra: Any) -> AuditEvent:
    # Ids and types only: a later `forget` must leave no content behind in the audit.
    return audit_record(
        action=action,
        conversation_id=item.customer.conversation_id,
        actor=actor,
        reason=reason,
        payload={"item_id": item.pk, "type": item.type, **extra},
    )


REASON_REQUIRED_DETAIL = "治理操作必须填写原因，它会写入历史记录和审计 (a reason is required)."


def reason_required(reason: str | None) -> str:
    """The reason a supervisor gives, stripped; a blank one is refused on every governance path
    (admin forms and actions, the API, commands), so no decision lands in the audit unexplained."""
    cleaned = (reason or "").strip()
    if not cleaned:
        raise ValidationFailed(REASON_REQUIRED_DETAIL, code="reason_required")
    return cleaned


def supervisor_wording(*, key: str, content: str) -> str:
    """What a supervisor's words become before they are stored under `key`: the stored normal form,
    a `profile:<field>` item's 「标签：值」, and refused when the safety gate would block them as a
    customer's message (hidden characters, an instruction to the model, a secret): a person's
    wording reaches every later prompt as memory, so it meets the same gate as the customer's."""
    content = normalize_content(content)
    field = profile_field_of(key)
    if field is not None:
        content = profile_item_content(field, profile_item_value(field, content))
    verdict = scan(content)
    if verdict.blocked:
        labels = "、".join(str(CATEGORY_LABELS.get(category, category)) for category in verdict.categories)
        raise ValidationFailed(
            f"内容未通过安全检查（{labels}），未保存；请改写后再提交 (the wording is refused by the safety gate).",
            code="content_refused",
            extra={"categories": verdict.categories},
        )
    return content


def derive_key(type: str, content: str) -> str:
    digest = hashlib.sha256(normalize_content(content).encode("utf-8")).hexdigest()[:12]
    return f"human:{type}:{digest}"


# --- add / edit / confirm / reject ---------------------------------------------------------


def memory_item_add(
    *,
    customer: Customer,
    content: str,
    type: str = MemoryType.FACT,
    key: str | None = None,
    importance: int = 5,
    source_message_ids: Sequence[int] = (),
    expires_at: datetime | None = None,
    actor: Actor,
    reason: str,
) -> MemoryItem:
    """A human-confirmed item (confidence 1, created_by=human, direction=internal), or a
    supervisor's hypothesis to check with the customer (confidence 0.5, expiring after
    QIWEI_HYPOTHESIS_TTL_HOURS unless given an expiry; shown only under 待确认 until confirmed).

    With an existing `key` the new value supersedes the active one, as capture does.
    """
    reason = reason_required(reason)
    content = supervisor_wording(key=key or "", content=content)
    hypothesis = type == MemoryType.HYPOTHESIS
    confidence = HAND_HYPOTHESIS_CONFIDENCE if hypothesis else 1.0
    if hypothesis:
        # A supervisor's "to ask the customer": it waits under 待确认 like a model's inference,
        # expires unless someone confirms it, and never reads as a fact until confirmed.
        key = (
            key
            if key and key.startswith(HYPOTHESIS_KEY_PREFIX)
            else f"{HYPOTHESIS_KEY_PREFIX}{derive_key(type, content)}"
        )
        if expires_at is None:
            expires_at = timezone.now() + timedelta(hours=settings.QIWEI_HYPOTHESIS_TTL_HOURS)
    item_values_validate(type=type, key=key or "human", content=content, confidence=confidence, importance=importance)
    _validate_expiry(expires_at)
    with account_atomic():
        sources = _validate_sources(customer, source_message_ids)
        result = memory_item_put(
            customer=customer,
            type=type,
            key=key or derive_key(type, content),
            content=content,
            actor=actor,
            reason=reason,
            source_message_ids=sources,
            confidence=confidence,
            importance=importance,
            direction=MemoryDirection.INTERNAL,
            created_by=MemoryCreatedBy.HUMAN,
            expires_at=expires_at,
            audit_action=AuditAction.MEMORY_ITEM_ADDED,
        )
        assert result.item is not None  # a human write is never refused
        decision_record(item=result.item, kind=DecisionKind.ADDED)
    return result.item


def memory_item_edit(
    *,
    item: MemoryItem,
    content: str | None = None,
    type: str | None = None,
    importance: int | None = None,
    confidence: float | None = None,
    expires_at: datetime | Literal[_Unset.TOKEN] | None = UNSET,
    actor: Actor,
    reason: str,
) -> MemoryItem:
    """Overwrite an active item in place and mark it `created_by=human` (its history keeps the old value)."""
    reason = reason_required(reason)
    with account_atomic():
        item = _locked(item)
        _require_active(item, "编辑")
        changes: dict[str, Any] = {}
        if content is not None:
            content = supervisor_wording(key=item.key, content=content)
            if content != item.content:
                changes["content"] = content
        if type is not None and type != item.type:
            if type == MemoryType.HYPOTHESIS:
                raise ValidationFailed(
                    "人工编辑不能把记忆改成推断 (a human edit cannot make a hypothesis).", code="invalid_type"
                )
            changes["type"] = type
        if importance is not None and importance != item.importance:
            changes["importance"] = importance
        if confidence is not None and confidence != item.confidence:
            changes["confidence"] = confidence
        if expires_at is not UNSET and expires_at != item.expires_at:
            _validate_expiry(expires_at)
            changes["expires_at"] = expires_at
        item_values_validate(
            type=changes.get("type", item.type),
            key=item.key,
            content=changes.get("content", item.content),
            confidence=changes.get("confidence", item.confidence),
            importance=changes.get("importance", item.importance),
        )
        if not changes:
            return item
        # The value the edit replaces, unless only its spelling changes (八千 → 8000元).
        replaced = item.content if "content" in changes and not same_meaning(item.content, changes["content"]) else None
        for field, value in changes.items():
            setattr(item, field, value)
        item.created_by = MemoryCreatedBy.HUMAN
        item_row_save(item, actor=actor, reason=reason, update_fields=[*changes, "created_by"])
        profile_follow(item, actor=actor, reason=reason)
        if "content" in changes:  # the supervisor said what the key holds (not a mere importance)
            proposals_settle(item=item, actor=actor, reason=reason)
        decision_record(item=item, kind=DecisionKind.EDITED)
        if replaced is not None:
            # The value the supervisor replaced: customer words repeating it do not undo the edit.
            decision_record(customer=item.customer, key=item.key, kind=DecisionKind.REPLACED, contents=[replaced])
        _audit(AuditAction.MEMORY_ITEM_EDITED, item, actor=actor, reason=reason, fields=sorted(changes))
        snapshot_refresh(customer=item.customer, reason=reason)
    return item


def memory_item_confirm(
    *,
    item: MemoryItem,
    content: str | None = None,
    expires_at: datetime | None = None,
    actor: Actor,
    reason: str,
) -> MemoryItem:
    """A supervisor vouches for a model inference: hypothesis → fact, confidence 1, created_by=human.

    A fact does not keep the guess's wording (issue 39): it says what the supervisor typed as
    `content`, or, when nothing was typed, the guess without its hedge words (「客户可能在张江上班」
    → 「客户在张江上班」, `memory.governance.wording`). The wording passes what every supervisor's
    words pass (`supervisor_wording`: normal form, a profile item's form, the safety gate), and the
    audit keeps both: the guess's wording and the confirmed one (a later forget scrubs both).

    The hypothesis's expiry was a deadline for checking it, not a property of the fact: a confirmed
    fact lasts (expires_at cleared) unless the supervisor gives it an expiry of its own here, so the
    expiry sweep never supersedes what a person vouched for.
    """
    reason = reason_required(reason)
    _validate_expiry(expires_at)
    with account_atomic():
        item = _locked(item)
        _require_active(item, "确认")
        if item.type != MemoryType.HYPOTHESIS:
            raise Conflict(
                f"只有「推断（待确认）」可以确认，该条目类型为「{item.get_type_display()}」"
                f" (only hypotheses can be confirmed; this one is {item.type}).",
                code="not_a_hypothesis",
            )
        guess, suggested = item.content, confirmed_wording(item.content)
        wording = supervisor_wording(key=item.key, content=content if content and content.strip() else suggested)
        item_values_validate(
            type=MemoryType.FACT, key=item.key, content=wording, confidence=1.0, importance=item.importance
        )
        item.type = MemoryType.FACT
        item.content = wording
        item.confidence = 1.0
        item.created_by = MemoryCreatedBy.HUMAN
        item.expires_at = expires_at
        item_row_save(
            item,
            actor=actor,
            reason=reason,
            update_fields=["type", "content", "confidence", "created_by", "expires_at"],
        )
        profile_follow(item, actor=actor, reason=reason)
        decision_record(item=item, kind=DecisionKind.CONFIRMED)
        _audit(
            AuditAction.MEMORY_ITEM_CONFIRMED,
            item,
            actor=actor,
            reason=reason,
            previous_type=MemoryType.HYPOTHESIS,
            hypothesis_content=guess,
            content=wording,
            wording_edited=wording != normalize_content(suggested),
        )
        snapshot_refresh(customer=item.customer, reason=reason)
    return item


def memory_item_reject(*, item: MemoryItem, actor: Actor, reason: str) -> MemoryItem:
    """The item is wrong: it never enters a context again (kept, with its history, for the record).
    A proposal rejected is the same decision: capture never proposes or writes that value again."""
    reason = reason_required(reason)
    with account_atomic():
        item = _locked(item)
        proposal = item.status == MemoryStatus.PROPOSED
        if not proposal:
            _require_active(item, "拒绝")
        item.status = MemoryStatus.REJECTED
        item_row_save(item, actor=actor, reason=reason, update_fields=["status"])
        # A proposal declined rules out its value only: "只是问问两居" says nothing of a firm
        # "我要三居室" sent before it; a rejected memory item rules out the whole key's older words.
        decision_record(item=item, kind=DecisionKind.DECLINED if proposal else DecisionKind.REJECTED)
        cleared = False if proposal else profile_field_release(item, actor=actor, reason=reason)
        _audit(
            AuditAction.MEMORY_ITEM_REJECTED,
            item,
            actor=actor,
            reason=reason,
            profile_field_cleared=cleared,
            **({"proposal": True} if proposal else {}),
        )
        if not proposal:
            snapshot_refresh(customer=item.customer, reason=reason)
    return item


ACCEPTABLE_TYPES = (MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.CONSTRAINT, MemoryType.EVENT)


def memory_proposal_accept(
    *, item: MemoryItem, content: str | None = None, type: str | None = None, actor: Actor, reason: str
) -> MemoryItem:
    """A supervisor accepts a proposal (issue 35): it becomes active memory — a fact, preference,
    constraint or event vouched for by a person (created_by=human, confidence 1), the customer's
    message still its evidence — with the value as read or as the supervisor corrects it. The value
    it replaces under its key is superseded, the profile follows a `profile:<field>` key, and the
    snapshot is refreshed; a corrected value records the one read as replaced, and the value the key
    held before (when it means something else) is recorded as replaced too, as an edit records it, so
    the same words from the customer do not bring either back over the supervisor's."""
    reason = reason_required(reason)
    with account_atomic():
        item = _locked(item)
        if item.status != MemoryStatus.PROPOSED:
            raise Conflict(
                f"只能采纳待审核的提议，该条目状态为「{item.get_status_display()}」"
                f" (only proposals can be accepted; this one is {item.status}).",
                code="not_a_proposal",
            )
        if item.expires_at is not None and item.expires_at <= timezone.now():
            raise Conflict("该提议已超过审核期限，已失效 (the proposal has expired).", code="proposal_expired")
        new_type = type or item.type
        if new_type not in ACCEPTABLE_TYPES:
            raise ValidationFailed(
                "采纳后的类型只能是事实、偏好、约束或事件 (accept as fact, preference, constraint or event).",
                code="invalid_type",
            )
        read_content = item.content
        new_content = read_content
        if content is not None and content.strip():
            new_content = supervisor_wording(key=item.key, content=content)
        else:
            field = profile_field_of(item.key)
            if field is not None:
                new_content = profile_item_content(field, profile_item_value(field, new_content))
        writes = MemoryWrites.load(item.customer)
        proposal = writes.proposed(item.key)
        if proposal is None or proposal.pk != item.pk:
            proposal = item
        held_back = proposal.held_back
        displaced = writes.active(item.key)  # the value the supervisor's choice takes the key from
        writes.promote(proposal, type=new_type, content=new_content, actor=actor, reason=reason)
        edited = not same_meaning(read_content, proposal.content)
        writes.audit(
            AuditAction.MEMORY_PROPOSAL_ACCEPTED,
            actor=actor,
            reason=reason,
            payload={"type": proposal.type, "edited": edited, "held_back": held_back},
            item=proposal,
        )
        writes.flush(reason=reason)
        decision_record(item=proposal, kind=DecisionKind.CONFIRMED)
        replaced = [read_content] if edited else []
        if (
            displaced is not None
            and displaced.pk != proposal.pk
            and not same_meaning(displaced.content, proposal.content)
        ):
            # The value the key held before, replaced by the supervisor's choice as an edit replaces it.
            replaced.append(displaced.content)
        if replaced:
            # The same words again do not undo the supervisor's choice.
            decision_record(customer=proposal.customer, key=proposal.key, kind=DecisionKind.REPLACED, contents=replaced)
    return proposal


def memory_proposals_expire_due(*, now: datetime | None = None, actor: Actor = "expiry") -> int:
    """Proposals nobody decided within QIWEI_MEMORY_PROPOSAL_TTL_DAYS leave the queue (status
    `superseded`), each audited. No decision is recorded: nobody judged the value, and the customer
    saying it again later proposes it again."""
    now = now or timezone.now()
    reason = f"提议超过 {settings.QIWEI_MEMORY_PROPOSAL_TTL_DAYS} 天未审核，自动失效"
    expired = 0
    with account_atomic():
        due_customers = sorted(
            set(
                MemoryItem.objects.filter(status=MemoryStatus.PROPOSED, expires_at__lte=now).values_list(
                    "customer_id", flat=True
                )
            )
        )
        for customer_id in due_customers:  # the customers first, then their items by id: one lock order
            customer_lock(customer_id=customer_id)
        due = list(
            MemoryItem.objects.select_for_update()
            .select_related("customer")
            .filter(status=MemoryStatus.PROPOSED, expires_at__lte=now, customer_id__in=due_customers)
            .order_by("pk")
        )
        for item in due:
            item.status = MemoryStatus.SUPERSEDED
            item_row_save(item, actor=actor, reason=reason, update_fields=["status"])
            _audit(AuditAction.MEMORY_PROPOSAL_EXPIRED, item, actor=actor, reason=reason, held_back=item.held_back)
            expired += 1
    return expired


# --- expiry ----------------------------------------------------------------------------------


def _expire(item: MemoryItem, *, now: datetime, actor: Actor, reason: str, automatic: bool) -> None:
    item.status = MemoryStatus.SUPERSEDED
    fields = ["status"]
    if item.expires_at is None or item.expires_at > now:
        item.expires_at = now
        fields.append("expires_at")
    item_row_save(item, actor=actor, reason=reason, update_fields=fields)
    # Dated when the item stopped being true, not when the sweep noticed: words in between are old.
    decision_record(item=item, kind=DecisionKind.EXPIRED, at=item.expires_at or now)
    cleared = profile_field_release(item, actor=actor, reason=reason)
    _audit(
        AuditAction.MEMORY_ITEM_EXPIRED,
        item,
        actor=actor,
        reason=reason,
        automatic=automatic,
        profile_field_cleared=cleared,
    )


def memory_item_expire(*, item: MemoryItem, actor: Actor, reason: str) -> MemoryItem:
    """Expire an item now (status `superseded`, expires_at = now)."""
    reason = reason_required(reason)
    with account_atomic():
        item = _locked(item)
        _require_active(item, "使过期")
        _expire(item, now=timezone.now(), actor=actor, reason=reason, automatic=False)
        snapshot_refresh(customer=item.customer, reason=reason)
    return item


def memory_items_expire_due(
    *, now: datetime | None = None, actor: Actor = "expiry", reason: str = "到期自动失效"
) -> int:
    """Turn every active item of the selected account whose expires_at has passed into `superseded`,
    and every proposal left undecided past its time (`memory_proposals_expire_due`).

    One audit row per item and one snapshot refresh per customer; returns how many expired.
    """
    reason = reason_required(reason)
    now = now or timezone.now()
    due = (
        MemoryItem.objects.filter(status=MemoryStatus.ACTIVE, expires_at__lte=now)
        .values_list("customer_id", flat=True)
        .distinct()
    )
    expired = 0
    for customer_id in list(due):
        with account_atomic():
            customer_lock(customer_id=customer_id)
            items = list(
                MemoryItem.objects.select_for_update()
                .select_related("customer")
                .filter(customer_id=customer_id, status=MemoryStatus.ACTIVE, expires_at__lte=now)
                .order_by("pk")
            )
            for item in items:
                _expire(item, now=now, actor=actor, reason=reason, automatic=True)
            if items:
                snapshot_refresh(customer=items[0].customer, reason=reason)
            expired += len(items)
    # Proposals waiting past their time go too (every path that expires memory expires them).
    return expired + memory_proposals_expire_due(now=now, actor=actor)


# --- forget ----------------------------------------------------------------------------------


def _remove_line(content: str, lines_to_remove: set[str]) -> str:
    """Drop the first line that renders the forgotten item, then any heading left empty."""
    lines = content.split("\n")
    for index, line in enumerate(lines):
        if line in lines_to_remove:
            del lines[index]
            break
    kept: list[str] = []
    for index, line in enumerate(lines):
        if line in SNAPSHOT_HEADINGS and (index + 1 == len(lines) or lines[index + 1] in SNAPSHOT_HEADINGS):
            continue
        kept.append(line)
    return "\n".join(kept)


def _snapshots_redact(customer: Customer, item_id: int, contents: set[str], quotes: Quotes) -> int:
    """Remove a forgotten item from every snapshot version that still lists it.

    Run after the new version (without the item) is written, so only older versions are touched.
    They keep their numbers (epochs and draft traces refer to them); only the forgotten line goes,
    so each still shows everything else the model saw.
    """
    lines = {f"- {' '.join(c.split())}" for c in contents}
    redacted = 0
    for snapshot in MemorySnapshot.objects.filter(customer=customer).order_by("version"):
        if item_id not in snapshot.item_ids and item_id not in snapshot.left_out_ids:
            continue
        if item_id in snapshot.item_ids:
            snapshot.content = _remove_line(snapshot.content, lines)
        snapshot.item_ids = [i for i in snapshot.item_ids if i != item_id]
        snapshot.left_out_ids = [i for i in snapshot.left_out_ids if i != item_id]
        snapshot.sha256 = hashlib.sha256(snapshot.content.encode("utf-8")).hexdigest()
        snapshot.char_count = len(snapshot.content)
        snapshot.reason = quotes.scrub(snapshot.reason)
        snapshot.save(update_fields=["content", "item_ids", "left_out_ids", "sha256", "char_count", "reason"])
        redacted += 1
    return redacted


def _forget_profile_value(customer: Customer, key: str, contents: set[str], *, actor: Actor, reason: str) -> set[str]:
    """Forgetting `profile:<field>` also clears the field and its past values in the profile history,
    or the profile would keep saying what memory forgot. Returns the bare values forgotten."""
    field = key.removeprefix("profile:")
    labels = dict(PROFILE_FIELDS)
    if not key.startswith("profile:") or field not in labels:
        return set()
    prefix = f"{labels[field]}："
    values = {c.removeprefix(prefix) for c in contents if c.startswith(prefix)}
    if not values:
        return set()
    profile = CustomerProfile.objects.filter(customer=customer).first()
    if profile is not None and getattr(profile, field) in values:
        setattr(profile, field, "")
        stamp_history(profile, actor=actor, reason=Quotes(contents | values).scrub(reason))
        profile.save(update_fields=[field, "updated_at"])
    CustomerProfile.history.filter(customer_id=customer.pk, **{f"{field}__in": values}).update(**{field: ""})
    _scrub_structured_updates(customer, field, values)
    return values


def _scrub_structured_updates(customer: Customer, field: str, values: set[str]) -> None:
    """Grounded updates are also kept as structured values on drafts and capture jobs; blank the
    forgotten one there (free text such as the customer's messages is a separate policy)."""

    def scrub(updates: Any) -> bool:
        if isinstance(updates, dict) and updates.get(field) in values:
            updates[field] = FORGOTTEN_MARK
            return True
        return False

    def scrub_dropped(dropped: Any) -> bool:
        # Ungrounded updates the pipeline dropped: [{"field": ..., "value": ..., ...}, ...]
        changed = False
        for entry in dropped if isinstance(dropped, list) else []:
            if isinstance(entry, dict) and entry.get("field") == field and entry.get("value") in values:
                entry["value"] = FORGOTTEN_MARK
                changed = True
        return changed

    def scrub_proposals(proposals: Any) -> bool:
        # A turn's values read only as proposals (issue 35): {field: {"value", "clause", ...}}.
        entry = proposals.get(field) if isinstance(proposals, dict) else None
        value = str(entry.get("value") or "") if isinstance(entry, dict) else ""
        if value and (value in values or any(same_meaning(value, forgotten) for forgotten in values)):
            proposals.pop(field)
            return True
        return False

    for job in CaptureJob.objects.filter(customer=customer):
        payload = job.payload or {}
        if scrub(payload.get("profile_updates")) | scrub_proposals(payload.get("profile_proposals")):
            CaptureJob.objects.filter(pk=job.pk).update(payload=payload)
    # Queryset updates: a scrub must not add history rows that would carry the old value's context.
    for draft in Draft.objects.filter(customer=customer):
        if scrub(draft.profile_updates) | scrub_dropped(draft.dropped_updates):
            Draft.objects.filter(pk=draft.pk).update(
                profile_updates=draft.profile_updates, dropped_updates=draft.dropped_updates
            )
    for row in Draft.history.filter(customer_id=customer.pk):
        if scrub(row.profile_updates) | scrub_dropped(row.dropped_updates):
            Draft.history.filter(history_id=row.history_id).update(
                profile_updates=row.profile_updates, dropped_updates=row.dropped_updates
            )


def memory_item_forget(*, item: MemoryItem, actor: Actor, reason: str, decide: bool = True) -> dict[str, Any]:
    """Physically delete an item and its history rows, write a snapshot version without it and take
    its line out of every older version; leave no byte of it behind.

    The audit keeps that it happened and the item id, never what it said: any part of the content a
    reason quoted is replaced (rule: `memory.governance.scrub.Quotes`), in audit, snapshot, history,
    draft and capture-job rows, and in the loopback outbox. On SQLite the deleted bytes are zeroed
    (`secure_delete`) and the WAL truncated after commit. The customer's messages are kept (a
    separate policy; see `memory.governance.erasure.customer_erase`), but the sealed originals of
    the messages the item cites are deleted: only their masked text stays.
    """
    reason = reason_required(reason)
    with forgetting(
        customer=item.customer, actor=actor, reason=reason, action=AuditAction.MEMORY_ITEM_FORGOTTEN
    ) as unit:
        item = _locked(item)
        customer = item.customer
        history = MemoryItem.history.filter(id=item.pk)
        contents = {item.content, *(c for c in history.values_list("content", flat=True) if c)}
        unit.quote(contents)
        for dependant in MemoryItem.objects.select_for_update().filter(superseded_by=item):
            dependant.superseded_by = None
            stamp_history(dependant, actor=actor, reason=unit.reason)
            dependant.save(update_fields=["superseded_by", "updated_at"])
        item_id, item_type = item.pk, item.type
        cited = [int(i) for i in item.source_message_ids or [] if str(i).lstrip("-").isdigit()]
        # Every value the item ever had is refused from now on (each as a fingerprint only) — unless
        # the item goes only because its evidence did (`decide=False`: a message forgotten as sent by
        # mistake refuses nothing the customer may say again).
        if decide:
            decision_record(item=item, kind=DecisionKind.FORGOTTEN, contents=contents)
        # The profile equals memory: a value the field's active item still says stays in the profile
        # (an old item citing a forgotten message may hold the very value a supervisor has since
        # written). Its words are still scrubbed and its lines redacted with this item's.
        held = set(
            MemoryItem.objects.filter(customer=customer, key=item.key, status=MemoryStatus.ACTIVE)
            .exclude(pk=item.pk)
            .values_list("content", flat=True)
        )
        profile_values = _forget_profile_value(customer, item.key, contents - held, actor=actor, reason=unit.reason)
        # A supervisor types the bare value ("8000元"), not the rendered item ("预算：8000元").
        contents |= profile_values
        unit.quote(profile_values)
        item.delete()
        # Deleting wrote one more history row (with the content): remove them all afterwards.
        history_deleted, _ = MemoryItem.history.filter(id=item_id).delete()
        # The cited messages keep their masked text; the words as received, sealed, go.
        sealed_deleted, _ = MessageSecret.objects.filter(message__customer=customer, message_id__in=cited).delete()
        # A new version first (the current one still shows the item), then the older ones lose it.
        snapshot, _created = snapshot_refresh(customer=customer, reason=unit.reason)
        redacted = _snapshots_redact(customer, item_id, contents, unit.quotes)
        unit.payload = {
            "item_id": item_id,
            "type": item_type,
            "history_rows_deleted": history_deleted,
            "snapshots_redacted": redacted,
            "profile_field_cleared": bool(profile_values),
            "sealed_originals_deleted": sealed_deleted,
        }
    return {"item_id": item_id, "snapshot_version": snapshot.version, "snapshots_redacted": redacted}
