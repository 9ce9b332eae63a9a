"""agent_console_smoke: passes on a healthy system, fails naming the step when a behaviour breaks."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.safety import ScanResult
from qiwei_site.celery import app as celery_app
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
    monkeypatch.setattr("memory.capture.evidence.scan", lambda text: ScanResult(blocked=False, categories=[]))
    out = io.StringIO()
    # When the smoke check runs that step and one after it
    with pytest.raises(CommandError, match="injection_and_credentials_kept_out_of_memory"):
        call_command(
            "agent_console_smoke",
            "--step",
            "injection_and_credentials_kept_out_of_memory",
            "--step",
            "older_relevant_history_recalled",
            stdout=out,
        )
    # Then it exits non-zero naming the failing step, and the next step still ran
    assert "FAIL injection_and_credentials_kept_out_of_memory" in out.getvalue()
    assert "PASS older_relevant_history_recalled" in out.getvalue()
    assert "1 passed, 1 failed" in out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_agent_console_smoke_runs_the_beat_schedule_in_process_and_restores_celery(settings):
    # Given Celery configured as in production: tasks go to a broker, not run at once
    saved = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = False, False
    out = io.StringIO()
    try:
        # When the expiry step runs the scheduled tasks by name
        call_command("agent_console_smoke", "--step", "temporary_memory_expires_out_of_snapshot", stdout=out)
        restored = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    finally:
        celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = saved
    # Then the per-account expiry they queue ran in this process, and the configuration is as it was
    assert "PASS temporary_memory_expires_out_of_snapshot" in out.getvalue(), out.getvalue()
    assert f"{len(settings.CELERY_BEAT_SCHEDULE)} scheduled tasks run by name" in out.getvalue()
    assert restored == (False, False)


@pytest.mark.django_db(transaction=True)
def test_agent_console_smoke_fails_on_a_scheduled_task_no_worker_knows(settings):
    # Given a beat entry naming a task that is not registered (a renamed task, a typo)
    settings.CELERY_BEAT_SCHEDULE = {
        **settings.CELERY_BEAT_SCHEDULE,
        "memory-expire-typo": {"task": "memory.tasks.memory_expire_al", "schedule": 60.0},
    }
    out = io.StringIO()
    # When the expiry step runs the schedule, then it fails naming the entry
    with pytest.raises(CommandError, match="temporary_memory_expires_out_of_snapshot"):
        call_command("agent_console_smoke", "--step", "temporary_memory_expires_out_of_snapshot", stdout=out)
    assert "memory-expire-typo" in out.getvalue() and "memory.tasks.memory_expire_al" in out.getvalue()
