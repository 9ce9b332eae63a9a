"""The Workbench's one task: the model turn for a draft the page asked for, run off the request so
the page shows the draft as 生成中 (with its elapsed time, after a reload too) while the model works."""

from __future__ import annotations

import logging

from celery import shared_task
from django.contrib.auth import get_user_model

from conversations.drafts import draft_generating, draft_generation_fail
from conversations.models import Draft, DraftStatus
from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.history import Actor
from qiwei_site.platform.tenancy import use_account
from sessions_epoch.pipeline import draft_generate

logger = logging.getLogger(__name__)

WORKBENCH_GENERATE_TASK = "qiwei_site.workbench.tasks.workbench_draft_generate_task"


@shared_task(name=WORKBENCH_GENERATE_TASK, ignore_result=True)
def workbench_draft_generate_task(
    account_id: str, draft_id: int, *, regenerate: bool, reason: str, user_id: int | None = None
) -> None:
    """Run the turn that fills generating draft `draft_id`; a turn that raises fails the draft with
    a summary (the agent reads why and can regenerate), never leaves it 生成中."""
    actor: Actor = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    actor = actor or "worker"
    with use_account(account_id):
        draft = Draft.objects.select_related("customer").filter(pk=draft_id).first()
        if draft is None or draft.status != DraftStatus.GENERATING:
            return  # erased, or replaced while it waited in the queue
        try:
            with draft_generating(draft=draft):
                draft_generate(customer=draft.customer, actor=actor, reason=reason, regenerate=regenerate)
        except ApplicationError as exc:
            draft_generation_fail(draft=draft, error=exc.detail, actor=actor, reason=reason)
        except Exception as exc:
            logger.exception("draft generation %s failed", draft_id)
            draft_generation_fail(
                draft=draft, error=f"生成草稿时出错（{exc.__class__.__name__}），请重新生成", actor=actor, reason=reason
            )
