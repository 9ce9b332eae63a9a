"""Celery tasks of WeCom (issue 37): a callback's pull, the beat's catch-up from every cursor, each
connected account's status probe, and pruning the callbacks already taken."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from celery import shared_task
from django.db import DatabaseError
from django.utils import timezone

from conversations.gateway import upstream_status_refresh
from qiwei_site.platform.errors import ApplicationError
from wecom.client import WeComApiError
from wecom.models import WeComCallback, WeComCursor
from wecom.selectors import connections_active, uses_wecom
from wecom.sync import wecom_sync

logger = logging.getLogger(__name__)
CALLBACKS_KEPT = dt.timedelta(days=1)


@shared_task(
    name="wecom.tasks.wecom_sync_task",
    bind=True,
    ignore_result=True,
    max_retries=5,
    acks_late=True,
)
def wecom_sync_task(self: Any, account_id: str, open_kfid: str, token: str = "") -> dict[str, Any]:
    """Pull one open_kfid's new messages; a WeCom or storage failure is retried with backoff (the
    cursor did not move past anything not stored), and the beat's catch-up covers what retries do
    not. A pull that finds another holding the kf account's lease is queued again for when the lease
    runs out, in case its holder died holding it."""
    countdown = min(60, 2 ** (self.request.retries + 1))
    try:
        result = wecom_sync(account_id=account_id, open_kfid=open_kfid, token=token)
    except WeComApiError as exc:
        if exc.kind in ("transient", "unreachable", "token"):
            raise self.retry(exc=exc, countdown=countdown) from None
        # A wrong secret, a corp id or kf account WeCom does not know: retrying cannot help.
        logger.warning("wecom sync for %s/%s refused: %s", account_id, open_kfid, exc.errcode)
        return {"error": exc.errcode}
    except ApplicationError as exc:
        if exc.status_code < 500:  # not connected any more, say: nothing to retry
            logger.warning("wecom sync for %s/%s refused: %s", account_id, open_kfid, exc.code)
            return {"error": exc.code}
        raise self.retry(exc=exc, countdown=countdown) from None
    except DatabaseError as exc:  # a locked or unreachable store: the page is pulled again
        raise self.retry(exc=exc, countdown=countdown) from None
    if result.watch_in is not None:
        wecom_sync_task.apply_async(args=(account_id, open_kfid, ""), countdown=result.watch_in)
    if result.more:  # a backlog larger than one pull takes: the next pull goes on from the cursor
        wecom_sync_task.delay(account_id, open_kfid, "")
    return result.__dict__


@shared_task(name="wecom.tasks.wecom_catch_up_all", ignore_result=True)
def wecom_catch_up_all() -> int:
    """Queue a pull for every kf account of every active connected account: those it lists and those
    a callback has brought (an account serving "all" lists none), whichever upstream its replies use."""
    queued = 0
    for connection in connections_active():
        kfids = set(connection.open_kfids or [])
        kfids |= set(WeComCursor.objects.filter(account_id=connection.account_id).values_list("open_kfid", flat=True))
        for open_kfid in sorted(kfids):
            wecom_sync_task.delay(connection.account_id, open_kfid, "")
            queued += 1
    return queued


@shared_task(name="wecom.tasks.wecom_status_refresh_all", ignore_result=True)
def wecom_status_refresh_all() -> int:
    """Each connected account's WeCom status (a token fetch, ≤ 2.5 s), where `/api/status` reads it."""
    probed = 0
    for connection in connections_active():
        if not uses_wecom(connection):
            continue
        upstream_status_refresh(account_id=connection.account_id)
        probed += 1
    return probed


@shared_task(name="wecom.tasks.wecom_callbacks_prune", ignore_result=True)
def wecom_callbacks_prune() -> int:
    deleted, _ = WeComCallback.objects.filter(received_at__lt=timezone.now() - CALLBACKS_KEPT).delete()
    return deleted
