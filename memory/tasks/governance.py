"""Governance tasks: expire memory items whose expires_at has passed (DESIGN §7), retry storage
scrubs, purge context reads past their retention."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from memory.governance.scrub import storage_scrubs_retry
from memory.governance.services import memory_items_expire_due
from qiwei_site.platform.audit import context_reads_purge
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.tenancy import use_account

__all__ = [
    "context_reads_purge_account",
    "context_reads_purge_all",
    "memory_expire_account",
    "memory_expire_all",
    "storage_scrub_account",
    "storage_scrub_all",
]

logger = logging.getLogger(__name__)


@shared_task(name="memory.tasks.memory_expire_account")
def memory_expire_account(account_id: str) -> int:
    with use_account(account_id):
        expired = memory_items_expire_due(actor="expiry")
    if expired:
        logger.info("memory expiry: %s items expired in account %s", expired, account_id)
    return expired


def _per_active_account(task: Any) -> int:
    """Fan out one task per active account, so one slow or broken account delays no other."""
    account_ids = list(WeComAccount.objects.filter(is_active=True).values_list("id", flat=True))
    for account_id in account_ids:
        task.delay(account_id)
    return len(account_ids)


@shared_task(name="memory.tasks.memory_expire_all")
def memory_expire_all() -> int:
    return _per_active_account(memory_expire_account)


@shared_task(name="memory.tasks.storage_scrub_account")
def storage_scrub_account(account_id: str) -> int:
    with use_account(account_id):
        done = storage_scrubs_retry()
    if done:
        logger.info("storage scrub: %s pending scrubs completed in account %s", done, account_id)
    return done


@shared_task(name="memory.tasks.storage_scrub_all")
def storage_scrub_all() -> int:
    """Once a minute: retry the checkpoints readers blocked, one task per active account."""
    return _per_active_account(storage_scrub_account)


@shared_task(name="memory.tasks.context_reads_purge_account")
def context_reads_purge_account(account_id: str) -> int:
    with use_account(account_id):
        purged = context_reads_purge()
    if purged:
        logger.info("context reads: %s past their retention purged in account %s", purged, account_id)
    return purged


@shared_task(name="memory.tasks.context_reads_purge_all")
def context_reads_purge_all() -> int:
    """Hourly: delete the context reads older than QIWEI_CONTEXT_READ_RETENTION_DAYS, per active account."""
    return _per_active_account(context_reads_purge_account)
