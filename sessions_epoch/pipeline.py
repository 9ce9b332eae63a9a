"""One model turn (DESIGN §9): pick or rotate the epoch → context (through the memory provider) →
client → validate → ground profile updates → save the draft with its trace → queue capture → maybe auto-send.

Memory failures never block a draft (spec §6): they are audited and the turn goes on, with a
degraded context from the same AgentContextBuilder when the provider could not build one.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from conversations.drafts import draft_answering, draft_auto_send_blockers, draft_create, draft_send
from conversations.models import AuditAction, Customer, Draft, Message, MessageDirection
from conversations.profile_fields import PROFILE_FIELD_NAMES
from conversations.selectors import message_latest_inbound
from conversations.services import audit_record
from memory.capture.extract.clauses import affirmed_text, split_sentences
from memory.capture.guard import value_refusal
from memory.capture.safety import scan
from memory.context.builder import AgentContextBuilder, MemoryFailure
from memory.providers import CaptureTurn, MemoryProvider, PrefetchRequest, get_provider
from memory.text import fold_compatibility
from qiwei_site.platform.errors import Conflict, UpstreamUnavailable
from qiwei_site.platform.history import Actor
from sessions_epoch.clients import ModelClient, ModelResult, SessionRef, get_client
from sessions_epoch.models import CloseReason, SessionEpoch
from sessions_epoch.services import epoch_count_turn, epoch_for_turn, epoch_rotate

logger = logging.getLogger(__name__)

PIPELINE_ACTOR = "pipeline"

_UNIT_CHARS = set("元块圆万千百kKwW/每月年左右以内上下约大概套室厅卫个间号日周天")
_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")
_THOUSANDS_RE = re.compile(r"(?<=\d)[,，](?=\d{3})")


@dataclass
class TurnOutput:
    reply: str = ""
    confidence: float = 0.0
    requires_human: bool = True
    profile_updates: dict[str, str] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
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
    if errors:
        result.error = "模型输出不符合约定：" + "；".join(errors)
        result.requires_human = True
    return result


# --- grounding --------------------------------------------------------------------------------


def normalise(text: str) -> str:
    """NFKC, case-folded, without whitespace or thousands separators: 「４，５００ 元」 → 「4500元」."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"(?<=\d)[,，](?=\d{3})", "", text)
    return re.sub(r"\s+", "", text)


def _supports(value: str, message_text: str) -> bool:
    norm_value, norm_message = normalise(value), normalise(message_text)
    if not norm_value:
        return False
    # Digits must not run on: "4500" is not supported by "14500" or "45000".
    pattern = ("(?<!\\d)" if norm_value[0].isdigit() else "") + re.escape(norm_value)
    pattern += "(?!\\d)" if norm_value[-1].isdigit() else ""
    if re.search(pattern, norm_message):
        return True
    # "4500元/月" is supported by "预算4500左右": every number of the value appears as a whole
    # number in the message, and the rest of the value is only units.
    numbers = _NUMBER_RE.findall(norm_value)
    if not numbers:
        return False
    remainder = _NUMBER_RE.sub("", norm_value)
    if any(char not in _UNIT_CHARS for char in remainder):
        return False
    message_numbers = set(_NUMBER_RE.findall(norm_message))
    return all(number in message_numbers for number in numbers)


def _affirmed_statements(text: str) -> list[str]:
    """The customer's message as the clauses it affirms: what a clause negates ("我不要两居室") is cut
    out by the extractor's clause guard, so it grounds nothing."""
    text = _THOUSANDS_RE.sub("", fold_compatibility(text))  # "４，５００" stays one number
    return [affirmed_text(clause) for clauses, _question in split_sentences(text) for clause in clauses]


def ground_profile_updates(
    *, customer: Customer, updates: dict[str, str]
) -> tuple[dict[str, str], dict[str, list[int]], list[dict[str, Any]]]:
    """(grounded updates, evidence message ids per field, dropped): a value is kept only if the
    customer's own inbound words affirm it — never the model's, never our staff's, never a message
    the safety gate blocks, never a value the customer negated, never an instruction-like value."""
    if not updates:
        return {}, {}, []
    messages = [
        (message_id, _affirmed_statements(text))
        for message_id, text in Message.objects.filter(
            customer=customer, direction=MessageDirection.INBOUND, is_effective=True
        )
        .order_by("-sent_at", "-id")
        .values_list("id", "text")[:500]
        if not scan(text).blocked
    ]
    grounded: dict[str, str] = {}
    evidence: dict[str, list[int]] = {}
    dropped: list[dict[str, Any]] = []
    for key, value in updates.items():
        if value_refusal(key, value):
            dropped.append({"field": key, "value": value, "reason": "该值像指令或角色，不是客户情况"})
            continue
        ids = sorted(
            message_id
            for message_id, statements in messages
            if any(_supports(value, statement) for statement in statements)
        )
        if ids:
            grounded[key] = value
            evidence[key] = ids[-5:]
        else:
            dropped.append({"field": key, "value": value, "reason": "客户原话中找不到该值"})
    return grounded, evidence, dropped


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
    """
    client = client or get_client()
    latest = message_latest_inbound(customer)
    if latest is not None and not regenerate:
        answered = draft_answering(reply_to=latest)
        if answered is not None:
            raise Conflict(
                f"客户的最新消息已由草稿 #{answered.pk} 回复；如需重新生成请传 regenerate=true "
                "(the latest customer message was already answered).",
                code="already_answered",
                extra={"draft_id": answered.pk},
            )
    prompt, trace = _build_context(customer, latest, actor)
    profile = getattr(customer, "profile", None)
    hints = {
        "preferred_name": profile.preferred_name if profile is not None else "",
        "display_name": customer.display_name,
        "latest_message": latest.text if latest else "",
    }
    result, epoch, sessions = _run_client(client=client, customer=customer, prompt=prompt, hints=hints, actor=actor)

    output = validate_output(result.output) if result.ok else TurnOutput(error=result.error or "模型调用失败")
    grounded, evidence, dropped = ground_profile_updates(customer=customer, updates=output.profile_updates)
    source_message_ids = sorted({message_id for ids in evidence.values() for message_id in ids})
    trace = {
        **trace,
        "model": {
            "client": result.client,
            "session_id": epoch.session_id,
            "cost_usd": result.cost_usd,
            "usage": result.usage,
            **sessions,
        },
        "grounding": {"evidence": evidence, "dropped_fields": [item["field"] for item in output.dropped + dropped]},
    }
    draft = draft_create(
        customer=customer,
        reply_to=latest,
        session_id=epoch.session_id,
        client=result.client,
        reply=output.reply,
        confidence=output.confidence,
        requires_human=output.requires_human or bool(output.error),
        reasons=output.reasons,
        profile_updates=grounded,
        dropped_updates=output.dropped + dropped,
        error=output.error,
        context_trace=trace,
        actor=actor,
        reason=reason,
    )
    _capture(customer=customer, draft=draft, updates=grounded, source_message_ids=source_message_ids, actor=actor)
    _maybe_auto_send(draft=draft, customer=customer)
    draft.refresh_from_db()
    return draft


def _capture(
    *, customer: Customer, draft: Draft, updates: dict[str, str], source_message_ids: list[int], actor: Actor
) -> None:
    try:
        provider: MemoryProvider = get_provider()
        provider.capture(
            CaptureTurn(
                customer=customer, draft_id=draft.pk, profile_updates=updates, source_message_ids=source_message_ids
            )
        )
    except Exception as exc:
        _memory_step_failed(
            customer=customer,
            actor=actor,
            action=AuditAction.MEMORY_CAPTURE_FAILED,
            reason="草稿的画像更新未能写入记忆队列",
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
