"""Supervisors curate memory items in Django admin (DESIGN §1, §7): every add, edit, action and
forget goes through the governance services, so admin leaves the same history and audit as the API.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from simple_history.admin import SimpleHistoryAdmin

from memory.admin.actions import GovernanceActionsMixin
from memory.capture.masking import mask_sensitive
from memory.governance.services import (
    memory_item_add,
    memory_item_edit,
)
from memory.models import MemoryItem, MemoryStatus
from memory.selectors import memory_item_sources
from qiwei_site.platform.admin_site import AccountHistoryAdminMixin, AccountScopedAdminMixin, ServiceFormAdminMixin

REASON_FIELD_KWARGS: dict[str, Any] = {
    "label": "原因",
    "max_length": 300,
    "help_text": "写入历史记录和审计（必填）。",
}


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
                mask_sensitive(message.text),
            )
            for message in sources
        ),
    )


@admin.register(MemoryItem)
class MemoryItemAdmin(
    ServiceFormAdminMixin, GovernanceActionsMixin, AccountScopedAdminMixin, AccountHistoryAdminMixin, SimpleHistoryAdmin
):
    form = MemoryItemAdminForm
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

    def save_model(self, request: HttpRequest, obj: MemoryItem, form: Any, change: bool) -> None:
        # A refused save raises ApplicationError: ServiceFormAdminMixin shows it and rolls back.
        reason = form.cleaned_data.get("reason") or "后台操作"
        if change:
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
        else:
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
            obj.pk, obj._state.adding, obj._state.db = item.pk, False, item._state.db
        obj.refresh_from_db()

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        pass  # no relations to save; the service wrote everything
