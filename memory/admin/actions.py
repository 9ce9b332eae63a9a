"""Governance in the memory-item list: confirm, reject, expire and forget the selected items, each
through its service with the supervisor's reason; delete is forget."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from memory.governance.services import (
    memory_item_confirm,
    memory_item_expire,
    memory_item_forget,
    memory_item_reject,
)
from memory.models import MemoryItem
from qiwei_site.platform.errors import ApplicationError


class GovernanceActionForm(helpers.ActionForm):
    reason = forms.CharField(label="原因", required=False, max_length=300)


class GovernanceActionsMixin(admin.ModelAdmin):
    """The item list's actions; MemoryItemAdmin takes them from here."""

    action_form = GovernanceActionForm
    actions = ["confirm_selected", "reject_selected", "expire_selected", "forget_selected"]
    forget_confirmation_template = "admin/memory/memoryitem/forget_selected_confirmation.html"

    def get_actions(self, request: HttpRequest) -> Any:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # replaced by forget_selected, which asks for a reason
        return actions

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

    def _run(
        self, request: HttpRequest, queryset: QuerySet[MemoryItem], service: Callable[..., Any], done: str, default: str
    ) -> None:
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


