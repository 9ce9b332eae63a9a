"""Governance in the memory-item list: confirm, reject, expire and forget the selected items, each
through its service with the supervisor's reason; delete is forget.

A reason is required on every path. Typed in the action bar, reject/expire run at once; left empty,
a page lists the selected items and asks for it. Forget always asks for confirmation, and so does
confirm: its page asks for each hypothesis's wording as a fact (issue 39), pre-filled without the
guess's hedges."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse

from memory.admin.confirm import confirmable, suggested_wording, wording_field_name
from memory.governance.services import (
    memory_item_confirm,
    memory_item_expire,
    memory_item_forget,
    memory_item_reject,
)
from memory.models import MemoryItem
from qiwei_site.platform.errors import ApplicationError

REASON_MISSING = "请填写原因：它会写入历史记录和审计。"


class GovernanceActionForm(helpers.ActionForm):
    # Not required at form level: Django would then report "no action selected". The action asks.
    reason = forms.CharField(label="原因（必填）", required=False, max_length=300)


@dataclass(frozen=True)
class GovernanceAction:
    name: str
    service: Callable[..., Any]
    verb: str  # 「已{verb} N 条记忆」
    title: str
    intro: str
    submit_label: str
    always_confirm: bool = False
    asks_wording: bool = False  # confirm: each item's wording as a fact, from the page


ACTIONS = {
    action.name: action
    for action in (
        GovernanceAction(
            "confirm_selected",
            memory_item_confirm,
            "确认",
            "确认推断为事实",
            "确认后，所选推断成为事实（置信度 1，创建方式「人工」），进入后续上下文的已确认事实。"
            "每条推断下是事实的措辞：已去掉「可能」「也许」等推测用语，可修改；审计同时记录原措辞和确认后的措辞。",
            "确认",
            always_confirm=True,
            asks_wording=True,
        ),
        GovernanceAction(
            "reject_selected",
            memory_item_reject,
            "拒绝",
            "拒绝记忆",
            "拒绝是最终决定：所选记忆不再进入上下文，自动提取也不会再写回同一内容。",
            "确认拒绝",
        ),
        GovernanceAction(
            "expire_selected",
            memory_item_expire,
            "设为过期",
            "使记忆过期",
            "所选记忆立即失效（状态「已失效」），不再进入上下文。",
            "确认过期",
        ),
        GovernanceAction(
            "forget_selected",
            memory_item_forget,
            "遗忘",
            "确认遗忘记忆",
            "遗忘会物理删除条目及其全部历史记录，并从对应客户所有快照版本中移除其内容；"
            "审计只记录操作和条目 ID。客户原始消息不受影响。",
            "确认遗忘",
            always_confirm=True,
        ),
    )
}


class GovernanceActionsMixin(admin.ModelAdmin):
    """The item list's actions; MemoryItemAdmin takes them from here."""

    action_form = GovernanceActionForm
    actions = ["confirm_selected", "reject_selected", "expire_selected", "forget_selected"]
    action_confirmation_template = "admin/memory/memoryitem/action_confirmation.html"

    def get_actions(self, request: HttpRequest) -> Any:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # replaced by forget_selected, which asks for a reason
        return actions

    # --- delete is forget --------------------------------------------------------------------

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> HttpResponse:
        if request.method == "POST" and not (request.POST.get("reason") or "").strip():
            self.message_user(request, f"未遗忘：{REASON_MISSING}", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())
        return super().delete_view(request, object_id, extra_context)

    def delete_model(self, request: HttpRequest, obj: MemoryItem) -> None:
        try:
            memory_item_forget(item=obj, actor=request.user, reason=request.POST.get("reason") or "")
        except ApplicationError as exc:
            self.message_user(request, exc.detail, messages.ERROR)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[MemoryItem]) -> None:
        for item in list(queryset):
            try:
                memory_item_forget(item=item, actor=request.user, reason=request.POST.get("reason") or "")
            except ApplicationError as exc:
                self.message_user(request, exc.detail, messages.ERROR)

    # --- actions -----------------------------------------------------------------------------

    def _govern(self, request: HttpRequest, queryset: QuerySet[MemoryItem], name: str) -> TemplateResponse | None:
        action = ACTIONS[name]
        reason = (request.POST.get("reason") or "").strip()
        confirmed = request.POST.get("post") == "yes"
        if confirmed and not reason:
            self.message_user(request, REASON_MISSING, messages.ERROR)
        elif reason and (confirmed or not action.always_confirm):
            refused = self._run(request, queryset, action, reason)
            if refused and action.asks_wording:
                # The wordings the supervisor typed stay on the page with the refusal, to correct.
                return self._confirmation(request, queryset.filter(pk__in=refused), action, reason)
            return None
        return self._confirmation(request, queryset, action, reason)

    def _run(
        self, request: HttpRequest, queryset: QuerySet[MemoryItem], action: GovernanceAction, reason: str
    ) -> list[int]:
        """Run the action on each item; returns the ids it refused (each refusal shown)."""
        succeeded = 0
        refused: list[int] = []
        for item in list(queryset):
            extra = {"content": request.POST.get(wording_field_name(item))} if action.asks_wording else {}
            try:
                action.service(item=item, actor=request.user, reason=reason, **extra)
                succeeded += 1
            except ApplicationError as exc:
                refused.append(item.pk)
                self.message_user(request, f"#{item.pk}：{exc.detail}", messages.ERROR)
        if succeeded:
            self.message_user(request, f"已{action.verb} {succeeded} 条记忆。", messages.SUCCESS)
        return refused

    def _confirmation(
        self, request: HttpRequest, queryset: QuerySet[MemoryItem], action: GovernanceAction, reason: str
    ) -> TemplateResponse:
        items = list(queryset.select_related("customer"))
        for item in items:
            # The wording typed before a refusal, else the guess without its hedges (hypotheses only).
            typed = request.POST.get(wording_field_name(item))
            item.wording_name = wording_field_name(item)  # type: ignore[attr-defined]
            item.wording = typed if typed is not None else suggested_wording(item)  # type: ignore[attr-defined]
            item.asks_wording = action.asks_wording and confirmable(item)  # type: ignore[attr-defined]
        context = {
            **self.admin_site.each_context(request),
            "title": action.title,
            "action": action,
            "queryset": items,
            "opts": self.model._meta,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "reason": reason,
            "media": self.media,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.action_confirmation_template, context)

    @admin.action(description="确认所选推断为事实", permissions=["change"])
    def confirm_selected(self, request: HttpRequest, queryset: QuerySet[MemoryItem]) -> TemplateResponse | None:
        return self._govern(request, queryset, "confirm_selected")

    @admin.action(description="拒绝所选记忆", permissions=["change"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[MemoryItem]) -> TemplateResponse | None:
        return self._govern(request, queryset, "reject_selected")

    @admin.action(description="立即使所选记忆过期", permissions=["change"])
    def expire_selected(self, request: HttpRequest, queryset: QuerySet[MemoryItem]) -> TemplateResponse | None:
        return self._govern(request, queryset, "expire_selected")

    @admin.action(description="遗忘所选记忆（物理删除）", permissions=["delete"])
    def forget_selected(self, request: HttpRequest, queryset: QuerySet[MemoryItem]) -> TemplateResponse | None:
        return self._govern(request, queryset, "forget_selected")
