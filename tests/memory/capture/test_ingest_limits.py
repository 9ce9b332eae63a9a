"""Ingest limits (issue 11 item 2): the documented largest batch fits the upload limit, a larger body
is a 413 naming the limit, a message dated past the allowed clock skew is refused with a reason, and
identifiers are strings, never coerced."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.conf import settings
from django.utils import timezone

from conversations.models import Customer, Message
from memory.capture.ingest import MAX_BATCH, MAX_TEXT_CHARS, messages_ingest
from qiwei_site.platform.errors import ValidationFailed

URL = "/api/accounts/acme/conversations/wm_conv_limits/messages/"
DOCUMENTED_TEXT_CHARS = 1800
PHRASE = "您好我想咨询一下浦东新区张江地铁站附近的两居室月租六千以内可以养猫吗"


def _cjk_text(chars: int) -> str:
    return (PHRASE * (chars // len(PHRASE) + 1))[:chars]


def _documented_batch() -> list[dict[str, str]]:
    """MAX_BATCH outbound messages of 1,800 CJK characters, with long ids and senders."""
    base = timezone.now() - dt.timedelta(days=1)
    return [
        {
            "external_id": f"wx_batch_{n:04d}_" + "x" * 100,
            "direction": "outbound",  # no capture jobs: this test is about the transport
            "text": _cjk_text(DOCUMENTED_TEXT_CHARS),
            "sender": "客服小李" * 25,
            "sent_at": (base + dt.timedelta(seconds=n)).isoformat(),
        }
        for n in range(MAX_BATCH)
    ]


@pytest.mark.long
def test_ingest_documented_largest_batch_fits_even_ascii_escaped(agent_client):
    # given the largest documented batch, encoded the way Python clients do by default (\uXXXX)
    body = json.dumps(_documented_batch()).encode()
    assert DOCUMENTED_TEXT_CHARS <= MAX_TEXT_CHARS
    assert len(body) > 5_000_000  # well past Django's 2.5 MB default
    # when it is posted
    response = agent_client.generic("POST", URL, data=body, content_type="application/json")
    # then every message is stored
    assert response.status_code == 201, response.content[:300]
    assert response.json()["created"] == MAX_BATCH
    assert Message.objects.count() == MAX_BATCH


def test_ingest_body_over_the_limit_is_413_naming_it(agent_client):
    # given a body one byte over the upload limit
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    head, tail = b'[{"external_id": "wx_big", "text": "', b'"}]'
    body = head + b"a" * (limit + 1 - len(head) - len(tail)) + tail
    assert len(body) == limit + 1
    # when it is posted
    response = agent_client.generic("POST", URL, data=body, content_type="application/json")
    # then it is a JSON 413 that names the limit, and nothing was stored
    assert response.status_code == 413 and response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "request_too_large"
    assert str(limit) in response.json()["detail"] and response.json()["limit_bytes"] == limit
    assert Customer.objects.count() == 0


def test_ingest_form_encoded_body_is_415(agent_client):
    # given a form post of a message
    response = agent_client.post(URL, {"external_id": "wx_form", "text": "预算五千"}, format="multipart")
    # then it is refused: the API takes JSON only
    assert response.status_code == 415 and response.json()["code"] == "unsupported_media_type"
    assert Message.objects.count() == 0


def _sent_at(seconds_from_now: int) -> str:
    return (timezone.now() + dt.timedelta(seconds=seconds_from_now)).isoformat()


def test_ingest_sent_at_within_the_clock_skew_is_stored(agent_client):
    # given a message dated two minutes ahead (the gateway's clock runs fast)
    payload = {"external_id": "wx_skew_ok", "text": "明天上午十点看房可以吗", "sent_at": _sent_at(120)}
    # when it is ingested / then it is stored as dated
    assert agent_client.post(URL, payload, format="json").status_code == 201


def test_ingest_sent_at_beyond_the_clock_skew_is_refused_with_a_reason(agent_client):
    # given a message dated ten minutes ahead, and one in 2099
    for sent_at in (_sent_at(600), "2099-12-31T23:59:59+08:00"):
        payload = {"external_id": "wx_skew_far", "text": "明天上午十点看房可以吗", "sent_at": sent_at}
        # when it is ingested
        response = agent_client.post(URL, payload, format="json")
        # then it is a 400 that says why, and it never becomes "the latest customer message"
        assert response.status_code == 400, sent_at
        body = response.json()
        assert body["code"] == "invalid_message" and "sent_at" in body["detail"] and "300" in body["detail"]
    assert Message.objects.count() == 0


def test_ingest_clock_skew_follows_the_setting(account, settings):
    # given an operator who allows one hour of skew
    settings.QIWEI_INGEST_MAX_FUTURE_SKEW_SECONDS = 3600
    message = {"external_id": "wx_skew_hour", "text": "今晚八点方便电话吗", "sent_at": _sent_at(1800)}
    # when a message half an hour ahead is ingested / then it is stored
    assert len(messages_ingest(conversation_id="wm_conv_limits", messages=[message], actor="wecom").created) == 1
    # and with no skew allowed, the same date is refused
    settings.QIWEI_INGEST_MAX_FUTURE_SKEW_SECONDS = 0
    message["external_id"] = "wx_skew_none"
    with pytest.raises(ValidationFailed, match="sent_at"):
        messages_ingest(conversation_id="wm_conv_limits", messages=[message], actor="wecom")


@pytest.mark.parametrize("value", [True, False, 0, 12345, 1.5, None, ["wx"], {"id": "wx"}])
def test_ingest_external_id_must_be_a_string(account, value):
    # given a message whose external id is not a string
    message = {"external_id": value, "text": "预算六千以内"}
    # when it is ingested / then it is refused, never stored as "True" or "12345"
    with pytest.raises(ValidationFailed, match="external_id") as raised:
        messages_ingest(conversation_id="wm_conv_limits", messages=[message], actor="wecom")
    assert raised.value.code == "invalid_message"
    assert Message.objects.count() == 0


@pytest.mark.parametrize(
    "conversation_id", ["wm\tconv", "wm\nconv", "wm\u202econv", "wm..conv", "../wm", "wm/conv", "wm\x00", "", "w" * 129]
)
def test_ingest_conversation_id_is_validated_on_every_path(account, conversation_id):
    # given a conversation id with a control, bidi or path character (or none, or too long)
    message = {"external_id": "wx_cid", "text": "我想租两居室"}
    # when a service caller ingests for it / then it is refused and no customer is created
    with pytest.raises(ValidationFailed, match="conversation_id") as raised:
        messages_ingest(conversation_id=conversation_id, messages=[message], actor="wecom")
    assert raised.value.code == "invalid_conversation_id"
    assert Customer.objects.count() == 0


def test_ingest_lone_surrogate_from_a_service_caller_is_refused(account):
    # given a Python caller passing text with a lone surrogate (the API refuses it at parsing)
    message = {"external_id": "wx_sur", "text": "预算\ud800五千", "sender": "王先生"}
    # when it is ingested / then it is a 400-class error, not a database crash
    with pytest.raises(ValidationFailed, match="text"):
        messages_ingest(conversation_id="wm_conv_limits", messages=[message], actor="wecom")
