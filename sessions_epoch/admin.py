"""Admin for drafts (review through the same services as the API), deliveries and session epochs."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from simple_history.admin import SimpleHistoryAdmin

from conversations.drafts import draft_approve, draft_reject
from conversations.models import Delivery, Draft, DraftStatus
from qiwei_site.platform.admin_site import AccountHistoryAdminMixin, AccountScopedAdminMixin, ReadOnlyAdminMixin
from qiwei_site.platform.errors import ApplicationError
from sessions_epoch.models import SessionEpoch


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


@admin.register(SessionEpoch)
class SessionEpochAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, AccountHistoryAdminMixin, SimpleHistoryAdmin):
    list_display = ["session_id", "customer", "turns", "started_at", "closed_at", "close_reason", "memory_version"]
    list_filter = ["close_reason", "client"]
    search_fields = ["session_id", "parent_session_id", "customer__conversation_id"]
    list_select_related = ["customer"]
