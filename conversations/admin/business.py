"""Business state: tasks, alerts, recommendations and their feedback, written through
conversations.business / services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from simple_history.admin import SimpleHistoryAdmin

from conversations.business import (
    ALERT_EDITABLE_FIELDS,
    RECOMMENDATION_EDITABLE_FIELDS,
    TASK_EDITABLE_FIELDS,
    alert_create,
    alert_update,
    recommendation_create,
    recommendation_feedback_record,
    recommendation_resolve,
    recommendation_update,
    task_create,
    task_resolve,
    task_update,
)
from conversations.models import (
    Alert,
    AlertKind,
    FeedbackSource,
    FeedbackVerdict,
    Recommendation,
    RecommendationFeedback,
    RecommendationStatus,
    Task,
    TaskStatus,
)
from conversations.selectors import recommendation_latest_feedback
from conversations.services import alert_resolve
from qiwei_site.platform.admin_site import (
    AccountHistoryAdminMixin,
    AccountScopedAdminMixin,
    ReadOnlyAdminMixin,
    ServiceFormAdminMixin,
)
from qiwei_site.platform.errors import ApplicationError

# --- business state: tasks, alerts, recommendations --------------------------------------------
# Every add, edit, resolve and feedback goes through conversations.business / services, so admin
# leaves the same history and audit as the API. A refused save re-renders what was typed
# (ServiceFormAdminMixin); closing needs a reason, from the action bar or a confirmation page.

REASON_HELP = "写入历史记录和审计（必填）。"


class ReasonActionForm(helpers.ActionForm):
    reason = forms.CharField(label="原因", required=False, max_length=300)


def _adopt(obj: Any, saved: Any) -> None:
    """Give the admin's unsaved instance what the service saved, so the add view can redirect."""
    for field in saved._meta.concrete_fields:
        setattr(obj, field.attname, getattr(saved, field.attname))
    obj._state.adding = False
    obj._state.db = saved._state.db


class BusinessStateAdmin(ServiceFormAdminMixin, AccountScopedAdminMixin, AccountHistoryAdminMixin, SimpleHistoryAdmin):
    """What tasks, alerts and recommendations share: the service-backed forms, no delete (they are
    closed with a reason; erasure removes them with the customer), and 「处理所选」 with a reason."""

    action_form = ReasonActionForm
    actions = ["resolve_selected"]
    autocomplete_fields = ["customer"]
    list_select_related = ["customer"]
    resolve_confirmation_template = "admin/conversations/resolve_selected_confirmation.html"
    resolve_label = "处理"  # 「完成」「处理」「结束」

    def get_actions(self, request: HttpRequest) -> Any:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A closed row is the record of what was done: view only.
        if obj is not None and self.is_closed(obj):
            return False
        return super().has_change_permission(request, obj)

    def is_closed(self, obj: Any) -> bool:
        raise NotImplementedError

    def open_rows(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        raise NotImplementedError

    def resolve_one(self, obj: Any, *, actor: Any, reason: str) -> Any:
        raise NotImplementedError

    def _resolve_all(self, request: HttpRequest, queryset: QuerySet[Any], reason: str) -> None:
        done = 0
        for obj in list(self.open_rows(queryset)):
            try:
                self.resolve_one(obj, actor=request.user, reason=reason)
                done += 1
            except ApplicationError as exc:
                self.message_user(request, f"#{obj.pk}：{exc.detail}", messages.ERROR)
        if done:
            self.message_user(
                request, f"已{self.resolve_label} {done} 条{self.model._meta.verbose_name}。", messages.SUCCESS
            )

    def resolve_selected(self, request: HttpRequest, queryset: QuerySet[Any]) -> TemplateResponse | None:
        """With a reason (typed in the action bar or on the confirmation page) close the selected
        open rows through the service; without one, ask for it."""
        reason = (request.POST.get("reason") or "").strip()
        if reason:
            self._resolve_all(request, queryset, reason)
            return None
        if request.POST.get("post") == "yes":
            self.message_user(request, f"{self.resolve_label}需要填写原因。", messages.ERROR)
        context = {
            **self.admin_site.each_context(request),
            "title": f"确认{self.resolve_label}{self.model._meta.verbose_name}",
            "queryset": self.open_rows(queryset).select_related("customer"),
            "opts": self.model._meta,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "action_name": "resolve_selected",
            "resolve_label": self.resolve_label,
            "media": self.media,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.resolve_confirmation_template, context)

    @admin.display(description="客户")
    def customer_link(self, obj: Any) -> str:
        url = reverse("admin:conversations_customer_change", args=[obj.customer_id])
        return format_html('<a href="{}">{}</a>', url, obj.customer)


class TaskAdminForm(forms.ModelForm):
    reason = forms.CharField(label="原因", max_length=300, help_text=REASON_HELP)

    class Meta:
        model = Task
        fields = ["customer", "title", "note", "due_at"]


@admin.register(Task)
class TaskAdmin(BusinessStateAdmin):
    form = TaskAdminForm
    list_display = ["title", "customer", "status", "due_at", "resolved_by_name", "resolved_at", "created_at"]
    list_filter = ["status", "due_at", "created_at"]
    search_fields = ["title", "note", "customer__conversation_id", "customer__display_name"]
    date_hierarchy = "created_at"
    resolve_label = "完成"
    _closed = ["status", "resolution_reason", "resolved_by_name", "resolved_at", "created_at", "updated_at"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ["customer", "title", "note", "due_at", "reason"]
        editable = ["title", "note", "due_at"] + (["reason"] if self.has_change_permission(request, obj) else [])
        return ["customer", *editable, *self._closed]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [] if obj is None else ["customer", *self._closed]

    def is_closed(self, obj: Task) -> bool:
        return obj.status != TaskStatus.OPEN

    def open_rows(self, queryset: QuerySet[Task]) -> QuerySet[Task]:
        return queryset.filter(status=TaskStatus.OPEN)

    def resolve_one(self, obj: Task, *, actor: Any, reason: str) -> Task:
        return task_resolve(task=obj, actor=actor, reason=reason)

    def save_model(self, request: HttpRequest, obj: Task, form: Any, change: bool) -> None:
        data, reason = form.cleaned_data, form.cleaned_data["reason"]
        if change:
            changes = {name: data[name] for name in form.changed_data if name in TASK_EDITABLE_FIELDS}
            task_update(task=obj, changes=changes, actor=request.user, reason=reason)
            return
        created = task_create(
            customer=data["customer"],
            title=data["title"],
            note=data.get("note") or "",
            due_at=data.get("due_at"),
            actor=request.user,
            reason=reason,
        )
        _adopt(obj, created)

    @admin.action(description="标记所选待办为已完成（需原因）", permissions=["change"])
    def resolve_selected(self, request: HttpRequest, queryset: QuerySet[Task]) -> TemplateResponse | None:
        return super().resolve_selected(request, queryset)


class AlertAdminForm(forms.ModelForm):
    reason = forms.CharField(label="原因", max_length=300, help_text=REASON_HELP)

    class Meta:
        model = Alert
        fields = ["customer", "level", "text"]


@admin.register(Alert)
class AlertAdmin(BusinessStateAdmin):
    """Automatic alerts are raised by services (blocked messages, personal numbers, failing
    capture); staff add manual ones, change levels and resolve them here, through the same
    services as the API."""

    form = AlertAdminForm
    list_display = ["created_at", "customer", "level", "kind", "text", "resolved", "resolved_by_name"]
    list_filter = ["resolved", "level", "kind", "created_at"]
    search_fields = ["customer__conversation_id", "customer__display_name", "text"]
    date_hierarchy = "created_at"
    resolve_label = "处理"
    _closed = ["kind", "resolved", "resolution_reason", "resolved_by_name", "resolved_at", "created_at", "updated_at"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ["customer", "level", "text", "reason"]
        editable = ["level", "text"] + (["reason"] if self.has_change_permission(request, obj) else [])
        return ["customer", *editable, *self._closed]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return []
        # An automatic alert's text is the system's, never the customer's: only its level changes.
        return ["customer", *([] if obj.kind == AlertKind.MANUAL else ["text"]), *self._closed]

    def is_closed(self, obj: Alert) -> bool:
        return obj.resolved

    def open_rows(self, queryset: QuerySet[Alert]) -> QuerySet[Alert]:
        return queryset.filter(resolved=False)

    def resolve_one(self, obj: Alert, *, actor: Any, reason: str) -> Alert:
        return alert_resolve(alert=obj, actor=actor, reason=reason)

    def save_model(self, request: HttpRequest, obj: Alert, form: Any, change: bool) -> None:
        data, reason = form.cleaned_data, form.cleaned_data["reason"]
        if change:
            changes = {name: data[name] for name in form.changed_data if name in ALERT_EDITABLE_FIELDS}
            alert_update(alert=obj, changes=changes, actor=request.user, reason=reason)
            return
        created = alert_create(
            customer=data["customer"], level=data["level"], text=data["text"], actor=request.user, reason=reason
        )
        _adopt(obj, created)

    @admin.action(description="标记所选预警为已处理（需原因）", permissions=["change"])
    def resolve_selected(self, request: HttpRequest, queryset: QuerySet[Alert]) -> TemplateResponse | None:
        return super().resolve_selected(request, queryset)


class RecommendationAdminForm(forms.ModelForm):
    """The recommendation itself, and optionally one new piece of feedback to add to its history."""

    feedback_source = forms.ChoiceField(
        label="新反馈：反馈方", choices=[("", "（不记录反馈）"), *FeedbackSource.choices], required=False
    )
    feedback_verdict = forms.ChoiceField(
        label="新反馈：结论", choices=[("", "—"), *FeedbackVerdict.choices], required=False
    )
    feedback_comment = forms.CharField(label="新反馈：内容", max_length=300, required=False, widget=forms.Textarea)
    reason = forms.CharField(label="原因", max_length=300, help_text=REASON_HELP)

    class Meta:
        model = Recommendation
        fields = ["customer", "text"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        source, verdict = cleaned.get("feedback_source"), cleaned.get("feedback_verdict")
        if bool(source) != bool(verdict):
            self.add_error("feedback_verdict" if source else "feedback_source", "记录反馈需同时选择反馈方和结论。")
        if cleaned.get("feedback_comment") and not source:
            self.add_error("feedback_source", "填写了反馈内容，请选择反馈方和结论。")
        return cleaned


class RecommendationFeedbackInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = RecommendationFeedback
    fk_name = "recommendation"
    fields = ("created_at", "source", "verdict", "comment", "actor_name")
    readonly_fields = fields
    ordering = ["-created_at", "-id"]
    extra = 0
    max_num = 0
    verbose_name_plural = "反馈记录（最新在前；最新一条进入下一轮上下文）"


@admin.register(Recommendation)
class RecommendationAdmin(BusinessStateAdmin):
    form = RecommendationAdminForm
    inlines = [RecommendationFeedbackInline]
    list_display = ["text", "customer", "status", "latest_feedback", "resolved_by_name", "created_at"]
    list_filter = ["status", "feedback__verdict", "feedback__source", "created_at"]
    search_fields = ["text", "customer__conversation_id", "customer__display_name"]
    date_hierarchy = "created_at"
    resolve_label = "结束"
    _closed = ["status", "resolution_reason", "resolved_by_name", "resolved_at", "created_at", "updated_at"]
    _feedback = ["feedback_source", "feedback_verdict", "feedback_comment"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Recommendation]:
        newest_first = RecommendationFeedback.objects.order_by("-created_at", "-id")
        return super().get_queryset(request).prefetch_related(Prefetch("feedback", queryset=newest_first))

    @admin.display(description="最新反馈")
    def latest_feedback(self, obj: Recommendation) -> str:
        latest = recommendation_latest_feedback(obj)
        if latest is None:
            return "—"
        summary = f"{latest.get_source_display()}·{latest.get_verdict_display()}"
        return f"{summary}：{latest.comment}" if latest.comment else summary

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ["customer", "text", "reason"]
        if not self.has_change_permission(request, obj):
            return ["customer", "text", *self._closed]
        return ["customer", "text", *self._feedback, "reason", *self._closed]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [] if obj is None else ["customer", *self._closed]

    def is_closed(self, obj: Recommendation) -> bool:
        return obj.status != RecommendationStatus.OPEN

    def open_rows(self, queryset: QuerySet[Recommendation]) -> QuerySet[Recommendation]:
        return queryset.filter(status=RecommendationStatus.OPEN)

    def resolve_one(self, obj: Recommendation, *, actor: Any, reason: str) -> Recommendation:
        return recommendation_resolve(recommendation=obj, actor=actor, reason=reason)

    def save_model(self, request: HttpRequest, obj: Recommendation, form: Any, change: bool) -> None:
        data, reason = form.cleaned_data, form.cleaned_data["reason"]
        if not change:
            created = recommendation_create(
                customer=data["customer"], text=data["text"], actor=request.user, reason=reason
            )
            _adopt(obj, created)
            return
        changes = {name: data[name] for name in form.changed_data if name in RECOMMENDATION_EDITABLE_FIELDS}
        recommendation_update(recommendation=obj, changes=changes, actor=request.user, reason=reason)
        if data.get("feedback_source"):
            recommendation_feedback_record(
                recommendation=obj,
                source=data["feedback_source"],
                verdict=data["feedback_verdict"],
                comment=data.get("feedback_comment") or "",
                actor=request.user,
                reason=reason,
            )

    @admin.action(description="结束所选推荐（需原因）", permissions=["change"])
    def resolve_selected(self, request: HttpRequest, queryset: QuerySet[Recommendation]) -> TemplateResponse | None:
        return super().resolve_selected(request, queryset)


@admin.register(RecommendationFeedback)
class RecommendationFeedbackAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Every piece of feedback, to read across customers; it is recorded on the recommendation page
    or through the API (append-only)."""

    list_display = ["created_at", "customer", "recommendation", "source", "verdict", "comment", "actor_name"]
    list_filter = ["source", "verdict", "created_at"]
    search_fields = ["comment", "recommendation__text", "customer__conversation_id", "customer__display_name"]
    list_select_related = ["customer", "recommendation"]
    date_hierarchy = "created_at"
