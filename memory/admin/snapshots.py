"""Snapshot versions (read-only, rendered readably, their items by text, and what changed between two
versions item by item) and capture jobs in admin."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from memory.admin.selectors import SnapshotLine, snapshot_diff, snapshot_left_out, snapshot_lines
from memory.models import CaptureJob, MemorySnapshot, StorageScrub
from memory.selectors import snapshot_list
from qiwei_site.platform.admin_site import AccountScopedAdminMixin, ReadOnlyAdminMixin, TitledChangeFormMixin
from qiwei_site.reading.masking import mask_sensitive

# Only what a snapshot uses (headings, lists) and inline emphasis: no raw HTML (it is escaped), no
# links or images, so nothing a customer's words put in an item can run or lead anywhere.
_SNAPSHOT_MARKDOWN = MarkdownIt("zero").enable(["heading", "list", "emphasis", "backticks"])


def render_snapshot_html(content: str) -> SafeString:
    """The snapshot's Markdown as HTML for a supervisor; markdown-it escapes every character it
    does not render, so the result is safe to show."""
    return mark_safe(_SNAPSHOT_MARKDOWN.render(content))  # escaped by markdown-it (html off)


# Why a storage scrub was queued (`memory.governance.scrub.storage_purge_on_commit(cause=...)`).
SCRUB_CAUSES = {"forget": "遗忘", "erase": "删除客户数据"}


class ScrubCauseFilter(admin.SimpleListFilter):
    title = "原因"
    parameter_name = "cause"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return list(SCRUB_CAUSES.items())

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        return queryset.filter(cause=self.value()) if self.value() else queryset


@admin.register(MemorySnapshot)
class MemorySnapshotAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["customer", "version", "char_count", "item_count", "reason", "created_at", "diff_link"]
    search_fields = ["customer__conversation_id", "customer__display_name"]
    list_select_related = ["customer"]
    _shown: tuple[str, ...] = (
        "customer",
        "version",
        "content_rendered",
        "char_count",
        "items_table",
        "left_out_table",
        "sha256",
        "reason",
        "created_at",
        "content_raw",
    )
    fields = _shown
    readonly_fields = _shown
    diff_template = "admin/memory/memorysnapshot/diff.html"

    @admin.display(description="快照内容")
    def content_rendered(self, obj: MemorySnapshot) -> str:
        if not obj.content:
            return "（空快照：没有有效记忆）"
        return format_html('<div class="qiwei-snapshot">{}</div>', render_snapshot_html(obj.content))

    @admin.display(description="原文（模型看到的格式）")
    def content_raw(self, obj: MemorySnapshot) -> str:
        return format_html('<pre style="white-space: pre-wrap; max-width: 80em">{}</pre>', obj.content)

    @admin.display(description="包含条目")
    def items_table(self, obj: MemorySnapshot) -> str:
        return _lines_table(snapshot_lines(obj), empty="（没有条目）")

    @admin.display(description="超限未收录条目")
    def left_out_table(self, obj: MemorySnapshot) -> str:
        return _lines_table(snapshot_left_out(obj), empty="无")

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
        """What changed between this version and another of the same customer (default: the
        previous one), item by item with their masked text (`memory.admin.selectors.snapshot_diff`)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        snapshot = get_object_or_404(MemorySnapshot.objects.select_related("customer"), pk=object_id)
        versions = snapshot_list(customer=snapshot.customer)
        try:
            against_version = int(request.GET.get("against", snapshot.version - 1))
        except ValueError:
            against_version = snapshot.version - 1
        against = versions.filter(version=against_version).first()
        context = {
            **self.admin_site.each_context(request),
            "title": f"快照差异：{snapshot.customer} v{against_version} → v{snapshot.version}",
            "opts": self.model._meta,
            "snapshot": snapshot,
            "against": against,
            "versions": list(versions.values_list("version", "pk")),
            "diff": snapshot_diff(snapshot=snapshot, against=against),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.diff_template, context)


def _item_link(item_id: int | None) -> str:
    if item_id is None:
        return "—"
    return format_html('<a href="{}">#{}</a>', reverse("admin:memory_memoryitem_change", args=[item_id]), item_id)


def _lines_table(lines: list[SnapshotLine], *, empty: str) -> str:
    if not lines:
        return empty
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
        ((line.section, line.text, _item_link(line.item_id)) for line in lines),
    )
    return format_html(
        '<table class="qw-table"><thead><tr><th>分类</th><th>内容（已遮蔽）</th><th>条目</th></tr></thead>'
        "<tbody>{}</tbody></table>",
        rows,
    )


@admin.register(CaptureJob)
class CaptureJobAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["id", "customer", "message", "status", "attempts", "next_attempt_at", "finished_at", "short_error"]
    list_filter = ["status"]
    date_hierarchy = "created_at"
    search_fields = ["customer__conversation_id"]
    list_select_related = ["customer"]

    @admin.display(description="最近错误")
    def short_error(self, obj: CaptureJob) -> str:
        error = mask_sensitive(obj.last_error)
        return error if len(error) <= 80 else error[:80] + "…"


@admin.register(StorageScrub)
class StorageScrubAdmin(TitledChangeFormMixin, AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Forgets and erasures whose WAL checkpoint a reader blocked, retried every minute."""

    list_display = ["id", "cause_label", "conversation_id", "attempts", "created_at", "last_attempt_at", "done_at"]
    _shown = ("cause_label", "conversation_id", "attempts", "created_at", "last_attempt_at", "done_at")
    fields = _shown
    readonly_fields = _shown
    list_filter = (ScrubCauseFilter, ("done_at", admin.EmptyFieldListFilter))
    search_fields = ["=conversation_id"]

    @admin.display(description="原因", ordering="cause")
    def cause_label(self, obj: StorageScrub) -> str:
        return SCRUB_CAUSES.get(obj.cause, obj.cause)

    def record_title(self, obj: StorageScrub) -> str:
        return f"存储清理 #{obj.pk}（{self.cause_label(obj)}）"
