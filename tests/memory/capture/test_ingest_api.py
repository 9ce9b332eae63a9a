"""POST/GET /api/accounts/{account}/conversations/{id}/messages/: idempotent ingest, 400 with a reason."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.models import Customer, Message
from memory.models import CaptureJob
from tests.memory.conftest import wecom_message

URL = "/api/accounts/acme/conversations/wm_conv_api/messages/"


def test_ingest_api_creates_customer_and_is_idempotent_on_external_id(agent_client):
    # Given a batch from WeCom
    batch = [
        wecom_message("你好，我想在浦东新区租个两居室", external_id="wx_1"),
        wecom_message("好的，请问预算多少？", direction="outbound", external_id="wx_2"),
        wecom_message("预算6000以内", external_id="wx_3"),
    ]
    # When an agent (not staff) posts it twice
    first = agent_client.post(URL, batch, format="json")
    second = agent_client.post(URL, batch, format="json")
    # Then the customer and messages exist once, and only inbound messages were queued once
    assert first.status_code == 201 and second.status_code == 201
    assert (first.json()["created"], first.json()["duplicates"]) == (3, 0)
    assert (second.json()["created"], second.json()["duplicates"]) == (0, 3)
    assert {m["external_id"] for m in second.json()["messages"]} == {"wx_1", "wx_2", "wx_3"}
    assert Customer.objects.get().conversation_id == "wm_conv_api"
    assert Message.objects.count() == 3 and CaptureJob.objects.count() == 2
    assert Customer.objects.get().last_message_at is not None


def test_ingest_api_accepts_a_single_object(agent_client):
    response = agent_client.post(URL, wecom_message("叫我小陈就行"), format="json")
    assert response.status_code == 201
    message = response.json()["messages"][0]
    assert set(message) == {"id", "external_id", "direction", "sender", "text", "sent_at", "is_effective"}


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"external_id": "x1", "direction": "sideways", "text": "你好"}, "direction"),
        ({"external_id": "x1", "text": "   "}, "text"),
        ({"external_id": "", "text": "你好"}, "external_id"),
        ({"external_id": "x" * 129, "text": "你好"}, "external_id"),
        ({"external_id": "x1", "text": "你好", "sent_at": "昨天下午"}, "sent_at"),
        ({"external_id": "x1", "text": "你好", "sent_at": "2026-11-02T10:00:00"}, "时区"),
        ({"external_id": "x1", "text": "长" * 8001}, "text"),
        ([], "至少需要一条消息"),
        ("就一句话", "JSON 对象"),
    ],
)
def test_ingest_api_rejects_bad_input_with_reason(agent_client, payload, reason):
    response = agent_client.post(URL, payload, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_message" or response.json()["code"] == "invalid"
    assert reason in response.json()["detail"]
    assert Message.objects.count() == 0


def test_ingest_api_bad_message_in_batch_stores_nothing(agent_client):
    batch = [wecom_message("我想要地铁附近的"), {"external_id": "bad", "direction": "inbound", "text": ""}]
    response = agent_client.post(URL, batch, format="json")
    assert response.status_code == 400 and "第 2 条消息" in response.json()["detail"]
    assert Message.objects.count() == 0


def test_message_list_api_newest_first_with_direction_filter(agent_client):
    agent_client.post(
        URL,
        [
            wecom_message("第一条：想看两居室", minutes=1),
            wecom_message("好的，已为您筛选", direction="outbound", minutes=2),
            wecom_message("第三条：周六可以看房", minutes=3),
        ],
        format="json",
    )
    response = agent_client.get(URL)
    texts = [m["text"] for m in response.json()["results"]]
    assert texts == ["第三条：周六可以看房", "好的，已为您筛选", "第一条：想看两居室"]
    inbound = agent_client.get(URL, {"direction": "inbound"}).json()["results"]
    assert [m["direction"] for m in inbound] == ["inbound", "inbound"]
    assert agent_client.get(URL, {"direction": "nope"}).status_code == 400


def test_message_list_api_search_and_unknown_conversation(agent_client):
    agent_client.post(URL, [wecom_message("想要地铁附近的两居室"), wecom_message("周六下午方便看房")], format="json")
    found = agent_client.get(URL, {"q": "看房"}).json()["results"]
    assert any("看房" in m["text"] for m in found)
    assert agent_client.get("/api/accounts/acme/conversations/nobody/messages/").status_code == 404


def test_ingest_api_needs_membership(other_account, agent_client):
    response = agent_client.post(
        "/api/accounts/globex/conversations/c1/messages/", wecom_message("你好"), format="json"
    )
    assert response.status_code == 404


def test_ingest_api_moves_the_last_message_time_forward_only_and_writes_no_customer_revision(agent_client):
    # Given a customer created by a first message (one revision: the creation)
    assert (
        agent_client.post(URL, wecom_message("想在徐汇找一居室", external_id="wx_t1"), format="json").status_code == 201
    )
    customer = Customer.objects.get(conversation_id="wm_conv_api")
    first_at, revisions = customer.last_message_at, customer.history.count()
    # When a later message arrives, and then one sent earlier (a late delivery)
    later = wecom_message("预算五千左右", external_id="wx_t2")
    later["sent_at"] = (first_at + dt.timedelta(minutes=5)).isoformat()
    earlier = wecom_message("之前说的地铁口那套还在吗", external_id="wx_t0")
    earlier["sent_at"] = (first_at - dt.timedelta(hours=1)).isoformat()
    assert agent_client.post(URL, later, format="json").status_code == 201
    assert agent_client.post(URL, earlier, format="json").status_code == 201
    # Then the last message time is the later message's, never moved back by the late one
    customer.refresh_from_db()
    assert customer.last_message_at == first_at + dt.timedelta(minutes=5)
    # And the customer's revision trail holds no row per message (messages are their own record)
    assert customer.history.count() == revisions
