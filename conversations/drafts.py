"""Drafts' writes (spec §6, §8): create (the turn pipeline's one way in), approve, reject, send —
idempotently, one delivery per draft.

Generating (issue 39): a draft the Workbench asked for is a `generating` row from the moment it is
asked (`draft_generation_start`), so a reload shows it with its elapsed time; the turn fills that
same row (`draft_generating` binds it, `draft_create` fills it). A new draft replaces the
customer's failed ones (status `superseded`, `replaced_by` the new draft): one card per message,
the failed ones kept with their history and audit.

Sending claims the Delivery row (unique per draft and per idempotency key) BEFORE calling the
upstream, so concurrent or repeated requests find the claim and never call the upstream twice.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.db import IntegrityError
from django.db.models import F
from django.utils import timezone

from conversations import gateway as upstream
from conversations.models import (
    Alert,
    AuditAction,
    Customer,
    Delivery,
    DeliveryStatus,
    Draft,
    DraftStatus,
    Message,
    MessageDirection,
    MessageSecret,
    SessionMode,
)
from conversations.received import stored_form
from conversations.selectors import message_latest_inbound
from qiwei_site.platform.audit import audit_record, context_read_record
from qiwei_site.platform.errors import Conflict, ValidationFailed
from qiwei_site.platform.errors import UpstreamUnavailable as UpstreamUnavailableError
from qiwei_site.platform.history import Actor, actor_identity, stamp_history
from qiwei_site.platform.models import ContextReadPurpose
from qiwei_site.platform.tenancy import account_atomic
from qiwei_site.reading.masking import mask_sensitive

logger = logging.getLogger(__name__)

# A claim older than this was left by a process that died mid-send; the upstream dedupes on the
# idempotency key, so re-claiming it is safe.
STALE_CLAIM_SECONDS = 300

# A model client's error is its Chinese summary, then, after this mark, the raw words of the server
# or CLI. `draft_create` keeps the summary as the draft's error and the raw words only in its trace
# (`context_trace.model.error_detail`, masked and cut), so the Workbench and the API never show a
# server's raw JSON as the reason.
MODEL_ERROR_DETAIL_MARK = "\n--- 原始响应 (raw) ---\n"
ERROR_DETAIL_CHARS = 1000

# The generating draft the current turn fills (`draft_generating`), instead of saving a new row.
_generating_draft: ContextVar[int | None] = ContextVar("generating_draft", default=None)


def model_error_text(summary: str, detail: str = "") -> str:
    """A client's error: the summary, and the raw words after the mark when there are any."""
    detail = (detail or "").strip()
    return f"{summary}{MODEL_ERROR_DETAIL_MARK}{detail}" if detail else summary


def model_error_split(error: str) -> tuple[str, str]:
    """(summary, raw words) of a client's error; an error without the mark is all summary."""
    summary, _mark, detail = (error or "").partition(MODEL_ERROR_DETAIL_MARK)
    return summary.strip(), detail.strip()


def _trace_with_error_detail(trace: dict[str, Any], detail: str) -> dict[str, Any]:
    if not detail:
        return trace
    found = trace.get("model")
    model: dict[str, Any] = found if isinstance(found, dict) else {}
    # Masked (a server may echo a key or a number) and cut: it is for whoever debugs the model server.
    return {**trace, "model": {**model, "error_detail": mask_sensitive(detail[:ERROR_DETAIL_CHARS])}}


def draft_generation_stale_after() -> dt.timedelta:
    """How long a draft may say 生成中 before it counts as abandoned (its worker died): two model
    calls (a turn retries once on an invalid session) and a margin."""
    longest = max(settings.CLAUDE_CODE_TIMEOUT_SECONDS, settings.QIWEI_OPENAI_TIMEOUT_SECONDS)
    return dt.timedelta(seconds=2 * longest + 60)


def _is_stale(draft: Draft, now: dt.datetime | None = None) -> bool:
    return draft.created_at < (now or timezone.now()) - draft_generation_stale_after()


def _supersede(*, customer: Customer, by: Draft, actor: Actor, reason: str) -> list[int]:
    """Mark the customer's failed drafts, and any generating one that was abandoned, as replaced by
    `by`; returns their ids. Saved one by one, so each keeps a history row saying why."""
    replaced: list[int] = []
    candidates = (
        Draft.objects.select_for_update()
        .filter(customer=customer, status__in=[DraftStatus.FAILED, DraftStatus.GENERATING])
        .exclude(pk=by.pk)
        .order_by("id")
    )
    now = timezone.now()
    for old in candidates:
        if old.status == DraftStatus.GENERATING and not _is_stale(old, now):
            continue
        old.status = DraftStatus.SUPERSEDED
        old.replaced_by = by
        stamp_history(old, actor=actor, reason=f"已被草稿 #{by.pk} 替换（{reason}）")
        old.save(update_fields=["status", "replaced_by", "updated_at"])
        replaced.append(old.pk)
    return replaced


def draft_create(
    *,
    customer: Customer,
    reply_to: Message | None,
    session_id: str,
    client: str,
    reply: str,
    confidence: float,
    requires_human: bool,
    reasons: list[str],
    profile_updates: dict[str, str],
    dropped_updates: list[dict[str, Any]],
    error: str,
    context_trace: dict[str, Any],
    actor: Actor,
    reason: str,
    prompt: str = "",
    failed: bool = False,
) -> Draft:
    """Save a generated draft with its trace and the prompt exactly as the model received it
    (pending review, or `failed` when the model gave no usable reply) and audit it. The prompt is
    kept out of the draft's history, so forget has one copy to scrub.

    A client's error is split: its summary is the draft's error, its raw words go to the trace.
    Inside `draft_generating`, the generating row is filled instead of a new one saved. Either
    way the customer's failed drafts are replaced by this one."""
    summary, detail = model_error_split(error)
    fields: dict[str, Any] = {
        "reply_to": reply_to,
        "session_id": session_id,
        "client": client,
        "reply": reply,
        "confidence": confidence,
        "requires_human": requires_human,
        "reasons": reasons,
        "profile_updates": profile_updates,
        "dropped_updates": dropped_updates,
        "error": summary[:2000],
        "context_trace": _trace_with_error_detail(context_trace, detail),
        "prompt": prompt,
        "status": DraftStatus.FAILED if failed else DraftStatus.PENDING,
    }
    with account_atomic():
        bound = _generating_draft.get()
        draft = (
            Draft.objects.select_for_update().filter(pk=bound, customer=customer, status=DraftStatus.GENERATING).first()
            if bound is not None
            else None
        )
        if draft is None and bound is not None:
            # The generating draft this turn was to fill was replaced (重新生成 after it looked
            # interrupted) or erased: its late answer is not saved as another draft for the message.
            raise Conflict(
                f"草稿 {bound} 已被替换或删除，本次生成的结果不再保存 (the draft this turn was filling is gone).",
                code="draft_generation_abandoned",
            )
        if draft is None:
            _refuse_while_generating(customer)  # a turn outside the Workbench's: not a second draft
            draft = Draft(customer=customer)
        for name, value in fields.items():
            setattr(draft, name, value)
        _generated_save(
            draft,
            actor=actor,
            reason=reason,
            payload={
                "client": client,
                "session_id": session_id,
                "confidence": draft.confidence,
                "requires_human": draft.requires_human,
                "grounded_fields": sorted(profile_updates),
                "dropped_fields": [item["field"] for item in draft.dropped_updates],
                "error": bool(draft.error),
            },
        )
    return draft


def _generated_save(
    draft: Draft, *, actor: Actor, reason: str, payload: dict[str, Any], replaces_always: bool = False
) -> None:
    """Save a draft a turn made or started (validated, its history row stamped), replace the
    customer's failed drafts with it, and audit `draft_generated` with its id and what it replaced."""
    draft.full_clean()
    stamp_history(draft, actor=actor, reason=reason)
    draft.save()
    replaced = _supersede(customer=draft.customer, by=draft, actor=actor, reason=reason)
    audit_record(
        action=AuditAction.DRAFT_GENERATED,
        conversation_id=draft.customer.conversation_id,
        actor=actor,
        reason=reason,
        payload={"draft_id": draft.pk, **payload, **({"replaces": replaced} if replaced or replaces_always else {})},
    )


def _refuse_while_generating(customer: Customer) -> None:
    """One generation at a time per customer (the customer's row is the lock): refused while a draft
    is 生成中 and not yet past its stale time, whichever path asks (the Workbench's queued turn, the
    API's turn in the request, an automatic turn)."""
    Customer.objects.select_for_update().filter(pk=customer.pk).first()
    running = Draft.objects.filter(customer=customer, status=DraftStatus.GENERATING).order_by("-id").first()
    if running is not None and not _is_stale(running):
        raise Conflict(
            f"草稿 #{running.pk} 正在生成，请稍候 (a draft is being generated).",
            code="draft_generating",
            extra={"draft_id": running.pk},
        )


def draft_generation_start(*, customer: Customer, actor: Actor, reason: str, regenerate: bool = False) -> Draft:
    """A `generating` draft for the customer's latest message, saved before the model is asked
    (the caller queues the turn after commit), so every reload shows it with its elapsed time. It
    replaces the customer's failed drafts at once (one card). Refused while another is generating,
    and, unless `regenerate`, when the latest message was already answered (as the turn refuses)."""
    with account_atomic():
        _refuse_while_generating(customer)
        latest = message_latest_inbound(customer)
        if latest is not None and not regenerate:
            answered = draft_answering(reply_to=latest)
            if answered is not None:
                raise Conflict(
                    f"客户的最新消息已由草稿 #{answered.pk} 回复；"
                    "如需重新生成，请点“重新生成”（接口参数 regenerate=true）"
                    "(the latest customer message was already answered).",
                    code="already_answered",
                    extra={"draft_id": answered.pk},
                )
        draft = Draft(customer=customer, reply_to=latest, status=DraftStatus.GENERATING, requires_human=True)
        _generated_save(
            draft,
            actor=actor,
            reason=reason,
            payload={"generating": True, "regenerate": regenerate},
            replaces_always=True,
        )
    return draft


@contextmanager
def draft_generating(*, draft: Draft) -> Iterator[Draft]:
    """Inside, the turn's `draft_create` fills this generating draft instead of saving a new one."""
    token = _generating_draft.set(draft.pk)
    try:
        yield draft
    finally:
        _generating_draft.reset(token)


def draft_generation_fail(*, draft: Draft, error: str, actor: Actor, reason: str) -> Draft:
    """A turn that ended without filling its generating draft (it raised): the draft fails with the
    summary. Nothing is written when the turn did fill it, or a newer draft replaced it."""
    summary, detail = model_error_split(error)
    with account_atomic():
        locked = Draft.objects.select_for_update().get(pk=draft.pk)
        if locked.status != DraftStatus.GENERATING:
            return locked
        locked.status = DraftStatus.FAILED
        locked.error = (summary or "生成草稿失败")[:2000]
        trace = locked.context_trace if isinstance(locked.context_trace, dict) else {}
        locked.context_trace = _trace_with_error_detail(trace, detail)
        stamp_history(locked, actor=actor, reason=reason)
        locked.save(update_fields=["status", "error", "context_trace", "updated_at"])
        audit_record(
            action=AuditAction.DRAFT_GENERATED,
            conversation_id=locked.customer.conversation_id,
            actor=actor,
            reason=reason,
            payload={"draft_id": locked.pk, "error": True},
        )
    return locked


def draft_context_read(*, draft: Draft, actor: Actor, purpose: ContextReadPurpose) -> None:
    """Record that someone read what a draft's context showed — its prompt (API, Workbench, admin)
    or its trace (admin) — by ids, as the turn itself recorded it (issue 36: every read of a context
    is on record). Written in its own transaction: a read that cannot be recorded is not shown."""
    with account_atomic():
        context_read_record(
            conversation_id=draft.customer.conversation_id,
            purpose=purpose,
            trace=draft.context_trace if isinstance(draft.context_trace, dict) else {},
            actor=actor,
            reply_to_id=draft.reply_to_id,
            session_id=draft.session_id,
            draft_id=draft.pk,
        )


def idempotency_key_for(draft: Draft) -> str:
    return f"draft-{draft.pk}"


def draft_auto_send_blockers(draft: Draft, customer: Customer | None = None) -> list[str]:
    """Why `draft` may not be sent without review (empty: it may). Spec §6: whitelist, mode,
    confidence and requiresHuman all have to agree; and no alert on the customer may be open
    (a personal number, a blocked message: a person looks before anything goes out)."""
    customer = customer or draft.customer
    blockers = []
    if not customer.auto_send_whitelisted:
        blockers.append("客户不在自动发送白名单")
    if customer.session_mode != SessionMode.AUTO:
        blockers.append(f"会话模式为「{customer.get_session_mode_display()}」，不是自动")
    open_alerts = Alert.objects.filter(customer=customer, resolved=False).count()
    if open_alerts:
        blockers.append(f"客户有 {open_alerts} 条未处理的预警")
    if draft.requires_human:
        blockers.append("模型要求人工处理 (requiresHuman)")
    if draft.confidence < settings.QIWEI_AUTO_SEND_CONFIDENCE:
        blockers.append(f"置信度 {draft.confidence:.2f} 低于阈值 {settings.QIWEI_AUTO_SEND_CONFIDENCE:.2f}")
    if draft.error:
        blockers.append("草稿生成有错误")
    if not draft.reply.strip():
        blockers.append("草稿内容为空")
    if draft.status != DraftStatus.PENDING:
        blockers.append(f"草稿状态为「{draft.get_status_display()}」")
    refusal = upstream.get_gateway().send_refusal(customer.conversation_id, draft.final_text or draft.reply)
    if refusal:
        blockers.append(f"上游不允许发送：{refusal}")
    return blockers


def _review(draft: Draft, *, actor: Actor, reason: str, status: str, final_text: str | None = None) -> Draft:
    draft.status = status
    fields = ["status", "reviewed_by_id", "reviewed_at", "updated_at"]
    if final_text is not None:
        draft.final_text = final_text
        fields.append("final_text")
    draft.reviewed_by_id = actor_identity(actor)[0]
    draft.reviewed_at = timezone.now()
    stamp_history(draft, actor=actor, reason=reason)
    draft.save(update_fields=fields)
    return draft


def draft_approve(*, draft: Draft, actor: Actor, reason: str = "审核通过", text: str | None = None) -> Draft:
    """Approve a pending draft, optionally with an edited text (kept as `final_text`)."""
    if text is not None:
        text = text.strip()
        if not text:
            raise ValidationFailed("编辑后的回复不能为空 (text must not be empty).", code="empty_text")
        if len(text) > 4000:
            raise ValidationFailed("回复过长，最多 4000 字 (text too long).", code="text_too_long")
    with account_atomic():
        locked = Draft.objects.select_for_update().get(pk=draft.pk)
        if locked.status == DraftStatus.APPROVED and (text is None or text == locked.final_text):
            return locked  # nothing changed
        if locked.status != DraftStatus.PENDING and locked.status != DraftStatus.APPROVED:
            raise Conflict(
                f"草稿已{locked.get_status_display()}，不能再批准 (draft is {locked.status}).", code="draft_not_pending"
            )
        if text is None and not locked.reply.strip():
            raise ValidationFailed("草稿内容为空，请填写回复后再批准 (empty draft needs a text).", code="empty_text")
        if Delivery.objects.filter(draft=locked).exclude(status=DeliveryStatus.FAILED).exists():
            # The send read the text under this lock already: an edit now would never reach the customer.
            raise Conflict("草稿正在发送或已发送，不能再修改 (draft is being sent).", code="draft_sending")
        edited = text is not None and text != locked.reply
        _review(locked, actor=actor, reason=reason, status=DraftStatus.APPROVED, final_text=text)
        audit_record(
            action=AuditAction.DRAFT_APPROVED,
            conversation_id=locked.customer.conversation_id,
            actor=actor,
            reason=reason,
            payload={"draft_id": locked.pk, "edited": edited},
        )
    return locked


def draft_reject(*, draft: Draft, actor: Actor, reason: str = "审核拒绝") -> Draft:
    with account_atomic():
        locked = Draft.objects.select_for_update().get(pk=draft.pk)
        if locked.status == DraftStatus.REJECTED:
            return locked
        if locked.status not in (DraftStatus.PENDING, DraftStatus.APPROVED, DraftStatus.FAILED):
            raise Conflict(
                f"草稿已{locked.get_status_display()}，不能拒绝 (draft is {locked.status}).", code="draft_not_pending"
            )
        if Delivery.objects.filter(draft=locked).exclude(status=DeliveryStatus.FAILED).exists():
            raise Conflict("草稿正在发送，不能拒绝 (draft is being sent).", code="draft_sending")
        _review(locked, actor=actor, reason=reason, status=DraftStatus.REJECTED)
        audit_record(
            action=AuditAction.DRAFT_REJECTED,
            conversation_id=locked.customer.conversation_id,
            actor=actor,
            reason=reason,
            payload={"draft_id": locked.pk},
        )
    return locked


def _sendable_text(draft: Draft, *, auto: bool) -> str:
    """Under the draft's lock: refuse a draft that may not be sent; else the text to send, read
    there, so a reviewer's edit is either in it or refused (`draft_approve` refuses an edit once a
    delivery is under way)."""
    _check_sendable(draft, auto=auto)
    text = (draft.final_text or draft.reply).strip()
    if not text:
        raise ValidationFailed("草稿内容为空，不能发送 (nothing to send).", code="empty_text")
    return text


def _claim(draft: Draft, *, auto: bool) -> tuple[Delivery, bool]:
    """(delivery, claimed): claimed is true only for the one caller that must call the upstream;
    the delivery's text is the draft's as read under its lock."""
    existing = Delivery.objects.filter(draft=draft).first()
    if existing is None:
        try:
            with account_atomic():
                # Re-read under the draft's lock: a reviewer may have edited or rejected it since.
                text = _sendable_text(Draft.objects.select_for_update().get(pk=draft.pk), auto=auto)
                delivery = Delivery.objects.create(
                    draft=draft,
                    idempotency_key=idempotency_key_for(draft),
                    status=DeliveryStatus.SENDING,
                    text=text,
                    auto=auto,
                    attempts=1,
                )
            return delivery, True
        except IntegrityError:
            existing = Delivery.objects.get(draft=draft)
    stale_before = timezone.now() - dt.timedelta(seconds=STALE_CLAIM_SECONDS)
    retryable = existing.status == DeliveryStatus.FAILED or (
        existing.status == DeliveryStatus.SENDING and existing.updated_at < stale_before
    )
    if not retryable:
        return existing, False
    # A conditional update: of many retries, exactly one re-claims the failed or abandoned row.
    with account_atomic():
        text = _sendable_text(Draft.objects.select_for_update().get(pk=draft.pk), auto=auto)
        claimed = Delivery.objects.filter(
            pk=existing.pk, status=existing.status, updated_at=existing.updated_at
        ).update(
            status=DeliveryStatus.SENDING,
            text=text,
            auto=auto,
            attempts=F("attempts") + 1,
            last_error="",
            updated_at=timezone.now(),
        )
    existing.refresh_from_db()
    return existing, bool(claimed)


def _check_sendable(draft: Draft, *, auto: bool) -> None:
    if auto:
        blockers = draft_auto_send_blockers(draft)
        if blockers:
            raise Conflict("不满足自动发送条件：" + "；".join(blockers), code="auto_send_not_allowed")
        return
    if draft.status == DraftStatus.PENDING:
        raise Conflict("草稿尚未审核，批准后才能发送 (draft must be approved first).", code="draft_not_approved")
    if draft.status == DraftStatus.REJECTED:
        raise Conflict("草稿已被拒绝，不能发送 (draft was rejected).", code="draft_rejected")
    if draft.status == DraftStatus.FAILED:
        raise Conflict("草稿生成失败，没有可发送的回复，请重新生成 (draft failed).", code="draft_failed")
    if draft.status == DraftStatus.GENERATING:
        raise Conflict("草稿正在生成，还没有可发送的回复 (draft is being generated).", code="draft_generating")
    if draft.status == DraftStatus.SUPERSEDED:
        raise Conflict("草稿已被新草稿替换，不能发送 (draft was replaced).", code="draft_superseded")


def draft_send(*, draft: Draft, actor: Actor, reason: str = "发送回复", auto: bool = False) -> Delivery:
    """Send an approved (or auto-eligible) draft exactly once; repeats return the same delivery."""
    existing = Delivery.objects.filter(draft_id=draft.pk).first()
    if existing is not None and existing.status == DeliveryStatus.SENT:
        return existing
    draft = Draft.objects.select_related("customer").get(pk=draft.pk)
    conversation_id = draft.customer.conversation_id
    gateway = upstream.get_gateway()
    if existing is None or existing.status == DeliveryStatus.FAILED:
        text = _sendable_text(draft, auto=auto)  # refuse early, before any lock
        refusal = gateway.send_refusal(conversation_id, text)
        if refusal:
            raise Conflict(f"无法发送：{refusal}", code="upstream_refused", extra={"draft_id": draft.pk})
    delivery, claimed = _claim(draft, auto=auto)
    if not claimed:
        return delivery
    text = delivery.text

    try:
        upstream_id = gateway.send(conversation_id=conversation_id, text=text, idempotency_key=delivery.idempotency_key)
    except upstream.UpstreamError as exc:
        detail = str(exc)
        refused = isinstance(exc, upstream.UpstreamRefused)
        with account_atomic():
            changes: dict[str, Any] = {"status": DeliveryStatus.FAILED, "last_error": detail[:300]}
            if refused:
                # Definitely not delivered: the next attempt is a new send with a key of its own, so an
                # upstream that remembers refused keys (WeCom's msgid) never reads it as a repeat.
                changes["idempotency_key"] = f"{idempotency_key_for(draft)}-{delivery.attempts}"
            Delivery.objects.filter(pk=delivery.pk).update(**changes, updated_at=timezone.now())
            audit_record(
                action=AuditAction.DRAFT_SEND_FAILED,
                conversation_id=conversation_id,
                actor=actor,
                reason=reason,
                payload={"draft_id": draft.pk, "auto": auto, "error": detail[:200]},
            )
        if isinstance(exc, upstream.UpstreamRefused):
            # The upstream is up and said no to this one reply: the draft keeps the reason; the
            # status stays online, so sending to other customers goes on.
            raise Conflict(f"无法发送：{detail}", code=exc.code, extra={"draft_id": draft.pk}) from None
        upstream.upstream_mark_unreachable(detail, scope=gateway.status_scope)
        raise UpstreamUnavailableError(
            f"企微上游不可用，消息未发送：{detail}。草稿已保留，可稍后重试 (upstream unavailable, nothing was sent).",
            extra={"draft_id": draft.pk},
        ) from None

    with account_atomic():
        now = timezone.now()
        Delivery.objects.filter(pk=delivery.pk).update(
            status=DeliveryStatus.SENT, upstream_id=upstream_id, sent_at=now, updated_at=now
        )
        locked = Draft.objects.select_for_update().get(pk=draft.pk)
        locked.status = DraftStatus.SENT
        stamp_history(locked, actor=actor, reason=reason)
        locked.save(update_fields=["status", "updated_at"])
        reply = _reply_into_thread(draft=locked, delivery_id=delivery.pk, text=text, sent_at=now, actor=actor)
        audit_record(
            action=AuditAction.DRAFT_AUTO_SENT if auto else AuditAction.DRAFT_SENT,
            conversation_id=conversation_id,
            actor=actor,
            reason=reason,
            payload={
                "draft_id": draft.pk,
                "delivery_id": delivery.pk,
                "upstream_id": upstream_id,
                "auto": auto,
                "message_id": reply.pk,
            },
        )
    delivery.refresh_from_db()
    return delivery


def delivery_undelivered(*, delivery: Delivery, detail: str, actor: Actor, reason: str) -> bool:
    """The upstream reported afterwards that a sent reply never reached the customer (WeCom's
    `msg_send_fail`): the delivery is failed with the reason, and the reply's line in the thread no
    longer counts as said (the next context and the answered check stop relying on it); the draft
    keeps its history. False when the delivery was not sent (nothing to undo)."""
    with account_atomic():
        changed = Delivery.objects.filter(pk=delivery.pk, status=DeliveryStatus.SENT).update(
            status=DeliveryStatus.FAILED, last_error=detail[:300], updated_at=timezone.now()
        )
        if not changed:
            return False
        Message.objects.filter(
            customer_id=delivery.draft.customer_id, external_id=reply_external_id(delivery.pk)
        ).update(is_effective=False)
        audit_record(
            action=AuditAction.DRAFT_SEND_FAILED,
            conversation_id=delivery.draft.customer.conversation_id,
            actor=actor,
            reason=reason,
            payload={"draft_id": delivery.draft_id, "delivery_id": delivery.pk, "error": detail[:200]},
        )
    return True


def reply_external_id(delivery_id: int) -> str:
    """The thread message of a delivery is keyed by it: one message per delivery, however often sent."""
    return f"delivery-{delivery_id}"


def _reply_into_thread(*, draft: Draft, delivery_id: int, text: str, sent_at: dt.datetime, actor: Actor) -> Message:
    """A delivered reply joins the conversation as our outbound message, so the next context and the
    Workbench show what we already told the customer."""
    _identity, sender = actor_identity(actor)
    # Stored as ingest stores a message: masked, the words as sent sealed (a door code an agent typed).
    # Already delivered: an unusable sealing key costs the sealed copy, never the thread's record.
    stored, sealed, categories = stored_form(text, original_required=False)
    message, created = Message.objects.get_or_create(
        customer=draft.customer,
        external_id=reply_external_id(delivery_id),
        defaults={
            "direction": MessageDirection.OUTBOUND,
            "sender": "自动回复" if sender in ("pipeline", "system") else sender[:100],
            "text": stored,
            "sent_at": sent_at,
            "is_effective": True,
        },
    )
    if created and sealed is not None:
        MessageSecret.objects.create(message=message, sealed=sealed, categories=list(categories))
    if created and (draft.customer.last_message_at is None or draft.customer.last_message_at < sent_at):
        Customer.objects.filter(pk=draft.customer.pk).update(last_message_at=sent_at)
    return message


def draft_answering(*, reply_to: Message) -> Draft | None:
    """The sent draft that already answered this customer message, if any."""
    return Draft.objects.filter(reply_to=reply_to, status=DraftStatus.SENT).order_by("-id").first()
