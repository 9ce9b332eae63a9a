"""Operational tasks: a ping that proves a worker can reach an account's database, and the audit
chains' anchoring (issue 36: every few minutes from beat)."""

from __future__ import annotations

import logging

from celery import shared_task

from conversations.models import AuditAction
from qiwei_site.platform.audit import audit_anchor_heads, audit_record
from qiwei_site.platform.tenancy import use_account


@shared_task(name="qiwei_site.operations.tasks.account_ping")
def account_ping(account_id: str, marker: str = "") -> str:
    with use_account(account_id):
        audit_record(action=AuditAction.WORKER_PING, actor="celery", payload={"marker": marker})
    return marker


logger = logging.getLogger(__name__)


@shared_task(name="qiwei_site.operations.tasks.audit_anchor_all", ignore_result=True)
def audit_anchor_all() -> dict[str, int]:
    """Anchor every chain that grew; a chain that does not verify is logged as critical and left
    unanchored (`manage.py audit_verify` names its rows)."""
    outcomes = audit_anchor_heads()
    broken = [outcome for outcome in outcomes if outcome.problems]
    for outcome in broken:
        logger.critical("audit anchor: %s does not verify: %s", outcome.name, "; ".join(map(str, outcome.problems)))
    anchored = sum(1 for outcome in outcomes if outcome.anchored_seq and not outcome.unchanged)
    return {"chains": len(outcomes), "anchored": anchored, "broken": len(broken)}
