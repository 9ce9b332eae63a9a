"""Reads for customers, their messages, drafts (and the prompt each was made from), business state
(tasks, alerts, recommendations) and the audit trail."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import BooleanField, ExpressionWrapper, F, Prefetch, Q, QuerySet

from conversations.models import (
    Alert,
    AlertKind,
    AlertLevel,
    AuditEvent,
    Customer,
    Draft,
    DraftStatus,
    Message,
    MessageDirection,
    MessageSecret,
    Recommendation,
    RecommendationFeedback,
    RecommendationStatus,
    Task,
    TaskStatus,
)
from qiwei_site.platform.errors import NotFound, ValidationFailed
from qiwei_site.platform.selectors import account_samples


def message_get(*, customer: Customer, message_id: int | str) -> Message:
    """A message of this customer; another customer's message is as unknown as a missing one."""
    try:
        pk = int(message_id)
    except (TypeError, ValueError):
        pk = 0
    message = Message.objects.filter(customer=customer, pk=pk).first() if 0 < pk < 2**63 else None
    if message is None:
        raise NotFound(f"消息 {message_id} 不存在 (no such message).", code="message_not_found")
    return message


def conversation_not_found(conversation_id: str) -> NotFound:
    """The error for a conversation id no customer has (404, `conversation_not_found`)."""
    return NotFound(f"会话 {conversation_id} 不存在 (no such conversation).", code="conversation_not_found")


def customer_get(conversation_id: str) -> Customer:
    customer = Customer.objects.filter(conversation_id=conversation_id).order_by("pk").first()
    if customer is None:
        raise conversation_not_found(conversation_id)
    return customer


def draft_list(*, customer: Customer, status: str | None = None) -> QuerySet[Draft]:
    drafts = (
        Draft.objects.filter(customer=customer)
        .select_related("customer", "delivery")
        .defer("prompt")  # tens of kilobytes each; the prompt has its own endpoint
        .annotate(has_prompt=ExpressionWrapper(~Q(prompt=""), output_field=BooleanField()))
        .order_by("-created_at", "-id")
    )
    if status:
        if status not in DraftStatus.values:
            raise ValidationFailed(
                f"未知的草稿状态 {status!r}，可选：{', '.join(DraftStatus.values)} (unknown status).",
                code="invalid_status",
            )
        drafts = drafts.filter(status=status)
    else:  # a draft another replaced is history, not a draft to act on: asked for by its status only
        drafts = drafts.exclude(status=DraftStatus.SUPERSEDED)
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


ALL = "all"


def _all_or(value: str | None, choices: list[str], *, field: str, default: str) -> str:
    value = default if value is None or value == "" else value
    if value != ALL and value not in choices:
        options = ", ".join([*choices, ALL])
        raise ValidationFailed(f"{field} 只能是 {options} ({field} must be one of {options}).", code=f"invalid_{field}")
    return value


def task_list(*, customer: Customer, status: str | None = TaskStatus.OPEN) -> QuerySet[Task]:
    """A customer's tasks, soonest due first (no due time last): open ones by default, `done`, or `all`."""
    tasks = (
        Task.objects.filter(customer=customer)
        .select_related("customer")
        .order_by(F("due_at").asc(nulls_last=True), "id")
    )
    status = _all_or(status, TaskStatus.values, field="status", default=TaskStatus.OPEN)
    return tasks if status == ALL else tasks.filter(status=status)


def task_get(task_id: int) -> Task:
    task = Task.objects.select_related("customer").filter(pk=task_id).first()
    if task is None:
        raise NotFound(f"待办 {task_id} 不存在 (no such task).", code="task_not_found")
    return task


def alert_list(
    *, customer: Customer, resolved: str | None = "false", kind: str | None = None, level: str | None = None
) -> QuerySet[Alert]:
    """A customer's alerts, newest first: open ones by default, `true` handled ones, `all` both;
    optionally of one kind or level."""
    alerts = Alert.objects.filter(customer=customer).select_related("customer").order_by("-created_at", "-id")
    resolved = resolved or "false"
    if resolved not in ("false", "true", ALL):
        raise ValidationFailed(
            "resolved 只能是 false、true 或 all (resolved must be false, true or all).", code="invalid_resolved"
        )
    if resolved != ALL:
        alerts = alerts.filter(resolved=resolved == "true")
    kind = _all_or(kind, AlertKind.values, field="kind", default=ALL)
    if kind != ALL:
        alerts = alerts.filter(kind=kind)
    level = _all_or(level, AlertLevel.values, field="level", default=ALL)
    if level != ALL:
        alerts = alerts.filter(level=level)
    return alerts


def alert_get(alert_id: int) -> Alert:
    alert = Alert.objects.select_related("customer").filter(pk=alert_id).first()
    if alert is None:
        raise NotFound(f"预警 {alert_id} 不存在 (no such alert).", code="alert_not_found")
    return alert


def _with_feedback(recommendations: QuerySet[Recommendation]) -> QuerySet[Recommendation]:
    """Each recommendation with its feedback history, newest first (`feedback.all()[0]` is the latest)."""
    newest_first = RecommendationFeedback.objects.order_by("-created_at", "-id")
    return recommendations.select_related("customer").prefetch_related(Prefetch("feedback", queryset=newest_first))


def recommendation_list(
    *, customer: Customer, status: str | None = RecommendationStatus.OPEN
) -> QuerySet[Recommendation]:
    """A customer's recommendations, newest first, with their feedback: open ones by default."""
    recommendations = _with_feedback(Recommendation.objects.filter(customer=customer).order_by("-created_at", "-id"))
    status = _all_or(status, RecommendationStatus.values, field="status", default=RecommendationStatus.OPEN)
    return recommendations if status == ALL else recommendations.filter(status=status)


def recommendation_get(recommendation_id: int) -> Recommendation:
    recommendation = _with_feedback(Recommendation.objects.filter(pk=recommendation_id)).first()
    if recommendation is None:
        raise NotFound(f"推荐 {recommendation_id} 不存在 (no such recommendation).", code="recommendation_not_found")
    return recommendation


def recommendation_latest_feedback(recommendation: Recommendation) -> RecommendationFeedback | None:
    """The newest feedback (from the prefetched history when there is one)."""
    history = list(recommendation.feedback.all())
    if not history:
        return None
    return max(history, key=lambda feedback: (feedback.created_at, feedback.id))


# --- a draft's prompt, as the model received it ---------------------------------------------------


@dataclass(frozen=True)
class PromptSectionView:
    """One section of a stored prompt: `prompt[start:end]` is its text."""

    key: str
    title: str
    start: int
    end: int
    chars: int
    budget: int | None
    budget_scope: str
    trimmed: bool
    trimmed_ids: list[int]
    left_out: list[str]

    def text(self, prompt: str) -> str:
        return prompt[self.start : self.end]


@dataclass(frozen=True)
class PromptMemoryItemRef:
    id: int
    type: str
    section: str
    type_label: str = ""


@dataclass(frozen=True)
class PromptMessageRef:
    id: int
    direction: str
    section: str


@dataclass(frozen=True)
class PromptBusinessRef:
    id: int
    kind: str  # task | alert | recommendation
    section: str


@dataclass(frozen=True)
class DraftPromptView:
    """What the model saw for one draft. `available` is False for drafts made before prompts were
    kept; `redacted` is True once forget replaced quotes of forgotten content in it (offsets then
    describe the stored, redacted text)."""

    draft_id: int
    conversation_id: str
    available: bool
    prompt: str
    prompt_chars: int
    fallback: bool
    redacted: bool
    snapshot_version: int | None
    sections: list[PromptSectionView] = field(default_factory=list)
    memory_items: list[PromptMemoryItemRef] = field(default_factory=list)
    messages: list[PromptMessageRef] = field(default_factory=list)
    business: list[PromptBusinessRef] = field(default_factory=list)

    def section_texts(self) -> list[tuple[PromptSectionView, str]]:
        return [(section, section.text(self.prompt)) for section in self.sections]


def _ints(value: Any) -> list[int]:
    return [v for v in value if isinstance(v, int) and not isinstance(v, bool)] if isinstance(value, list) else []


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _section_view(entry: dict[str, Any], prompt_chars: int) -> PromptSectionView | None:
    key, start, end = entry.get("key"), _int_or_none(entry.get("start")), _int_or_none(entry.get("end"))
    if not isinstance(key, str) or start is None or end is None or not 0 <= start <= end <= prompt_chars:
        return None
    left_out = entry.get("left_out")
    return PromptSectionView(
        key=key,
        title=str(entry.get("title") or key),
        start=start,
        end=end,
        chars=end - start,
        budget=_int_or_none(entry.get("budget")),
        budget_scope=str(entry.get("budget_scope") or key),
        trimmed=bool(entry.get("trimmed")),
        trimmed_ids=_ints(entry.get("trimmed_ids")),
        left_out=[str(h) for h in left_out] if isinstance(left_out, list) else [],
    )


def draft_prompt_view(draft: Draft) -> DraftPromptView:
    """The draft's stored prompt split into its sections (offsets, chars, budgets, what was
    trimmed) and the memory items, messages and business rows each section holds, from the
    context trace the builder wrote. Reads nothing but the draft."""
    trace = draft.context_trace if isinstance(draft.context_trace, dict) else {}
    prompt = draft.prompt or ""
    sections: list[PromptSectionView] = []
    memory_items: list[PromptMemoryItemRef] = []
    messages: list[PromptMessageRef] = []
    business: list[PromptBusinessRef] = []
    raw_sections = trace.get("prompt_sections") if prompt else None
    for entry in raw_sections if isinstance(raw_sections, list) else []:
        view = _section_view(entry, len(prompt)) if isinstance(entry, dict) else None
        if view is None:
            continue
        sections.append(view)
        for ref in entry.get("memory_items") or []:
            if isinstance(ref, dict) and _int_or_none(ref.get("id")) is not None:
                memory_items.append(
                    PromptMemoryItemRef(
                        id=ref["id"],
                        type=str(ref.get("type") or ""),
                        type_label=str(ref.get("type_label") or ""),
                        section=view.key,
                    )
                )
        for ref in entry.get("messages") or []:
            if isinstance(ref, dict) and _int_or_none(ref.get("id")) is not None:
                messages.append(
                    PromptMessageRef(id=ref["id"], direction=str(ref.get("direction") or ""), section=view.key)
                )
        for ref in entry.get("business") or []:
            if isinstance(ref, dict) and _int_or_none(ref.get("id")) is not None:
                business.append(PromptBusinessRef(id=ref["id"], kind=str(ref.get("kind") or ""), section=view.key))
    return DraftPromptView(
        draft_id=draft.pk,
        conversation_id=draft.customer.conversation_id,
        available=bool(prompt),
        prompt=prompt,
        prompt_chars=len(prompt),
        fallback=bool(trace.get("fallback")),
        redacted=bool(trace.get("prompt_redacted")),
        snapshot_version=_int_or_none(trace.get("snapshot_version")),
        sections=sections,
        memory_items=memory_items,
        messages=messages,
        business=business,
    )


def sealed_samples() -> Iterator[str]:
    """One sealed original from each account that has any: the sealing key's probe
    (`qiwei_site.platform.keyfiles`: whether data the key guards exists, and whether the key opens it)."""
    return account_samples(lambda: MessageSecret.objects.values_list("sealed", flat=True).first())
