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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from conversations.models import AlertKind, AlertLevel, AuditAction, Customer, Message, MessageDirection
from conversations.services import alert_raise
from memory import sql
from memory.capture import services as capture_services
from memory.capture.readings import readings_refresh
from memory.items import ItemPut, MemoryWrites
from memory.models import CaptureJob, CaptureJobStatus, MemoryCreatedBy, MemoryDirection, MemoryType
from memory.profile import customer_profile_update
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.tenancy import account_atomic, current_account, on_account_commit, use_account
from qiwei_site.reading.fields import PROFILE_FIELD_NAMES, profile_item_content, profile_item_key

logger = logging.getLogger(__name__)

PROFILE_UPDATE_REASON = "模型输出中经客户原话核验的画像更新"
HYPOTHESIS_REASON = "模型推断（依据客户原话），待主管确认"
PROFILE_PROPOSAL_REASON = "模型提出的画像值，客户只在需审核的说法中提到，待主管审核"
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


# A job that only reads (issue 36, item 9): the customer's messages a request could not read within
# its budget, read ahead of the next request. It writes readings, never memory.
READINGS_KEY = "read_window"


def readings_job_enqueue(*, customer: Customer) -> CaptureJob | None:
    """Queue a reading of the customer's window (one job waiting per customer is enough: it reads
    whatever is unread when it runs); returns the new job, or None when one is already waiting."""
    now = timezone.now()
    with account_atomic():
        waiting = CaptureJob.objects.filter(
            customer=customer,
            message__isnull=True,
            status__in=[CaptureJobStatus.PENDING, CaptureJobStatus.RUNNING],
            payload__has_key=READINGS_KEY,
        ).exists()
        if waiting:
            return None
        job = CaptureJob.objects.create(
            customer=customer, payload={READINGS_KEY: True}, next_attempt_at=now, enqueued_at=now
        )
        enqueue_after_commit([job.pk])
    return job


def _finish_query(job_id: Any, attempt: Any, finished_at: Any, updated_at: Any) -> tuple[Any, dict[str, Any]]:
    """The finish as an ORM update: a payload job's, which changes more columns (and the twin of
    `memory.sql.capture_job_finish` in `tests/memory/test_sql.py`)."""
    queryset = CaptureJob.objects.filter(pk=job_id, status=CaptureJobStatus.RUNNING, attempts=attempt)
    return queryset, {
        "status": CaptureJobStatus.DONE,
        "finished_at": finished_at,
        "last_error": "",
        "updated_at": updated_at,
    }


def _claim(job_id: int, now: datetime) -> CaptureJob | None:
    """pending and due → running, one more attempt (a conditional UPDATE: one run wins), and the
    claimed job read back with its customer, its message and the message before that one, all in
    the same statement; None when another run holds it or it is not due."""
    return sql.capture_job_claim(job_id, now)


def _run_message(job: CaptureJob, attempt: int) -> None:
    """Capture the job's message: scanned and extracted before any write transaction opens, its
    writes and the job's `done` committed together (a lone conditional UPDATE when nothing is written)."""
    message = job.message
    assert message is not None

    def finish() -> None:
        if not _finish(job, attempt, {}):
            raise _ClaimLost()

    if message.direction != MessageDirection.INBOUND:
        finish()
        return
    previous = (getattr(job, "previous_direction", None), getattr(job, "previous_text", None))
    capture_services.capture_message(
        message=message,
        actor="capture",
        context=capture_services.extract_context(message, previous=previous),
        within=finish,
    )


def _run_payload(job: CaptureJob, attempt: int) -> None:
    """Write a draft's grounded profile updates and hypotheses in one batch, with the job's `done`."""
    with account_atomic():
        writes = MemoryWrites.load(job.customer)
        updates = job.payload.get("profile_updates") or {}
        if updates:
            customer_profile_update(
                customer=job.customer,
                changes=updates,
                actor="capture",
                reason=PROFILE_UPDATE_REASON,
                source_message_ids=[int(i) for i in job.payload.get("source_message_ids") or []],
                writes=writes,
            )
        changes = _hypotheses_put(job, writes)
        _profile_proposals_put(job, writes)
        writes.flush(reason=PROFILE_UPDATE_REASON if updates else HYPOTHESIS_REASON)
        if not _finish(job, attempt, changes):
            raise _ClaimLost()


def _run_readings(job: CaptureJob, attempt: int) -> None:
    """Read the job customer's unread messages (each reading kept as it is made), then finish."""
    # Imported here: grounding queues these jobs, so it imports this module.

    readings_refresh(customer=job.customer)
    if not _finish(job, attempt, {}):
        raise _ClaimLost()


def _inbound_evidence(job: CaptureJob, writes: MemoryWrites, ids: Iterable[Any]) -> set[int]:
    """Which of these cited ids are still the job customer's inbound messages (one query; their times
    go to the batch, which the decision rules read)."""
    inbound = list(
        Message.objects.filter(
            pk__in={int(i) for i in ids}, customer=job.customer, direction=MessageDirection.INBOUND
        ).values_list("pk", "sent_at", "created_at")
    )
    writes.messages_seed(inbound)
    return {pk for pk, _sent, _created in inbound}


def _profile_proposals_put(job: CaptureJob, writes: MemoryWrites) -> None:
    """Stage a draft's profile values that the reader read only as proposals (issue 35): each a
    proposal under its `profile:<field>` key with the customer's message as evidence, never the profile."""
    proposals = job.payload.get("profile_proposals") or {}
    if not isinstance(proposals, dict) or not proposals:
        return
    inbound_ids = _inbound_evidence(
        job,
        writes,
        (i for entry in proposals.values() if isinstance(entry, dict) for i in entry.get("message_ids") or []),
    )
    expires_at = timezone.now() + timedelta(days=settings.QIWEI_MEMORY_PROPOSAL_TTL_DAYS)
    for field_name, entry in proposals.items():
        if field_name not in PROFILE_FIELD_NAMES or not isinstance(entry, dict):
            continue
        ids = sorted({int(i) for i in entry.get("message_ids") or []})
        if not ids or any(i not in inbound_ids for i in ids):
            continue  # the evidence is gone
        writes.propose(
            ItemPut(
                type=MemoryType.FACT,
                key=profile_item_key(field_name),
                content=profile_item_content(field_name, str(entry.get("value") or "")),
                source_message_ids=ids,
                direction=MemoryDirection.INBOUND,
                held_back=str(entry.get("held_back") or ""),
                clause=str(entry.get("clause") or ""),
            ),
            actor="capture",
            reason=PROFILE_PROPOSAL_REASON,
            expires_at=expires_at,
        )


def _hypotheses_put(job: CaptureJob, writes: MemoryWrites) -> dict[str, Any]:
    """Stage a draft's validated hypotheses as `hypothesis` items on the job's batch.

    The pipeline checked each one; the evidence is checked again here because a message can be
    erased between the turn and the job. The write path refuses what would undo a supervisor's
    decision or is instruction-like. Once stored, the job keeps only keys and ids, not the text:
    the payload returned replaces the job's.
    """
    entries = [entry for entry in job.payload.get("hypotheses") or [] if isinstance(entry, dict)]
    if not entries:
        return {}
    now = timezone.now()
    expires_at = now + timedelta(hours=settings.QIWEI_HYPOTHESIS_TTL_HOURS)
    inbound_ids = _inbound_evidence(job, writes, (i for entry in entries for i in entry.get("message_ids") or []))
    for entry in entries:
        ids = sorted({int(i) for i in entry.get("message_ids") or []})
        if not ids or any(i not in inbound_ids for i in ids):
            continue  # the evidence is gone
        writes.put(
            ItemPut(
                type=MemoryType.HYPOTHESIS,
                key=f"{HYPOTHESIS_KEY_PREFIX}{entry.get('key')}",
                content=str(entry.get("text") or ""),
                source_message_ids=ids,
                confidence=min(float(entry.get("confidence") or 0.0), HYPOTHESIS_MAX_CONFIDENCE),
                direction=MemoryDirection.INBOUND,
                created_by=MemoryCreatedBy.AUTO,
                expires_at=expires_at,
            ),
            actor="capture",
            reason=HYPOTHESIS_REASON,
        )
    payload = dict(job.payload)
    payload["hypotheses"] = [
        {"key": entry.get("key"), "message_ids": entry.get("message_ids") or []} for entry in entries
    ]
    return {"payload": payload}


def _finish(job: CaptureJob, attempt: int, changes: dict[str, Any]) -> bool:
    """Mark the job done, conditional on still holding its claim (in the writes' transaction)."""
    now = timezone.now()
    if changes:
        queryset, values = _finish_query(job.pk, attempt, now, now)
        finished = queryset.update(**values, **changes)
    else:
        finished = sql.capture_job_finish(job.pk, attempt, now)
    if finished != 1:
        return False
    job.status, job.finished_at, job.last_error, job.updated_at = CaptureJobStatus.DONE, now, "", now
    for name, value in changes.items():
        setattr(job, name, value)
    return True


def capture_job_run(*, job_id: int) -> CaptureJob | None:
    """Run one job if it is pending and due; returns the job as it ends, or None if not claimed.

    Claim and read the job with its message and the one before, in one statement (committed, so a
    killed worker's job is seen as running and its attempt counted) → scan and extract, outside any write transaction →
    one transaction with the memory writes and the `done` transition (no transaction at all when
    there is nothing to write: the conditional UPDATE alone).
    """
    job = _claim(job_id, timezone.now())
    if job is None:
        return None
    attempt = job.attempts
    try:
        if job.message is not None:
            _run_message(job, attempt)
        elif job.payload.get(READINGS_KEY):
            _run_readings(job, attempt)
        else:
            _run_payload(job, attempt)
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
