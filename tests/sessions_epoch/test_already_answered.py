"""A draft for a customer message our side already replied to (issue 39, item 1): the model sees the
replies and is told so, the draft says so, and the pipeline never sends it by itself. An explicit
request still generates it; the customer's next message clears the flag."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.drafts import draft_approve, draft_send
from conversations.gateway import LoopbackGateway
from conversations.models import Delivery, DraftStatus, Message, MessageDirection, SessionMode
from memory.context.builder import ALREADY_ANSWERED_NOTE
from memory.providers import LocalMemoryProvider
from sessions_epoch import pipeline
from sessions_epoch.clients import ModelClient, ModelResult
from sessions_epoch.pipeline import ALREADY_ANSWERED_REASON, draft_generate
from tests.factories import CustomerFactory, MessageFactory

BASE = "/api/accounts/acme"
AGENT_REPLY = "好的小张，五千左右望京的一居室有三套，这周六上午可以带您看。"


class ConfidentClient(ModelClient):
    """A model sure enough of its answer that auto-send would take it; records its prompts."""

    name = "scripted"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def generate(self, *, prompt, session, hints=None):
        self.prompts.append(prompt)
        output = {
            "reply": "好的小张，以后就这么称呼您。望京一居室五千左右的房源我整理好发您。",
            "confidence": 0.95,
            "requiresHuman": False,
            "profileUpdates": {},
            "reasons": ["客户希望被称呼为小张"],
        }
        return ModelResult(client=self.name, output=output, raw_text=str(output), session_id=session.session_id)


@pytest.fixture
def zhang(account, settings):
    """张先生, whitelisted for auto-send, asked to be called 小张; the agent answered him from the
    WeCom app (the reply arrived as an outbound message, not through a draft)."""
    settings.QIWEI_AUTO_SEND_CONFIDENCE = 0.85
    customer = CustomerFactory(
        conversation_id="wm_zhang", display_name="张先生", auto_send_whitelisted=True, session_mode=SessionMode.AUTO
    )
    start = dt.datetime(2026, 12, 6, 10, 0, tzinfo=dt.UTC)
    asked = MessageFactory(customer=customer, sender="张先生", text="叫我小张就行，预算五千左右", sent_at=start)
    reply = MessageFactory(
        customer=customer,
        direction=MessageDirection.OUTBOUND,
        sender="顾问小李",
        text=AGENT_REPLY,
        sent_at=start + dt.timedelta(minutes=2),
    )
    return customer, asked, reply


def test_draft_for_an_answered_message_shows_the_reply_and_is_not_auto_sent(zhang):
    # given the agent already answered 张先生's latest message
    customer, asked, reply = zhang
    client = ConfidentClient()
    # when a confident draft is generated for it
    draft = draft_generate(customer=customer, actor="pipeline", client=client)
    # then the model saw the agent's reply and the note
    (prompt,) = client.prompts
    assert AGENT_REPLY in prompt and ALREADY_ANSWERED_NOTE in prompt
    assert prompt.index("叫我小张就行") > prompt.index(AGENT_REPLY)  # the answered message is still the latest
    # and the draft answers that message and says it was already answered
    assert draft.reply_to_id == asked.pk
    assert draft.context_trace["already_answered"] is True
    assert draft.context_trace["answered_by_message_ids"] == [reply.pk]
    assert draft.reasons[0] == ALREADY_ANSWERED_REASON
    # and it waits for review: nothing was sent
    assert draft.status == DraftStatus.PENDING
    assert not Delivery.objects.exists()
    assert LoopbackGateway.sent_records() == []


def test_customer_message_after_the_reply_clears_the_flag_and_auto_send_applies(zhang):
    # given 张先生 wrote again after the agent's reply
    customer, _asked, reply = zhang
    again = MessageFactory(
        customer=customer,
        sender="张先生",
        text="周六上午可以，几点见？",
        sent_at=reply.sent_at + dt.timedelta(minutes=1),
    )
    # when a confident draft is generated
    draft = draft_generate(customer=customer, actor="pipeline", client=ConfidentClient())
    # then it answers his new message, is not flagged, and auto-send took it as before
    assert draft.reply_to_id == again.pk
    assert draft.context_trace["already_answered"] is False
    assert ALREADY_ANSWERED_REASON not in draft.reasons
    assert draft.status == DraftStatus.SENT


def test_regenerated_draft_sees_the_reply_a_sent_draft_delivered(account, staff_user, settings):
    # given 张先生's message was answered by a reviewed draft that was sent
    customer = CustomerFactory(conversation_id="wm_zhang", display_name="张先生")
    MessageFactory(customer=customer, sender="张先生", text="叫我小张就行")
    first = draft_generate(customer=customer, actor=staff_user, client=ConfidentClient())
    draft_send(draft=draft_approve(draft=first, actor=staff_user, text=AGENT_REPLY), actor=staff_user)
    delivered = Message.objects.get(customer=customer, direction=MessageDirection.OUTBOUND)
    # and 张先生 is now whitelisted for auto-send
    settings.QIWEI_AUTO_SEND_CONFIDENCE = 0.85
    customer.auto_send_whitelisted, customer.session_mode = True, SessionMode.AUTO
    customer.save()
    client = ConfidentClient()
    # when the agent asks to regenerate anyway
    draft = draft_generate(customer=customer, actor=staff_user, client=client, regenerate=True)
    # then the model saw the delivered reply, the draft is flagged, and nothing more was sent
    assert delivered.text == AGENT_REPLY and AGENT_REPLY in client.prompts[0]
    assert draft.context_trace["answered_by_message_ids"] == [delivered.pk]
    assert draft.status == DraftStatus.PENDING
    assert Delivery.objects.count() == 1


def test_explicit_generate_request_still_generates_a_flagged_draft(agent_client, zhang, monkeypatch):
    # given the agent answered 张先生 from the WeCom app, and a model that would auto-send
    customer, _asked, reply = zhang
    monkeypatch.setattr(pipeline, "get_client", ConfidentClient)
    # when the agent presses 生成草稿 (no regenerate)
    response = agent_client.post(f"{BASE}/conversations/{customer.conversation_id}/drafts/", {}, format="json")
    # then a draft is made, says it was already answered, and waits for review
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["context_trace"]["already_answered"] is True
    assert body["context_trace"]["answered_by_message_ids"] == [reply.pk]
    assert body["reasons"][0] == ALREADY_ANSWERED_REASON
    assert body["status"] == "pending"


def test_degraded_context_still_holds_an_answered_draft(zhang, monkeypatch):
    # given memory cannot build a context at all
    customer, _asked, reply = zhang

    class BrokenPrefetch(LocalMemoryProvider):
        def prefetch(self, request):
            raise RuntimeError("database is locked")

    monkeypatch.setattr(pipeline, "get_provider", BrokenPrefetch)
    # when a confident draft is generated from the degraded context
    draft = draft_generate(customer=customer, actor="pipeline", client=ConfidentClient())
    # then the pipeline found the reply itself and held the draft
    assert draft.context_trace["fallback"] is True
    assert draft.context_trace["answered_by_message_ids"] == [reply.pk]
    assert draft.status == DraftStatus.PENDING
    assert not Delivery.objects.exists()
