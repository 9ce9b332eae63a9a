"""GET/POST …/conversations/{id}/messages/ quote messages masked (issue 14); the stored text is untouched."""

from __future__ import annotations

from conversations.models import Message
from conversations.received import received_text
from tests.memory.conftest import wecom_message

URL = "/api/accounts/acme/conversations/wm_zhao_002/messages/"
WITH_NUMBERS = "周六下午方便看房，电话13912345678，身份证310101198511204568"
WITH_PASSWORD = "门锁密码是 0825，看房时直接进"


def _post(client) -> None:
    response = client.post(
        URL,
        [wecom_message(WITH_NUMBERS, minutes=1), wecom_message(WITH_PASSWORD, minutes=2)],
        format="json",
    )
    assert response.status_code == 201


def test_message_list_api_answers_masked_text(agent_client):
    # given a customer who sent a mobile, an ID number and a door code
    _post(agent_client)
    # when an agent lists the conversation's messages
    texts = [m["text"] for m in agent_client.get(URL).json()["results"]]
    # then the numbers and the code are masked, the rest reads as sent
    assert texts == ["门锁密码是 ••••••，看房时直接进", "周六下午方便看房，电话139****5678，身份证3101**********4568"]
    # and the stored messages hold the masked text only, the words as received sealed beside them
    assert sorted(Message.objects.values_list("text", flat=True)) == sorted(texts)
    assert sorted(received_text(m) for m in Message.objects.all()) == sorted([WITH_NUMBERS, WITH_PASSWORD])


def test_message_search_api_answers_masked_text(agent_client):
    # given the same messages
    _post(agent_client)
    # when an agent searches them by a word that both contain
    found = agent_client.get(URL, {"q": "看房"}).json()["results"]
    # then every hit is quoted masked
    body = " ".join(m["text"] for m in found)
    assert "看房" in body
    assert "13912345678" not in body and "310101198511204568" not in body and "0825" not in body


def test_message_ingest_api_echoes_masked_text(agent_client):
    # when a message with a mobile is ingested
    response = agent_client.post(URL, wecom_message("手机 138 1234 5678，晚上联系"), format="json")
    # then the answer quotes it masked too
    assert response.json()["messages"][0]["text"] == "手机 138****5678，晚上联系"
