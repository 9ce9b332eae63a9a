"""Forgetting a message reaches the drafts made from it (issue 36, item 4): a draft answering it loses
its reply, final text, history and delivery text; a draft whose prompt showed it loses its words from
the prompt; a profile update resting on it goes. Nothing the forgotten message said survives in a
draft row, its history or the API."""

from __future__ import annotations

import pytest

from conversations.drafts import draft_approve, draft_send
from conversations.models import AuditEvent, Delivery, Draft
from memory.governance.messages import message_forget
from memory.governance.scrub import FORGOTTEN_MARK
from sessions_epoch.clients import ModelClient, ModelResult
from sessions_epoch.pipeline import draft_generate
from tests.factories import CustomerFactory, MessageFactory

REASON = "客户要求删除这条消息"
SAID = "我家在望京花园东区三号楼，预算五千二左右"


class ScriptedClient(ModelClient):
    """Answers every turn with one model output."""

    name = "scripted"

    def __init__(self, output):
        self.output = output

    def generate(self, *, prompt, session, hints=None):
        return ModelResult(
            client=self.name, output=self.output, raw_text=str(self.output), session_id=session.session_id
        )


def _answer(reply: str, **updates):
    return {
        "reply": reply,
        "confidence": 0.9,
        "requiresHuman": False,
        "profileUpdates": updates,
        "reasons": ["预算明确"],
    }


@pytest.fixture
def customer(account):
    return CustomerFactory(conversation_id="wm_forget_drafts_01", display_name="陈先生")


def test_message_forget_scrubs_the_draft_answering_it(customer, staff_user):
    # Given a draft answering the message, approved and delivered, with a profile update it grounded
    said = MessageFactory(customer=customer, text=SAID)
    client = ScriptedClient(
        _answer("陈先生您好，望京花园东区附近五千二的两居室有两套，周六看房方便吗？", budget="5200")
    )
    draft = draft_generate(customer=customer, actor="pipeline", client=client)
    assert draft.reply_to_id == said.pk and SAID in draft.prompt
    draft = draft_approve(draft=draft, actor="agent-1", text="陈先生您好，望京花园东区附近有两套，周六看房方便吗？")
    draft_send(draft=draft, actor="agent-1")
    assert Delivery.objects.filter(draft=draft).exists()
    # When the message is forgotten
    result = message_forget(message=said, actor=staff_user, reason=REASON)
    # Then the draft keeps no word of it: reply, final text, prompt, profile updates, history, delivery
    draft.refresh_from_db()
    assert result["drafts_scrubbed"] == [draft.pk]
    assert draft.reply == FORGOTTEN_MARK and draft.final_text in ("", FORGOTTEN_MARK)
    assert draft.profile_updates == {}
    assert SAID not in draft.prompt and "望京花园东区三号楼" not in draft.prompt
    for row in Draft.history.filter(id=draft.pk):
        assert "望京花园" not in (row.reply or "") + (row.final_text or "")
        assert not row.profile_updates
    for delivery in Delivery.objects.filter(draft=draft):
        assert "望京花园" not in delivery.text
    # And the audit counts the draft
    assert AuditEvent.objects.get(action="message_forgotten").payload["drafts_scrubbed"] == [draft.pk]


def test_message_forget_removes_its_words_from_a_later_drafts_prompt(customer, staff_user):
    # Given a message shown in the recent history of a later draft answering another message
    said = MessageFactory(customer=customer, text=SAID)
    MessageFactory(customer=customer, text="周六上午可以看房吗")
    client = ScriptedClient(_answer("陈先生您好，周六上午可以安排看房。"))
    draft = draft_generate(customer=customer, actor="pipeline", client=client)
    assert draft.reply_to_id != said.pk and SAID in draft.prompt
    # When the earlier message is forgotten
    message_forget(message=said, actor=staff_user, reason=REASON)
    # Then the later draft's prompt has lost its words but keeps its own question and its reply
    draft.refresh_from_db()
    assert SAID not in draft.prompt and FORGOTTEN_MARK in draft.prompt
    assert "周六上午可以看房吗" in draft.prompt
    assert draft.reply == "陈先生您好，周六上午可以安排看房。"
    # And the trace's section offsets still split the stored prompt
    sections = draft.context_trace.get("prompt_sections") or []
    assert sum(section["end"] - section["start"] for section in sections) <= len(draft.prompt)
    for section in sections:
        assert 0 <= section["start"] <= section["end"] <= len(draft.prompt)


def test_message_forget_removes_a_short_messages_words_from_a_later_drafts_prompt(customer, staff_user):
    # Given a short message (under the length every kept text is scrubbed for) shown in the recent
    # history of a later draft answering another message. (The regression drill found this: a
    # draft that only showed the message was skipped, and only a long message's words went anyway.)
    said = MessageFactory(customer=customer, text="我姓欧阳")
    MessageFactory(customer=customer, text="周六上午可以看房吗")
    draft = draft_generate(
        customer=customer, actor="pipeline", client=ScriptedClient(_answer("您好，周六上午可以安排看房。"))
    )
    assert "我姓欧阳" in draft.prompt
    # When it is forgotten
    result = message_forget(message=said, actor=staff_user, reason=REASON)
    # Then the draft that showed it has lost its words, and the audit counts that draft
    draft.refresh_from_db()
    assert "我姓欧阳" not in draft.prompt
    assert result["drafts_scrubbed"] == [draft.pk]


def test_message_forget_scrubs_the_models_raw_error_words_in_a_failed_drafts_trace(customer, staff_user):
    # Given a failed draft whose model echoed the customer's words in its raw error body (kept only in
    # the trace: the draft's error is the Chinese summary)
    said = MessageFactory(customer=customer, text=SAID)
    MessageFactory(customer=customer, text="周六上午可以看房吗")
    draft = draft_generate(customer=customer, actor="pipeline", client=ScriptedClient(_answer("好的")))
    trace = {**draft.context_trace, "model": {"client": "openai", "error_detail": f'{{"error": "bad input: {SAID}"}}'}}
    Draft.objects.filter(pk=draft.pk).update(context_trace=trace, reply="", error="模型服务返回错误（HTTP 500）")
    Draft.history.filter(id=draft.pk).update(context_trace=trace)
    # When the message is forgotten
    message_forget(message=said, actor=staff_user, reason=REASON)
    # Then its words are gone from the trace's error words, in the row and its history
    draft.refresh_from_db()
    assert SAID not in draft.context_trace["model"]["error_detail"]
    assert "bad input" in draft.context_trace["model"]["error_detail"]
    history = Draft.history.filter(id=draft.pk).values_list("context_trace", flat=True)
    assert history and not any(SAID in str(row) for row in history)


def test_message_forget_leaves_other_customers_drafts_alone(customer, staff_user):
    # Given another customer whose draft says the same words
    said = MessageFactory(customer=customer, text=SAID)
    other = CustomerFactory(conversation_id="wm_forget_drafts_02")
    MessageFactory(customer=other, text=SAID)
    theirs = draft_generate(
        customer=other, actor="pipeline", client=ScriptedClient(_answer("您好，望京花园东区有房。"))
    )
    # When this customer's message is forgotten
    result = message_forget(message=said, actor=staff_user, reason=REASON)
    # Then the other customer's draft is untouched
    theirs.refresh_from_db()
    assert result["drafts_scrubbed"] == [] and SAID in theirs.prompt and theirs.reply == "您好，望京花园东区有房。"


def test_message_forget_api_shows_the_scrubbed_draft(customer, staff_client):
    # Given a draft answering a message
    said = MessageFactory(customer=customer, text=SAID)
    draft = draft_generate(customer=customer, actor="pipeline", client=ScriptedClient(_answer("望京花园东区有两套。")))
    base = f"/api/accounts/acme/conversations/{customer.conversation_id}"
    # When a supervisor forgets the message through the API
    response = staff_client.post(
        f"{base}/messages/{said.pk}/forget/", {"reason": REASON}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["drafts_scrubbed"] == [draft.pk]
    # Then the draft and its prompt read through the API say none of it
    shown = staff_client.get(f"/api/accounts/acme/drafts/{draft.pk}/prompt/")
    assert shown.status_code == 200 and SAID not in shown.content.decode()
    detail = staff_client.get(f"/api/accounts/acme/drafts/{draft.pk}/")
    assert detail.status_code == 200 and "望京花园东区有两套" not in detail.content.decode()
    drafts = staff_client.get(f"{base}/drafts/")
    assert drafts.status_code == 200 and "望京花园东区有两套" not in drafts.content.decode()


def _jobs_saying(customer, words: str) -> list:
    from memory.models import CaptureJob

    return [job.pk for job in CaptureJob.objects.filter(customer=customer) if words in str(job.payload)]


def test_message_forget_strips_a_turns_proposed_values_from_its_capture_jobs(customer, staff_user):
    # Given a bargaining message (read only as a proposal) and a draft that proposes its value
    # (found in review: the job's payload kept the value and the customer's clause after a forget)
    from memory.capture.services import capture_message

    said = MessageFactory(customer=customer, text="我预算九千五，能便宜点吗")
    capture_message(message=said)
    draft_generate(customer=customer, actor="pipeline", client=ScriptedClient(_answer("好的", budget="九千五")))
    # When the message is forgotten
    message_forget(message=said, actor=staff_user, reason=REASON)
    # Then no capture job, done or not, keeps the value or the clause
    assert _jobs_saying(customer, "九千五") == []


def test_item_forget_strips_a_turns_proposed_value_from_its_capture_jobs(customer, staff_user):
    # Given the same proposal, written from the draft's job
    from memory.capture.services import capture_message
    from memory.governance.services import memory_item_forget
    from memory.models import MemoryItem

    said = MessageFactory(customer=customer, text="我预算九千五，能便宜点吗")
    capture_message(message=said)
    draft_generate(customer=customer, actor="pipeline", client=ScriptedClient(_answer("好的", budget="九千五")))
    # When every item about it is forgotten
    for item in MemoryItem.objects.filter(customer=customer, key="profile:budget"):
        memory_item_forget(item=item, actor=staff_user, reason=REASON)
    # Then no capture job keeps the value
    assert _jobs_saying(customer, "九千五") == []
