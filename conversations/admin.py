"""Admin for accounts (default DB) and, once an account is chosen, its messages, drafts (reviewed
through the same services as the API, with the prompt each was made from), deliveries, business
state (tasks, alerts, recommendations and their feedback) and audit. The customer page itself is registered
by memory.admin: its profile inline saves through memory's profile service."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch, QuerySet
from django.http import Http404, HttpRequest
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
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
from conversations.drafts import draft_approve, draft_reject
from conversations.models import (
    Alert,
    AlertKind,
    AuditEvent,
    Delivery,
    Draft,
    DraftStatus,
    FeedbackSource,
    FeedbackVerdict,
    Message,
    MessageDirection,
    Recommendation,
    RecommendationFeedback,
    RecommendationStatus,
    RegistryAuditEvent,
    Task,
    TaskStatus,
)
from conversations.selectors import DraftPromptView, draft_prompt_view, recommendation_latest_feedback
from conversations.services import (
    account_create,
    account_update,
    alert_resolve,
    membership_grant,
    membership_revoke,
    message_reveal,
)
from qiwei_site.platform.admin_site import (
    AccountHistoryAdminMixin,
    AccountScopedAdminMixin,
    ReadOnlyAdminMixin,
    ServiceFormAdminMixin,
)
from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.models import AccountMembership, WeComAccount
from qiwei_site.reading.masking import mask_sensitive


@admin.register(WeComAccount)
class WeComAccountAdmin(ServiceFormAdminMixin, admin.ModelAdmin):
    list_display = ["id", "name", "is_active", "created_at"]
    search_fields = ["id", "name"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["id"] if obj else []

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting the registry row here would orphan the account's database; deactivate instead.
        return False

    def save_model(self, request: HttpRequest, obj: WeComAccount, form: Any, change: bool) -> None:
        if change:
            changes = {field: form.cleaned_data[field] for field in form.changed_data if field in ("name", "is_active")}
            account_update(account=obj, changes=changes, actor=request.user, reason="后台修改账号")
            return
        created = account_create(account_id=obj.id, name=obj.name, actor=request.user, reason="后台创建账号")
        obj.created_at, obj.updated_at = created.created_at, created.updated_at
        obj._state.adding = False


@admin.register(AccountMembership)
class AccountMembershipAdmin(admin.ModelAdmin):
    """Grant and revoke through the services, so the registry journal records both; a grant is
    never edited in place (revoke it and grant another)."""

    list_display = ["user", "account", "created_at"]
    list_filter = ["account"]
    autocomplete_fields = ["user"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and super().has_change_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: AccountMembership, form: Any, change: bool) -> None:
        granted = membership_grant(user=obj.user, account=obj.account, actor=request.user, reason="后台授予账号权限")
        obj.pk, obj.created_at, obj.updated_at = granted.pk, granted.created_at, granted.updated_at
        obj._state.adding = False

    def delete_model(self, request: HttpRequest, obj: AccountMembership) -> None:
        membership_revoke(membership=obj, actor=request.user, reason="后台撤销账号权限")

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[AccountMembership]) -> None:
        for membership in queryset:
            membership_revoke(membership=membership, actor=request.user, reason="后台批量撤销账号权限")


@admin.register(RegistryAuditEvent)
class RegistryAuditEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["created_at", "action", "account_id", "actor_name", "reason"]
    list_filter = ["action", "created_at"]
    search_fields = ["=account_id", "actor_name", "reason"]
    date_hierarchy = "created_at"
    fields = ("created_at", "action", "account_id", "actor_id", "actor_name", "reason", "payload")
    readonly_fields = fields


# Message text is shown masked by the reader's rules; the original only through the audited reveal.
def masked_message_text(message: Message) -> str:
    return mask_sensitive(message.text)


class MessageRevealForm(forms.Form):
    reason = forms.CharField(label="原因（写入审计）", max_length=300)


@admin.register(Message)
class MessageAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Masked everywhere; "查看原文" is a separate, audited page for staff (conversations.services.message_reveal)."""

    list_display = ["sent_at", "customer", "direction", "sender", "masked_text", "is_effective"]
    list_filter = ["direction", "is_effective"]
    search_fields = ["text", "customer__conversation_id", "external_id"]
    list_select_related = ["customer"]
    date_hierarchy = "sent_at"
    _shown = ("customer", "external_id", "direction", "sender", "masked_text", "sent_at", "is_effective", "reveal")
    fields = _shown
    readonly_fields = _shown
    reveal_template = "admin/conversations/message/reveal.html"

    @admin.display(description="内容（已遮蔽）")
    def masked_text(self, obj: Message) -> str:
        return masked_message_text(obj)

    @admin.display(description="原文")
    def reveal(self, obj: Message) -> str:
        url = reverse("admin:conversations_message_reveal", args=[obj.pk])
        return format_html('<a class="button" href="{}">{}</a>', url, "查看原文（记入审计）")

    def has_reveal_permission(self, request: HttpRequest) -> bool:
        user = request.user
        return bool(user.is_active and user.is_staff) and self.has_view_permission(request)

    def get_urls(self) -> list[Any]:
        return [
            path(
                "<int:object_id>/reveal/",
                self.admin_site.admin_view(self.reveal_view),
                name="conversations_message_reveal",
            ),
            *super().get_urls(),
        ]

    def reveal_view(self, request: HttpRequest, object_id: int) -> TemplateResponse:
        """GET asks why; POST records the audit and shows the message as received (never cached)."""
        if not self.has_reveal_permission(request):
            raise PermissionDenied
        message = self.get_object(request, str(object_id))
        if message is None:
            raise Http404
        form = MessageRevealForm(request.POST if request.method == "POST" else None)
        original: str | None = None
        if request.method == "POST" and form.is_valid():
            try:
                original = message_reveal(message=message, actor=request.user, reason=form.cleaned_data["reason"])
            except ApplicationError as exc:
                self.message_user(request, exc.detail, messages.ERROR)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "查看未遮蔽消息",
            "message_obj": message,
            "masked": masked_message_text(message),
            "original": original,
            "form": form,
        }
        return TemplateResponse(request, self.reveal_template, context)


@admin.register(AuditEvent)
class AuditEventAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["created_at", "action", "conversation_id", "actor_name", "reason", "short_payload"]
    list_filter = ["action", "actor_name", "created_at"]
    search_fields = ["=conversation_id", "actor_name", "action", "reason"]
    date_hierarchy = "created_at"
    fields = ["created_at", "action", "conversation_id", "actor_id", "actor_name", "reason", "readable_payload"]
    readonly_fields = [
        "created_at",
        "action",
        "conversation_id",
        "actor_id",
        "actor_name",
        "reason",
        "readable_payload",
    ]

    @admin.display(description="详情")
    def short_payload(self, obj: AuditEvent) -> str:
        return audit_payload_html(obj.payload or {}, limit=6)

    @admin.display(description="详情")
    def readable_payload(self, obj: AuditEvent) -> str:
        return audit_payload_html(obj.payload or {})


# What an audit payload's keys mean, and which admin page an id in it opens.
_AUDIT_KEY_LABELS = {
    "item_id": "记忆条目",
    "item_ids": "记忆条目",
    "superseded_item_id": "被替代的条目",
    "message_id": "消息",
    "message_ids": "消息",
    "source_message_ids": "依据消息",
    "draft_id": "草稿",
    "delivery_id": "发送记录",
    "task_id": "待办",
    "alert_id": "预警",
    "recommendation_id": "推荐",
    "feedback_id": "反馈",
    "job_id": "提取任务",
    "snapshot_version": "快照版本",
    "version": "版本",
    "type": "类型",
    "key": "键",
    "kind": "来源",
    "level": "级别",
    "field": "字段",
    "fields": "字段",
    "categories": "类别",
    "confidence": "置信度",
    "importance": "重要度",
    "status": "状态",
    "stage": "环节",
    "attempt": "第几次",
    "outcome": "结果",
    "counts": "数量",
    "session_id": "模型会话",
    "user_id": "用户",
    "account_id": "账号",
    "snapshots_redacted": "已改写的快照",
    "prompts_redacted": "已改写的提示词",
}
_AUDIT_ID_PAGES = {
    "item_id": "admin:memory_memoryitem_change",
    "item_ids": "admin:memory_memoryitem_change",
    "superseded_item_id": "admin:memory_memoryitem_change",
    "message_id": "admin:conversations_message_change",
    "message_ids": "admin:conversations_message_change",
    "source_message_ids": "admin:conversations_message_change",
    "draft_id": "admin:conversations_draft_change",
    "task_id": "admin:conversations_task_change",
    "alert_id": "admin:conversations_alert_change",
    "recommendation_id": "admin:conversations_recommendation_change",
    "job_id": "admin:memory_capturejob_change",
}


def _audit_value_html(key: str, value: Any) -> SafeString:
    page = _AUDIT_ID_PAGES.get(key)
    values = value if isinstance(value, list) else [value]
    if page and values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        links = []
        for v in values:
            url = _admin_change_url(page, v)
            links.append(format_html('<a href="{}">#{}</a>', url, v) if url else format_html("#{}", v))
        return format_html_join(", ", "{}", ((link,) for link in links))
    if value is None or value == "" or value == []:
        return format_html("{}", "无")
    if isinstance(value, bool):
        return format_html("{}", "是" if value else "否")
    if isinstance(value, list):
        return format_html("{}", "、".join(str(v) for v in value))
    if isinstance(value, dict):
        return format_html("{}", json.dumps(value, ensure_ascii=False, sort_keys=True))
    return format_html("{}", value)


def audit_payload_html(payload: dict[str, Any], limit: int | None = None) -> SafeString:
    """An audit payload as a supervisor reads it: Chinese names for its keys and links for its ids
    (payloads hold ids, types and categories, never the customer's words). Every value is escaped."""
    entries = list(payload.items())
    shown = entries if limit is None else entries[:limit]
    rows = [(_AUDIT_KEY_LABELS.get(key, key), _audit_value_html(key, value)) for key, value in shown]
    if not rows:
        return format_html("{}", "无")
    text = format_html_join("；", "{}：{}", rows)
    if limit is not None and len(entries) > limit:
        text = format_html("{}；…（另 {} 项）", text, len(entries) - limit)
    return text


def _pretty(value: Any) -> str:
    return format_html(
        '<pre style="white-space: pre-wrap; max-width: 80em">{}</pre>',
        json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True),
    )


def _admin_change_url(name: str, object_id: int) -> str:
    """An admin change page by URL name (memory's pages too: conversations may not import memory)."""
    try:
        return reverse(name, args=[object_id])
    except NoReverseMatch:
        return ""


_BUSINESS_ADMIN = {"task": "待办", "alert": "预警", "recommendation": "推荐"}
_DIRECTION_LABELS = {str(value): str(label) for value, label in MessageDirection.choices}


def prompt_sections_for_admin(view: DraftPromptView) -> list[dict[str, Any]]:
    """Each section of a stored prompt with its text and its links, as the admin page shows it."""
    rows: list[dict[str, Any]] = []
    for section, text in view.section_texts():
        links = [
            {
                "label": f"记忆条目 #{ref.id}（{ref.type_label or ref.type}）",
                "url": _admin_change_url("admin:memory_memoryitem_change", ref.id),
            }
            for ref in view.memory_items
            if ref.section == section.key
        ]
        links += [
            {
                "label": f"{_DIRECTION_LABELS.get(ref.direction, '')}消息 #{ref.id}",
                "url": _admin_change_url("admin:conversations_message_change", ref.id),
            }
            for ref in view.messages
            if ref.section == section.key
        ]
        links += [
            {
                "label": f"{_BUSINESS_ADMIN.get(ref.kind, ref.kind)} #{ref.id}",
                "url": _admin_change_url(f"admin:conversations_{ref.kind}_change", ref.id),
            }
            for ref in view.business
            if ref.section == section.key and ref.kind in _BUSINESS_ADMIN
        ]
        rows.append({"section": section, "text": text, "links": links})
    return rows


class DeliveryInline(ReadOnlyAdminMixin, admin.StackedInline):
    model = Delivery
    extra = 0
    _shown = ("status", "idempotency_key", "upstream_id", "text", "auto", "attempts", "last_error", "sent_at")
    fields = _shown
    readonly_fields = _shown


@admin.register(Draft)
class DraftAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, AccountHistoryAdminMixin, SimpleHistoryAdmin):
    list_display = ["id", "customer", "status", "short_reply", "confidence", "requires_human", "client", "created_at"]
    list_filter = ["status", "requires_human", "client"]
    search_fields = ["customer__conversation_id", "reply", "final_text"]
    list_select_related = ["customer"]
    actions = ["approve_selected", "reject_selected"]
    inlines = [DeliveryInline]
    _shown = (
        "customer",
        "status",
        "reply",
        "final_text",
        "confidence",
        "requires_human",
        "reasons_pretty",
        "profile_updates_pretty",
        "dropped_updates_pretty",
        "error",
        "session_id",
        "client",
        "reviewed_at",
        "prompt_link",
        "trace_pretty",
        "created_at",
    )
    fields = _shown
    readonly_fields = _shown
    prompt_template = "admin/conversations/draft/prompt.html"

    @admin.display(description="模型收到的提示词")
    def prompt_link(self, obj: Draft) -> str:
        if not obj.prompt:
            return "未保存（该草稿生成时尚未保存提示词）"
        url = reverse("admin:conversations_draft_prompt", args=[obj.pk])
        return format_html('<a class="button" href="{}">{}</a>（{} 字）', url, "查看模型收到的提示词", len(obj.prompt))

    def get_urls(self) -> list[Any]:
        return [
            path(
                "<int:object_id>/prompt/",
                self.admin_site.admin_view(self.prompt_view),
                name="conversations_draft_prompt",
            ),
            *super().get_urls(),
        ]

    def prompt_view(self, request: HttpRequest, object_id: int) -> TemplateResponse:
        """The prompt as the model received it, section by section, with each section's budget,
        what was trimmed, and links to the memory items, messages and business rows it quotes."""
        draft = self.get_object(request, str(object_id))
        if draft is None:
            raise Http404
        if not self.has_view_permission(request, draft):
            raise PermissionDenied
        view = draft_prompt_view(draft)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"模型收到的提示词 · 草稿 #{draft.pk}",
            "draft": draft,
            "view": view,
            "sections": prompt_sections_for_admin(view),
        }
        return TemplateResponse(request, self.prompt_template, context)

    @admin.display(description="回复")
    def short_reply(self, obj: Draft) -> str:
        text = obj.final_text or obj.reply
        return text[:40] + ("…" if len(text) > 40 else "")

    @admin.display(description="理由")
    def reasons_pretty(self, obj: Draft) -> str:
        return _pretty(obj.reasons)

    @admin.display(description="已核验画像更新")
    def profile_updates_pretty(self, obj: Draft) -> str:
        return _pretty(obj.profile_updates)

    @admin.display(description="未核验（已丢弃）画像更新")
    def dropped_updates_pretty(self, obj: Draft) -> str:
        return _pretty(obj.dropped_updates)

    @admin.display(description="上下文追踪")
    def trace_pretty(self, obj: Draft) -> str:
        return _pretty(obj.context_trace)

    def _review(self, request: HttpRequest, queryset: QuerySet[Draft], *, approve: bool) -> None:
        done = 0
        for draft in queryset:
            try:
                if approve:
                    draft_approve(draft=draft, actor=request.user, reason="后台批量批准")
                else:
                    draft_reject(draft=draft, actor=request.user, reason="后台批量拒绝")
                done += 1
            except ApplicationError as exc:
                self.message_user(request, f"草稿 #{draft.pk}：{exc.detail}", level=messages.ERROR)
        if done:
            verb = "批准" if approve else "拒绝"
            self.message_user(request, f"已{verb} {done} 份草稿", level=messages.SUCCESS)

    @admin.action(description="批准所选草稿")
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Draft]) -> None:
        self._review(request, queryset.filter(status=DraftStatus.PENDING), approve=True)

    @admin.action(description="拒绝所选草稿")
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[Draft]) -> None:
        self._review(request, queryset, approve=False)


@admin.register(Delivery)
class DeliveryAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["idempotency_key", "draft", "status", "auto", "attempts", "upstream_id", "sent_at"]
    list_filter = ["status", "auto"]
    search_fields = ["idempotency_key", "upstream_id", "draft__customer__conversation_id"]
    list_select_related = ["draft"]


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
