"""`manage.py messages_seal`: re-read stored messages with the current reader, mask in the row what
it now finds (credentials, one-time codes, ID-card, bank-card and mobile numbers) and seal the words
as received; `--rotate` re-seals every original with the newest of QIWEI_SEALING_KEYS. Idempotent
and resumable (run it again); audited per customer. `--check` changes nothing: it opens the newest
sealed original of each account with the configured keys and exits non-zero when one does not
open (issue 36)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections

from memory.governance.sealing import messages_seal, sealed_original_check
from qiwei_site.platform.commands import command_account_ids
from qiwei_site.platform.keyfiles import KeyUnavailable
from qiwei_site.platform.sealing import SealBroken
from qiwei_site.platform.tenancy import current_alias, use_account


class Command(BaseCommand):
    help = "按当前读取规则遮蔽存量消息中的凭证与个人号码并密封原文（可重复执行）；--rotate 用最新密钥重新密封。"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", help="只处理这个企微账号 ID（默认：所有启用的账号）")
        parser.add_argument("--batch-size", type=int, default=500, help="每批处理的消息数（默认 500）")
        parser.add_argument("--rotate", action="store_true", help="用 QIWEI_SEALING_KEYS 的第一个密钥重新密封全部原文")
        parser.add_argument(
            "--check", action="store_true", help="只检查：用当前密钥打开每个账号最新的一条密封原文，不做任何修改"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        batch_size = options["batch_size"]
        if batch_size < 1:
            raise CommandError("--batch-size 必须大于 0 (batch size must be positive).")
        account_ids = command_account_ids(options.get("account"))
        if options["check"]:
            self.seal_check(account_ids)
            return
        for current in account_ids:
            with use_account(current):
                try:
                    report = messages_seal(actor="manage.py", batch_size=batch_size, rotate=options["rotate"])
                except SealBroken as exc:
                    raise CommandError(f"{current}: 密封原文无法用当前密钥打开 ({exc}).") from None
                except KeyUnavailable as exc:
                    raise CommandError(exc.detail) from None
                connections[current_alias()].close()
            self.stdout.write(
                f"{current}: 读取 {report.messages_read} 条，遮蔽 {report.messages_masked} 条，"
                f"新密封 {report.originals_sealed} 条，重新密封 {report.originals_resealed} 条，"
                f"遮蔽草稿 {report.drafts_masked} 份，记忆原话片段 {report.clauses_masked} 处"
                f" (read={report.messages_read} masked={report.messages_masked} sealed={report.originals_sealed}"
                f" resealed={report.originals_resealed} drafts={report.drafts_masked} clauses={report.clauses_masked}"
                f" customers={len(report.customers)})"
            )

    def seal_check(self, account_ids: list[str]) -> None:
        failing: list[str] = []
        for current in account_ids:
            with use_account(current):
                try:
                    outcome = sealed_original_check()
                except KeyUnavailable as exc:
                    raise CommandError(exc.detail) from None
                connections[current_alias()].close()
            if outcome.opens is None:
                self.stdout.write(f"{current}: 没有密封原文 (nothing sealed)")
            elif outcome.opens:
                self.stdout.write(f"{current}: {outcome.sealed} 条密封原文，最新一条可以打开 (opens)")
            else:
                failing.append(current)
                self.stderr.write(f"{current}: {outcome.sealed} 条密封原文，最新一条无法用当前密钥打开 (does not open)")
        if failing:
            raise CommandError(
                f"{len(failing)} 个账号的密封原文无法用当前密钥打开：{', '.join(failing)}。请恢复原来的密封密钥"
                "（QIWEI_SEALING_KEYS 或数据目录中的 sealing.key）后重试 (sealed originals do not open with the "
                "configured keys: restore the original sealing key)."
            )
        self.stdout.write(f"密封原文检查通过：{len(account_ids)} 个账号 (sealed originals open).")
