"""Expire memory items whose expires_at has passed, now rather than at the next beat (DESIGN §7)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.governance.services import memory_items_expire_due
from qiwei_site.platform.commands import command_account_ids
from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.tenancy import use_account


class Command(BaseCommand):
    help = "使到期的记忆条目失效 (expire memory items past their expires_at)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", help="只处理该账号；缺省处理所有启用的账号 (account id; default: all active).")

    def handle(self, *args: Any, **options: Any) -> None:
        account_ids = command_account_ids(options.get("account"))
        total = 0
        for current in account_ids:
            try:
                with use_account(current):
                    expired = memory_items_expire_due(actor="expire_memory 命令")
            except ApplicationError as exc:
                raise CommandError(f"{current}: {exc.detail}") from exc
            total += expired
            self.stdout.write(f"{current}\t已失效 {expired} 条 (expired {expired})")
        self.stdout.write(self.style.SUCCESS(f"共失效 {total} 条记忆 (expired {total} items in total)."))
