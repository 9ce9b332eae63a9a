"""agent_console_smoke: passes on a healthy system, fails naming the step when a behaviour breaks."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.safety import ScanResult
from qiwei_site.operations.smoke import STEPS
from qiwei_site.platform.models import WeComAccount


@pytest.mark.django_db(transaction=True)
def test_agent_console_smoke_passes_every_step_and_cleans_up():
    out = io.StringIO()
    call_command("agent_console_smoke", stdout=out)
    lines = out.getvalue().splitlines()
    assert sum(line.startswith("PASS") for line in lines) == len(STEPS), out.getvalue()
    assert f"{len(STEPS)} passed, 0 failed" in lines
    assert not WeComAccount.objects.filter(id__startswith="smoke_").exists()


@pytest.mark.django_db(transaction=True)
def test_agent_console_smoke_fails_naming_the_step_when_safety_is_broken(monkeypatch):
    # Given a safety gate broken on purpose: it lets everything through
    monkeypatch.setattr("memory.capture.services.scan", lambda text: ScanResult(blocked=False, categories=[]))
    out = io.StringIO()
    # When the smoke check runs, then it exits non-zero naming the failing step
    with pytest.raises(CommandError, match="injection_and_credentials_kept_out_of_memory"):
        call_command("agent_console_smoke", stdout=out)
    assert "FAIL injection_and_credentials_kept_out_of_memory" in out.getvalue()
    assert "PASS explicit_fact_preference_constraint_capture" in out.getvalue()
