"""Business state people write (spec §2 结构化业务状态): tasks, manual alerts, recommendations and the
feedback on them. Each write is one service: validated, in one account transaction, with history
and an audit row (ids and field names, never the text, which may quote the customer).

Automatic alerts and resolving any alert are `conversations.services.alert_raise` / `alert_resolve`
(capture calls them from below this module's callers)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models
from django.utils import timezone

from conversations.models import (
    Alert,
    AlertKind,
    AlertLevel,
    AuditAction,
    Customer,
    FeedbackSource,
    FeedbackVerdict,
    Recommendation,
    RecommendationFeedback,
    RecommendationStatus,
    Task,
    TaskStatus,
)
from conversations.services import resolution_reason, resolved_by
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.errors import Conflict, ValidationFailed
from qiwei_site.platform.history import Actor, actor_identity, stamp_history
from qiwei_site.platform.tenancy import account_atomic
from qiwei_site.reading.normalise import has_invisible

TASK_TITLE_MAX = 200
TASK_NOTE_MAX = 500
ALERT_TEXT_MAX = 300
RECOMMENDATION_TEXT_MAX = 300
FEEDBACK_COMMENT_MAX = 300

TASK_EDITABLE_FIELDS = ("title", "note", "due_at")
ALERT_EDITABLE_FIELDS = ("level", "text")
RECOMMENDATION_EDITABLE_FIELDS = ("text",)


# --- validation shared by the services ----------------------------------------------------------


def clean_text(
    value: object, *, field: str, label: str, max_chars: int, required: bool, multiline: bool = False
) -> str:
    """A text as stored: surrounding whitespace dropped; a one-line field gets its runs of
    whitespace folded. Refused (with the field named): not a string, empty when required, too
    long, or holding control characters (a note may keep its line breaks)."""
    if not isinstance(value, str):
        raise ValidationFailed(f"{label}必须是文字 ({field} must be a string).", code=f"invalid_{field}")
    text = value.replace("\r\n", "\n").replace("\r", "\n").strip() if multiline else " ".join(value.split())
    if required and not text:
        raise ValidationFailed(f"{label}不能为空 ({field} is required).", code=f"{field}_required")
    if len(text) > max_chars:
        raise ValidationFailed(
            f"{label}不能超过 {max_chars} 个字符 ({field} must be at most {max_chars} characters).",
            code=f"{field}_too_long",
        )
    if has_invisible(text, frozenset("\n\t") if multiline else frozenset()):
        raise ValidationFailed(
            f"{label}不能包含控制字符或不可见字符 ({field} must not contain control characters).",
            code=f"invalid_{field}",
        )
    return text


def _choice(value: object, choices: type[models.TextChoices], *, field: str, label: str) -> str:
    if not isinstance(value, str) or value not in choices.values:
        options = "、".join(f"{v}（{choices(v).label}）" for v in choices.values)
        raise ValidationFailed(
            f"{label}只能是：{options} ({field} must be one of {choices.values}).", code=f"invalid_{field}"
        )
    return value


def _due_at(value: object) -> dt.datetime | None:
    if value is None:
        return None
    if not isinstance(value, dt.datetime) or timezone.is_naive(value):
        raise ValidationFailed("截止时间必须是带时区的时间 (due_at must be an aware datetime).", code="invalid_due_at")
    return value


def _refuse_other_fields(changes: dict[str, Any], editable: tuple[str, ...], what: str) -> None:
    unknown = sorted(set(changes) - set(editable))
    if unknown:
        raise ValidationFailed(
            f"不可修改的{what}字段 {unknown}，可修改：{list(editable)} (these fields cannot be edited).",
            code="field_not_editable",
        )


def _full_clean(instance: models.Model, exclude: list[str] | None = None) -> None:
    try:
        instance.full_clean(exclude=exclude)
    except DjangoValidationError as exc:
        raise ValidationFailed("; ".join(exc.messages)) from None


def _write(instance: models.Model, *, actor: Actor, reason: str, fields: list[str] | None = None) -> None:
    _full_clean(instance, exclude=["customer"])
    stamp_history(instance, actor=actor, reason=reason)
    instance.save(update_fields=[*fields, "updated_at"] if fields is not None else None)


def _write_audited(
    instance: Task | Alert | Recommendation,
    *,
    action: str,
    payload: Callable[[], dict[str, Any]],
    actor: Actor,
    reason: str,
    fields: list[str] | None = None,
) -> None:
    """Validate and save (all fields, or `fields`), with its history row and its audit record
    (`payload` is read once saved: a new row has its id only then)."""
    _write(instance, actor=actor, reason=reason, fields=fields)
    audit_record(
        action=action,
        conversation_id=instance.customer.conversation_id,
        actor=actor,
        reason=reason,
        payload=payload(),
    )


def _apply(current: models.Model, changes: dict[str, Any]) -> list[str]:
    changed = [name for name, value in changes.items() if getattr(current, name) != value]
    for name in changed:
        setattr(current, name, changes[name])
    return changed


def _close(instance: Task | Alert | Recommendation, *, actor: Actor, reason: str) -> list[str]:
    instance.resolution_reason = reason
    instance.resolved_at = timezone.now()
    instance.resolved_by_id, instance.resolved_by_name = resolved_by(actor)
    return ["resolution_reason", "resolved_at", "resolved_by_id", "resolved_by_name"]


# --- tasks ----------------------------------------------------------------------------------------


def task_create(
    *,
    customer: Customer,
    title: object,
    note: object = "",
    due_at: object = None,
    actor: Actor,
    reason: str = "",
) -> Task:
    """A follow-up for the customer (带看、回电、发资料…), open until someone resolves it."""
    task = Task(
        customer=customer,
        title=clean_text(title, field="title", label="待办", max_chars=TASK_TITLE_MAX, required=True),
        note=clean_text(note, field="note", label="说明", max_chars=TASK_NOTE_MAX, required=False, multiline=True),
        due_at=_due_at(due_at),
    )
    reason = (reason or "").strip() or "新建待办"
    with account_atomic():
        _write_audited(
            task,
            action=AuditAction.TASK_CREATED,
            payload=lambda: {"task_id": task.pk, "due_at": task.due_at.isoformat() if task.due_at else None},
            actor=actor,
            reason=reason,
        )
    return task


def _task_changes(changes: dict[str, Any]) -> dict[str, Any]:
    _refuse_other_fields(changes, TASK_EDITABLE_FIELDS, "待办")
    cleaned: dict[str, Any] = {}
    if "title" in changes:
        cleaned["title"] = clean_text(
            changes["title"], field="title", label="待办", max_chars=TASK_TITLE_MAX, required=True
        )
    if "note" in changes:
        cleaned["note"] = clean_text(
            changes["note"], field="note", label="说明", max_chars=TASK_NOTE_MAX, required=False, multiline=True
        )
    if "due_at" in changes:
        cleaned["due_at"] = _due_at(changes["due_at"])
    return cleaned


def task_update(*, task: Task, changes: dict[str, Any], actor: Actor, reason: str = "") -> Task:
    """Edit an open task's title, note or due time; a done task is the record of what was done."""
    cleaned = _task_changes(changes)
    reason = (reason or "").strip() or "修改待办"
    with account_atomic():
        current = Task.objects.select_for_update().select_related("customer").get(pk=task.pk)
        if current.status != TaskStatus.OPEN:
            raise Conflict("已完成的待办不能再修改 (a done task cannot be edited).", code="task_done")
        changed = _apply(current, cleaned)
        if not changed:
            return current
        _write_audited(
            current,
            action=AuditAction.TASK_UPDATED,
            payload=lambda: {"task_id": current.pk, "fields": changed},
            actor=actor,
            reason=reason,
            fields=changed,
        )
    return current


def task_resolve(*, task: Task, actor: Actor, reason: str) -> Task:
    """Mark a task done, saying why (idempotent: a done task stays as it was closed)."""
    reason = resolution_reason(reason)
    with account_atomic():
        current = Task.objects.select_for_update().select_related("customer").get(pk=task.pk)
        if current.status == TaskStatus.DONE:
            return current
        current.status = TaskStatus.DONE
        _write_audited(
            current,
            action=AuditAction.TASK_RESOLVED,
            payload=lambda: {"task_id": current.pk},
            actor=actor,
            reason=reason,
            fields=["status", *_close(current, actor=actor, reason=reason)],
        )
    return current


# --- manual alerts (automatic ones: conversations.services.alert_raise) ---------------------------


def alert_create(
    *, customer: Customer, text: object, level: object = AlertLevel.WARNING, actor: Actor, reason: str = ""
) -> Alert:
    """An alert a person raises for the customer (「客户情绪激动，勿催促签约」)."""
    alert = Alert(
        customer=customer,
        kind=AlertKind.MANUAL,
        level=_choice(level, AlertLevel, field="level", label="级别"),
        text=clean_text(text, field="text", label="预警内容", max_chars=ALERT_TEXT_MAX, required=True),
    )
    reason = (reason or "").strip() or "人工新建预警"
    with account_atomic():
        _write_audited(
            alert,
            action=AuditAction.ALERT_CREATED,
            payload=lambda: {"alert_id": alert.pk, "kind": alert.kind, "level": alert.level},
            actor=actor,
            reason=reason,
        )
    return alert


def alert_update(*, alert: Alert, changes: dict[str, Any], actor: Actor, reason: str = "") -> Alert:
    """Change an open alert's level, or a manual alert's text. An automatic alert's text is written
    by the system and never quotes the customer, so it stays as raised."""
    _refuse_other_fields(changes, ALERT_EDITABLE_FIELDS, "预警")
    cleaned: dict[str, Any] = {}
    if "level" in changes:
        cleaned["level"] = _choice(changes["level"], AlertLevel, field="level", label="级别")
    if "text" in changes:
        cleaned["text"] = clean_text(
            changes["text"], field="text", label="预警内容", max_chars=ALERT_TEXT_MAX, required=True
        )
    reason = (reason or "").strip() or "修改预警"
    with account_atomic():
        current = Alert.objects.select_for_update().select_related("customer").get(pk=alert.pk)
        if current.resolved:
            raise Conflict("已处理的预警不能再修改 (a resolved alert cannot be edited).", code="alert_resolved")
        changed = _apply(current, cleaned)
        if "text" in changed and current.kind != AlertKind.MANUAL:
            raise ValidationFailed(
                "自动预警的内容由系统生成，不能修改，只能调整级别 (an automatic alert's text cannot be edited).",
                code="automatic_alert_text",
            )
        if not changed:
            return current
        _write_audited(
            current,
            action=AuditAction.ALERT_UPDATED,
            payload=lambda: {"alert_id": current.pk, "fields": changed, "level": current.level},
            actor=actor,
            reason=reason,
            fields=changed,
        )
    return current


# --- recommendations and their feedback -----------------------------------------------------------


def recommendation_create(*, customer: Customer, text: object, actor: Actor, reason: str = "") -> Recommendation:
    """Something proposed to the customer (「推荐望京两居室，月租6500」), followed until resolved."""
    recommendation = Recommendation(
        customer=customer,
        text=clean_text(text, field="text", label="推荐内容", max_chars=RECOMMENDATION_TEXT_MAX, required=True),
    )
    reason = (reason or "").strip() or "新建推荐"
    with account_atomic():
        _write_audited(
            recommendation,
            action=AuditAction.RECOMMENDATION_CREATED,
            payload=lambda: {"recommendation_id": recommendation.pk},
            actor=actor,
            reason=reason,
        )
    return recommendation


def _open_recommendation(recommendation: Recommendation, what: str) -> Recommendation:
    current = Recommendation.objects.select_for_update().select_related("customer").get(pk=recommendation.pk)
    if current.status != RecommendationStatus.OPEN:
        raise Conflict(f"已结束的推荐不能再{what} (the recommendation is resolved).", code="recommendation_resolved")
    return current


def recommendation_update(
    *, recommendation: Recommendation, changes: dict[str, Any], actor: Actor, reason: str = ""
) -> Recommendation:
    _refuse_other_fields(changes, RECOMMENDATION_EDITABLE_FIELDS, "推荐")
    cleaned: dict[str, Any] = {}
    if "text" in changes:
        cleaned["text"] = clean_text(
            changes["text"], field="text", label="推荐内容", max_chars=RECOMMENDATION_TEXT_MAX, required=True
        )
    reason = (reason or "").strip() or "修改推荐"
    with account_atomic():
        current = _open_recommendation(recommendation, "修改")
        changed = _apply(current, cleaned)
        if not changed:
            return current
        _write_audited(
            current,
            action=AuditAction.RECOMMENDATION_UPDATED,
            payload=lambda: {"recommendation_id": current.pk, "fields": changed},
            actor=actor,
            reason=reason,
            fields=changed,
        )
    return current


def recommendation_resolve(*, recommendation: Recommendation, actor: Actor, reason: str) -> Recommendation:
    """End a recommendation (签约了、客户不再考虑…), saying why; idempotent."""
    reason = resolution_reason(reason)
    with account_atomic():
        current = Recommendation.objects.select_for_update().select_related("customer").get(pk=recommendation.pk)
        if current.status == RecommendationStatus.RESOLVED:
            return current
        current.status = RecommendationStatus.RESOLVED
        fields = ["status", *_close(current, actor=actor, reason=reason)]
        _write_audited(
            current,
            action=AuditAction.RECOMMENDATION_RESOLVED,
            payload=lambda: {"recommendation_id": current.pk},
            actor=actor,
            reason=reason,
            fields=fields,
        )
    return current


def recommendation_feedback_record(
    *,
    recommendation: Recommendation,
    source: object,
    verdict: object,
    comment: object = "",
    actor: Actor,
    reason: str = "",
) -> RecommendationFeedback:
    """Add one piece of feedback to an open recommendation's history (the newest is what the next
    prompt shows). `source` says whose feedback it is: the customer's (relayed by the agent) or the
    agent's own judgement."""
    source = _choice(source, FeedbackSource, field="source", label="反馈方")
    verdict = _choice(verdict, FeedbackVerdict, field="verdict", label="反馈结论")
    comment = clean_text(
        comment, field="comment", label="反馈内容", max_chars=FEEDBACK_COMMENT_MAX, required=False, multiline=True
    )
    reason = (reason or "").strip() or "记录推荐反馈"
    actor_id, actor_name = actor_identity(actor)
    with account_atomic():
        current = _open_recommendation(recommendation, "记录反馈")
        feedback = RecommendationFeedback(
            recommendation=current,
            customer_id=current.customer_id,
            source=source,
            verdict=verdict,
            comment=comment,
            actor_id=actor_id,
            actor_name=actor_name[:150],
        )
        _full_clean(feedback, exclude=["recommendation", "customer"])
        feedback.save()
        # The recommendation shows activity; a queryset update adds no history row for it.
        Recommendation.objects.filter(pk=current.pk).update(updated_at=feedback.created_at)
        audit_record(
            action=AuditAction.RECOMMENDATION_FEEDBACK_RECORDED,
            conversation_id=current.customer.conversation_id,
            actor=actor,
            reason=reason,
            payload={
                "recommendation_id": current.pk,
                "feedback_id": feedback.pk,
                "source": source,
                "verdict": verdict,
            },
        )
    return feedback
