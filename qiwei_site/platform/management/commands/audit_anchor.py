"""`manage.py audit_anchor`: sign and log the head of every audit chain that grew since its last
anchor, after checking what was appended since (issue 36); `--sign-scrubs` signs the scrubs made
before scrubs were signed (once, after the upgrade)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from qiwei_site.platform.audit import audit_anchor_heads, audit_scrubs_sign
from qiwei_site.platform.commands import command_account_ids
from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.tenancy import current_alias, use_account


class Command(BaseCommand):
    help = "锚定审计链：用锚定密钥签名各条链的链头并追加到锚点日志 (anchor the audit chains' heads)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", help="只锚定该账号；缺省为所有账号和账号登记日志 (account id).")
        parser.add_argument(
            "--sign-scrubs",
            action="store_true",
            help="先为升级前做过的清理补上签名（升级后运行一次）(sign scrubs made before the upgrade).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["sign_scrubs"]:
                for current in command_account_ids(options.get("account")):
                    with use_account(current):
                        signed = audit_scrubs_sign(using=current_alias())
                    self.stdout.write(f"{current}: 补签 {signed} 行清理 (signed {signed} scrubs)")
            outcomes = audit_anchor_heads(options.get("account"))
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc
        broken = [outcome for outcome in outcomes if outcome.problems]
        for outcome in outcomes:
            if outcome.problems:
                continue
            if outcome.anchored_seq is None:
                self.stdout.write(f"{outcome.name}：空链，无需锚定 (empty)")
            elif outcome.unchanged:
                self.stdout.write(f"{outcome.name}：自上次锚定（第 {outcome.anchored_seq} 行）未增长 (unchanged)")
            else:
                self.stdout.write(f"{outcome.name}：已锚定至第 {outcome.anchored_seq} 行 (anchored)")
        if broken:
            lines = [f"{outcome.name}：{problem}" for outcome in broken for problem in outcome.problems]
            raise CommandError("以下审计链未通过核对，未锚定 (not anchored: chain broken)：\n" + "\n".join(lines))
