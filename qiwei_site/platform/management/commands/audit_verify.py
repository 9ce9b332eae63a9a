"""Check the audit chains: every account's audit and the registry's journal (issue 25, item 3)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from qiwei_site.platform.audit import audit_verify
from qiwei_site.platform.errors import ApplicationError


class Command(BaseCommand):
    help = "核对审计链：找出被改动、删除或调换顺序的审计记录 (verify the audit hash chains)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--account",
            help="只核对该账号；缺省核对所有账号和账号登记日志 (account id; default: all and the registry).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            reports = audit_verify(options.get("account"))
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc
        broken = [report for report in reports if not report.intact]
        for report in reports:
            if report.intact:
                self.stdout.write(report.summary())
        if broken:
            lines = [f"{report.name}：{problem}" for report in broken for problem in report.problems]
            raise CommandError("审计链校验失败 (audit chain broken)：\n" + "\n".join(lines))
        self.stdout.write(self.style.SUCCESS(f"审计链完整：共核对 {len(reports)} 条链 (audit chains intact)."))
