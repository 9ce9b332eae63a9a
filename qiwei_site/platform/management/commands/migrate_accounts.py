"""Apply migrations to every account database or schema (run on each deploy after `migrate`)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from qiwei_site.platform.account_migrations import CURRENT, FAILED, default_jobs, migrate_accounts
from qiwei_site.platform.models import WeComAccount

SAID = {CURRENT: "已是最新", "migrated": "已迁移"}


class Command(BaseCommand):
    help = (
        "迁移所有账号的数据库或 schema；迁移记录已是最新的账号跳过 "
        "(migrate every account; accounts whose recorded migrations are current are skipped)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", help="只迁移这个账号 (only this account)")
        parser.add_argument(
            "--force", action="store_true", help="即使已是最新也运行 migrate (run migrate even where current)"
        )
        parser.add_argument(
            "--jobs",
            type=int,
            default=default_jobs(),
            help=f"同时迁移的账号数，默认 {default_jobs()} (accounts migrated at once)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["jobs"] < 1:
            raise CommandError("--jobs 至少为 1 (--jobs must be at least 1).")
        accounts = WeComAccount.objects.order_by("id")
        if options["account"]:
            accounts = accounts.filter(pk=options["account"])
            if not accounts.exists():
                raise CommandError(f"账号 {options['account']} 不存在 (no such account).")
        failed = []
        for result in migrate_accounts(
            list(accounts.values_list("id", flat=True)), force=options["force"], jobs=options["jobs"]
        ):
            if result.outcome == FAILED:
                failed.append(result.account_id)
                self.stderr.write(f"{result.account_id}: 迁移失败 {result.error}")
            else:
                self.stdout.write(f"{result.account_id}: {SAID[result.outcome]}")
        if failed:
            raise CommandError(f"{len(failed)} 个账号迁移失败: {', '.join(failed)}")
