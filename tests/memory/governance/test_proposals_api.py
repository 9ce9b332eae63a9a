"""Proposals through the governance API (issue 35): listed with the rule that held them back and the
customer's clause (masked), accepted with POST …/memory/{id}/accept/ (as read or corrected),
rejected with …/reject/; writes need a staff member and a reason."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from conversations.models import AuditEvent, CustomerProfile
from memory.capture.services import capture_message
from memory.models import MemoryItem, MemoryStatus
from tests.factories import CustomerFactory, MessageFactory

BASE = "/api/accounts/acme/conversations/wm_wang_001"
ACCEPT_PATH = "/api/accounts/{account_id}/conversations/{conversation_id}/memory/{item_id}/accept/"


@pytest.fixture
def question(customer):
    """The customer asked after stock: 户型：两居室 and 偏好：带阳台 wait as proposals."""
    message = MessageFactory(customer=customer, sender="王先生", text="有没有带阳台的两居室？")
    capture_message(message=message)
    return message


@pytest.fixture
def layout(question, customer) -> MemoryItem:
    return MemoryItem.objects.get(customer=customer, key="profile:layout", status=MemoryStatus.PROPOSED)


@pytest.fixture
def stated(customer) -> MemoryItem:
    """An active item the customer stated outright."""
    capture_message(message=MessageFactory(customer=customer, sender="王先生", text="预算五千左右"))
    return MemoryItem.objects.get(customer=customer, key="profile:budget", status=MemoryStatus.ACTIVE)


def accept(client, item_id, **body):
    return client.post(f"{BASE}/memory/{item_id}/accept/", body, format="json")


def count_with_status(client, status: str) -> int:
    return client.get(f"{BASE}/memory/", {"status": status}).json()["count"]


def test_list_proposed_shows_the_rule_in_chinese_and_the_clause(agent_client, customer, question, stated):
    # When a member lists the customer's proposals
    response = agent_client.get(f"{BASE}/memory/", {"status": "proposed"})
    # Then only the proposals come back, each with its rule, the rule in Chinese and the clause
    assert response.status_code == 200
    results = response.json()["results"]
    assert {item["key"] for item in results} == {"profile:layout", "preference:带阳台"}
    for item in results:
        assert item["status"] == "proposed" and item["created_by"] == "auto" and item["direction"] == "inbound"
        assert item["source_message_ids"] == [question.pk]
        assert item["held_back"] == "question"
        assert item["held_back_label"].startswith("问句") and "客户在询问" in item["held_back_label"]
        assert item["clause"] and "两居室" in item["clause"]
        assert item["expires_at"] is not None
    # And the active item lists under active, with no rule and no clause
    active = agent_client.get(f"{BASE}/memory/", {"status": "active"}).json()["results"]
    assert [(item["key"], item["held_back"], item["held_back_label"], item["clause"]) for item in active] == [
        ("profile:budget", "", "", "")
    ]


def test_list_masks_a_phone_number_in_the_clause(agent_client, customer, layout):
    # Given a proposal whose clause held the customer's phone number (capture cuts numbers out
    # before reading; this is the serializer's own guard, for any row that has one)
    MemoryItem.objects.filter(pk=layout.pk).update(clause="我电话13812345678，想要两居室")
    # When it is listed and read
    listed = agent_client.get(f"{BASE}/memory/", {"status": "proposed"}).json()["results"]
    detail = agent_client.get(f"{BASE}/memory/{layout.pk}/").json()
    # Then the number is masked in both
    clause = next(item["clause"] for item in listed if item["id"] == layout.pk)
    assert clause == detail["clause"] == "我电话138****5678，想要两居室"
    assert "13812345678" not in str(listed) and "13812345678" not in str(detail)


def test_accept_by_staff_makes_the_proposal_active(staff_client, staff_user, customer, layout, question):
    # When a supervisor accepts the proposal as read
    response = accept(staff_client, layout.pk, reason="客户电话里确认要两居室")
    # Then the answer is the item, now active memory vouched for by them
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["id"] == layout.pk
    assert (body["status"], body["content"], body["created_by"], body["confidence"]) == (
        "active",
        "户型：两居室",
        "human",
        1.0,
    )
    assert body["source_message_ids"] == [question.pk] and body["expires_at"] is None
    # And the profile follows, and the decision is audited with the reason
    assert CustomerProfile.objects.get(customer=customer).layout == "两居室"
    audit = AuditEvent.objects.get(action="memory_proposal_accepted")
    assert (audit.actor_id, audit.reason) == (staff_user.pk, "客户电话里确认要两居室")
    assert count_with_status(staff_client, "proposed") == 1


def test_accept_with_edited_content(staff_client, customer, layout):
    # When a supervisor accepts the proposal corrected to three bedrooms
    response = accept(staff_client, layout.pk, content="户型：三居室", reason="客户电话说其实要三居室")
    # Then the corrected value is active memory and the profile's layout
    assert response.status_code == 200, response.json()
    assert (response.json()["status"], response.json()["content"]) == ("active", "户型：三居室")
    assert CustomerProfile.objects.get(customer=customer).layout == "三居室"
    assert AuditEvent.objects.get(action="memory_proposal_accepted").payload["edited"] is True


def test_accept_with_another_type(staff_client, customer, question):
    balcony = MemoryItem.objects.get(customer=customer, key="preference:带阳台")
    response = accept(staff_client, balcony.pk, type="constraint", reason="客户说必须带阳台")
    assert response.status_code == 200 and response.json()["type"] == "constraint"


def test_accept_as_hypothesis_is_400(staff_client, layout):
    # The schema offers no hypothesis type (found in review: it was offered, then refused by the service)
    response = accept(staff_client, layout.pk, type="hypothesis", reason="先当推断")
    assert response.status_code == 400 and "type" in response.json()["errors"]
    layout.refresh_from_db()
    assert layout.status == MemoryStatus.PROPOSED


def test_accept_by_a_member_without_staff_rights_is_403(agent_client, customer, layout):
    # When a customer-service agent (a member, not staff) tries to accept
    response = accept(agent_client, layout.pk, reason="我觉得客户要两居")
    # Then it is forbidden, and the proposal still waits
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"
    layout.refresh_from_db()
    assert layout.status == MemoryStatus.PROPOSED
    assert CustomerProfile.objects.get(customer=customer).layout == ""


def test_accept_an_unknown_item_is_404_json(staff_client, customer, layout):
    other = CustomerFactory(conversation_id="wm_li_002")
    capture_message(message=MessageFactory(customer=other, sender="李女士", text="有没有一居室？"))
    foreign = MemoryItem.objects.get(customer=other, status=MemoryStatus.PROPOSED)
    for item_id in (999999, "abc", foreign.pk):
        # When a supervisor accepts an item that is not this customer's
        response = accept(staff_client, item_id, reason="采纳")
        # Then it is a JSON 404, and nothing changes
        assert response.status_code == 404, item_id
        assert response["Content-Type"].startswith("application/json")
        assert response.json()["code"] == "memory_item_not_found"
    foreign.refresh_from_db()
    assert foreign.status == MemoryStatus.PROPOSED


def test_accept_a_non_proposal_is_409_with_code(staff_client, customer, stated):
    # When a supervisor accepts an item that is already active memory
    response = accept(staff_client, stated.pk, reason="再采纳一次")
    # Then it is a JSON 409 with its own code and a Chinese reason
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "not_a_proposal" and "提议" in body["detail"]
    stated.refresh_from_db()
    assert (stated.status, stated.created_by) == (MemoryStatus.ACTIVE, "auto")


def test_accept_twice_is_409(staff_client, layout):
    assert accept(staff_client, layout.pk, reason="客户确认").status_code == 200
    response = accept(staff_client, layout.pk, reason="再点一次")
    assert response.status_code == 409 and response.json()["code"] == "not_a_proposal"


@pytest.mark.parametrize("body", [{}, {"reason": ""}, {"reason": "   "}, {"content": "户型：三居室"}])
def test_accept_without_a_reason_is_400_reason_required(staff_client, customer, layout, body):
    audit_rows = AuditEvent.objects.count()
    response = accept(staff_client, layout.pk, **body)
    assert response.status_code == 400
    assert response.json()["code"] == "reason_required" and "原因" in response.json()["detail"]
    layout.refresh_from_db()
    assert layout.status == MemoryStatus.PROPOSED and AuditEvent.objects.count() == audit_rows


def test_accept_with_an_unknown_field_is_400(staff_client, layout):
    # When the body carries a field accept does not know (a typo of content)
    response = accept(staff_client, layout.pk, contnet="户型：三居室", reason="客户说要三居室")
    # Then it is refused naming the field, rather than accepted as read
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid" and "contnet" in body["errors"]
    layout.refresh_from_db()
    assert layout.status == MemoryStatus.PROPOSED


def test_reject_a_proposal_through_the_api(staff_client, customer, layout):
    # When a supervisor rejects the proposal
    response = staff_client.post(f"{BASE}/memory/{layout.pk}/reject/", {"reason": "客户只是随口问问"}, format="json")
    # Then it is rejected, and the customer asking again proposes nothing
    assert response.status_code == 200 and response.json()["status"] == "rejected"
    capture_message(message=MessageFactory(customer=customer, sender="王先生", text="有没有带阳台的两居室？"))
    assert not MemoryItem.objects.filter(
        customer=customer, key="profile:layout", status__in=[MemoryStatus.PROPOSED, MemoryStatus.ACTIVE]
    ).exists()
    # And accepting it afterwards is a conflict
    assert accept(staff_client, layout.pk, reason="改主意了").json()["code"] == "not_a_proposal"


def test_schema_documents_the_accept_path(staff_client):
    # When the OpenAPI schema is read
    response = staff_client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    # Then it lists the accept path, with its body, its answer and its error answers
    operation = schema["paths"][ACCEPT_PATH]["post"]
    assert "requestBody" in operation
    assert {"200", "400", "403", "404", "409"} <= set(operation["responses"])
    ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    body = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]
    assert {"reason", "content", "type"} <= set(body["properties"]) and "reason" in body["required"]
    output = schema["components"]["schemas"]["MemoryItemOutput"]["properties"]
    assert {"held_back", "held_back_label", "clause"} <= set(output)


def test_accept_refuses_a_content_that_is_not_a_string(staff_client, layout):
    # Given a pending proposal (found in review: `content: 5` was saved as 户型：5)
    # When the accept sends a number as the content
    as_number = accept(staff_client, layout.pk, reason="采纳", content=5)
    # Then it is a 400 naming the field, and the proposal still waits
    assert as_number.status_code == 400 and "content" in as_number.json()["errors"]
    layout.refresh_from_db()
    assert layout.status == MemoryStatus.PROPOSED


def test_accepted_proposal_keeps_no_rule_and_no_clause(staff_client, layout):
    # When a proposal is accepted (found in review: the person's item still carried both)
    response = accept(staff_client, layout.pk, reason="电话确认")
    # Then the item, now a person's, has neither; the audit keeps the rule
    assert response.status_code == 200
    assert (response.json()["held_back"], response.json()["clause"]) == ("", "")
    layout.refresh_from_db()
    assert (layout.held_back, layout.clause) == ("", "")


def test_accept_through_the_api_keeps_the_displaced_value_from_coming_back(staff_client, customer):
    # Given the customer stated 一居室, then asked after 两居室 (a proposal waits)
    capture_message(message=MessageFactory(customer=customer, sender="王先生", text="我想要一居室"))
    capture_message(message=MessageFactory(customer=customer, sender="王先生", text="有没有两居室？"))
    waiting = MemoryItem.objects.get(customer=customer, key="profile:layout", status=MemoryStatus.PROPOSED)
    # When a supervisor accepts it through the API as read
    assert accept(staff_client, waiting.pk, reason="电话确认").status_code == 200
    # And the customer names the value it displaced again, after the decision (through capture)
    later = timezone.now() + dt.timedelta(minutes=1)
    capture_message(message=MessageFactory(customer=customer, sender="王先生", text="我想要一居室", sent_at=later))
    # Then the supervisor's choice stands in memory and in the profile
    active = MemoryItem.objects.get(customer=customer, key="profile:layout", status=MemoryStatus.ACTIVE)
    assert "两居" in active.content and "两居" in CustomerProfile.objects.get(customer=customer).layout
