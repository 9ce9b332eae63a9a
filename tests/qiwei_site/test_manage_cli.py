"""`manage.py` on a data directory with no project database (issue 24, item 5): a clear message and
exit 1, no traceback, and no folder created."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_manage(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QIWEI_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "qiwei_site.settings.local"}
    env.pop("DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args], capture_output=True, text=True, env=env, cwd=ROOT, check=False
    )


def test_manage_without_a_project_database_says_so_and_creates_nothing(tmp_path):
    # Given a data directory that does not exist
    data_dir = tmp_path / "elsewhere"
    # When an operator runs a command that needs the database
    completed = run_manage("backfill_memory", data_dir=data_dir)
    # Then it says what to do, without a traceback, and creates no folder
    assert completed.returncode == 1
    assert "数据目录里没有项目数据库" in completed.stderr and "manage.py setup" in completed.stderr
    assert "Traceback" not in completed.stderr
    assert not data_dir.exists()


@pytest.mark.long
def test_manage_setup_commands_run_on_a_fresh_data_directory(tmp_path):
    # Given the same fresh data directory, the commands that make the database still run
    completed = run_manage("check", data_dir=tmp_path / "fresh")
    assert completed.returncode == 0, completed.stderr


def test_manage_help_of_a_command_needs_no_database(tmp_path):
    completed = run_manage("backfill_memory", "--help", data_dir=tmp_path / "fresh")
    assert completed.returncode == 0 and "backfill" in completed.stdout.lower()


def test_manage_showmigrations_needs_the_database_and_creates_nothing(tmp_path):
    data_dir = tmp_path / "fresh"
    completed = run_manage("showmigrations", data_dir=data_dir)
    assert completed.returncode == 1 and not data_dir.exists()
