"""`manage.py recall_features_backfill`: store recall features for messages without current ones
(after a tokeniser change, FEATURE_VERSION), over one or every account."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections

from memory.context.recall import recall_features_backfill
from qiwei_site.platform.commands import command_account_ids
from qiwei_site.platform.tenancy import current_alias, use_account
from qiwei_site.reading.recall import FEATURE_VERSION


class Command(BaseCommand):
    help = "为缺少或版本过旧的消息计算并保存召回特征（可重复执行，第二次不会有任何改动）。"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", help="只处理这个企微账号 ID（默认：所有启用的账号）")
        parser.add_argument("--batch-size", type=int, default=1000, help="每批处理的消息数（默认 1000）")

    def handle(self, *args: Any, **options: Any) -> None:
        batch_size = options["batch_size"]
        if batch_size < 1:
            raise CommandError("--batch-size 必须大于 0 (batch size must be positive).")
        account_ids = command_account_ids(options.get("account"))
        total = 0
        for current in account_ids:
            with use_account(current):
                written = recall_features_backfill(batch_size=batch_size)
                # One account's connection at a time, however many accounts there are.
                connections[current_alias()].close()
            total += written
            self.stdout.write(f"{current}: 写入 {written} 条 (written={written})")
        self.stdout.write(
            f"账号 {len(account_ids)} 个，写入召回特征 {total} 条，版本 v{FEATURE_VERSION}"
            f" (accounts={len(account_ids)} written={total} version={FEATURE_VERSION})"
        )
