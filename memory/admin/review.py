"""The review queue (待审核): for the chosen account, the proposals (readings held back from an
automatic write, issue 35), the model's hypotheses and the automatic items below the review
threshold, newest first, each with the customer's words it rests on (masked), decided in one click
with a reason through the governance services.

- accept (a proposal): `memory_proposal_accept`, as read or with the value the supervisor typed;
- confirm: a hypothesis becomes a fact (`memory_item_confirm`) in the wording shown beside it (the
  guess without its hedges, editable: issue 39); a low-confidence automatic item
  is vouched for (`memory_item_edit` to confidence 1, created_by=human), so it leaves the queue;
- reject: `memory_item_reject` (final: capture never brings the value back, not even as a proposal);
- edit: a proposal is accepted with the supervisor's text; a hypothesis stays a hypothesis (still
  to confirm), any other item is vouched for with its new text.

`?kind=proposals` or `?kind=to_confirm` shows one of the two; the start page links each count there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from conversations.models import Customer, Message
from memory.attention import (
    REVIEW_ALL,
    REVIEW_KINDS,
    REVIEW_PROPOSALS,
    REVIEW_TO_CONFIRM,
    evidence_for,
    review_confidence_below,
    review_queue,
)
from memory.decisions import same_meaning
from memory.governance.services import (
    memory_item_confirm,
    memory_item_edit,
    memory_item_reject,
    memory_proposal_accept,
)
from memory.governance.wording import confirmed_wording
from memory.models import MemoryItem, MemoryStatus, MemoryType
from qiwei_site.platform.errors import ApplicationError
from qiwei_site.reading.extract import hold_back_label
from qiwei_site.reading.masking import mask_sensitive

REVIEW_PER_PAGE = 50
MAX_DATABASE_ID = 2**63 - 1  # the largest key SQLite and PostgreSQL's bigint hold


class InvalidQueryParameter(ValueError):
    """A query parameter that cannot be what it names; the view answers 400 with the message."""


class ReviewDecisionForm(forms.Form):
    item = forms.IntegerField(min_value=1)
    decision = forms.ChoiceField(
        choices=[("confirm", "确认"), ("reject", "拒绝"), ("edit", "编辑"), ("accept", "采纳")]
    )
    reason = forms.CharField(
        label="原因", max_length=300, error_messages={"required": "请填写原因：它会写入历史记录和审计。"}
    )
    content = forms.CharField(label="内容", max_length=2000, required=False)
    # A hypothesis confirmed as a fact, in these words (issue 39); blank: the guess without its hedges.
    wording = forms.CharField(label="事实的措辞", max_length=2000, required=False)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("decision") == "edit" and not (cleaned.get("content") or "").strip():
            self.add_error("content", "编辑需要填写新的内容。")
        return cleaned


@dataclass
class EvidenceQuote:
    sent_at: str
    speaker: str
    text: str
    inbound: bool


@dataclass
class ReviewRow:
    item: MemoryItem
    evidence: list[EvidenceQuote]
    reason: str = ""
    content: str = ""
    wording: str = ""  # a hypothesis's wording as a fact, pre-filled without the guess's hedges
    errors: list[str] = field(default_factory=list)

    @property
    def is_hypothesis(self) -> bool:
        return self.item.type == MemoryType.HYPOTHESIS

    @property
    def is_proposal(self) -> bool:
        return self.item.status == MemoryStatus.PROPOSED

    @property
    def held_back_label(self) -> str:
        return hold_back_label(self.item.held_back) if self.item.held_back else ""

    @property
    def clause(self) -> str:
        return mask_sensitive(self.item.clause) if self.item.clause else ""


def _quote(message: Message) -> EvidenceQuote:
    return EvidenceQuote(
        sent_at=timezone.localtime(message.sent_at).strftime("%Y-%m-%d %H:%M"),
        speaker=message.sender or message.get_direction_display(),
        text=mask_sensitive(message.text),
        inbound=message.direction == "inbound",
    )


def review_decide(*, item: MemoryItem, decision: str, reason: str, content: str, actor: Any, wording: str = "") -> str:
    """Apply one decision through its governance service; returns what was done, in Chinese."""
    if decision == "reject":
        memory_item_reject(item=item, actor=actor, reason=reason)
        return "已拒绝"
    if item.status == MemoryStatus.PROPOSED:
        read = item.content
        typed = content if decision == "edit" and content.strip() else None
        accepted = memory_proposal_accept(item=item, content=typed, actor=actor, reason=reason)
        return "已采纳，写入记忆" if same_meaning(read, accepted.content) else "已按修改后的内容采纳，写入记忆"
    if decision == "accept":
        raise ApplicationError("只有待审核的提议可以采纳。", code="not_a_proposal")
    if decision == "confirm":
        if item.type == MemoryType.HYPOTHESIS:
            memory_item_confirm(item=item, content=wording or None, actor=actor, reason=reason)
            return "已确认为事实"
        memory_item_edit(item=item, confidence=1.0, actor=actor, reason=reason)
        return "已确认无误"
    if item.type == MemoryType.HYPOTHESIS:
        memory_item_edit(item=item, content=content, actor=actor, reason=reason)
        return "已修改（仍待确认）"
    memory_item_edit(item=item, content=content, confidence=1.0, actor=actor, reason=reason)
    return "已修改并确认"


class ReviewQueueMixin(admin.ModelAdmin):
    """The queue's page and its POST, on the memory item admin (`admin:memory_memoryitem_review`)."""

    review_template = "admin/memory/memoryitem/review_queue.html"

    def get_urls(self) -> list[Any]:
        return [
            path("review/", self.admin_site.admin_view(self.review_view), name="memory_memoryitem_review"),
            *super().get_urls(),
        ]

    def review_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            customer_id = _customer_filter(request)
        except InvalidQueryParameter as exc:
            return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
        kind = request.GET.get("kind") or REVIEW_ALL
        if kind not in REVIEW_KINDS:
            return HttpResponseBadRequest(
                "视图无效：?kind= 应为 all、proposals 或 to_confirm。", content_type="text/plain; charset=utf-8"
            )
        refused: dict[int, ReviewRow] = {}
        if request.method == "POST":
            if not self.has_change_permission(request):
                raise PermissionDenied
            done = self._review_post(request, customer_id, refused)
            if done:
                return HttpResponseRedirect(request.get_full_path())
        queue = review_queue(customer_id=customer_id, kind=kind)
        page = Paginator(queue, REVIEW_PER_PAGE).get_page(request.GET.get("p"))
        items = list(page.object_list)
        evidence = evidence_for(items)
        rows = []
        for item in items:
            row = refused.get(item.pk) or ReviewRow(
                item=item, evidence=[], content=item.content, wording=confirmed_wording(item.content)
            )
            row.item, row.evidence = item, [_quote(message) for message in evidence.get(item.pk, [])]
            rows.append(row)
        customer = Customer.objects.filter(pk=customer_id).first() if customer_id else None
        context = {
            **self.admin_site.each_context(request),
            "title": "待审核队列",
            "kind": kind,
            "kinds": [
                (REVIEW_ALL, "全部"),
                (REVIEW_PROPOSALS, "待审核提议"),
                (REVIEW_TO_CONFIRM, "待确认推断与低置信度记忆"),
            ],
            "opts": self.model._meta,
            "rows": rows,
            "page_obj": page,
            "total": page.paginator.count,
            "threshold": review_confidence_below(),
            "customer": customer,
            "can_decide": self.has_change_permission(request),
            "changelist_url": reverse("admin:memory_memoryitem_changelist"),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.review_template, context)

    def _review_post(self, request: HttpRequest, customer_id: int | None, refused: dict[int, ReviewRow]) -> bool:
        form = ReviewDecisionForm(request.POST)
        item_id = _int(request.POST.get("item"))
        item = review_queue(customer_id=customer_id).filter(pk=item_id).first() if item_id else None
        if item is None:
            self.message_user(request, "该条目已处理或不在待确认队列中。", messages.WARNING)
            return True
        typed = ReviewRow(
            item=item,
            evidence=[],
            reason=request.POST.get("reason", ""),
            content=request.POST.get("content") or item.content,
            wording=request.POST.get("wording") or confirmed_wording(item.content),
        )
        if not form.is_valid():
            typed.errors = [str(error) for errors in form.errors.values() for error in errors]
            refused[item.pk] = typed
            self.message_user(request, f"#{item.pk} 未处理：{'；'.join(typed.errors)}", messages.ERROR)
            return False
        data = form.cleaned_data
        try:
            done = review_decide(
                item=item,
                decision=data["decision"],
                reason=data["reason"],
                content=data.get("content") or "",
                wording=data.get("wording") or "",
                actor=request.user,
            )
        except ApplicationError as exc:
            typed.errors = [exc.detail]
            refused[item.pk] = typed
            self.message_user(request, f"#{item.pk} 未处理：{exc.detail}", messages.ERROR)
            return False
        self.message_user(request, f"#{item.pk} {done}。", messages.SUCCESS)
        return True


def _int(value: Any) -> int | None:
    """A database id from a query or form value, or None: a positive integer written in ASCII
    digits that fits a 64-bit key (a larger one makes SQLite raise OverflowError on a foreign key)."""
    text = str(value).strip() if value is not None else ""
    if not (text.isascii() and text.isdigit()):
        return None
    number = int(text)
    return number if 0 < number <= MAX_DATABASE_ID else None


def _customer_filter(request: HttpRequest) -> int | None:
    """The `?customer=` id, None when absent; any other value is a bad request, not the whole queue."""
    raw = request.GET.get("customer")
    if raw is None or raw == "":
        return None
    customer_id = _int(raw)
    if customer_id is None:
        raise InvalidQueryParameter("客户 ID 无效：?customer= 应为客户的数字 ID。")
    return customer_id
