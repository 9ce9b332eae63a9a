"""End-to-end check of the agent console (spec §8) on a fresh temporary account."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from qiwei_site.operations.smoke import StepResult, run_smoke
from qiwei_site.platform.errors import ApplicationError


class Command(BaseCommand):
    help = "端到端检查：每个规格 §8 条目一步，任何一步失败则以非零退出 (end-to-end smoke check)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--keep", action="store_true", help="保留临时账号以便排查 (keep the temporary account)")
        parser.add_argument(
            "--step",
            action="append",
            dest="steps",
            metavar="NAME",
            help="只运行指定步骤，可重复 (run only this step; repeatable)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        def show(result: StepResult) -> None:
            mark = self.style.SUCCESS("PASS") if result.ok else self.style.ERROR("FAIL")
            self.stdout.write(f"{mark} {result.name}: {result.detail}")

        try:
            report = run_smoke(keep=options["keep"], on_step=show, only=options["steps"])
        except ApplicationError as exc:
            raise CommandError(exc.detail) from None
        passed = sum(1 for step in report.steps if step.ok)
        self.stdout.write(f"{passed} passed, {len(report.steps) - passed} failed")
        if not report.ok:
            raise CommandError(f"端到端检查失败 (smoke failed): {', '.join(report.failed)}")
