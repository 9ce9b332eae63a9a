"""Capture tasks: run a durable capture job, sweep due or stuck jobs (DESIGN §6.1).

Tasks only carry ids; the job row decides whether there is anything to do, so a duplicate or
late broker message is harmless.
"""

from __future__ import annotations

import logging

from celery import shared_task

from memory.capture.jobs import capture_job_run, capture_sweep
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.tenancy import account_connections_close, use_account

logger = logging.getLogger(__name__)

__all__ = ["capture_job_run_task", "capture_sweep_account", "capture_sweep_all"]


@shared_task(name="memory.tasks.capture_job_run_task", acks_late=True, ignore_result=True)
def capture_job_run_task(account_id: str, job_id: int) -> str | None:
    with use_account(account_id):
        job = capture_job_run(job_id=job_id)
        return job.status if job is not None else None


@shared_task(name="memory.tasks.capture_sweep_account", ignore_result=True)
def capture_sweep_account(account_id: str) -> dict[str, int]:
    with use_account(account_id):
        result = capture_sweep()
    return {"requeued": len(result.requeued), "recovered": len(result.recovered), "failed": len(result.failed)}


@shared_task(name="memory.tasks.capture_sweep_all", ignore_result=True)
def capture_sweep_all() -> dict[str, dict[str, int]]:
    summary: dict[str, dict[str, int]] = {}
    for account_id in list(WeComAccount.objects.filter(is_active=True).values_list("pk", flat=True)):
        try:
            summary[account_id] = capture_sweep_account(account_id)
        except Exception:  # one broken account database must not stop the others
            logger.exception("capture sweep failed for account %s", account_id)
        finally:
            # One connection at a time, however many accounts (the sweep once held 99 of 100).
            account_connections_close(account_id)
    return summary
