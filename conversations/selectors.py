"""Reads for customers, their messages, drafts and the audit trail."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet

from conversations.models import Alert, AuditEvent, Customer, Draft, DraftStatus, Message, MessageDirection
from qiwei_site.platform.errors import NotFound, ValidationFailed


def customer_get(conversation_id: str) -> Customer:
    customer = Customer.objects.filter(conversation_id=conversation_id).first()
    if customer is None:
        raise NotFound(f"会话 {conversation_id} 不存在 (no such conversation).", code="conversation_not_found")
    return customer


def draft_list(*, customer: Customer, status: str | None = None) -> QuerySet[Draft]:
    drafts = (
        Draft.objects.filter(customer=customer).select_related("customer", "delivery").order_by("-created_at", "-id")
    )
    if status:
        if status not in DraftStatus.values:
            raise ValidationFailed(
                f"未知的草稿状态 {status!r}，可选：{', '.join(DraftStatus.values)} (unknown status).",
                code="invalid_status",
            )
        drafts = drafts.filter(status=status)
    return drafts


def draft_get(draft_id: int) -> Draft:
    draft = Draft.objects.select_related("customer", "delivery").filter(pk=draft_id).first()
    if draft is None:
        raise NotFound(f"草稿 {draft_id} 不存在 (no such draft).", code="draft_not_found")
    return draft


def audit_event_list(*, filters: Mapping[str, Any] | None = None) -> QuerySet[AuditEvent]:
    from conversations.filters import AuditEventFilter

    filterset = AuditEventFilter(filters or {}, queryset=AuditEvent.objects.order_by("-created_at", "-id"))
    if not filterset.is_valid():
        raise ValidationFailed(filter_errors_text(filterset.errors), code="invalid_filter")
    return filterset.qs


def filter_errors_text(errors: Mapping[str, Any]) -> str:
    """One readable line from a FilterSet's errors (for the 400 answer)."""
    parts = [f"{field}: {' '.join(str(m) for m in messages)}" for field, messages in errors.items()]
    return "筛选条件无效 (invalid filter): " + "; ".join(parts)


# --- messages (shared by the turn pipeline, the context builder and recall) -------------------

def message_latest_inbound(customer: Customer) -> Message | None:
    """The customer's newest effective inbound message: the one a turn answers."""
    return (
        Message.objects.filter(customer=customer, direction=MessageDirection.INBOUND, is_effective=True)
        .order_by("-sent_at", "-id")
        .first()
    )


def messages_up_to(customer: Customer, message: Message | None) -> QuerySet[Message]:
    """The customer's effective messages up to and including `message` (all of them when None),
    newest first: an older turn sees its conversation as it was."""
    messages = Message.objects.filter(customer=customer, is_effective=True)
    if message is not None:
        messages = messages.filter(sent_at__lte=message.sent_at).exclude(sent_at=message.sent_at, id__gt=message.id)
    return messages.order_by("-sent_at", "-id")


def alert_list(*, customer: Customer, resolved: str = "false") -> QuerySet[Alert]:
    """A customer's alerts, newest first: open ones by default, `true` handled ones, `all` both."""
    alerts = Alert.objects.filter(customer=customer).select_related("customer").order_by("-created_at", "-id")
    if resolved not in ("false", "true", "all"):
        raise ValidationFailed("resolved 只能是 false、true 或 all (resolved must be false, true or all).")
    return alerts if resolved == "all" else alerts.filter(resolved=resolved == "true")


def alert_get(alert_id: int) -> Alert:
    alert = Alert.objects.select_related("customer").filter(pk=alert_id).first()
    if alert is None:
        raise NotFound(f"预警 {alert_id} 不存在 (no such alert).", code="alert_not_found")
    return alert
