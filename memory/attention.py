"""What needs a supervisor's attention in the chosen account: the review queue (proposals, hypotheses
and low-confidence automatic items) and the start page's counts. Each count is the size of a queryset
here, and each admin list it links to filters to the same rows.

Drafts and alerts are conversations' rows; memory may read them (it is the layer above)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from conversations.models import Alert, AuditAction, AuditEvent, Draft, DraftStatus, Message
from memory.models import CaptureJob, CaptureJobStatus, MemoryCreatedBy, MemoryItem, MemoryStatus, MemoryType

# Automatic items below this confidence wait for a supervisor (hedged words are capped at 0.5,
# the weakest explicit triggers start at 0.55–0.6; a plain "我更喜欢…" is 0.8).
DEFAULT_REVIEW_CONFIDENCE_BELOW = 0.7


def review_confidence_below() -> float:
    return float(getattr(settings, "QIWEI_REVIEW_CONFIDENCE_BELOW", DEFAULT_REVIEW_CONFIDENCE_BELOW))


# The review queue's views: everything, only the proposals (issue 35), only the rest (hypotheses and
# low-confidence automatic items).
REVIEW_ALL, REVIEW_PROPOSALS, REVIEW_TO_CONFIRM = "all", "proposals", "to_confirm"
REVIEW_KINDS = (REVIEW_ALL, REVIEW_PROPOSALS, REVIEW_TO_CONFIRM)


def _unexpired(now: dt.datetime) -> Q:
    return Q(expires_at__isnull=True) | Q(expires_at__gt=now)


def review_queue(
    *, customer_id: int | None = None, now: dt.datetime | None = None, kind: str = REVIEW_ALL
) -> QuerySet[MemoryItem]:
    """What waits for a supervisor, newest first: proposals (readings held back from an automatic
    write), and active, unexpired hypotheses (whoever wrote them) and automatic items below the
    review threshold. A supervisor's accept, confirm, reject or edit takes an item out."""
    now = now or timezone.now()
    to_confirm = Q(status=MemoryStatus.ACTIVE) & (
        Q(type=MemoryType.HYPOTHESIS) | Q(created_by=MemoryCreatedBy.AUTO, confidence__lt=review_confidence_below())
    )
    proposals = Q(status=MemoryStatus.PROPOSED)
    wanted = {REVIEW_PROPOSALS: proposals, REVIEW_TO_CONFIRM: to_confirm}.get(kind, proposals | to_confirm)
    items = MemoryItem.objects.filter(wanted).filter(_unexpired(now))
    if customer_id is not None:
        items = items.filter(customer_id=customer_id)
    return items.select_related("customer").order_by("-created_at", "-id")


def evidence_for(items: Iterable[MemoryItem]) -> dict[int, list[Message]]:
    """The messages each item cites (its own customer's only), oldest first, in one query."""
    wanted: dict[int, list[int]] = {}
    for item in items:
        wanted[item.pk] = [int(i) for i in item.source_message_ids or [] if str(i).lstrip("-").isdigit()]
    ids = {i for cited in wanted.values() for i in cited}
    found = {message.pk: message for message in Message.objects.filter(pk__in=ids).order_by("sent_at", "id")}
    customers = {item.pk: item.customer_id for item in items}
    return {
        item_id: sorted(
            (found[i] for i in cited if i in found and found[i].customer_id == customers[item_id]),
            key=lambda message: (message.sent_at, message.pk),
        )
        for item_id, cited in wanted.items()
    }


def shanghai_day(now: dt.datetime | None = None) -> tuple[dt.datetime, dt.datetime]:
    """Today's start and tomorrow's start in the admin's time zone (Asia/Shanghai)."""
    local = timezone.localtime(now or timezone.now())
    start = local.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + dt.timedelta(days=1)


def capture_jobs_failed() -> QuerySet[CaptureJob]:
    return CaptureJob.objects.filter(status=CaptureJobStatus.FAILED)


def messages_blocked_today(now: dt.datetime | None = None) -> QuerySet[AuditEvent]:
    """One audit row per blocked message (capture writes it once per message), dated today."""
    start, end = shanghai_day(now)
    return AuditEvent.objects.filter(
        action=AuditAction.MEMORY_CAPTURE_BLOCKED, created_at__gte=start, created_at__lt=end
    )


def drafts_awaiting_review() -> QuerySet[Draft]:
    return Draft.objects.filter(status=DraftStatus.PENDING)


def alerts_open() -> QuerySet[Alert]:
    return Alert.objects.filter(resolved=False)


def review_stale_after() -> dt.timedelta:
    return dt.timedelta(days=int(getattr(settings, "QIWEI_REVIEW_STALE_DAYS", 3)))


@dataclass(frozen=True)
class AttentionCounts:
    to_confirm: int
    capture_failed: int
    blocked_today: int
    drafts_pending: int
    alerts_open: int
    to_confirm_oldest: dt.datetime | None = None  # when the longest-waiting item entered the queue
    proposals: int = 0  # readings held back for a supervisor (issue 35)
    proposals_oldest: dt.datetime | None = None


def waited(since: dt.datetime | None, now: dt.datetime | None = None) -> str:
    """How long something has waited, in Chinese: "3 天 4 小时", "5 小时", "不到 1 小时"."""
    if since is None:
        return ""
    seconds = max(0, int(((now or timezone.now()) - since).total_seconds()))
    days, hours = seconds // 86400, seconds % 86400 // 3600
    if days:
        return f"{days} 天 {hours} 小时" if hours else f"{days} 天"
    return f"{hours} 小时" if hours else "不到 1 小时"


def attention_counts(now: dt.datetime | None = None) -> AttentionCounts:
    """The start page's numbers for the selected account."""
    queue = review_queue(now=now, kind=REVIEW_TO_CONFIRM)
    proposals = review_queue(now=now, kind=REVIEW_PROPOSALS)
    return AttentionCounts(
        to_confirm_oldest=queue.order_by("created_at", "id").values_list("created_at", flat=True).first(),
        to_confirm=queue.count(),
        proposals=proposals.count(),
        proposals_oldest=proposals.order_by("created_at", "id").values_list("created_at", flat=True).first(),
        capture_failed=capture_jobs_failed().count(),
        blocked_today=messages_blocked_today(now).count(),
        drafts_pending=drafts_awaiting_review().count(),
        alerts_open=alerts_open().count(),
    )
