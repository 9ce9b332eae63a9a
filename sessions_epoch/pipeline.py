"""One model turn (DESIGN §9): pick or rotate the epoch → context (through the memory provider) →
client → validate → ground profile updates → save the draft with its trace → queue capture → maybe auto-send.

Memory failures never block a draft (spec §6): they are audited and the turn goes on, with a
degraded context from the same AgentContextBuilder when the provider could not build one.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q

from conversations.drafts import draft_answering, draft_auto_send_blockers, draft_create, draft_send
from conversations.models import AuditAction, Customer, Draft, Message, MessageDirection
from conversations.selectors import message_latest_inbound
from memory.context.builder import REPLIES_AFTER_LIMIT, AgentContextBuilder, MemoryFailure
from memory.providers import CaptureTurn, MemoryProvider, PrefetchRequest, TurnHypothesis, get_provider
from qiwei_site.platform.audit import audit_record, context_read_record
from qiwei_site.platform.errors import Conflict, UpstreamUnavailable
from qiwei_site.platform.history import Actor
from qiwei_site.platform.models import ContextReadPurpose
from qiwei_site.platform.tenancy import account_atomic
from qiwei_site.reading.fields import PROFILE_FIELD_NAMES
from sessions_epoch.clients import ModelClient, ModelResult, SessionRef, get_client
from sessions_epoch.models import CloseReason, SessionEpoch
from sessions_epoch.services import epoch_count_turn, epoch_for_turn, epoch_rotate

logger = logging.getLogger(__name__)

PIPELINE_ACTOR = "pipeline"

# Put first among a draft's reasons when our side already replied after the message it answers
# (issue 39): the agent sees it on the draft, and the pipeline never sends it by itself.
ALREADY_ANSWERED_REASON = "系统提示：客服已在这条客户消息之后回复过，本草稿不会自动发送，请确认是否还需要发送"


# The model's `hypotheses` (output contract): bounded so a chatty model cannot flood the review queue.
HYPOTHESES_MAX = 5
HYPOTHESIS_TEXT_MAX = 60
HYPOTHESIS_KEY_MAX = 60
HYPOTHESIS_EVIDENCE_MAX = 10
# A hypothesis citing no message is dropped with this reason: it never rests on the latest message by default.
NO_EVIDENCE_IDS = "推断必须列出所依据的客户消息 id（messageIds），不会默认以最新消息为依据"
# A key is an identifier, not the customer's words (traces and payloads keep keys, never texts).
_HYPOTHESIS_KEY_RE = re.compile(rf"[a-z][a-z0-9_]{{0,{HYPOTHESIS_KEY_MAX - 1}}}")


@dataclass
class TurnOutput:
    reply: str = ""
    confidence: float = 0.0
    requires_human: bool = True
    profile_updates: dict[str, str] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    hypotheses: list[TurnHypothesis] = field(default_factory=list)
    dropped_hypotheses: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""


# --- validation -----------------------------------------------------------------------------


def validate_output(output: dict[str, Any] | None) -> TurnOutput:
    """Check the model's JSON against the output contract; any violation means a human decides."""
    if output is None:
        return TurnOutput(error="没有模型输出 (no model output).")
    errors: list[str] = []
    result = TurnOutput()
    reply = output.get("reply")
    if isinstance(reply, str) and reply.strip():
        result.reply = reply.strip()
    else:
        errors.append("reply 必须是非空字符串")
    confidence = output.get("confidence")
    if isinstance(confidence, int | float) and not isinstance(confidence, bool) and 0 <= confidence <= 1:
        result.confidence = float(confidence)
    else:
        errors.append("confidence 必须是 0–1 之间的数字")
    requires_human = output.get("requiresHuman")
    if isinstance(requires_human, bool):
        result.requires_human = requires_human
    else:
        errors.append("requiresHuman 必须是布尔值")
    reasons = output.get("reasons", [])
    if isinstance(reasons, list) and all(isinstance(item, str) for item in reasons):
        result.reasons = [item.strip()[:300] for item in reasons if item.strip()][:20]
    else:
        errors.append("reasons 必须是字符串列表")
    updates = output.get("profileUpdates", {})
    if updates is None:
        updates = {}
    if not isinstance(updates, dict):
        errors.append("profileUpdates 必须是对象")
        updates = {}
    for key, value in updates.items():
        if key not in PROFILE_FIELD_NAMES:
            result.dropped.append({"field": str(key)[:50], "value": str(value)[:200], "reason": "未声明的画像字段"})
        elif isinstance(value, int | float) and not isinstance(value, bool):
            result.profile_updates[key] = f"{value:g}"
        elif isinstance(value, str) and value.strip():
            result.profile_updates[key] = value.strip()[:50]
        else:
            result.dropped.append({"field": key, "value": str(value)[:200], "reason": "值必须是非空字符串"})
    result.hypotheses, result.dropped_hypotheses = parse_hypotheses(output.get("hypotheses"))
    if errors:
        result.error = "模型输出不符合约定：" + "；".join(errors)
        result.requires_human = True
    return result


def _hypothesis_drop(index: int, reason: str, *, key: str = "", message_ids: Any = ()) -> dict[str, Any]:
    """A dropped hypothesis as the trace keeps it: its position, key and evidence ids, the reason;
    never its text (a trace is not scrubbed when memory is forgotten)."""
    listed = message_ids if isinstance(message_ids, list | tuple) else []
    ids = [i for i in listed if isinstance(i, int) and not isinstance(i, bool)]
    return {"index": index, "key": key, "messageIds": ids[:HYPOTHESIS_EVIDENCE_MAX], "reason": reason}


def _parse_hypothesis(index: int, entry: Any) -> TurnHypothesis | dict[str, Any]:
    if not isinstance(entry, dict):
        return _hypothesis_drop(index, "推断必须是对象")
    raw_key = entry.get("key")
    key = raw_key.strip().lower() if isinstance(raw_key, str) else ""
    key_ok = bool(_HYPOTHESIS_KEY_RE.fullmatch(key))
    ids = entry.get("messageIds")
    if not key_ok:
        return _hypothesis_drop(index, f"key 必须是 1–{HYPOTHESIS_KEY_MAX} 位小写英文标识", message_ids=ids)
    text = entry.get("text")
    text = " ".join(text.split()) if isinstance(text, str) else ""
    if not text:
        return _hypothesis_drop(index, "text 必须是非空字符串", key=key, message_ids=ids)
    if len(text) > HYPOTHESIS_TEXT_MAX:
        return _hypothesis_drop(index, f"text 超过 {HYPOTHESIS_TEXT_MAX} 个字符", key=key, message_ids=ids)
    confidence = entry.get("confidence")
    if not (isinstance(confidence, int | float) and not isinstance(confidence, bool) and 0 <= confidence <= 1):
        return _hypothesis_drop(index, "confidence 必须是 0–1 之间的数字", key=key, message_ids=ids)
    if ids is None or ids == []:
        # Never the latest message by default: an inference names the customer's words it rests on.
        return _hypothesis_drop(index, NO_EVIDENCE_IDS, key=key)
    if not (
        isinstance(ids, list)
        and len(ids) <= HYPOTHESIS_EVIDENCE_MAX
        and all(isinstance(i, int) and not isinstance(i, bool) for i in ids)
    ):
        return _hypothesis_drop(
            index, f"messageIds 必须是至多 {HYPOTHESIS_EVIDENCE_MAX} 个消息 id（整数）", key=key, message_ids=ids
        )
    return TurnHypothesis(key=key, text=text, confidence=float(confidence), message_ids=tuple(sorted(set(ids))))


def parse_hypotheses(value: Any) -> tuple[list[TurnHypothesis], list[dict[str, Any]]]:
    """(well-formed hypotheses, dropped with reasons). They are optional: a missing or malformed
    list never blocks the draft, it is only dropped and traced."""
    if value is None:
        return [], []
    if not isinstance(value, list):
        return [], [_hypothesis_drop(-1, "hypotheses 必须是数组，已整体忽略")]
    kept: list[TurnHypothesis] = []
    dropped: list[dict[str, Any]] = []
    for index, entry in enumerate(value):
        if index >= HYPOTHESES_MAX:
            dropped.append(_hypothesis_drop(index, f"超过 {HYPOTHESES_MAX} 条上限"))
            continue
        parsed = _parse_hypothesis(index, entry)
        if isinstance(parsed, dict):
            dropped.append(parsed)
        elif any(other.key == parsed.key for other in kept):
            dropped.append(_hypothesis_drop(index, "key 重复", key=parsed.key, message_ids=list(parsed.message_ids)))
        else:
            kept.append(parsed)
    return kept, dropped


# --- grounding --------------------------------------------------------------------------------


def ground_profile_updates(
    *, customer: Customer, updates: dict[str, str]
) -> tuple[dict[str, str], dict[str, list[int]], list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """(grounded updates, evidence message ids per field, dropped, proposed): a value is kept only
    where the reader reads that field with an equal canonical value from the customer's own inbound
    words as something capture writes by itself (capture's extraction, through the memory provider)
    — never the model's, never our staff's, never a message the safety gate blocks, never a value the
    customer negated or said of someone else, never an instruction-like value; one the customer only
    asked about or bargained over goes to the review queue as a proposal (issue 35)."""
    if not updates:
        return {}, {}, [], {}
    provider: MemoryProvider = get_provider()
    judged = provider.ground_profile_updates(customer=customer, updates=updates)
    return (
        dict(judged.kept),
        {key: list(ids) for key, ids in judged.evidence.items()},
        list(judged.dropped),
        {key: dict(value) for key, value in judged.proposed.items()},
    )


def ground_hypotheses(
    *, customer: Customer, hypotheses: list[TurnHypothesis]
) -> tuple[list[TurnHypothesis], list[dict[str, Any]]]:
    """(kept, dropped): judged by memory's one evidence check (`memory.capture.grounding`, through
    the provider): every cited message the customer's own admissible evidence with content, the
    hypothesis about what those messages talk about, no sensitive category (PIPL art. 28) and no
    completed transaction, nothing instruction-like, at most a few per turn."""
    if not hypotheses:
        return [], []
    provider: MemoryProvider = get_provider()
    kept, refused = provider.ground_hypotheses(customer=customer, hypotheses=hypotheses)
    dropped = [
        _hypothesis_drop(index, reason, key=hypotheses[index].key, message_ids=list(hypotheses[index].message_ids))
        for index, reason in refused
    ]
    return kept, dropped


def _hypothesis_trace(hypothesis: TurnHypothesis) -> dict[str, Any]:
    return {"key": hypothesis.key, "confidence": hypothesis.confidence, "messageIds": list(hypothesis.message_ids)}


# --- the turn ---------------------------------------------------------------------------------


def _memory_step_failed(
    *, customer: Customer, actor: Actor, action: AuditAction, reason: str, stage: str, exc: Exception, **details: Any
) -> MemoryFailure:
    """Log and audit a failed memory step (call it from the `except` block); the turn goes on."""
    logger.exception("memory %s failed for %s %s", stage, customer.conversation_id, details)
    failure = MemoryFailure(stage=stage, error=exc.__class__.__name__)
    audit_record(
        action=action,
        conversation_id=customer.conversation_id,
        actor=actor,
        reason=reason,
        payload={"stage": stage, **details, "error": failure.error},
    )
    return failure


def _ground_or_drop(
    *, customer: Customer, updates: dict[str, str], actor: Actor
) -> tuple[dict[str, str], dict[str, list[int]], list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Grounding, failing closed: if memory cannot read the customer's words, nothing is kept."""
    try:
        return ground_profile_updates(customer=customer, updates=updates)
    except Exception as exc:
        _memory_step_failed(
            customer=customer,
            actor=actor,
            action=AuditAction.MEMORY_RECALL_FAILED,  # reading the customer's words, like recall
            reason="核对模型的画像更新时读取客户原话失败，全部丢弃",
            stage="grounding",
            exc=exc,
        )
        unread = [
            {"field": key, "value": value, "reason": "无法核对客户原话，未保留"} for key, value in updates.items()
        ]
        return {}, {}, unread, {}


def _ground_hypotheses_or_drop(
    *, customer: Customer, hypotheses: list[TurnHypothesis], actor: Actor
) -> tuple[list[TurnHypothesis], list[dict[str, Any]]]:
    """Hypothesis grounding, failing closed like the profile's: if memory cannot judge, none is kept."""
    try:
        return ground_hypotheses(customer=customer, hypotheses=hypotheses)
    except Exception as exc:
        _memory_step_failed(
            customer=customer,
            actor=actor,
            action=AuditAction.MEMORY_RECALL_FAILED,
            reason="核对模型推断的依据时读取客户原话失败，全部丢弃",
            stage="hypothesis_grounding",
            exc=exc,
        )
        return [], [
            _hypothesis_drop(index, "无法核对依据的客户原话，未保留", key=h.key, message_ids=list(h.message_ids))
            for index, h in enumerate(hypotheses)
        ]


def _build_context(customer: Customer, latest: Message | None, actor: Actor) -> tuple[str, dict[str, Any]]:
    """The provider's context; if memory fails, the builder's degraded one (trace `fallback`)."""
    try:
        provider: MemoryProvider = get_provider()
        built = provider.prefetch(PrefetchRequest(customer=customer, latest_message=latest))
    except Exception as exc:
        failure = _memory_step_failed(
            customer=customer,
            actor=actor,
            action=AuditAction.MEMORY_RECALL_FAILED,
            reason="生成草稿时读取记忆失败，改用最小上下文",
            stage="prefetch",
            exc=exc,
        )
        built = AgentContextBuilder().build_degraded(customer=customer, latest_message=latest, failure=failure)
    trace = dict(built.trace) if isinstance(built.trace, dict) else {"trace": built.trace}
    return built.prompt, trace


def _answered_by(customer: Customer, latest: Message | None, trace: dict[str, Any]) -> list[int]:
    """Our replies after the message being answered, oldest first: as the builder saw them, or,
    when its trace does not say (a degraded context), read here, so auto-send is held either way."""
    if latest is None:
        return []
    seen = trace.get("answered_by_message_ids")
    if isinstance(seen, list):
        return [message_id for message_id in seen if isinstance(message_id, int)]
    later = Q(sent_at__gt=latest.sent_at) | Q(sent_at=latest.sent_at, id__gt=latest.pk)
    replies = Message.objects.filter(customer=customer, is_effective=True, direction=MessageDirection.OUTBOUND)
    newest = replies.filter(later).order_by("-sent_at", "-id").values_list("id", flat=True)[:REPLIES_AFTER_LIMIT]
    return list(reversed(newest))


def _run_client(
    *, client: ModelClient, customer: Customer, prompt: str, hints: dict[str, str], actor: Actor
) -> tuple[ModelResult, SessionEpoch, dict[str, Any]]:
    """Call the client in the current epoch; rotate on an invalid session (and retry once) or an
    exceeded budget. Returns the result, the epoch it ran in and what happened to sessions."""
    rotations: list[dict[str, Any]] = []
    epoch = epoch_for_turn(customer=customer, actor=actor, client=client.name)
    session = SessionRef(epoch.session_id, resume=epoch.model_session_started)
    result = client.generate(prompt=prompt, session=session, hints=hints)
    if result.session_invalid:
        old = epoch.session_id
        epoch = epoch_rotate(customer=customer, reason=CloseReason.INVALID, actor=actor, client=client.name)
        rotations.append({"reason": CloseReason.INVALID, "from": old, "to": epoch.session_id})
        session = SessionRef(epoch.session_id, resume=False)
        result = client.generate(prompt=prompt, session=session, hints=hints)
    if not result.session_invalid:
        # A fresh session that is refused as well stays uncounted; the error goes on the draft.
        epoch_count_turn(epoch=epoch, actor=actor)
    if result.budget_exceeded:
        old = epoch.session_id
        new = epoch_rotate(customer=customer, reason=CloseReason.BUDGET_EXCEEDED, actor=actor, client=client.name)
        rotations.append({"reason": CloseReason.BUDGET_EXCEEDED, "from": old, "to": new.session_id})
    return result, epoch, {"resumed": session.resume, "rotations": rotations}


def draft_generate(
    *,
    customer: Customer,
    actor: Actor,
    reason: str = "生成回复草稿",
    client: ModelClient | None = None,
    regenerate: bool = False,
) -> Draft:
    """Produce a reply draft for the customer's latest message; it waits for review unless auto-send applies.

    A message we already answered (a sent draft replies to it) gets no second draft unless the
    caller asks to `regenerate`, so an agent never answers the same words twice by accident.
    When our side replied after the message some other way (or the caller regenerates), the
    model sees those replies and is told so, and the draft says so (first reason, trace
    `already_answered`) and is never sent automatically (issue 39).
    """
    client = client or get_client()
    latest = message_latest_inbound(customer)
    if latest is not None and not regenerate:
        answered = draft_answering(reply_to=latest)
        if answered is not None:
            raise Conflict(
                f"客户的最新消息已由草稿 #{answered.pk} 回复；如需重新生成，请点“重新生成”（接口参数 regenerate=true）"
                "(the latest customer message was already answered).",
                code="already_answered",
                extra={"draft_id": answered.pk},
            )
    prompt, trace = _build_context(customer, latest, actor)
    answered_by = _answered_by(customer, latest, trace)
    profile = getattr(customer, "profile", None)
    hints = {
        "preferred_name": profile.preferred_name if profile is not None else "",
        "display_name": customer.display_name,
        "latest_message": latest.text if latest else "",
    }
    result, epoch, sessions = _run_client(client=client, customer=customer, prompt=prompt, hints=hints, actor=actor)

    output = validate_output(result.output) if result.ok else TurnOutput(error=result.error or "模型调用失败")
    grounded, evidence, dropped, proposed = _ground_or_drop(
        customer=customer, updates=output.profile_updates, actor=actor
    )
    source_message_ids = sorted({message_id for ids in evidence.values() for message_id in ids})
    hypotheses, dropped_hypotheses = _ground_hypotheses_or_drop(
        customer=customer, hypotheses=output.hypotheses, actor=actor
    )
    trace = {
        **trace,
        "already_answered": bool(answered_by),
        "answered_by_message_ids": answered_by,
        "model": {
            "client": result.client,
            "session_id": epoch.session_id,
            "cost_usd": result.cost_usd,
            "usage": result.usage,
            **sessions,
        },
        "grounding": {
            "evidence": evidence,
            "dropped_fields": [item["field"] for item in output.dropped + dropped],
            # Read only as proposals (issue 35): to the review queue, not the profile. Ids, no words.
            "proposed": {key: value["message_ids"] for key, value in proposed.items()},
        },
        "hypotheses": {
            "kept": [_hypothesis_trace(hypothesis) for hypothesis in hypotheses],
            "dropped": output.dropped_hypotheses + dropped_hypotheses,
        },
    }
    draft = draft_create(
        customer=customer,
        reply_to=latest,
        session_id=epoch.session_id,
        client=result.client,
        reply=output.reply,
        confidence=output.confidence,
        requires_human=output.requires_human or bool(output.error),
        reasons=[ALREADY_ANSWERED_REASON, *output.reasons] if answered_by else output.reasons,
        profile_updates=grounded,
        dropped_updates=output.dropped + dropped,
        error=output.error,
        context_trace=trace,
        actor=actor,
        reason=reason,
        prompt=prompt,
        # No usable reply: a failed draft with the reason, never approvable, not awaiting review.
        failed=not result.ok or not output.reply.strip(),
    )
    # What the model was shown, by ids, kept beside the draft's own prompt (which a forget scrubs).
    # A record that cannot be written is audited; it never costs the agent the draft.
    try:
        with account_atomic():
            context_read_record(
                conversation_id=customer.conversation_id,
                purpose=ContextReadPurpose.DRAFT,
                trace=trace,
                actor=actor,
                reply_to_id=latest.pk if latest is not None else None,
                session_id=epoch.session_id,
                draft_id=draft.pk,
            )
    except Exception as exc:
        _memory_step_failed(
            customer=customer,
            actor=actor,
            action=AuditAction.MEMORY_RECALL_FAILED,
            reason="记录本轮上下文读取失败，草稿照常生成",
            stage="context_read",
            exc=exc,
            draft_id=draft.pk,
        )
    _capture(
        customer=customer,
        draft=draft,
        updates=grounded,
        source_message_ids=source_message_ids,
        hypotheses=hypotheses,
        actor=actor,
        proposed=proposed,
    )
    if answered_by:
        logger.info("draft %s not sent automatically: already answered by %s", draft.pk, answered_by)
    else:
        _maybe_auto_send(draft=draft, customer=customer)
    draft.refresh_from_db()
    return draft


def _capture(
    *,
    customer: Customer,
    draft: Draft,
    updates: dict[str, str],
    source_message_ids: list[int],
    hypotheses: list[TurnHypothesis],
    actor: Actor,
    proposed: dict[str, dict[str, Any]] | None = None,
) -> None:
    try:
        provider: MemoryProvider = get_provider()
        provider.capture(
            CaptureTurn(
                customer=customer,
                draft_id=draft.pk,
                profile_updates=updates,
                source_message_ids=source_message_ids,
                hypotheses=hypotheses,
                profile_proposals=dict(proposed or {}),
            )
        )
    except Exception as exc:
        _memory_step_failed(
            customer=customer,
            actor=actor,
            action=AuditAction.MEMORY_CAPTURE_FAILED,
            reason="草稿的画像更新和推断未能写入记忆队列",
            stage="draft_capture",
            exc=exc,
            draft_id=draft.pk,
        )


def _maybe_auto_send(*, draft: Draft, customer: Customer) -> None:
    if draft_auto_send_blockers(draft, customer):
        return
    try:
        draft_send(draft=draft, actor=PIPELINE_ACTOR, reason="满足自动发送条件，自动发送", auto=True)
    except UpstreamUnavailable:
        # The draft stays pending for review; draft_send already audited the failure.
        logger.warning("auto-send of draft %s refused: upstream unavailable", draft.pk)
