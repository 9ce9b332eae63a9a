"""Confirming a hypothesis asks for the fact's wording (issue 39): the guess's words without its
hedges, pre-filled and editable, on the item's own page (`<id>/confirm/`, linked from its change
page) and, one field per item, on the list action's page. Every path calls `memory_item_confirm`,
which checks the wording as it checks any supervisor's words and audits both wordings."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from memory.governance.services import memory_item_confirm
from memory.governance.wording import confirmed_wording
from memory.models import MemoryItem, MemoryStatus, MemoryType
from qiwei_site.platform.errors import ApplicationError

WORDING_HELP = "确认后这就是事实的内容：已去掉「可能」「也许」等推测用语，可修改。"


def wording_field_name(item: MemoryItem) -> str:
    """The list action's page has one wording per selected item."""
    return f"wording_{item.pk}"


def suggested_wording(item: MemoryItem) -> str:
    return confirmed_wording(item.content)


class ConfirmWordingForm(forms.Form):
    content = forms.CharField(
        label="事实的措辞",
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text=WORDING_HELP,
        error_messages={"required": "请填写事实的措辞。"},
    )
    reason = forms.CharField(
        label="原因（必填）",
        max_length=300,
        help_text="写入历史记录和审计。",
        error_messages={"required": "请填写原因：它会写入历史记录和审计。"},
    )


def confirmable(item: MemoryItem) -> bool:
    return item.type == MemoryType.HYPOTHESIS and item.status == MemoryStatus.ACTIVE


class ConfirmWordingMixin(admin.ModelAdmin):
    """`admin:memory_memoryitem_confirm`: one hypothesis confirmed in the wording the supervisor keeps."""

    confirm_template = "admin/memory/memoryitem/confirm_wording.html"

    def get_urls(self) -> list[Any]:
        return [
            path(
                "<path:object_id>/confirm/",
                self.admin_site.admin_view(self.confirm_view),
                name="memory_memoryitem_confirm",
            ),
            *super().get_urls(),
        ]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        extra = dict(extra_context or {})
        obj = self.get_object(request, object_id)
        if obj is not None and confirmable(obj) and self.has_change_permission(request, obj):
            extra["confirm_url"] = reverse("admin:memory_memoryitem_confirm", args=[obj.pk])
        return super().change_view(request, object_id, form_url, extra)

    def confirm_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        item = self.get_object(request, object_id)
        if item is None:
            raise Http404("记忆条目不存在。")
        if not self.has_change_permission(request, item):
            raise PermissionDenied
        change_url = reverse("admin:memory_memoryitem_change", args=[item.pk])
        if not confirmable(item):
            self.message_user(request, "只有有效的「推断（待确认）」可以确认。", messages.WARNING)
            return HttpResponseRedirect(change_url)
        if request.method == "POST":
            form = ConfirmWordingForm(request.POST)
            if form.is_valid():
                try:
                    memory_item_confirm(
                        item=item,
                        content=form.cleaned_data["content"],
                        actor=request.user,
                        reason=form.cleaned_data["reason"],
                    )
                except ApplicationError as exc:
                    form.add_error(None, exc.detail)
                else:
                    self.message_user(request, f"#{item.pk} 已确认为事实。", messages.SUCCESS)
                    return HttpResponseRedirect(change_url)
        else:
            form = ConfirmWordingForm(initial={"content": suggested_wording(item)})
        context = {
            **self.admin_site.each_context(request),
            "title": "确认推断为事实",
            "opts": self.model._meta,
            "original": item,
            "form": form,
            "change_url": change_url,
            "media": self.media + form.media,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.confirm_template, context)
