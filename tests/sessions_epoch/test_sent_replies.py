"""Sent replies join the thread, and an answered customer message gets no second draft by accident
(issue 12, item 3)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from conversations.drafts import draft_approve, draft_send, reply_external_id
from conversations.models import Message, MessageDirection
from memory.capture.ingest import messages_ingest
from memory.context.builder import RECENT_CONVERSATION, build_context
from qiwei_site.platform.errors import Conflict
from sessions_epoch.clients import OfflineClient
from sessions_epoch.pipeline import draft_generate

REPLY = "陈小姐您好，静安寺附近的一居室有两套，周六上午方便看房吗？"


@pytest.fixture
def customer(account):
    from conversations.selectors import customer_get

    messages_ingest(
        conversation_id="wm_chen",
        messages=[
            {
                "external_id": "chen-1",
                "direction": "inbound",
                "text": "想在静安寺附近租一居室，预算7000左右",
                "sender": "陈小姐",
                "sent_at": (timezone.now() - dt.timedelta(minutes=10)).isoformat(),
            }
        ],
        actor="wecom",
    )
    return customer_get("wm_chen")


def _sent(customer, staff_user):
    draft = draft_generate(customer=customer, actor=staff_user, client=OfflineClient())
    draft = draft_approve(draft=draft, actor=staff_user, reason="改写", text=REPLY)
    delivery = draft_send(draft=draft, actor=staff_user)
    return draft, delivery


def test_sent_reply_joins_the_thread_once(customer, staff_user):
    # given a reviewed reply that is sent, then sent again by a retrying client
    draft, delivery = _sent(customer, staff_user)
    draft_send(draft=draft, actor=staff_user)
    # then it is one outbound, effective message keyed by its delivery
    replies = Message.objects.filter(customer=customer, external_id=reply_external_id(delivery.pk))
    assert replies.count() == 1
    reply = replies.get()
    assert (reply.direction, reply.text, reply.is_effective) == (MessageDirection.OUTBOUND, REPLY, True)


def test_sent_reply_appears_once_in_the_next_context(customer, staff_user):
    # given a sent reply and the customer's next message
    _sent(customer, staff_user)
    messages_ingest(
        conversation_id="wm_chen",
        messages=[{"external_id": "chen-2", "direction": "inbound", "text": "周六上午可以", "sender": "陈小姐"}],
        actor="wecom",
    )
    # when the next context is built
    context = build_context(customer=customer)
    recent = next(s.text for s in context.sections if s.name == RECENT_CONVERSATION)
    # then the model sees what we already told the customer, once
    assert recent.count("静安寺附近的一居室有两套") == 1


def test_second_draft_for_an_answered_message_is_refused(customer, staff_user):
    # given the latest customer message was answered
    draft, _delivery = _sent(customer, staff_user)
    # when another draft is asked for, then it is refused naming the answering draft
    with pytest.raises(Conflict) as refused:
        draft_generate(customer=customer, actor=staff_user, client=OfflineClient())
    assert refused.value.code == "already_answered" and refused.value.extra == {"draft_id": draft.pk}
    # unless the agent asks to regenerate
    assert draft_generate(customer=customer, actor=staff_user, client=OfflineClient(), regenerate=True).pk


def test_drafts_api_answers_409_for_an_answered_message_and_201_with_regenerate(customer, staff_user, staff_client):
    _sent(customer, staff_user)
    url = "/api/accounts/acme/conversations/wm_chen/drafts/"
    refused = staff_client.post(url, {}, format="json")
    assert refused.status_code == 409
    assert refused.json()["code"] == "already_answered"
    assert staff_client.post(url, {"regenerate": True}, format="json").status_code == 201
