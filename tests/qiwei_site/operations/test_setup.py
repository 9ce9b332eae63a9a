"""`manage.py setup` (issue 24, item 5): every set-up step in one process, each skipping what is
current, ending with whether a model is connected."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from qiwei_site.operations.demo_data import DEMO_ACCOUNT_ID
from qiwei_site.platform.models import WeComAccount

pytestmark = pytest.mark.django_db


def run_setup() -> str:
    out = StringIO()
    call_command("setup", stdout=out)
    return out.getvalue()


def test_setup_runs_every_step_once_and_names_the_model(settings, tmp_path):
    # Given a fresh install (static files into a folder of their own), the offline model
    settings.STATIC_ROOT = str(tmp_path / "static")
    settings.QIWEI_MODEL_CLIENT = "offline"
    # When set-up runs
    output = run_setup()
    # Then each step reports, the demo exists, and it says no model is connected
    for label in ("迁移主库", "迁移账号库", "静态文件", "知识库索引", "演示数据"):
        assert f"✓ {label}" in output
    assert WeComAccount.objects.filter(pk=DEMO_ACCOUNT_ID).exists()
    assert "! 未连接模型（离线模式）" in output and "准备完成" in output
    # And a second run skips what is current
    assert "跳过演示数据" in run_setup()
