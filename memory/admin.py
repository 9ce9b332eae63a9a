"""Supervisor curation in Django admin (DESIGN §1, §7): every add, edit, action and forget goes
through the governance services, so admin leaves the same history and audit as the API.
"""

from __future__ import annotations

import difflib
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from simple_history.admin import SimpleHistoryAdmin

from conversations.admin import CustomerAdmin, CustomerProfileInline
from conversations.models import PROFILE_FIELD_NAMES, Customer, CustomerProfile
from conversations.services import customer_update
from memory.erasure import customer_erase
from memory.governance import (
    memory_item_add,
    memory_item_confirm,
    memory_item_edit,
    memory_item_expire,
    memory_item_forget,
    memory_item_reject,
)
from memory.models import CaptureJob, MemoryItem, MemorySnapshot, MemoryStatus
from memory.profile import customer_profile_update
from memory.selectors import memory_item_sources, snapshot_list
from qiwei_site.platform.admin_site import AccountHistoryAdminMixin, AccountScopedAdminMixin, ReadOnlyAdminMixin
from qiwei_site.platform.errors import ApplicationError

ERROR_ATTR = "_memory_admin_error"

REASON_FIELD_KWARGS: dict[str, Any] = {
    "label": "原因",
    "max_length": 300,
    "help_text": "写入历史记录和审计（必填）。",
}


class GovernanceActionForm(helpers.ActionForm):
    reason = forms.CharField(label="原因", required=False, max_length=300)


class MemoryItemAdminForm(forms.ModelForm):
    reason = forms.CharField(**REASON_FIELD_KWARGS)

    class Meta:
        model = MemoryItem
        fields = ["customer", "type", "content", "importance", "confidence", "expires_at", "source_message_ids"]


def _render_sources(item: MemoryItem) -> str:
    sources = memory_item_sources(item=item)
    if not sources:
        return format_html('<span style="color:#666">{}</span>', "无来源消息（人工确认）")
    return format_html_join(
        "",
        '<blockquote style="margin:0 0 .5em;padding:.3em .6em;border-left:3px solid #79aec8">'
        '<small style="color:#666">{} · {} · {}</small><br>{}</blockquote>',
        (
            (
                timezone.localtime(message.sent_at).strftime("%Y-%m-%d %H:%M"),
                message.get_direction_display(),
                message.sender or "—",
                message.text,
            )
            for message in sources
        ),
    )


@admin.register(MemoryItem)
class MemoryItemAdmin(AccountScopedAdminMixin, AccountHistoryAdminMixin, SimpleHistoryAdmin):
    form = MemoryItemAdminForm
    action_form = GovernanceActionForm
    list_display = [
        "short_content",
        "type",
        "status",
        "confidence",
        "importance",
        "created_by",
        "direction",
        "evidence_count",
        "expires_at",
        "customer",
    ]
    list_filter = ["type", "status", "created_by", "direction"]
    search_fields = ["content", "key", "customer__conversation_id", "customer__display_name"]
    list_select_related = ["customer"]
    autocomplete_fields = ["customer"]
    actions = ["confirm_selected", "reject_selected", "expire_selected", "forget_selected"]
    forget_confirmation_template = "admin/memory/memoryitem/forget_selected_confirmation.html"

    @admin.display(description="内容")
    def short_content(self, obj: MemoryItem) -> str:
        return obj.content if len(obj.content) <= 60 else obj.content[:60] + "…"

    @admin.display(description="证据数")
    def evidence_count(self, obj: MemoryItem) -> int:
        return len(obj.source_message_ids or [])

    @admin.display(description="来源消息（客户/客服原话）")
    def source_messages(self, obj: MemoryItem) -> str:
        return _render_sources(obj) if obj.pk else "—"

    # --- forms: add and edit go through the services ---------------------------------------

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            fields = ["customer", "type", "content", "importance", "expires_at", "source_message_ids", "reason"]
            description = "人工添加的记忆为已确认内容：置信度 1，创建方式「人工」。"
            return [(None, {"fields": fields, "description": description})]
        editable = ["type", "content", "importance", "confidence", "expires_at"]
        if self.has_change_permission(request, obj):
            editable.append("reason")
        return [
            (None, {"fields": editable}),
            ("证据", {"fields": ["source_messages"]}),
            (
                "状态",
                {"fields": ["customer", "key", "status", "created_by", "direction", "superseded_by", "created_at"]},
            ),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return []
        return [
            "source_messages",
            "customer",
            "key",
            "status",
            "created_by",
            "direction",
            "superseded_by",
            "created_at",
        ]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Rejected and superseded items are the record of what happened: view only.
        if obj is not None and obj.status != MemoryStatus.ACTIVE:
            return False
        return super().has_change_permission(request, obj)

    def get_actions(self, request: HttpRequest) -> Any:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # replaced by forget_selected, which asks for a reason
        return actions

    def save_model(self, request: HttpRequest, obj: MemoryItem, form: Any, change: bool) -> None:
        reason = form.cleaned_data.get("reason") or "后台操作"
        try:
            if not change:
                item = memory_item_add(
                    customer=obj.customer,
                    content=obj.content,
                    type=obj.type,
                    importance=obj.importance,
                    source_message_ids=obj.source_message_ids or (),
                    expires_at=obj.expires_at,
                    actor=request.user,
                    reason=reason,
                )
                obj.pk = item.pk
                obj._state.adding = False
                obj._state.db = item._state.db
            else:
                changed = set(form.changed_data)
                extra: dict[str, Any] = {"expires_at": obj.expires_at} if "expires_at" in changed else {}
                memory_item_edit(
                    item=obj,
                    content=obj.content if "content" in changed else None,
                    type=obj.type if "type" in changed else None,
                    importance=obj.importance if "importance" in changed else None,
                    confidence=obj.confidence if "confidence" in changed else None,
                    actor=request.user,
                    reason=reason,
                    **extra,
                )
            obj.refresh_from_db()
        except ApplicationError as exc:
            setattr(request, ERROR_ATTR, exc)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        pass  # no relations to save; the service wrote everything

    def _error_redirect(self, request: HttpRequest) -> HttpResponse | None:
        exc = getattr(request, ERROR_ATTR, None)
        if exc is None:
            return None
        self.message_user(request, exc.detail, messages.ERROR)
        return HttpResponseRedirect(request.get_full_path())

    def response_add(self, request: HttpRequest, obj: MemoryItem, post_url_continue: str | None = None) -> HttpResponse:
        return self._error_redirect(request) or super().response_add(request, obj, post_url_continue)

    def response_change(self, request: HttpRequest, obj: MemoryItem) -> HttpResponse:
        return self._error_redirect(request) or super().response_change(request, obj)

    # --- delete is forget --------------------------------------------------------------------

    def delete_model(self, request: HttpRequest, obj: MemoryItem) -> None:
        reason = (request.POST.get("reason") or "").strip() or "后台遗忘"
        try:
            memory_item_forget(item=obj, actor=request.user, reason=reason)
        except ApplicationError as exc:
            self.message_user(request, exc.detail, messages.ERROR)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[MemoryItem]) -> None:
        reason = (request.POST.get("reason") or "").strip() or "后台批量遗忘"
        for item in list(queryset):
            try:
                memory_item_forget(item=item, actor=request.user, reason=reason)
            except ApplicationError as exc:
                self.message_user(request, exc.detail, messages.ERROR)

    # --- actions -----------------------------------------------------------------------------

    def _run(self, request: HttpRequest, queryset: QuerySet[MemoryItem], service: Any, done: str, default: str) -> None:
        reason = (request.POST.get("reason") or "").strip() or default
        succeeded = 0
        for item in list(queryset):
            try:
                service(item=item, actor=request.user, reason=reason)
                succeeded += 1
            except ApplicationError as exc:
                self.message_user(request, f"#{item.pk}：{exc.detail}", messages.ERROR)
        if succeeded:
            self.message_user(request, f"已{done} {succeeded} 条记忆。", messages.SUCCESS)

    @admin.action(description="确认所选推断为事实", permissions=["change"])
    def confirm_selected(self, request: HttpRequest, queryset: QuerySet[MemoryItem]) -> None:
        self._run(request, queryset, memory_item_confirm, "确认", "后台确认")

    @admin.action(description="拒绝所选记忆", permissions=["change"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[MemoryItem]) -> None:
        self._run(request, queryset, memory_item_reject, "拒绝", "后台拒绝")

    @admin.action(description="立即使所选记忆过期", permissions=["change"])
    def expire_selected(self, request: HttpRequest, queryset: QuerySet[MemoryItem]) -> None:
        self._run(request, queryset, memory_item_expire, "设为过期", "后台设为过期")

    @admin.action(description="遗忘所选记忆（物理删除）", permissions=["delete"])
    def forget_selected(self, request: HttpRequest, queryset: QuerySet[MemoryItem]) -> TemplateResponse | None:
        if request.POST.get("post") == "yes":
            if not (request.POST.get("reason") or "").strip():
                self.message_user(request, "遗忘需要填写原因。", messages.ERROR)
            else:
                self._run(request, queryset, memory_item_forget, "遗忘", "后台遗忘")
                return None
        context = {
            **self.admin_site.each_context(request),
            "title": "确认遗忘记忆",
            "queryset": queryset.select_related("customer"),
            "opts": self.model._meta,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "reason": request.POST.get("reason", ""),
            "media": self.media,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.forget_confirmation_template, context)


@admin.register(MemorySnapshot)
class MemorySnapshotAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["customer", "version", "char_count", "item_count", "reason", "created_at", "diff_link"]
    search_fields = ["customer__conversation_id", "customer__display_name"]
    list_select_related = ["customer"]
    fields = ["customer", "version", "content", "char_count", "item_ids", "left_out_ids", "sha256", "reason"]
    readonly_fields = ["customer", "version", "content", "char_count", "item_ids", "left_out_ids", "sha256", "reason"]
    diff_template = "admin/memory/memorysnapshot/diff.html"

    @admin.display(description="条目数")
    def item_count(self, obj: MemorySnapshot) -> int:
        return len(obj.item_ids or [])

    @admin.display(description="与上一版差异")
    def diff_link(self, obj: MemorySnapshot) -> str:
        if obj.version <= 1:
            return "—"
        return format_html('<a href="{}">查看差异</a>', reverse("admin:memory_memorysnapshot_diff", args=[obj.pk]))

    def get_urls(self) -> list[Any]:
        return [
            path(
                "<int:object_id>/diff/",
                self.admin_site.admin_view(self.diff_view),
                name="memory_memorysnapshot_diff",
            ),
            *super().get_urls(),
        ]

    def diff_view(self, request: HttpRequest, object_id: int) -> TemplateResponse:
        """A line diff between this version and another of the same customer (default: the previous one)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        snapshot = get_object_or_404(MemorySnapshot.objects.select_related("customer"), pk=object_id)
        versions = snapshot_list(customer=snapshot.customer)
        try:
            against_version = int(request.GET.get("against", snapshot.version - 1))
        except ValueError:
            against_version = snapshot.version - 1
        against = versions.filter(version=against_version).first()
        old_text = against.content if against else ""
        lines = []
        for line in difflib.unified_diff(
            old_text.splitlines(),
            snapshot.content.splitlines(),
            fromfile=f"v{against.version}" if against else "（无）",
            tofile=f"v{snapshot.version}",
            lineterm="",
        ):
            kind = "add" if line.startswith("+") else "remove" if line.startswith("-") else "context"
            if line.startswith(("+++", "---", "@@")):
                kind = "meta"
            lines.append({"kind": kind, "text": line})
        context = {
            **self.admin_site.each_context(request),
            "title": f"快照差异：{snapshot.customer} v{against_version} → v{snapshot.version}",
            "opts": self.model._meta,
            "snapshot": snapshot,
            "against": against,
            "versions": list(versions.values_list("version", "pk")),
            "lines": lines,
            "unchanged": not lines,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.diff_template, context)


@admin.register(CaptureJob)
class CaptureJobAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["id", "customer", "message", "status", "attempts", "next_attempt_at", "finished_at"]
    list_filter = ["status"]
    search_fields = ["customer__conversation_id"]
    list_select_related = ["customer"]


# --- customers: the profile inline saves through customer_profile_update -----------------------
# Registered here rather than in conversations/admin.py, because conversations must not depend
# on memory (DESIGN §3): the profile and its `profile:<field>` items change in one service.


class CustomerAdminForm(forms.ModelForm):
    reason = forms.CharField(
        label="原因", max_length=300, required=False, help_text="写入画像与客户的历史记录和审计；留空为「后台修改」。"
    )

    class Meta:
        model = Customer
        fields = ["display_name", "session_mode", "auto_send_whitelisted"]


class ServiceProfileInline(CustomerProfileInline):
    extra = 1
    max_num = 1


class MemoryItemInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = MemoryItem
    fk_name = "customer"
    fields = ["type", "content", "status", "confidence", "importance", "created_by", "expires_at"]
    readonly_fields = ["type", "content", "status", "confidence", "importance", "created_by", "expires_at"]
    extra = 0
    max_num = 0
    show_change_link = True
    verbose_name_plural = "记忆条目（在「记忆条目」中治理）"


class MemoryCustomerAdmin(CustomerAdmin):
    delete_confirmation_template = "admin/conversations/customer/erase_confirmation.html"
    form = CustomerAdminForm
    inlines = [ServiceProfileInline, MemoryItemInline, *CustomerAdmin.inlines[1:]]

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False  # customers appear with their first message (ingest), never by hand

    def save_model(self, request: HttpRequest, obj: Customer, form: Any, change: bool) -> None:
        changes = {f: form.cleaned_data[f] for f in form.changed_data if f in CustomerAdminForm.Meta.fields}
        if changes:
            customer_update(
                customer=obj, changes=changes, actor=request.user, reason=form.cleaned_data.get("reason") or "后台修改"
            )

    def get_actions(self, request: HttpRequest) -> Any:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # erasure is one customer at a time, with a reason
        return actions

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        # Messages, memory and drafts are read-only in admin, which would make Django refuse the
        # delete; erasure removes them on purpose, through the service.
        to_delete, model_count, _perms_needed, protected = super().get_deleted_objects(objs, request)
        return to_delete, model_count, set(), protected

    def delete_model(self, request: HttpRequest, obj: Customer) -> None:
        reason = (request.POST.get("reason") or "").strip() or "后台擦除客户"
        customer_erase(customer=obj, actor=request.user, reason=reason)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        if formset.model is not CustomerProfile:
            super().save_formset(request, form, formset, change)
            return
        # Admin's change message reads these, normally set by formset.save().
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        reason = form.cleaned_data.get("reason") or "后台修改画像"
        for profile_form in formset.forms:
            changes = {f: profile_form.cleaned_data.get(f) or "" for f in profile_form.changed_data}
            changes = {f: v for f, v in changes.items() if f in PROFILE_FIELD_NAMES}
            if not changes:
                continue
            try:
                profile = customer_profile_update(
                    customer=form.instance, changes=changes, actor=request.user, reason=reason
                )
            except ApplicationError as exc:
                self.message_user(request, f"画像未保存：{exc.detail}", messages.ERROR)
                continue
            formset.changed_objects.append((profile, sorted(changes)))


admin.site.unregister(Customer)
admin.site.register(Customer, MemoryCustomerAdmin)
