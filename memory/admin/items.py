"""Supervisors curate memory items in Django admin (DESIGN §1, §7): every add, edit, action and
forget goes through the governance services, so admin leaves the same history and audit as the API.

The list keeps fixed column widths (the customer column never leaves the screen), quotes the
evidence (masked, shortened; loaded for the whole page in one query), filters by customer and
walks by date. The review queue (`memory.admin.review`) lives on the same admin.
"""

from __future__ import annotations

import inspect
from datetime import datetime
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from simple_history.admin import SimpleHistoryAdmin

from conversations.models import Message
from memory.admin.actions import GovernanceActionsMixin
from memory.admin.confirm import ConfirmWordingMixin
from memory.admin.review import ReviewQueueMixin
from memory.admin.selectors import SOURCE_PICKER_LIMIT, source_message_choices, source_message_label
from memory.attention import evidence_for
from memory.governance.services import (
    memory_item_add,
    memory_item_edit,
)
from memory.models import MemoryItem, MemoryStatus
from memory.selectors import memory_item_sources
from qiwei_site.platform.admin_site import AccountHistoryAdminMixin, AccountScopedAdminMixin, ServiceFormAdminMixin
from qiwei_site.reading.masking import mask_sensitive

REASON_FIELD_KWARGS: dict[str, Any] = {
    "label": "原因",
    "max_length": 300,
    "help_text": "写入历史记录和审计（必填）。",
}


# One default importance and type for a hand-added item: the service's, which the API uses too.
_ADD_DEFAULTS = inspect.signature(memory_item_add).parameters
HAND_ADDED_IMPORTANCE: int = _ADD_DEFAULTS["importance"].default
HAND_ADDED_TYPE: str = str(_ADD_DEFAULTS["type"].default)


class SourceMessagesField(forms.ModelMultipleChoiceField):
    """The customer's messages as checkboxes, each by its time, side and masked words; cleans to ids."""

    widget = forms.CheckboxSelectMultiple(attrs={"class": "qw-source-picker"})

    def label_from_instance(self, obj: Any) -> str:
        return source_message_label(obj)

    def clean(self, value: Any) -> list[int]:  # type: ignore[override]
        return [message.pk for message in super().clean(value)]


class MemoryItemAdminForm(forms.ModelForm):
    reason = forms.CharField(**REASON_FIELD_KWARGS)
    source_message_ids = SourceMessagesField(
        label="来源消息",
        queryset=Message.objects.none(),
        required=False,
        help_text=f"勾选该客户说过的、支持这条记忆的消息（列出最近 {SOURCE_PICKER_LIMIT} 条，已遮蔽）；先选客户。",
    )

    class Meta:
        model = MemoryItem
        fields = ["customer", "type", "content", "importance", "confidence", "expires_at", "source_message_ids"]

    class Media:
        js = ["qiwei_admin/source_picker.js"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance._state.adding:
            given = kwargs.get("initial") or {}
            if "importance" not in given:
                self.initial["importance"] = HAND_ADDED_IMPORTANCE
            if "type" not in given:
                self.initial["type"] = HAND_ADDED_TYPE
        if "source_message_ids" in self.fields:
            customer = self.data.get("customer") if self.is_bound else self.initial.get("customer")
            chosen = str(getattr(customer, "pk", customer) or "")
            self.fields["source_message_ids"].queryset = source_message_choices(  # type: ignore[attr-defined]
                customer_id=_row_id(chosen)
            )


def _row_id(value: str) -> int | None:
    """A row id from a form or query string: ASCII digits that fit a 64-bit key ("²" and
    twenty-digit strings are no id)."""
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 18 else None


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


EVIDENCE_COLUMN_CHARS = 60


def local_minute(value: datetime | None) -> str:
    """A time as Beijing time to the minute, on one line (its column is sized for it); none is 「无」."""
    if value is None:
        return "无"
    return timezone.localtime(value).strftime("%Y-%m-%d %H:%M")


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class EvidenceChangeList(ChangeList):
    """The page's rows with the messages they cite, fetched once for the whole page."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        rows = list(self.result_list)
        evidence = evidence_for(rows)
        for item in rows:
            item.evidence_messages = evidence.get(item.pk, [])  # type: ignore[attr-defined]


def _evidence_messages(item: MemoryItem) -> list[Message]:
    cached = getattr(item, "evidence_messages", None)
    return cached if cached is not None else memory_item_sources(item=item)


@admin.register(MemoryItem)
class MemoryItemAdmin(
    ServiceFormAdminMixin,
    ReviewQueueMixin,
    ConfirmWordingMixin,
    GovernanceActionsMixin,
    AccountScopedAdminMixin,
    AccountHistoryAdminMixin,
    SimpleHistoryAdmin,
):
    form = MemoryItemAdminForm
    change_list_template = "admin/memory/memoryitem/change_list.html"
    change_form_template = "admin/memory/memoryitem/change_form.html"
    list_display = [
        "short_content",
        "customer",
        "type",
        "status",
        "confidence",
        "created_by",
        "evidence_text",
        "expires_display",
        "created_display",
    ]
    list_filter = ["type", "status", "created_by", "direction", ("customer", admin.RelatedOnlyFieldListFilter)]
    date_hierarchy = "created_at"
    search_fields = ["content", "key", "customer__conversation_id", "customer__display_name"]
    list_select_related = ["customer"]
    autocomplete_fields = ["customer"]

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return EvidenceChangeList

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        """`?customer=<id>` preselects a customer; anything that is no row id is left out."""
        initial = super().get_changeform_initial_data(request)
        if "customer" in initial and _row_id(str(initial["customer"])) is None:
            del initial["customer"]
        return initial

    def get_urls(self) -> list[Any]:
        return [
            path(
                "source-messages/",
                self.admin_site.admin_view(self.source_messages_view),
                name="memory_memoryitem_source_messages",
            ),
            *super().get_urls(),
        ]

    def source_messages_view(self, request: HttpRequest) -> JsonResponse:
        """The add form's picker, refilled when the supervisor picks another customer."""
        if not self.has_add_permission(request):
            return JsonResponse({"code": "permission_denied", "detail": "无权添加记忆条目"}, status=403)
        customer_id = _row_id(request.GET.get("customer", ""))
        if customer_id is None:
            return JsonResponse({"code": "invalid_customer", "detail": "请先选择客户"}, status=400)
        choices = source_message_choices(customer_id=customer_id)
        return JsonResponse({"messages": [{"id": m.pk, "label": source_message_label(m)} for m in choices]})

    @admin.display(description="内容")
    def short_content(self, obj: MemoryItem) -> str:
        return shorten(obj.content, 60)

    @admin.display(description="证据原文（已遮蔽）")
    def evidence_text(self, obj: MemoryItem) -> str:
        messages = _evidence_messages(obj)
        quoted = " / ".join(f"「{mask_sensitive(message.text)}」" for message in messages)
        if not quoted:
            return "—"
        count = f"{len(messages)} 条：" if len(messages) > 1 else ""
        return count + shorten(quoted, EVIDENCE_COLUMN_CHARS)

    @admin.display(description="过期时间", ordering="expires_at")
    def expires_display(self, obj: MemoryItem) -> str:
        return local_minute(obj.expires_at)

    @admin.display(description="创建时间", ordering="created_at")
    def created_display(self, obj: MemoryItem) -> str:
        return local_minute(obj.created_at)

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
