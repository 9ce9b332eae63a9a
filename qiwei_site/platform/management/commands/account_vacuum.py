"""Rewrite an account's tables so no page keeps a forgotten or erased row (PostgreSQL)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from qiwei_site.platform.maintenance import VacuumRefused, account_vacuum
from qiwei_site.platform.models import WeComAccount


class Command(BaseCommand):
    help = (
        "对账号的表执行 VACUUM (FULL)：遗忘或删除后，让数据文件不再保留旧内容 "
        "(VACUUM FULL an account's tables after a forget or an erase; PostgreSQL)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("account", help="账号 ID (account id)")
        parser.add_argument("--all-tables", action="store_true", help="整个账号的所有表（删除客户后） (every table)")

    def handle(self, *args: Any, **options: Any) -> None:
        account_id = options["account"]
        if not WeComAccount.objects.filter(pk=account_id).exists():
            raise CommandError(f"账号 {account_id} 不存在 (no such account).")
        try:
            result = account_vacuum(account_id=account_id, every_table=options["all_tables"])
        except VacuumRefused as exc:
            raise CommandError(str(exc)) from exc
        except DatabaseError as exc:
            raise CommandError(f"VACUUM 失败 (failed): {exc}") from exc
        except Exception as exc:  # psycopg's own errors (a direct connection)
            raise CommandError(f"VACUUM 失败 (failed): {exc.__class__.__name__}: {exc}") from exc
        if not result.tables:
            self.stdout.write(f"{account_id}: SQLite 账号无需 VACUUM：删除的内容已被覆盖 (nothing to do on SQLite).")
            return
        self.stdout.write(
            f"{account_id}: 已整理 {len(result.tables)} 张表 (VACUUM FULL done): {', '.join(result.tables)}"
        )
