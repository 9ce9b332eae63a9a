"""Drafts (reviewed through the same services as the API, with the prompt each was made from) and
their deliveries."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from simple_history.admin import SimpleHistoryAdmin

from conversations.admin.audit import _admin_change_url, _pretty
from conversations.admin.trace import draft_trace_table
from conversations.drafts import draft_approve, draft_context_read, draft_reject
from conversations.models import Delivery, Draft, DraftStatus, MessageDirection
from conversations.selectors import DraftPromptView, draft_prompt_view
from qiwei_site.platform.admin_site import AccountHistoryAdminMixin, AccountScopedAdminMixin, ReadOnlyAdminMixin
from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.models import ContextReadPurpose
from qiwei_site.reading.fields import PROFILE_FIELD_LABELS
from qiwei_site.reading.masking import mask_sensitive

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


def _field_label(field: str) -> str:
    """A profile field by its Chinese label (an undeclared field a model invented stays as it came)."""
    return PROFILE_FIELD_LABELS.get(field, field)


def _items(texts: Any) -> str:
    return format_html_join("", "<li>{}</li>", ((text,) for text in texts))


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
    trace_template = "admin/conversations/draft/trace_table.html"

    @admin.display(description="模型收到的提示词")
    def prompt_link(self, obj: Draft) -> str:
        if not obj.prompt:
            return "未保存（该草稿生成时尚未保存提示词）"
        url = reverse("admin:conversations_draft_prompt", args=[obj.pk])
        return format_html('<a class="button" href="{}">{}</a>（{} 字）', url, "查看模型收到的提示词", len(obj.prompt))

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> Any:
        # The page shows the draft's context trace (which memory items and messages it showed): a read.
        if request.method == "GET":
            draft = self.get_object(request, object_id)
            if draft is not None and self.has_view_permission(request, draft):
                draft_context_read(draft=draft, actor=request.user, purpose=ContextReadPurpose.DRAFT_TRACE)
        return super().change_view(request, object_id, form_url, extra_context)

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
        draft_context_read(draft=draft, actor=request.user, purpose=ContextReadPurpose.DRAFT_PROMPT)
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
        reasons = obj.reasons if isinstance(obj.reasons, list) else []
        if not reasons:
            return "（无）" if not obj.reasons else _pretty(obj.reasons)
        return format_html("<ol class='qiwei-plain-list'>{}</ol>", _items(mask_sensitive(str(r)) for r in reasons))

    @admin.display(description="已核验画像更新")
    def profile_updates_pretty(self, obj: Draft) -> str:
        updates = obj.profile_updates if isinstance(obj.profile_updates, dict) else {}
        if not updates:
            return "（无）" if not obj.profile_updates else _pretty(obj.profile_updates)
        return format_html(
            "<ul class='qiwei-plain-list'>{}</ul>",
            _items(f"{_field_label(field)}：{mask_sensitive(str(value))}" for field, value in updates.items()),
        )

    @admin.display(description="未核验（已丢弃）画像更新")
    def dropped_updates_pretty(self, obj: Draft) -> str:
        dropped = obj.dropped_updates if isinstance(obj.dropped_updates, list) else []
        if not dropped or not all(isinstance(entry, dict) for entry in dropped):
            return "（无）" if not obj.dropped_updates else _pretty(obj.dropped_updates)
        return format_html(
            "<ul class='qiwei-plain-list'>{}</ul>",
            _items(
                f"{_field_label(str(entry.get('field', '')))}：{mask_sensitive(str(entry.get('value', '')))}"
                f"（{entry.get('reason') or '未保留'}）"
                for entry in dropped
            ),
        )

    @admin.display(description="上下文追踪")
    def trace_pretty(self, obj: Draft) -> str:
        return render_to_string(self.trace_template, {"table": draft_trace_table(obj)})

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
