"""`./run.sh` end to end (issue 24, item 5): on a new data directory it sets everything up and
answers, serves the collected static files and starts the worker after the server; started
again on the same directory it skips what is current; a stop (Ctrl-C's SIGTERM) leaves no
process behind. Real processes (gunicorn, celery) on a free loopback port."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
# The caller's configuration (the test settings among it) stays out: run.sh runs its defaults.
DROPPED_PREFIXES = ("QIWEI_", "DJANGO_", "DATABASE_URL", "CELERY_", "GUNICORN_", "PYTHONPATH")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError):
        return 0


def group_left(pgid: int) -> list[int]:
    """Live (not zombie) processes of the group."""
    left = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid and fields[0] != "Z":
                    left.append(int(entry.name))
    return left


@dataclass
class RunSh:
    process: subprocess.Popen[bytes]
    base: str
    log: Path

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_for(self, predicate, what: str, timeout: float = 240) -> float:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if predicate():
                return time.monotonic() - started
            assert self.process.poll() is None, f"run.sh exited before {what}:\n{self.text()[-3000:]}"
            time.sleep(0.2)
        raise AssertionError(f"no {what} within {timeout:.0f} s:\n{self.text()[-3000:]}")

    def interrupt(self) -> float:
        """Ctrl-C in a terminal: SIGINT to every process of the group; seconds until none is left."""
        started = time.monotonic()
        os.killpg(self.process.pid, signal.SIGINT)
        while group_left(self.process.pid) and time.monotonic() - started < 30:
            time.sleep(0.05)
        return time.monotonic() - started

    def stop(self) -> list[int]:
        """SIGTERM to run.sh alone, as Ctrl-C reaches it; returns what is left of its group."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=45)
        deadline = time.monotonic() + 15
        while (left := group_left(self.process.pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        return left


@pytest.fixture
def start_run_sh(tmp_path) -> Iterator:
    started: list[RunSh] = []
    data_dir = tmp_path / "data"

    def start(name: str, **extra: str) -> RunSh:
        port = free_port()
        env = {key: value for key, value in os.environ.items() if not key.startswith(DROPPED_PREFIXES)}
        env.update(QIWEI_DATA_DIR=str(data_dir), QIWEI_BIND=f"127.0.0.1:{port}", GUNICORN_WORKERS="2", **extra)
        log = tmp_path / f"{name}.log"
        with open(log, "wb") as handle:
            process = subprocess.Popen(
                ["./run.sh"], cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
            )
        run = RunSh(process=process, base=f"http://127.0.0.1:{port}", log=log)
        started.append(run)
        return run

    yield start
    for run in started:
        if run.process.poll() is None or group_left(run.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.process.pid, signal.SIGKILL)
            run.process.wait(timeout=10)


def test_run_sh_sets_up_serves_and_stops_then_starts_warm(start_run_sh):
    # Given a data directory that does not exist yet
    # When ./run.sh starts
    first = start_run_sh("fresh")
    first.wait_for(lambda: get(first.base + "/healthz") == 200, "answer on /healthz")
    # Then every set-up step ran, the collected static files are served and the worker comes up
    output = first.text()
    for label in ("迁移主库", "迁移账号库", "静态文件", "知识库索引", "演示数据"):
        assert f"✓ {label}" in output
    assert "已创建演示账号 demo" in output and "准备完成" in output
    assert get(first.base + "/static/admin/css/base.css") == 200
    first.wait_for(lambda: " ready." in first.text(), "celery worker ready")
    assert first.text().index("后台已启动") < first.text().index(" ready.")
    # And the printed addresses follow QIWEI_BIND
    output = first.text()
    assert f"登录地址: {first.base}/admin/" in output and f"后台已启动: {first.base}/" in output
    assert ":4320" not in output
    # And a stop leaves no process of the run behind
    assert first.stop() == []

    # When it starts again on the same data directory
    second = start_run_sh("warm")
    second.wait_for(lambda: get(second.base + "/healthz") == 200, "answer on /healthz")
    # Then setup is skipped whole (one Django start-up), and it still serves the static files
    output = second.text()
    assert "准备已是最新，跳过" in output and "准备完成" not in output
    assert get(second.base + "/static/admin/css/base.css") == 200
    assert get(second.base + "/login/") == 200
    assert second.stop() == []


def test_run_sh_ctrl_c_stops_within_5_s_and_setup_reruns_on_a_migration_or_knowledge_change(start_run_sh, tmp_path):
    # Given a set-up data dir and a knowledge dir of the test's own
    knowledge = tmp_path / "knowledge"
    shutil.copytree(ROOT / "knowledge_base", knowledge)
    first = start_run_sh("fresh", QIWEI_KNOWLEDGE_DIR=str(knowledge))
    first.wait_for(lambda: " ready." in first.text(), "celery worker ready")
    assert first.stop() == []

    # When it starts warm, serves a few pages, and Ctrl-C reaches the whole group
    warm = start_run_sh("warm", QIWEI_KNOWLEDGE_DIR=str(knowledge))
    warm.wait_for(lambda: " ready." in warm.text(), "celery worker ready")
    assert "准备已是最新，跳过" in warm.text()
    for path in ("/login/", "/admin/login/", "/static/admin/css/base.css"):
        get(warm.base + path)
    seconds = warm.interrupt()
    # Then everything is gone within 5 s, without gunicorn's SIGKILL line
    assert seconds <= 5, f"stopped in {seconds:.1f} s:\n{warm.text()[-2000:]}"
    assert group_left(warm.process.pid) == []
    assert "SIGKILL" not in warm.text() and "out of memory" not in warm.text()

    # When a knowledge file is added, setup runs again (and indexes it)
    (knowledge / "extra-faq.md").write_text("# 新增问答\n押金一般是一个月。\n", encoding="utf-8")
    changed = start_run_sh("knowledge-changed", QIWEI_KNOWLEDGE_DIR=str(knowledge))
    changed.wait_for(lambda: get(changed.base + "/healthz") == 200, "answer on /healthz")
    assert "准备完成" in changed.text() and "准备已是最新" not in changed.text()
    assert changed.stop() == []

    # When a migration changes (its modification time, restored after), setup runs again
    migration = sorted((ROOT / "memory" / "migrations").glob("0001_*.py"))[0]
    before = migration.stat()
    try:
        os.utime(migration, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
        migrated = start_run_sh("migration-changed", QIWEI_KNOWLEDGE_DIR=str(knowledge))
        migrated.wait_for(lambda: get(migrated.base + "/healthz") == 200, "answer on /healthz")
    finally:
        os.utime(migration, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert "准备完成" in migrated.text() and "准备已是最新" not in migrated.text()
    assert migrated.stop() == []
