"""The supervisor's start page counts (registered with the admin site by memory's AppConfig.ready):
each number is the size of a `memory.attention` queryset and links to the admin list filtered to
exactly those rows, so the count and the list always agree."""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone

from conversations.models import AuditAction, DraftStatus
from memory.attention import (
    REVIEW_PROPOSALS,
    REVIEW_TO_CONFIRM,
    attention_counts,
    review_confidence_below,
    review_stale_after,
    shanghai_day,
    waited,
)
from memory.governance.scrub import storage_scrubs_pending
from memory.models import CaptureJobStatus
from qiwei_site.platform.admin_site import StartPageCount


def _list(url_name: str, **filters: str) -> str:
    return f"{reverse(url_name)}?{urlencode(filters)}" if filters else reverse(url_name)


def _waiting_note(oldest: dt.datetime | None) -> dict[str, Any]:
    """How long the oldest item has waited; a warning once that is longer than QIWEI_REVIEW_STALE_DAYS."""
    if oldest is None:
        return {}
    stale = timezone.now() - oldest > review_stale_after()
    note = f"最久已等待 {waited(oldest)}"
    if stale:
        note += f"，超过 {review_stale_after().days} 天未处理，请尽快审核"
    return {"note": note, "warning": stale}


def memory_start_page_counts(request: HttpRequest) -> list[StartPageCount]:
    """To confirm, failed capture jobs, blocked today, drafts awaiting review, open alerts — for the
    chosen account, each shown only to a user who may open its list."""
    counts = attention_counts()
    today, tomorrow = shanghai_day()
    user = request.user
    candidates = [
        (
            "memory.view_memoryitem",
            StartPageCount(
                label="待审核提议",
                count=counts.proposals,
                url=_list("admin:memory_memoryitem_review", kind=REVIEW_PROPOSALS),
                help_text="客户原话里像是需求、但不满足自动写入条件的内容（问句、议价、比较…），采纳后才进入记忆",
                order=5,
                **_waiting_note(counts.proposals_oldest),
            ),
        ),
        (
            "memory.view_memoryitem",
            StartPageCount(
                label="待确认",
                count=counts.to_confirm,
                url=_list("admin:memory_memoryitem_review", kind=REVIEW_TO_CONFIRM),
                help_text=f"模型推断和置信度低于 {review_confidence_below()} 的自动记忆",
                order=10,
                **_waiting_note(counts.to_confirm_oldest),
            ),
        ),
        (
            "memory.view_capturejob",
            StartPageCount(
                label="提取失败的任务",
                count=counts.capture_failed,
                url=_list("admin:memory_capturejob_changelist", status__exact=CaptureJobStatus.FAILED),
                help_text="重试用尽仍未写入记忆的消息",
                order=20,
            ),
        ),
        (
            "conversations.view_auditevent",
            StartPageCount(
                label="今日拦截",
                count=counts.blocked_today,
                # The audit list's own "today" filter on created_at (Asia/Shanghai), plus the action.
                url=_list(
                    "admin:conversations_auditevent_changelist",
                    action__exact=AuditAction.MEMORY_CAPTURE_BLOCKED,
                    created_at__gte=str(today),
                    created_at__lt=str(tomorrow),
                ),
                help_text="今天被安全扫描拦截、未写入记忆的客户消息",
                order=30,
            ),
        ),
        (
            "conversations.view_draft",
            StartPageCount(
                label="待审核草稿",
                count=counts.drafts_pending,
                url=_list("admin:conversations_draft_changelist", status__exact=DraftStatus.PENDING),
                help_text="等待客服或主管审核的回复草稿",
                order=40,
            ),
        ),
        (
            "conversations.view_alert",
            StartPageCount(
                label="未处理预警",
                count=counts.alerts_open,
                url=_list("admin:conversations_alert_changelist", resolved__exact="0"),
                help_text="尚未标记为已处理的预警",
                order=50,
            ),
        ),
    ]
    pending_scrubs = storage_scrubs_pending()
    if pending_scrubs:  # shown only while there is one: it is rare, and it needs an operator's eye
        candidates.append(
            (
                "memory.view_storagescrub",
                StartPageCount(
                    label="待完成的存储清理",
                    count=pending_scrubs,
                    url=_list("admin:memory_storagescrub_changelist", done_at__isempty="1"),
                    help_text="遗忘或删除后，有读取占用数据库，旧数据页暂留在 WAL 文件中，后台每分钟重试",
                    order=60,
                ),
            )
        )
    # Like the admin's own check: viewing is allowed with the view or the change permission.
    return [
        count
        for permission, count in candidates
        if user.has_perm(permission) or user.has_perm(permission.replace(".view_", ".change_"))
    ]
