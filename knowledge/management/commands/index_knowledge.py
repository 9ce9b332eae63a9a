"""`manage.py index_knowledge`: (re)index the knowledge-base Markdown and print what changed."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge.services import knowledge_index
from qiwei_site.platform.errors import ApplicationError


class Command(BaseCommand):
    help = "索引知识库 Markdown（只在文件内容变化时重建） (index the knowledge base)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--root", help="知识库目录，默认 QIWEI_KNOWLEDGE_DIR (knowledge directory).")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = knowledge_index(root=options.get("root"))
        except ApplicationError as exc:
            raise CommandError(exc.detail) from None
        labels = {"added": "新增", "updated": "更新", "unchanged": "未变", "removed": "删除", "skipped": "跳过"}
        for key, paths in report.as_dict().items():
            self.stdout.write(f"{labels[key]} ({key}): {len(paths)}")
            for path in paths:
                self.stdout.write(f"  - {path}")
