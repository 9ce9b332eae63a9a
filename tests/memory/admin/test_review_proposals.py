"""Proposals in the admin review queue (issue 35): each listed with the reason capture held it back,
in Chinese, and the words it was read from; accepted as read or corrected, or rejected, with a
reason; the start page counts them and links to exactly those rows."""

from __future__ import annotations

import datetime as dt
import html
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse
from django.utils import timezone

from conversations.models import AuditEvent, CustomerProfile
from memory.admin.review import REVIEW_PER_PAGE
from memory.attention import REVIEW_PROPOSALS, review_queue
from memory.capture.services import capture_message
from memory.models import MemoryCreatedBy, MemoryItem, MemoryStatus
from tests.factories import CustomerFactory, MessageFactory

QUEUE = "/admin/memory/memoryitem/review/"
QUESTION_LABEL = "问句：客户在询问，没有明确说出自己的需求"


def queue_ids(response) -> list[int]:
    return [row.item.pk for row in response.context["rows"]]


def decide(client, item, decision, reason, **extra):
    return client.post(QUEUE, {"item": item.pk, "decision": decision, "reason": reason, **extra}, follow=True)


@pytest.fixture
def question(customer):
    """王先生 asked after stock: 户型：两居室 and 偏好：带阳台 wait as proposals."""
    message = MessageFactory(customer=customer, sender="王先生", text="有没有带阳台的两居室？")
    capture_message(message=message)
    return message


@pytest.fixture
def layout(question, customer) -> MemoryItem:
    return MemoryItem.objects.get(customer=customer, key="profile:layout", status=MemoryStatus.PROPOSED)


@pytest.fixture
def balcony(question, customer) -> MemoryItem:
    return MemoryItem.objects.get(customer=customer, key="preference:带阳台", status=MemoryStatus.PROPOSED)


def test_review_queue_lists_proposals_with_their_reason_and_clause(admin_client, review_items, layout, balcony):
    # When the supervisor opens the whole queue
    response = admin_client.get(QUEUE)
    # Then the proposals are there beside the items to confirm
    assert response.status_code == 200
    ids = queue_ids(response)
    assert {layout.pk, balcony.pk, review_items.hypothesis.pk, review_items.hedged.pk} <= set(ids)
    row = next(row for row in response.context["rows"] if row.item.pk == layout.pk)
    assert row.is_proposal and row.held_back_label == QUESTION_LABEL
    assert [quote.text for quote in row.evidence] == ["有没有带阳台的两居室？"]
    # And each proposal's row says, in Chinese, why it was not written, and the words it was read from
    body = response.content.decode()
    assert f"待审核提议 · 未自动写入：{QUESTION_LABEL}" in body
    assert f"读自客户原话：「{layout.clause}」" in body
    assert "户型：两居室" in body and "偏好：带阳台" in body
    # And its button accepts rather than confirms
    assert 'value="accept">采纳</button>' in body


def test_review_queue_masks_a_phone_number_in_the_clause(admin_client, layout):
    # Given a proposal whose clause held the customer's phone number
    MemoryItem.objects.filter(pk=layout.pk).update(clause="我电话13812345678，想要两居室")
    # When the queue is opened, then the number is masked
    body = admin_client.get(QUEUE).content.decode()
    assert "138****5678" in body and "13812345678" not in body


def test_review_queue_kind_proposals_shows_only_proposals(admin_client, review_items, layout, balcony):
    response = admin_client.get(QUEUE, {"kind": "proposals"})
    assert response.status_code == 200
    assert sorted(queue_ids(response)) == sorted([layout.pk, balcony.pk])
    assert response.context["total"] == 2
    body = response.content.decode()
    assert "<strong>待审核提议</strong>" in body and "可能在为孩子上学找学区房" not in body


def test_review_queue_kind_to_confirm_leaves_proposals_out(admin_client, review_items, layout, balcony):
    response = admin_client.get(QUEUE, {"kind": "to_confirm"})
    assert response.status_code == 200
    ids = queue_ids(response)
    assert layout.pk not in ids and balcony.pk not in ids
    assert set(ids) == {review_items.hypothesis.pk, review_items.hedged.pk, review_items.neighbour.pk}
    assert "偏好：带阳台" not in response.content.decode()


@pytest.mark.parametrize("kind", ["proposal", "everything", "PROPOSALS"])
def test_review_queue_bad_kind_is_400(admin_client, layout, kind):
    response = admin_client.get(QUEUE, {"kind": kind})
    assert response.status_code == 400
    assert "?kind=" in response.content.decode()


def test_review_queue_accept_makes_the_proposal_active(admin_client, staff_user, customer, layout, balcony, question):
    # When the supervisor accepts the layout in one click, saying why
    response = decide(admin_client, layout, "accept", "客户电话里确认要两居室", content=layout.content)
    # Then it is active memory vouched for by them, out of the queue, and the profile's layout
    item = MemoryItem.objects.get(pk=layout.pk)
    assert (item.status, item.content, item.created_by, item.confidence) == (
        MemoryStatus.ACTIVE,
        "户型：两居室",
        MemoryCreatedBy.HUMAN,
        1.0,
    )
    assert item.source_message_ids == [question.pk]
    assert CustomerProfile.objects.get(customer=customer).layout == "两居室"
    assert item.pk not in queue_ids(response) and balcony.pk in queue_ids(response)
    assert "已采纳，写入记忆" in response.content.decode()
    audit = AuditEvent.objects.get(action="memory_proposal_accepted")
    assert (audit.actor_id, audit.reason) == (staff_user.pk, "客户电话里确认要两居室")


def test_review_queue_edit_accepts_the_typed_value(admin_client, customer, layout):
    # When the supervisor corrects the value and accepts it
    response = decide(admin_client, layout, "edit", "客户电话说其实要三居室", content="户型：三居室")
    # Then the corrected value is active memory and the profile's layout
    item = MemoryItem.objects.get(pk=layout.pk)
    assert (item.status, item.content, item.created_by) == (MemoryStatus.ACTIVE, "户型：三居室", MemoryCreatedBy.HUMAN)
    assert CustomerProfile.objects.get(customer=customer).layout == "三居室"
    assert "已按修改后的内容采纳" in response.content.decode()
    assert AuditEvent.objects.get(action="memory_proposal_accepted").payload["edited"] is True


def test_review_queue_reject_a_proposal(admin_client, customer, balcony):
    # When the supervisor rejects the balcony
    response = decide(admin_client, balcony, "reject", "客户说阳台无所谓")
    # Then it is rejected and gone from the queue, and the same question does not bring it back
    assert MemoryItem.objects.get(pk=balcony.pk).status == MemoryStatus.REJECTED
    assert balcony.pk not in queue_ids(response) and "已拒绝" in response.content.decode()
    capture_message(message=MessageFactory(customer=customer, sender="王先生", text="有没有带阳台的两居室？"))
    assert not review_queue(kind=REVIEW_PROPOSALS).filter(key="preference:带阳台").exists()


@pytest.mark.parametrize("decision", ["accept", "edit", "reject"])
def test_review_queue_without_a_reason_keeps_the_typed_content(admin_client, layout, decision):
    audit_rows = AuditEvent.objects.count()
    # When the supervisor typed a corrected value but no reason, and clicked
    response = admin_client.post(
        QUEUE, {"item": layout.pk, "decision": decision, "reason": " ", "content": "户型：三居室"}
    )
    # Then nothing changed, the row says why, and the typed value is still in the box
    assert response.status_code == 200
    item = MemoryItem.objects.get(pk=layout.pk)
    assert (item.status, item.content) == (MemoryStatus.PROPOSED, "户型：两居室")
    assert AuditEvent.objects.count() == audit_rows
    row = next(row for row in response.context["rows"] if row.item.pk == layout.pk)
    assert row.errors and "请填写原因" in row.errors[0]
    assert row.content == "户型：三居室"
    body = response.content.decode()
    assert "户型：三居室</textarea>" in body and "<details open>" in body


def test_review_queue_accept_of_a_decided_proposal_is_refused(admin_client, layout):
    # Given a proposal already accepted (another supervisor, another tab)
    decide(admin_client, layout, "accept", "客户电话确认")
    # When a stale page accepts it again, then nothing happens and the supervisor is told
    response = decide(admin_client, layout, "accept", "再采纳一次")
    assert "不在待确认队列" in response.content.decode()
    assert AuditEvent.objects.filter(action="memory_proposal_accepted").count() == 1


def test_start_page_counts_proposals_and_links_to_them(admin_client, review_items, layout, balcony):
    # Given a second customer with a proposal of their own
    li = CustomerFactory(conversation_id="wm_li_009", display_name="李女士")
    capture_message(message=MessageFactory(customer=li, sender="李女士", text="有没有三居室？"))
    # When the supervisor opens the start page
    response = admin_client.get(reverse("admin:index"))
    assert response.status_code == 200
    counts = {count.label: count for count in response.context["qiwei_start_counts"]}
    proposals = counts["待审核提议"]
    # Then it counts the three proposals of the account, linking to the queue's proposals view
    assert proposals.count == 3 == review_queue(kind=REVIEW_PROPOSALS).count()
    url = urlsplit(proposals.url)
    assert url.path == reverse("admin:memory_memoryitem_review") and parse_qs(url.query) == {"kind": ["proposals"]}
    assert f'href="{proposals.url}" data-count="3"' in response.content.decode()
    # And the page it links to lists exactly those rows
    listed = admin_client.get(proposals.url)
    assert len(listed.context["rows"]) == 3 and listed.context["total"] == 3
    assert all(row.is_proposal for row in listed.context["rows"])
    # And accepting one brings the count down
    decide(admin_client, layout, "accept", "客户电话确认")
    counts = {c.label: c.count for c in admin_client.get(reverse("admin:index")).context["qiwei_start_counts"]}
    assert counts["待审核提议"] == 2


def test_review_queue_next_page_of_proposals_stays_on_proposals(admin_client, customer, review_items):
    # Given more proposals than one page holds, beside items to confirm
    for n in range(REVIEW_PER_PAGE + 1):
        MemoryItem.objects.create(
            customer=customer,
            type="preference",
            key=f"preference:小区{n}",
            content=f"偏好：第{n}个小区",
            status=MemoryStatus.PROPOSED,
            held_back="question",
            clause=f"想要第{n}个小区",
            confidence=0.6,
        )
    # When the supervisor opens the proposals view and follows its link to the next page
    first = admin_client.get(QUEUE, {"kind": "proposals"})
    assert first.context["page_obj"].has_next()
    links = re.findall(r'<a href="(\?[^"]*p=2[^"]*)">下一页</a>', first.content.decode())
    assert len(links) == 1
    second = admin_client.get(QUEUE + html.unescape(links[0]))
    # Then the next page still shows proposals only: the one left over
    assert second.context["kind"] == "proposals"
    assert len(second.context["rows"]) == 1 and all(row.is_proposal for row in second.context["rows"])


def test_review_accept_in_admin_keeps_the_displaced_value_from_coming_back(admin_client, customer):
    # Given the customer stated 一居室, then asked after 两居室 (a proposal waits in the queue)
    capture_message(message=MessageFactory(customer=customer, sender="王先生", text="我想要一居室"))
    capture_message(message=MessageFactory(customer=customer, sender="王先生", text="有没有两居室？"))
    waiting = MemoryItem.objects.get(customer=customer, key="profile:layout", status=MemoryStatus.PROPOSED)
    # When the supervisor accepts it as read in the admin review queue
    assert decide(admin_client, waiting, "accept", "客户电话确认要两居室").status_code == 200
    # And the customer names the value it displaced again, after the decision (through capture)
    later = timezone.now() + dt.timedelta(minutes=1)
    capture_message(message=MessageFactory(customer=customer, sender="王先生", text="我想要一居室", sent_at=later))
    # Then the supervisor's choice stands in memory and in the profile
    active = MemoryItem.objects.get(customer=customer, key="profile:layout", status=MemoryStatus.ACTIVE)
    assert "两居" in active.content and "两居" in CustomerProfile.objects.get(customer=customer).layout
