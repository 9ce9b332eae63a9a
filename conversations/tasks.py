"""Celery tasks of the conversations app: the periodic upstream status refresh, and sending."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from conversations.gateway import upstream_status_refresh as _refresh
from qiwei_site.platform.tenancy import use_account


@shared_task(name="conversations.tasks.upstream_status_refresh", ignore_result=True)
def upstream_status_refresh() -> dict[str, Any]:
    """Probe the upstream (≤ 2.5 s) and store the answer where `/api/status?fast=true` reads it."""
    return _refresh().as_dict()


@shared_task(name="conversations.tasks.draft_send_task", ignore_result=True)
def draft_send_task(account_id: str, draft_id: int, actor: str = "worker", reason: str = "后台发送") -> None:
    """Send an approved draft from a worker; idempotent like every send."""
    from conversations.drafts import draft_send
    from conversations.models import Draft

    with use_account(account_id):
        draft = Draft.objects.get(pk=draft_id)
        draft_send(draft=draft, actor=actor, reason=reason)
