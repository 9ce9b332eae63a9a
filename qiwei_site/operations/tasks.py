"""Operational tasks: a ping that proves a worker can reach an account's database."""

from __future__ import annotations

from celery import shared_task

from conversations.models import AuditAction
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.tenancy import use_account


@shared_task(name="qiwei_site.operations.tasks.account_ping")
def account_ping(account_id: str, marker: str = "") -> str:
    with use_account(account_id):
        audit_record(action=AuditAction.WORKER_PING, actor="celery", payload={"marker": marker})
    return marker
