"""Inputs that used to crash the API with a 500 (found in review) are now 400s with a reason."""

from __future__ import annotations

from tests.factories import CustomerFactory


def test_message_search_with_nul_byte_is_400(account, staff_client):
    CustomerFactory(conversation_id="wm_nul")
    response = staff_client.get("/api/accounts/acme/conversations/wm_nul/messages/", {"q": "地铁\x00两居"})
    assert response.status_code == 400 and response.json()["code"] == "invalid_query"


def test_ingest_text_with_nul_byte_is_400(account, staff_client):
    body = {"external_id": "m1", "direction": "inbound", "text": "我预算\x003000", "sender": "客户"}
    response = staff_client.post("/api/accounts/acme/conversations/wm_nul/messages/", body, format="json")
    assert response.status_code == 400


def test_memory_add_with_huge_source_message_id_is_400(account, staff_client):
    CustomerFactory(conversation_id="wm_big")
    body = {"content": "客户是教师", "source_message_ids": [9223372036854775808]}
    response = staff_client.post("/api/accounts/acme/conversations/wm_big/memory/", body, format="json")
    assert response.status_code == 400
