"""Durable capture jobs (DESIGN §6.1): the row, not the broker message, is the source of truth.

A job is claimed with a conditional UPDATE (pending and due → running), and its memory writes
commit in the same transaction as its `done` transition, conditional on still holding the claim;
so however many workers receive it, a job's effects land exactly once. Failures back off
exponentially and are audited; the sweeper re-sends due jobs and recovers those of killed workers.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from conversations.models import AlertKind, AlertLevel, AuditAction, Customer, Message, MessageDirection
from conversations.services import alert_raise, audit_record
from memory.models import CaptureJob, CaptureJobStatus
from qiwei_site.platform.tenancy import account_atomic, current_account, on_account_commit, use_account

logger = logging.getLogger(__name__)

PROFILE_UPDATE_REASON = "模型输出中经客户原话核验的画像更新"
HYPOTHESIS_REASON = "模型推断（依据客户原话），待主管确认"
HYPOTHESIS_KEY_PREFIX = "hypothesis:"
# A model's inference is never stored as more certain than this, whatever it claimed.
HYPOTHESIS_MAX_CONFIDENCE = 0.6


class _ClaimLost(Exception):
    """Another run re-claimed this job (we were presumed dead): roll our writes back."""


# The task is named, not imported: memory.tasks imports this module, never the other way round.
CAPTURE_TASK_NAME = "memory.tasks.capture_job_run_task"
_inline: contextvars.ContextVar[bool] = contextvars.ContextVar("qiwei_capture_inline", default=False)


@contextlib.contextmanager
def capture_inline() -> Iterator[None]:
    """Run the capture jobs queued inside this block at commit, in this thread, without a broker.

    For one caller's own scope (the smoke check on a temporary account), instead of switching
    the process-wide Celery configuration to eager.
    """
    token = _inline.set(True)
    try:
        yield
    finally:
        _inline.reset(token)


def _send(account_id: str, job_ids: list[int]) -> None:
    if _inline.get():
        with use_account(account_id):
            for job_id in job_ids:
                capture_job_run(job_id=job_id)
        return
    task = current_app.tasks[CAPTURE_TASK_NAME]
    for job_id in job_ids:
        try:
            task.delay(account_id, job_id)
        except Exception:  # a broker outage must not fail the caller; the sweeper re-sends
            logger.exception("capture job %s could not be queued", job_id)


def enqueue_after_commit(job_ids: list[int]) -> None:
    """Send the broker messages once the jobs' rows are committed (never before)."""
    if not job_ids:
        return
    account_id = current_account()
    assert account_id is not None
    ids = list(job_ids)
    on_account_commit(lambda: _send(account_id, ids))


def capture_job_enqueue(
    *, customer: Customer, message: Message | None = None, payload: dict[str, Any] | None = None
) -> CaptureJob:
    """Queue capture of an inbound message, or of a draft's grounded profile updates (`payload`).

    One job per message: enqueuing the same message again returns the existing job.
    """
    now = timezone.now()
    with account_atomic():
        if message is not None:
            job, created = CaptureJob.objects.get_or_create(
                message=message,
                defaults={"customer": customer, "payload": payload or {}, "next_attempt_at": now, "enqueued_at": now},
            )
        else:
            job = CaptureJob.objects.create(
                customer=customer, payload=payload or {}, next_attempt_at=now, enqueued_at=now
            )
            created = True
        if created:
            enqueue_after_commit([job.pk])
    return job


def _claim(job_id: int, now: datetime) -> bool:
    due = Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)
    claimed = (
        CaptureJob.objects.filter(pk=job_id, status=CaptureJobStatus.PENDING)
        .filter(due)
        .update(status=CaptureJobStatus.RUNNING, attempts=F("attempts") + 1, started_at=now, updated_at=now)
    )
    return claimed == 1


def _execute(job: CaptureJob) -> dict[str, Any]:
    if job.message_id is not None:
        from memory.capture.services import capture_message

        message = Message.objects.select_related("customer").get(pk=job.message_id)
        if message.direction != MessageDirection.INBOUND:
            return {"skipped": "not_inbound"}
        outcome = capture_message(message=message, actor="capture")
        return {"blocked": outcome.blocked, "written": outcome.written}
    updates = job.payload.get("profile_updates") or {}
    if updates:
        from memory.profile import customer_profile_update

        customer_profile_update(
            customer=job.customer,
            changes=updates,
            actor="capture",
            reason=PROFILE_UPDATE_REASON,
            source_message_ids=[int(i) for i in job.payload.get("source_message_ids") or []],
        )
    hypotheses = _hypotheses_put(job)
    return {"profile_fields": sorted(updates), "hypotheses": hypotheses}


def _hypotheses_put(job: CaptureJob) -> dict[str, str]:
    """Store a draft's validated hypotheses as `hypothesis` items (outcome per key).

    The pipeline checked each one; the evidence is checked again here because a message can be
    erased between the turn and the job. `memory_item_put` refuses what would undo a supervisor's
    decision or is instruction-like. Once stored, the job keeps only keys and ids, not the text.
    """
    entries = [entry for entry in job.payload.get("hypotheses") or [] if isinstance(entry, dict)]
    if not entries:
        return {}
    from memory.items import memory_item_put
    from memory.models import MemoryCreatedBy, MemoryDirection, MemoryType

    now = timezone.now()
    expires_at = now + timedelta(hours=settings.QIWEI_HYPOTHESIS_TTL_HOURS)
    wanted = {int(i) for entry in entries for i in entry.get("message_ids") or []}
    inbound = set(
        Message.objects.filter(pk__in=wanted, customer=job.customer, direction=MessageDirection.INBOUND).values_list(
            "pk", flat=True
        )
    )
    outcomes: dict[str, str] = {}
    for entry in entries:
        key = f"{HYPOTHESIS_KEY_PREFIX}{entry.get('key')}"
        ids = sorted({int(i) for i in entry.get("message_ids") or []})
        if not ids or any(i not in inbound for i in ids):
            outcomes[key] = "evidence_gone"
            continue
        result = memory_item_put(
            customer=job.customer,
            type=MemoryType.HYPOTHESIS,
            key=key,
            content=str(entry.get("text") or ""),
            actor="capture",
            reason=HYPOTHESIS_REASON,
            source_message_ids=ids,
            confidence=min(float(entry.get("confidence") or 0.0), HYPOTHESIS_MAX_CONFIDENCE),
            direction=MemoryDirection.INBOUND,
            created_by=MemoryCreatedBy.AUTO,
            expires_at=expires_at,
        )
        outcomes[key] = result.outcome
    payload = dict(job.payload)
    payload["hypotheses"] = [
        {"key": entry.get("key"), "message_ids": entry.get("message_ids") or []} for entry in entries
    ]
    CaptureJob.objects.filter(pk=job.pk).update(payload=payload)
    return outcomes


def capture_job_run(*, job_id: int) -> CaptureJob | None:
    """Run one job if it is pending and due; returns the job as it ends, or None if not claimed."""
    now = timezone.now()
    if not _claim(job_id, now):
        return None
    job = CaptureJob.objects.select_related("customer").get(pk=job_id)
    attempt = job.attempts
    try:
        with account_atomic():
            _execute(job)
            finished = CaptureJob.objects.filter(pk=job.pk, status=CaptureJobStatus.RUNNING, attempts=attempt).update(
                status=CaptureJobStatus.DONE, finished_at=timezone.now(), last_error="", updated_at=timezone.now()
            )
            if finished != 1:
                raise _ClaimLost()
    except _ClaimLost:
        logger.warning("capture job %s was re-claimed by another run; its writes were rolled back", job_id)
        return None
    except Exception as exc:
        _record_failure(job, attempt=attempt, error=exc)
    job.refresh_from_db()
    return job


def _backoff(attempts: int) -> timedelta:
    return timedelta(seconds=settings.QIWEI_CAPTURE_RETRY_BASE_SECONDS * (2**attempts))


def _record_failure(job: CaptureJob, *, attempt: int, error: BaseException) -> None:
    final = attempt >= settings.QIWEI_CAPTURE_MAX_ATTEMPTS
    now = timezone.now()
    # The error's class and first line only: a message might echo customer text.
    summary = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:500]
    with account_atomic():
        updated = CaptureJob.objects.filter(pk=job.pk, status=CaptureJobStatus.RUNNING, attempts=attempt).update(
            status=CaptureJobStatus.FAILED if final else CaptureJobStatus.PENDING,
            last_error=summary,
            next_attempt_at=None if final else now + _backoff(attempt),
            enqueued_at=None,
            finished_at=now if final else None,
            updated_at=now,
        )
        if updated != 1:
            return
        audit_record(
            action=AuditAction.MEMORY_CAPTURE_FAILED,
            conversation_id=job.customer.conversation_id,
            actor="capture",
            reason="记忆提取失败，已安排重试" if not final else "记忆提取多次失败，已放弃",
            payload={
                "job_id": job.pk,
                "message_id": job.message_id,
                "attempt": attempt,
                "final": final,
                "error": type(error).__name__,
            },
        )
        if final:
            alert_raise(
                customer=job.customer,
                kind=AlertKind.CAPTURE_FAILING,
                level=AlertLevel.CRITICAL,
                text=f"记忆提取任务 #{job.pk} 多次失败（{type(error).__name__}），该消息未写入记忆，请运维排查",
                cause=f"job:{job.pk}",
                actor="capture",
                reason="记忆提取多次失败",
            )
    logger.warning("capture job %s failed (attempt %s, final=%s): %s", job.pk, attempt, final, summary)


@dataclass
class SweepResult:
    requeued: list[int] = field(default_factory=list)
    recovered: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)


def capture_sweep(*, now: datetime | None = None, limit: int = 1000) -> SweepResult:
    """Re-send due jobs whose broker message may be lost, and recover jobs of killed workers."""
    now = now or timezone.now()
    grace = timedelta(seconds=settings.QIWEI_CAPTURE_STUCK_SECONDS)
    result = SweepResult()
    stuck = list(
        CaptureJob.objects.filter(status=CaptureJobStatus.RUNNING, started_at__lt=now - grace)
        .order_by("id")
        .values_list("pk", "attempts", "started_at")[:limit]
    )
    for job_id, attempts, started_at in stuck:
        if attempts >= settings.QIWEI_CAPTURE_MAX_ATTEMPTS:
            job = CaptureJob.objects.select_related("customer").get(pk=job_id)
            _record_failure(job, attempt=attempts, error=TimeoutError("worker lost while running"))
            result.failed.append(job_id)
            continue
        # Conditional on the same claim, so a run that finishes meanwhile is not undone.
        reset = CaptureJob.objects.filter(
            pk=job_id, status=CaptureJobStatus.RUNNING, attempts=attempts, started_at=started_at
        ).update(status=CaptureJobStatus.PENDING, next_attempt_at=now, enqueued_at=None, updated_at=now)
        if reset:
            result.recovered.append(job_id)
    due = (
        CaptureJob.objects.filter(status=CaptureJobStatus.PENDING)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=now - grace))
        .order_by("next_attempt_at", "id")
        .values_list("pk", flat=True)[:limit]
    )
    ids = list(due)
    if ids:
        with account_atomic():
            # Due by the sweeper's clock is due for the worker too (the sweeper may run with a given `now`).
            real_now = timezone.now()
            CaptureJob.objects.filter(pk__in=ids).update(enqueued_at=now, next_attempt_at=min(now, real_now))
            enqueue_after_commit(ids)
        result.requeued = ids
    return result
