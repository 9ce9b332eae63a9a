"""`manage.py setup`: every step before the first start, in one process (issue 24, item 5) —
migrations of the registry and of every account, static files, the knowledge index and the demo
data — each skipping what is already current, then whether a model is connected. Once every step has
passed it stamps the data dir, so the next `./run.sh` skips it while nothing changed (setup_stamp)."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.contrib.staticfiles.finders import get_finders
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from qiwei_site.operations import setup_stamp
from qiwei_site.platform.keyfiles import KeysRefused, startup_keys_check
from sessions_epoch.health import model_health

# Beside the collected files, so wiping STATIC_ROOT drops it too; a dot-file, which collectstatic's
# default ignore patterns never copy or list.
STATIC_STAMP = ".collected-sources"


class Command(BaseCommand):
    help = "一次完成启动前的全部准备（迁移、账号库迁移、静态文件、知识库索引、演示数据），已是最新的步骤自动跳过。"

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        # Taken before the first step (run.sh hands over the digest of what it checked): a file
        # edited meanwhile fails the next check instead of being stamped as seen.
        inputs = os.environ.get(setup_stamp.INPUTS_ENV) or setup_stamp.inputs_digest()
        data_dir = Path(settings.QIWEI_DATA_DIR)
        setup_stamp.forget(data_dir)
        steps = (
            ("迁移主库", lambda: call_command("migrate", interactive=False, verbosity=0)),
            ("迁移账号库", lambda: call_command("migrate_accounts", stdout=self.stdout)),
            ("密钥检查", self.keys_check),
            ("静态文件", self.collect_static),
            ("知识库索引", lambda: call_command("index_knowledge", stdout=_Quiet())),
            ("演示数据", lambda: call_command("seed_demo", stdout=self.stdout)),
        )
        for label, step in steps:
            begun = time.monotonic()
            step()
            self.stdout.write(f"✓ {label}（{time.monotonic() - begun:.1f} 秒）")
        setup_stamp.write(inputs=inputs, data_dir=data_dir, knowledge_dir=Path(settings.QIWEI_KNOWLEDGE_DIR))
        health = model_health(fresh=True)
        self.stdout.write(("✓ " if health.ok else "! ") + health.line())
        self.stdout.write(f"准备完成，用时 {time.monotonic() - started:.1f} 秒 (setup done).")

    def keys_check(self) -> None:
        """Refuse to go on while a key fails closed (issue 36): missing with data it guarded,
        unreadable, not a key, the wrong key, or readable by others."""
        try:
            startup_keys_check()
        except KeysRefused as exc:
            raise CommandError(f"拒绝启动 (refusing to start)：{exc}") from None

    def collect_static(self) -> None:
        """collectstatic unless every source file is as it was at the last collection and every
        collected file is still there: on a warm start it would only compress every file again
        (whitenoise re-compresses all of them on every run, about 1.5 s here)."""
        root = Path(settings.STATIC_ROOT)
        stamp = root / STATIC_STAMP
        names, fingerprint = static_sources()
        current = stamp.is_file() and stamp.read_text(encoding="utf-8") == fingerprint
        if current and all((root / name).is_file() for name in names):
            self.stdout.write("静态文件未变，跳过收集 (static files current; skipped).")
            return
        call_command("collectstatic", interactive=False, verbosity=0)
        # The sources as read before collecting: a file edited meanwhile is collected next time.
        stamp.write_text(fingerprint, encoding="utf-8")


def static_sources() -> tuple[list[str], str]:
    """What collectstatic would copy: each file's name under STATIC_ROOT, and a digest of the
    storage backend and of every source file's name, path, size and modification time."""
    # The patterns collectstatic applies by default (StaticFilesConfig.ignore_patterns).
    patterns: list[str] = getattr(apps.get_app_config("staticfiles"), "ignore_patterns", [])
    ignore = list({os.path.normpath(p) for p in patterns})
    names, entries = [], []
    for finder in get_finders():
        for path, storage in finder.list(ignore):
            prefix = getattr(storage, "prefix", None)
            name = os.path.join(prefix, path) if prefix else path
            source = os.stat(storage.path(path))
            names.append(name)
            entries.append(f"{name}\0{storage.path(path)}\0{source.st_size}\0{source.st_mtime_ns}\n")
    digest = hashlib.sha256(str(settings.STORAGES["staticfiles"]).encode())
    for entry in sorted(entries):
        digest.update(entry.encode())
    return names, digest.hexdigest()


class _Quiet:
    """Swallows a step's per-file listing (the index report lists every document)."""

    def write(self, text: str) -> None:
        return None

    def flush(self) -> None:
        return None
