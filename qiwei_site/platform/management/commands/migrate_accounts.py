"""Apply migrations to every account database (run on each deploy after `migrate`)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.tenancy import account_connections_close, ensure_account_database


class Command(BaseCommand):
    help = "迁移所有账号数据库 (migrate every account database)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", help="只迁移这个账号 (only this account)")

    def handle(self, *args: Any, **options: Any) -> None:
        accounts = WeComAccount.objects.order_by("id")
        if options["account"]:
            accounts = accounts.filter(pk=options["account"])
            if not accounts.exists():
                raise CommandError(f"账号 {options['account']} 不存在 (no such account).")
        failed = []
        for account_id in accounts.values_list("id", flat=True):
            try:
                ensure_account_database(account_id, force_migrate=True)
                self.stdout.write(f"{account_id}: 已迁移")
            except Exception as exc:  # keep going; report every failure at the end
                failed.append(account_id)
                self.stderr.write(f"{account_id}: 迁移失败 {exc.__class__.__name__}: {exc}")
            finally:
                # Hundreds of accounts, one server: never hold more than the one being migrated.
                account_connections_close(account_id)
        if failed:
            raise CommandError(f"{len(failed)} 个账号迁移失败: {', '.join(failed)}")
