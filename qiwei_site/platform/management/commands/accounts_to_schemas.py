"""Move accounts from a PostgreSQL database each to a schema each (issue 23, README operations)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from qiwei_site.platform.commands import command_account_ids
from qiwei_site.platform.layout_move import DROPPED, FAILED, NO_OLD_DATABASE, VERIFIED, MoveRefused, move_accounts
from qiwei_site.platform.selectors import account_ids_every
from qiwei_site.platform.tenancy import UnsafeLoginRole

SAID = {
    VERIFIED: "已复制并校验 (copied and verified)",
    DROPPED: "旧数据库已删除 (old database dropped)",
    "already verified": "此前已完成 (already verified)",
    "already dropped": "此前已完成，旧数据库已删除 (already done)",
    "would copy": "将复制 (would copy)",
    "would drop the old database": "将删除旧数据库 (would drop the old database)",
    NO_OLD_DATABASE: "没有旧数据库，无需搬迁（迁移后新建的账号） (no old database: nothing to move)",
}


class Command(BaseCommand):
    help = (
        "把账号从每账号一个数据库搬到同一数据库的各自 schema：复制、逐表校验行数和校验和；旧数据库保留到 --drop-old "
        "(move accounts from a database each to a schema each: copy, verify, keep the old databases until --drop-old). "
        "先停止写入，并把 QIWEI_ACCOUNT_DATABASE_URL 指向新的数据库。"
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--from", dest="source", required=True, help="旧地址模板，含 {account} (the old URL template)"
        )
        parser.add_argument("--account", help="只搬这个账号 (only this account)")
        parser.add_argument("--dry-run", action="store_true", help="只列出将做什么 (say what would be done)")
        parser.add_argument(
            "--drop-old", action="store_true", help="删除已校验账号的旧数据库 (drop verified accounts' old databases)"
        )
        parser.add_argument(
            "--overwrite",
            action="store_true",
            help="新 schema 已有数据时仍重新复制（会删除其中数据） (copy again over a schema that already holds rows)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # Inactive accounts too: after the move the old databases are no longer read.
        ids = command_account_ids(options["account"]) if options["account"] else account_ids_every()
        failed = []
        try:
            for move in move_accounts(
                ids,
                source_template=options["source"],
                dry_run=options["dry_run"],
                drop_old=options["drop_old"],
                overwrite=options["overwrite"],
            ):
                rows = sum(move.rows.values())
                counted = f"，{len(move.rows)} 张表 {rows} 行" if move.rows else ""
                if move.outcome in (FAILED, "not found", "not dropped"):
                    failed.append(move.account_id)
                    self.stderr.write(f"{move.account_id}: 失败 (failed) {move.detail}")
                else:
                    self.stdout.write(f"{move.account_id}: {SAID.get(move.outcome, move.outcome)}{counted}")
        except (MoveRefused, UnsafeLoginRole) as exc:
            raise CommandError(str(exc)) from exc
        if failed:
            raise CommandError(f"{len(failed)} 个账号未完成，可重新运行继续 (re-run to resume): {', '.join(failed)}")
