"""Admin for accounts (default DB) and, once an account is chosen, its messages, drafts (reviewed
through the same services as the API), deliveries and audit. The customer page itself is registered
by memory.admin: its profile inline saves through memory's profile service."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from simple_history.admin import SimpleHistoryAdmin

from conversations.drafts import draft_approve, draft_reject
from conversations.models import (
    Alert,
    AuditEvent,
    Delivery,
    Draft,
    DraftStatus,
    Message,
    RegistryAuditEvent,
)
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
from qiwei_site.platform.tenancy import current_account


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


# Message text is shown masked: the rules that find credentials and personal numbers live in
# memory (a layer above), whose admin installs them here. Until then no text is shown at all.
MESSAGE_HIDDEN = "••••••"


def _hide_all(text: str) -> str:
    return MESSAGE_HIDDEN if text else ""


_message_masker: Callable[[str], str] = _hide_all


def message_masker_install(masker: Callable[[str], str]) -> None:
    global _message_masker
    _message_masker = masker


def masked_message_text(message: Message) -> str:
    return _message_masker(message.text)


class MessageInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Message
    fields = ["sent_at", "direction", "sender", "masked_text", "is_effective"]
    readonly_fields = ["sent_at", "direction", "sender", "masked_text", "is_effective"]
    extra = 0
    ordering = ["-sent_at"]
    max_num = 0
    show_change_link = True

    @admin.display(description="内容（已遮蔽）")
    def masked_text(self, obj: Message) -> str:
        return masked_message_text(obj)


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
    fields = ["created_at", "action", "conversation_id", "actor_id", "actor_name", "reason", "payload"]
    readonly_fields = ["created_at", "action", "conversation_id", "actor_id", "actor_name", "reason", "payload"]

    @admin.display(description="详情")
    def short_payload(self, obj: AuditEvent) -> str:
        text = ", ".join(f"{key}={value}" for key, value in (obj.payload or {}).items())
        return text if len(text) <= 80 else text[:80] + "…"


def _pretty(value: Any) -> str:
    return format_html(
        '<pre style="white-space: pre-wrap; max-width: 80em">{}</pre>',
        json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True),
    )


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
        "trace_pretty",
        "created_at",
    )
    fields = _shown
    readonly_fields = _shown

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


@admin.register(Alert)
class AlertAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Alerts are raised by services (blocked messages, personal numbers, failing capture); staff
    resolve them here through the same service as the API."""

    list_display = ["created_at", "customer", "level", "kind", "text", "resolved"]
    list_filter = ["resolved", "level", "kind"]
    search_fields = ["customer__conversation_id", "text"]
    list_select_related = ["customer"]
    actions = ["resolve_selected"]
    fields = ("customer", "kind", "level", "text", "resolved", "created_at", "updated_at")
    readonly_fields = fields

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # The list's action needs change permission; the rows themselves stay read-only.
        return obj is None and current_account() is not None and request.user.has_perm("conversations.change_alert")

    @admin.action(description="标记所选预警为已处理")
    def resolve_selected(self, request: HttpRequest, queryset: QuerySet[Alert]) -> None:
        done = 0
        for alert in queryset.filter(resolved=False):
            alert_resolve(alert=alert, actor=request.user, reason="后台处理预警")
            done += 1
        self.message_user(request, f"已处理 {done} 条预警", level=messages.SUCCESS)
