"""Read-only admin for the knowledge index, with an action that re-indexes the Markdown files."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from knowledge.models import KnowledgeDocument, KnowledgeSection
from knowledge.services import knowledge_index
from qiwei_site.platform.errors import ApplicationError


class KnowledgeSectionInline(admin.TabularInline):
    model = KnowledgeSection
    fields = ("order", "level", "heading", "anchor", "text")
    readonly_fields = ("order", "level", "heading", "anchor", "text")
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(KnowledgeDocument)
class KnowledgeDocumentAdmin(admin.ModelAdmin):
    list_display = ["path", "title", "updated_at"]
    search_fields = ["path", "title", "text"]
    readonly_fields = ["path", "title", "sha256", "text", "mtime", "created_at", "updated_at"]
    inlines = [KnowledgeSectionInline]
    actions = ["reindex"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="重新索引知识库（只重建有变化的文件）", permissions=["view"])
    def reindex(self, request: HttpRequest, queryset: QuerySet[KnowledgeDocument]) -> None:
        try:
            report = knowledge_index()
        except ApplicationError as exc:
            self.message_user(request, exc.detail, level=messages.ERROR)
            return
        self.message_user(
            request,
            f"知识库已索引：新增 {len(report.added)}，更新 {len(report.updated)}，未变 {len(report.unchanged)}，"
            f"删除 {len(report.removed)}，跳过 {len(report.skipped)}。",
        )
