"""Celery tasks of the sessions_epoch app: generating a draft off the request path."""

from __future__ import annotations

from celery import shared_task

from conversations.selectors import customer_get
from qiwei_site.platform.tenancy import use_account
from sessions_epoch.pipeline import draft_generate


@shared_task(name="sessions_epoch.tasks.draft_generate_task", ignore_result=True)
def draft_generate_task(account_id: str, conversation_id: str, reason: str = "后台生成回复草稿") -> int:
    """Generate a draft for the conversation's latest message; returns the draft id."""
    with use_account(account_id):
        draft = draft_generate(customer=customer_get(conversation_id), actor="worker", reason=reason)
        return draft.pk
