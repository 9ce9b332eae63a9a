"""Regression (found by schemathesis): a message dated outside 2000–2099 is refused with a 400.

Year 1222 was stored and then served as "1222-10-30T02:40:38+08:05:43" (Shanghai's local mean
time), which is not an RFC 3339 date-time; year 4899 became the customer's latest message forever."""

from __future__ import annotations

import pytest

from conversations.models import Message

URL = "/api/accounts/acme/conversations/wm_conv_dates/messages/"


@pytest.mark.parametrize(
    "sent_at", ["1222-10-30T02:40:38+08:00", "1999-12-31T23:59:59+00:00", "4899-03-01T22:07:34+08:00"]
)
def test_ingest_sent_at_outside_2000_2099_is_rejected(agent_client, sent_at):
    # given a message whose date cannot be a WeCom message
    payload = {"external_id": "wx_date_1", "text": "周六上午可以看房吗？", "sent_at": sent_at}
    # when it is ingested
    response = agent_client.post(URL, payload, format="json")
    # then it is a 400 that names the field, and nothing was stored
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_message"
    assert "sent_at" in response.json()["detail"]
    assert Message.objects.count() == 0


def test_ingest_sent_at_inside_range_is_served_as_rfc3339(agent_client):
    # given a message from the first second of 2000 (UTC)
    payload = {"external_id": "wx_date_2", "text": "我想租地铁附近的两居室", "sent_at": "2000-01-01T00:00:00+00:00"}
    # when it is ingested
    response = agent_client.post(URL, payload, format="json")
    # then it is stored and served with a whole-minute offset
    assert response.status_code == 201
    assert response.json()["messages"][0]["sent_at"] == "2000-01-01T08:00:00+08:00"
