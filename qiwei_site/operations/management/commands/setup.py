"""`manage.py setup`: every step before the first start, in one process (issue 24, item 5) —
migrations of the registry and of every account, static files, the knowledge index and the demo
data — each skipping what is already current, then whether a model is connected."""

from __future__ import annotations

import time
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand

from sessions_epoch.health import model_health


class Command(BaseCommand):
    help = "一次完成启动前的全部准备（迁移、账号库迁移、静态文件、知识库索引、演示数据），已是最新的步骤自动跳过。"

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        steps = (
            ("迁移主库", lambda: call_command("migrate", interactive=False, verbosity=0)),
            ("迁移账号库", lambda: call_command("migrate_accounts", stdout=self.stdout)),
            ("静态文件", lambda: call_command("collectstatic", interactive=False, verbosity=0)),
            ("知识库索引", lambda: call_command("index_knowledge", stdout=_Quiet())),
            ("演示数据", lambda: call_command("seed_demo", stdout=self.stdout)),
        )
        for label, step in steps:
            begun = time.monotonic()
            step()
            self.stdout.write(f"✓ {label}（{time.monotonic() - begun:.1f} 秒）")
        health = model_health(fresh=True)
        self.stdout.write(("✓ " if health.ok else "! ") + health.line())
        self.stdout.write(f"准备完成，用时 {time.monotonic() - started:.1f} 秒 (setup done).")


class _Quiet:
    """Swallows a step's per-file listing (the index report lists every document)."""

    def write(self, text: str) -> None:
        return None

    def flush(self) -> None:
        return None
