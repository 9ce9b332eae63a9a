"""Configuration: out-of-range values stop start-up with a message naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from qiwei_site.conf import ConfigError, env_int

ROOT = Path(__file__).resolve().parents[2]


def test_env_int_out_of_range_names_variable_and_range(monkeypatch):
    monkeypatch.setenv("QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT", "9000")
    with pytest.raises(ConfigError, match=r"QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT.*500–8000"):
        env_int("QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT", 4000, 500, 8000)


def test_env_int_not_a_number_is_refused(monkeypatch):
    monkeypatch.setenv("QIWEI_AGENT_MEMORY_RECALL_LIMIT", "six")
    with pytest.raises(ConfigError, match="QIWEI_AGENT_MEMORY_RECALL_LIMIT"):
        env_int("QIWEI_AGENT_MEMORY_RECALL_LIMIT", 6, 0, 50)


def test_manage_check_with_core_limit_9000_fails_with_message(tmp_path):
    env = {**os.environ, "QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT": "9000", "QIWEI_DATA_DIR": str(tmp_path)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert "QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT" in result.stderr
    assert "500–8000" in result.stderr
    assert "Traceback" not in result.stderr
