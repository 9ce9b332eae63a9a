"""Governance API (DESIGN §12): curation needs staff, reads need a member, bad input is a 4xx with a reason."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connections
from django.utils import timezone

from conversations.models import AuditEvent, Customer
from memory.governance.services import memory_item_add, memory_items_expire_due
from memory.models import MemoryItem, MemoryStatus, MemoryType
from memory.profile import customer_profile_update
from tests.conftest import client_for
from tests.factories import CustomerFactory, MessageFactory, StaffUserFactory

BASE = "/api/accounts/acme/conversations/wm_wang_001"


def test_memory_list_filters_and_paginates(agent_client, customer, preference, hypothesis):
    # When a member lists the memory, filtered by type
    response = agent_client.get(f"{BASE}/memory/", {"type": "hypothesis"})
    # Then only the hypothesis comes back, in the documented shape
    assert response.status_code == 200
    body = response.json()
    assert [item["id"] for item in body["results"]] == [hypothesis.pk]
    assert set(body["results"][0]) == {
        "id", "type", "key", "content", "source_message_ids", "confidence", "importance",
        "status", "direction", "created_by", "expires_at", "created_at", "updated_at",
        # a proposal's reading (issue 35): the rule that held it back, in Chinese, and the clause
        "held_back", "held_back_label", "clause",
    }  # fmt: skip
    assert agent_client.get(f"{BASE}/memory/").json()["count"] == 2
    assert agent_client.get(f"{BASE}/memory/", {"created_by": "human"}).json()["count"] == 0


def test_memory_list_invalid_filter_is_400(agent_client, customer):
    response = agent_client.get(f"{BASE}/memory/", {"status": "deleted"})
    assert response.status_code == 400 and response.json()["code"] == "invalid_filter"


def test_memory_add_by_staff(staff_client, staff_user, customer, messages):
    # When a supervisor adds a fact citing the customer's message
    response = staff_client.post(
        f"{BASE}/memory/",
        {"content": "预算4500左右", "source_message_ids": [messages[0].pk], "reason": "核对原话"},
        format="json",
    )
    # Then the item comes back as it now is, written by the supervisor
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["type"], body["confidence"], body["created_by"], body["importance"]) == ("fact", 1.0, "human", 5)
    item = MemoryItem.objects.get(pk=body["id"])
    assert item.history.first().history_user_id == staff_user.pk
    assert AuditEvent.objects.get(action="memory_item_added").reason == "核对原话"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"content": "只看电梯房", "type": "opinion"}, "type"),
        ({"content": "只看电梯房", "importance": 0}, "importance"),
        ({"content": ""}, "content"),
        ({"content": "只看电梯房", "confidence": 0.5}, "confidence"),  # unknown on add: humans confirm at 1
        ({"content": "只看电梯房", "expires_at": "明天"}, "expires_at"),
    ],
)
def test_memory_add_invalid_input_is_400_with_reason(staff_client, customer, payload, field):
    response = staff_client.post(f"{BASE}/memory/", {**payload, "reason": "电话确认"}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid" and field in body["errors"] and body["detail"]
    assert not MemoryItem.objects.exists()


def test_memory_add_foreign_source_message_is_400(staff_client, customer):
    foreign = MessageFactory(customer=CustomerFactory(), text="预算一万")
    response = staff_client.post(
        f"{BASE}/memory/", {"content": "预算一万", "source_message_ids": [foreign.pk], "reason": "电话"}, format="json"
    )
    assert response.status_code == 400 and response.json()["code"] == "invalid_source_message"


def test_memory_edit_and_invalid_confidence(staff_client, customer, preference):
    # When a supervisor edits the content and confidence
    response = staff_client.patch(
        f"{BASE}/memory/{preference.pk}/",
        {"content": "更喜欢2号线沿线", "confidence": 0.9, "reason": "客户补充线路"},
        format="json",
    )
    assert response.status_code == 200
    assert (response.json()["content"], response.json()["created_by"]) == ("更喜欢2号线沿线", "human")
    # And an out-of-range confidence is refused with a reason
    response = staff_client.patch(
        f"{BASE}/memory/{preference.pk}/", {"confidence": 1.5, "reason": "调整"}, format="json"
    )
    assert response.status_code == 400 and "confidence" in response.json()["errors"]


def test_memory_edit_can_clear_expiry(staff_client, staff_user, customer):
    item = memory_item_add(
        customer=customer,
        content="本周六看房",
        type=MemoryType.EVENT,
        expires_at=timezone.now() + dt.timedelta(days=1),
        actor=staff_user,
        reason="约看房",
    )
    response = staff_client.patch(
        f"{BASE}/memory/{item.pk}/", {"expires_at": None, "reason": "看房改为长期需求"}, format="json"
    )
    assert response.status_code == 200 and response.json()["expires_at"] is None


def test_memory_confirm_reject_expire_answer_with_item(staff_client, customer, hypothesis, preference):
    response = staff_client.post(f"{BASE}/memory/{hypothesis.pk}/confirm/", {"reason": "客户确认"}, format="json")
    assert response.status_code == 200 and (response.json()["type"], response.json()["confidence"]) == ("fact", 1.0)
    # Confirming a fact is a conflict with a reason
    response = staff_client.post(f"{BASE}/memory/{hypothesis.pk}/confirm/", {"reason": "再确认一次"}, format="json")
    assert response.status_code == 409 and response.json()["code"] == "not_a_hypothesis"
    response = staff_client.post(f"{BASE}/memory/{preference.pk}/reject/", {"reason": "客户否认"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "rejected"
    response = staff_client.post(f"{BASE}/memory/{hypothesis.pk}/expire/", {"reason": "已过时"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "superseded"


def test_memory_confirm_api_makes_a_lasting_fact(staff_client, customer, messages, staff_user):
    # Given a hypothesis written by a supervisor, due to lapse after the hypothesis TTL
    item = memory_item_add(
        customer=customer,
        type=MemoryType.HYPOTHESIS,
        content="可能是为孩子上学换房",
        actor=staff_user,
        reason="电话里提到孩子明年上小学",
    )
    assert item.expires_at is not None
    # When it is confirmed through the API
    response = staff_client.post(f"{BASE}/memory/{item.pk}/confirm/", {"reason": "客户确认要学区房"}, format="json")
    # Then the answer shows a fact without expiry, and the sweep a week later leaves it active
    assert response.status_code == 200
    assert (response.json()["type"], response.json()["expires_at"]) == ("fact", None)
    assert memory_items_expire_due(now=timezone.now() + dt.timedelta(days=8)) == 0
    item.refresh_from_db()
    assert item.status == MemoryStatus.ACTIVE


def test_memory_forget_and_history(staff_client, agent_client, customer, preference):
    # Given a history with the capture row
    history = agent_client.get(f"{BASE}/memory/{preference.pk}/history/").json()["results"]
    assert history[0]["history_change_reason"] == "客户原话" and history[0]["content"] == "更喜欢地铁附近"
    # When it is forgotten
    response = staff_client.delete(f"{BASE}/memory/{preference.pk}/", {"reason": "客户要求"}, format="json")
    assert response.status_code == 200 and response.json()["item_id"] == preference.pk
    # Then it and its history are gone
    assert agent_client.get(f"{BASE}/memory/{preference.pk}/").status_code == 404
    assert agent_client.get(f"{BASE}/memory/{preference.pk}/history/").status_code == 404


def test_memory_item_of_another_customer_is_404(staff_client, customer):
    other = CustomerFactory(conversation_id="wm_li_002")
    item = MemoryItem.objects.create(customer=other, type=MemoryType.FACT, key="fact:x", content="预算8000")
    for method, path in [
        ("get", f"{BASE}/memory/{item.pk}/"),
        ("patch", f"{BASE}/memory/{item.pk}/"),
        ("delete", f"{BASE}/memory/{item.pk}/"),
        ("post", f"{BASE}/memory/{item.pk}/confirm/"),
        ("get", f"{BASE}/memory/abc/"),
    ]:
        response = getattr(staff_client, method)(path, {}, format="json")
        assert response.status_code == 404, (method, path)
        assert response.json()["code"] == "memory_item_not_found"
    assert MemoryItem.objects.get(pk=item.pk).content == "预算8000"


def test_snapshot_current_versions_and_404(agent_client, customer, preference, staff_user):
    memory_item_add(customer=customer, content="预算4500", actor=staff_user, reason="电话")
    body = agent_client.get(f"{BASE}/snapshot/").json()
    assert body["version"] == 2 and "预算4500" in body["content"] and body["char_count"] == len(body["content"])
    assert set(body["item_ids"]) == set(MemoryItem.objects.values_list("pk", flat=True))
    assert agent_client.get(f"{BASE}/snapshot/", {"version": 1}).json()["version"] == 1
    assert [s["version"] for s in agent_client.get(f"{BASE}/snapshots/").json()["results"]] == [2, 1]
    assert agent_client.get(f"{BASE}/snapshot/", {"version": "x"}).status_code == 400
    # A customer with no memory has no snapshot yet
    CustomerFactory(conversation_id="wm_new")
    response = agent_client.get("/api/accounts/acme/conversations/wm_new/snapshot/")
    assert response.status_code == 404 and response.json()["code"] == "snapshot_not_found"


def test_profile_patch_updates_and_clears(staff_client, customer):
    response = staff_client.patch(
        f"{BASE}/profile/", {"budget": "4500", "district": "浦东", "reason": "电话确认"}, format="json"
    )
    assert response.status_code == 200 and response.json()["budget"] == "4500"
    assert MemoryItem.objects.get(key="profile:budget", status=MemoryStatus.ACTIVE).content == "预算：4500"
    response = staff_client.patch(f"{BASE}/profile/", {"budget": "", "reason": "预算待定"}, format="json")
    assert response.status_code == 200 and response.json()["budget"] == ""
    assert not MemoryItem.objects.filter(key="profile:budget", status=MemoryStatus.ACTIVE).exists()
    response = staff_client.patch(f"{BASE}/profile/", {"salary": "3万", "reason": "电话"}, format="json")
    assert response.status_code == 400 and "salary" in response.json()["errors"]


def test_audit_list_filters(agent_client, customer, preference, staff_user):
    customer_profile_update(customer=customer, changes={"city": "上海"}, actor=staff_user, reason="电话")
    body = agent_client.get("/api/accounts/acme/audit/", {"conversation_id": "wm_wang_001"}).json()
    assert {e["action"] for e in body["results"]} >= {"memory_item_captured", "customer_profile_updated"}
    only = agent_client.get("/api/accounts/acme/audit/", {"action": "customer_profile_updated"}).json()
    assert only["count"] == 1 and only["results"][0]["actor_id"] == staff_user.pk
    future = (timezone.now() + dt.timedelta(hours=1)).isoformat()
    assert agent_client.get("/api/accounts/acme/audit/", {"since": future}).json()["count"] == 0
    assert agent_client.get("/api/accounts/acme/audit/", {"until": future}).json()["count"] >= 2
    assert agent_client.get("/api/accounts/acme/audit/", {"since": "昨天"}).status_code == 400


def test_erase_endpoint(staff_client, customer, messages, preference):
    response = staff_client.post(f"{BASE}/erase/", {"reason": "客户要求删除全部数据"}, format="json")
    assert response.status_code == 200 and response.json()["counts"]["conversations.Message"] == 4
    assert not Customer.objects.filter(conversation_id="wm_wang_001").exists()
    assert AuditEvent.objects.get(action="customer_erased").reason == "客户要求删除全部数据"


def governance_requests(item_id: int) -> list[tuple[str, str, dict]]:
    return [
        ("post", f"{BASE}/memory/", {"content": "只看电梯房"}),
        ("patch", f"{BASE}/memory/{item_id}/", {"content": "只看电梯房"}),
        ("delete", f"{BASE}/memory/{item_id}/", {}),
        ("post", f"{BASE}/memory/{item_id}/confirm/", {}),
        ("post", f"{BASE}/memory/{item_id}/reject/", {}),
        ("post", f"{BASE}/memory/{item_id}/expire/", {}),
        ("patch", f"{BASE}/profile/", {"budget": "4500"}),
        ("post", f"{BASE}/erase/", {}),
    ]


def test_governance_endpoints_need_staff(agent_client, customer, hypothesis):
    # When a customer-service agent (a member, not staff) tries every governance write
    for method, path, payload in governance_requests(hypothesis.pk):
        response = getattr(agent_client, method)(path, payload, format="json")
        # Then each is 403 with a reason, and nothing changes
        assert response.status_code == 403, (method, path)
        assert response.json()["code"] == "permission_denied"
    hypothesis.refresh_from_db()
    assert hypothesis.status == MemoryStatus.ACTIVE and MemoryItem.objects.count() == 1
    assert Customer.objects.filter(pk=customer.pk).exists()


def test_governance_endpoints_hide_account_from_staff_without_membership(customer, hypothesis):
    # Given a supervisor of another account
    stranger = client_for(StaffUserFactory())
    for method, path, payload in [*governance_requests(hypothesis.pk), ("get", f"{BASE}/memory/", {})]:
        response = getattr(stranger, method)(path, payload, format="json")
        assert response.status_code == 404, (method, path)
    assert MemoryItem.objects.count() == 1


def test_unknown_conversation_is_404_for_reads_and_item_actions(staff_client, account):
    base = "/api/accounts/acme/conversations/wm_nobody"
    for response in (
        staff_client.get(f"{base}/memory/"),
        staff_client.post(f"{base}/memory/1/confirm/", {}, format="json"),
        staff_client.patch(f"{base}/profile/", {"budget": "4500"}, format="json"),
    ):
        assert response.status_code == 404 and response.json()["code"] == "conversation_not_found"
    assert not Customer.objects.exists()


def test_memory_add_creates_customer_on_first_sight(staff_client, staff_user, account):
    # When a supervisor records a fact before the first message of a conversation is ingested
    response = staff_client.post(
        "/api/accounts/acme/conversations/wm_new_009/memory/",
        {"content": "从门店转介，想租两居室", "reason": "门店转介单"},
        format="json",
    )
    # Then the customer exists (with history by the supervisor) and holds the fact
    assert response.status_code == 201
    customer = Customer.objects.get(conversation_id="wm_new_009")
    assert customer.history.first().history_user_id == staff_user.pk
    assert customer.memory_items.get().content == "从门店转介，想租两居室"


def test_schema_documents_governance_bodies(staff_client):
    response = staff_client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    operation = schema["paths"]["/api/accounts/{account_id}/conversations/{conversation_id}/memory/"]["post"]
    assert "requestBody" in operation and "201" in operation["responses"]
    assert "/api/accounts/{account_id}/audit/" in schema["paths"]
    assert "MemoryItemOutput" in schema["components"]["schemas"]


@pytest.mark.parametrize("count", [3, 30])
def test_memory_list_query_count_does_not_grow_with_items(agent_client, customer, count, django_assert_max_num_queries):
    # Given a customer with many items
    for n in range(count):
        MemoryItem.objects.create(customer=customer, type=MemoryType.FACT, key=f"fact:{n}", content=f"看过第{n}套房")
    # When the list is read, then the account database sees a fixed number of queries
    # (customer, count, page), however many items there are
    with django_assert_max_num_queries(3, connection=connections["acct_acme"]):
        response = agent_client.get(f"{BASE}/memory/")
    assert response.json()["count"] == count


# --- a reason on every governance write -----------------------------------------------------------


def reasonless_requests(item_id: int) -> list[tuple[str, str, dict]]:
    return [
        ("post", f"{BASE}/memory/", {"content": "只看电梯房"}),
        ("patch", f"{BASE}/memory/{item_id}/", {"content": "只看电梯房"}),
        ("post", f"{BASE}/memory/{item_id}/confirm/", {}),
        ("post", f"{BASE}/memory/{item_id}/reject/", {"reason": ""}),
        ("post", f"{BASE}/memory/{item_id}/expire/", {"reason": "   "}),
        ("delete", f"{BASE}/memory/{item_id}/", {}),
        ("patch", f"{BASE}/profile/", {"budget": "4500"}),
        ("post", f"{BASE}/erase/", {}),
    ]


def test_governance_writes_without_a_reason_are_400_reason_required(staff_client, customer, hypothesis):
    # given a supervisor and a hypothesis waiting for them
    audit_rows = AuditEvent.objects.count()
    for method, path, payload in reasonless_requests(hypothesis.pk):
        # when they confirm, reject, expire, forget, edit, add, edit the profile or erase without saying why
        response = getattr(staff_client, method)(path, payload, format="json")
        # then each is a JSON 400 with its own code and a Chinese reason
        assert response.status_code == 400, (method, path, response.content)
        body = response.json()
        assert body["code"] == "reason_required", (method, path, body)
        assert "原因" in body["detail"] and "reason" in body["errors"]
    # and nothing changed: the hypothesis waits, the customer is there, no audit row was written
    hypothesis.refresh_from_db()
    assert (hypothesis.type, hypothesis.status, hypothesis.content) == (
        MemoryType.HYPOTHESIS,
        MemoryStatus.ACTIVE,
        "可能在陆家嘴上班",
    )
    assert Customer.objects.filter(pk=customer.pk).exists() and MemoryItem.objects.count() == 1
    assert AuditEvent.objects.count() == audit_rows


def test_governance_reason_error_keeps_other_field_errors(staff_client, customer):
    # when an add has both a bad type and no reason
    response = staff_client.post(f"{BASE}/memory/", {"content": "只看电梯房", "type": "opinion"}, format="json")
    # then the reason is named first, and the type error travels along
    body = response.json()
    assert response.status_code == 400 and body["code"] == "reason_required"
    assert set(body["errors"]) == {"reason", "type"}


def test_schema_documents_the_reason_as_required(staff_client):
    schema = staff_client.get("/api/schema/", {"format": "json"}).json()
    body = schema["components"]["schemas"]["GovernanceReasonInputRequest"]
    assert "reason" in body["required"]
