"""Reads for drafts, deliveries and session epochs."""

from __future__ import annotations

from django.db.models import QuerySet

from conversations.models import Customer, Draft, DraftStatus
from qiwei_site.platform.errors import NotFound, ValidationFailed
from sessions_epoch.models import SessionEpoch


def draft_list(*, customer: Customer, status: str | None = None) -> QuerySet[Draft]:
    drafts = (
        Draft.objects.filter(customer=customer).select_related("customer", "delivery").order_by("-created_at", "-id")
    )
    if status:
        if status not in DraftStatus.values:
            raise ValidationFailed(
                f"未知的草稿状态 {status!r}，可选：{', '.join(DraftStatus.values)} (unknown status).",
                code="invalid_status",
            )
        drafts = drafts.filter(status=status)
    return drafts


def draft_get(draft_id: int) -> Draft:
    draft = Draft.objects.select_related("customer", "delivery").filter(pk=draft_id).first()
    if draft is None:
        raise NotFound(f"草稿 {draft_id} 不存在 (no such draft).", code="draft_not_found")
    return draft


def epoch_list(*, customer: Customer) -> QuerySet[SessionEpoch]:
    return SessionEpoch.objects.filter(customer=customer).order_by("-started_at", "-id")
