"""Reading is bounded (issue 36, item 9): a customer message is read once — when capture reads it —
and its reading is kept beside it, so re-capture, backfill and the grounding of a model's profile
values and hypotheses use the kept reading instead of reading the words again inside a request. A
message with no reading that holds is read within the request's budget, the rest by a reading job;
a message past the reader's bound is never read and never evidence; a forgotten message's reading
goes with it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

from conversations.models import Message, MessageDirection
from knowledge.services import knowledge_index
from memory.capture import evidence as evidence_module
from memory.capture.backfill import Totals, customer_backfill
from memory.capture.evidence import TOO_LONG, current_reader_version, message_evidence
from memory.capture.grounding import NOT_READ, NOT_READ_NOW, READ_IN_REQUEST_CHARS, profile_updates_ground
from memory.capture.jobs import READINGS_KEY, capture_job_run
from memory.capture.services import capture_message, extract_context
from memory.governance.erasure import customer_erase
from memory.governance.messages import message_forget
from memory.models import CaptureJob, CaptureJobStatus, MemoryItem, MessageReading
from memory.providers import TurnHypothesis
from sessions_epoch.pipeline import draft_generate, ground_hypotheses
from tests.factories import BASE_TIME, CustomerFactory, MessageFactory
from tests.sessions_epoch.test_pipeline import ScriptedClient, _answer

SAID = "我想在浦东租个两居室，预算八千左右，最好朝南"


class Spy:
    """Counts the reader's calls from the one evidence check (the gate and extraction)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = {"scan": 0, "extract": 0}
        for name in self.calls:
            original = getattr(evidence_module, name)
            monkeypatch.setattr(evidence_module, name, self._counted(name, original))

    def _counted(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return original(*args, **kwargs)

        return counted

    @property
    def reads(self) -> int:
        return self.calls["scan"] + self.calls["extract"]


@pytest.fixture
def customer(account):
    return CustomerFactory(conversation_id="wm_li_036", display_name="李女士")


def _said(customer, text: str = SAID, *, minutes: int = 0, direction: str = MessageDirection.INBOUND) -> Message:
    return MessageFactory(
        customer=customer, text=text, direction=direction, sent_at=BASE_TIME + dt.timedelta(minutes=minutes)
    )


def _captured(customer, text: str = SAID, *, minutes: int = 0) -> Message:
    message = _said(customer, text, minutes=minutes)
    capture_message(message=message)
    return message


# --- what is kept ---------------------------------------------------------------------------------


def test_capture_keeps_the_reading_with_values_but_never_a_personal_number(customer):
    # given a message that states a budget beside the customer's mobile number
    message = _captured(customer, "我的手机号13812345678，预算八千左右，想要两居室")

    # then its reading is kept: this reader, the gate's categories, what extraction read
    reading = MessageReading.objects.get(message=message)
    assert reading.reader_version == current_reader_version()
    assert reading.refusal == ""
    assert "mobile" in {span[2] for span in reading.gate["spans"]}
    fields = {candidate["field"]: candidate["value"] for candidate in reading.extraction["candidates"]}
    assert fields["layout"] == "两居室" and "budget" in fields
    # and the number itself is nowhere in it
    assert "13812345678" not in str(reading.gate) + str(reading.extraction)


def test_blocked_message_keeps_only_the_gates_verdict(customer):
    # given a message carrying a credential
    message = _captured(customer, "我的系统密码是 Lm20461qa!x，预算八千")

    # then its reading is the refusal and the category, nothing extracted, no memory
    reading = MessageReading.objects.get(message=message)
    assert reading.refusal == evidence_module.BLOCKED
    assert "credential" in reading.gate["categories"]
    assert reading.extraction is None
    assert "Lm20461qa" not in str(reading.gate)
    assert not MemoryItem.objects.filter(customer=customer).exists()


# --- used again, not read again -------------------------------------------------------------------


def test_capture_rerun_uses_the_kept_reading(customer, monkeypatch):
    # given a captured message
    message = _captured(customer)
    spy = Spy(monkeypatch)

    # when capture runs again for it (a retry)
    outcome = capture_message(message=Message.objects.get(pk=message.pk))

    # then nothing is read again, and the items are the same
    assert spy.reads == 0
    assert outcome.written == 0 and outcome.candidates >= 2


def test_backfill_uses_the_kept_readings(customer, monkeypatch):
    # given a customer whose messages were captured as they came
    _captured(customer, SAID, minutes=0)
    _captured(customer, "不考虑顶楼，夏天太热", minutes=5)
    spy = Spy(monkeypatch)

    # when their history is backfilled
    totals = Totals()
    customer_backfill(customer=customer, totals=totals)

    # then no message was read again and nothing new was written
    assert spy.reads == 0
    assert totals.messages == 2 and totals.written == 0


def test_profile_grounding_uses_the_kept_readings(customer, monkeypatch):
    # given captured messages, the budget among them
    said = _captured(customer, SAID, minutes=0)
    _captured(customer, "周六上午可以看房吗？", minutes=5)
    spy = Spy(monkeypatch)

    # when the model's budget and a district the customer never named are grounded
    judged = profile_updates_ground(customer=customer, updates={"budget": "8000", "district": "陆家嘴"})

    # then the kept readings decide, and nothing is read again
    assert spy.reads == 0
    assert judged.kept == {"budget": "8000"} and judged.evidence == {"budget": [said.pk]}
    assert judged.dropped == [{"field": "district", "value": "陆家嘴", "reason": NOT_READ}]
    assert judged.messages_read == 2 and judged.messages_read_now == 0


def test_hypothesis_grounding_uses_the_kept_reading(customer, monkeypatch):
    # given a captured message
    said = _captured(customer)
    spy = Spy(monkeypatch)

    # when a hypothesis resting on it is grounded
    kept, dropped = ground_hypotheses(
        customer=customer,
        hypotheses=[
            TurnHypothesis(key="budget", text="客户预算可能能加到一万", confidence=0.6, message_ids=(said.pk,))
        ],
    )

    # then it is kept on the kept reading, with no gate run again
    assert [h.key for h in kept] == ["budget"] and dropped == []
    assert spy.reads == 0


def test_draft_with_an_unsaid_value_reads_no_captured_message_again(customer, monkeypatch):
    # given the account's knowledge base indexed, and a customer whose 12 messages were captured as
    # they came
    knowledge_index()
    for minute in range(12):
        _captured(customer, f"第{minute}套的户型图能再发一下吗，我想看看采光", minutes=minute)
    spy = Spy(monkeypatch)

    # when the model proposes a budget the customer never said
    client = ScriptedClient(_answer(profileUpdates={"budget": "9000"}))
    draft = draft_generate(customer=customer, actor="pipeline", client=client)

    # then the whole window is judged on its kept readings: nothing is read inside the request
    assert spy.reads == 0
    assert draft.profile_updates == {}
    assert draft.dropped_updates[0]["reason"] == NOT_READ


# --- read once, within the request's budget -------------------------------------------------------


def test_grounding_reads_an_unread_message_once_and_keeps_its_reading(customer, monkeypatch):
    # given a message no capture has read yet (its job has not run)
    said = _said(customer)
    spy = Spy(monkeypatch)

    # when the model's layout is grounded twice
    first = profile_updates_ground(customer=customer, updates={"layout": "两居室"})
    second = profile_updates_ground(customer=customer, updates={"layout": "两居室"})

    # then the message was read once, by the first, and its reading kept for the second
    assert spy.calls == {"scan": 1, "extract": 1}
    assert first.kept == second.kept == {"layout": "两居室"}
    assert first.messages_read_now == 1 and second.messages_read_now == 0
    assert MessageReading.objects.filter(message=said).exists()


def test_reading_of_another_reader_is_read_again_once(customer, monkeypatch):
    # given a message read by an older reader
    said = _captured(customer)
    MessageReading.objects.filter(message=said).update(reader_version="0.olderreader")
    spy = Spy(monkeypatch)

    # when it is grounded
    judged = profile_updates_ground(customer=customer, updates={"budget": "8000"})

    # then it is read again by this reader, and the new reading kept
    assert spy.calls == {"scan": 1, "extract": 1}
    assert judged.kept == {"budget": "8000"}
    assert MessageReading.objects.get(message=said).reader_version == current_reader_version()


def test_changed_context_is_extracted_again_without_the_gate(customer, monkeypatch):
    # given a message read as the answer to nothing
    said = _captured(customer, "六千左右吧", minutes=10)
    spy = Spy(monkeypatch)

    # when it is read beside another agent's question before it (the context changed)
    _said(customer, "您的预算大概多少？", minutes=5, direction=MessageDirection.OUTBOUND)
    judged = message_evidence(
        Message.objects.get(pk=said.pk), customer=customer, context=extract_context(Message.objects.get(pk=said.pk))
    )

    # then only extraction runs again: the gate's kept verdict still holds
    assert spy.calls == {"scan": 0, "extract": 1}
    assert [c.field for c in judged.candidates] == ["budget"]


def test_grounding_past_its_budget_stops_and_a_reading_job_reads_the_rest(customer, monkeypatch):
    # given an old message stating the layout and, after it, long messages no capture has read
    _said(customer, "想要两居室", minutes=0)
    long_text = "我们一家三口，平时工作日都在张江上班，周末偶尔去市区看看老人，" * 20
    for minute in range(1, 5):
        _said(customer, long_text[: READ_IN_REQUEST_CHARS // 2 - minute], minutes=minute)
    monkeypatch.setattr("memory.capture.jobs._send", lambda account_id, ids: None)

    # when the model's layout is grounded inside a request
    judged = profile_updates_ground(customer=customer, updates={"layout": "两居室"})

    # then it stops where the budget ends — an older message never decides over an unread newer
    # one — drops the value for now, and queues a reading job
    assert judged.unread_left and judged.kept == {}
    assert judged.dropped == [{"field": "layout", "value": "两居室", "reason": NOT_READ_NOW}]
    job = CaptureJob.objects.get(customer=customer, payload__has_key=READINGS_KEY)

    # when the reading job runs, outside the request
    capture_job_run(job_id=job.pk)

    # then every message has its reading, and the next grounding reads nothing afresh
    assert CaptureJob.objects.get(pk=job.pk).status == CaptureJobStatus.DONE
    assert MessageReading.objects.filter(message__customer=customer).count() == 5
    again = profile_updates_ground(customer=customer, updates={"layout": "两居室"})
    assert again.kept == {"layout": "两居室"} and again.messages_read_now == 0
    assert not MemoryItem.objects.filter(customer=customer).exists()  # a reading job writes no memory


def test_one_reading_job_waits_per_customer(customer, monkeypatch):
    # given a grounding that ran out of budget, its reading job not yet run
    monkeypatch.setattr("memory.capture.jobs._send", lambda account_id, ids: None)
    for minute in range(3):
        _said(customer, "我们一家三口，平时都在张江上班，" * 60, minutes=minute)
    profile_updates_ground(customer=customer, updates={"layout": "两居室"})

    # when another request runs out too
    profile_updates_ground(customer=customer, updates={"layout": "两居室"})

    # then one job still covers them
    assert CaptureJob.objects.filter(customer=customer, payload__has_key=READINGS_KEY).count() == 1


# --- past the reader's bound ----------------------------------------------------------------------


def test_over_long_crafted_message_is_refused_never_read_and_never_memory(customer, monkeypatch):
    # given an 8,000-character crafted message that states a budget and a refusal over and over
    crafted = ("预算五千，不考虑顶楼，" * 800)[:8000]
    message = _said(customer, crafted)
    spy = Spy(monkeypatch)

    # when capture runs for it
    outcome = capture_message(message=message)

    # then it was not read at all (no gate, no extraction), wrote no memory and keeps the refusal
    assert spy.reads == 0
    assert outcome.written == 0 and outcome.candidates == 0
    assert not MemoryItem.objects.filter(customer=customer).exists()
    assert MessageReading.objects.get(message=message).refusal == TOO_LONG

    # and neither a profile value nor a hypothesis can rest on it
    judged = profile_updates_ground(customer=customer, updates={"budget": "5000"})
    assert judged.kept == {} and judged.dropped[0]["reason"] == NOT_READ
    kept, dropped = ground_hypotheses(
        customer=customer,
        hypotheses=[TurnHypothesis(key="budget", text="客户预算在五千左右", confidence=0.6, message_ids=(message.pk,))],
    )
    assert kept == [] and dropped[0]["reason"] == TOO_LONG


# --- forgotten with its message -------------------------------------------------------------------


def test_forgetting_a_message_removes_its_reading(customer, staff_user):
    # given a captured message and its kept reading
    said = _captured(customer)
    other = _captured(customer, "不考虑顶楼，夏天太热", minutes=5)
    assert MessageReading.objects.filter(message=said).exists()

    # when the customer asks us to forget it
    message_forget(message=said, actor=staff_user, reason="客户要求删除这条消息")

    # then its reading went with it; the other message keeps its own
    assert not MessageReading.objects.filter(message_id=said.pk).exists()
    assert MessageReading.objects.filter(message=other).exists()


def test_erasing_a_customer_removes_every_reading(customer, staff_user):
    # given a customer's captured messages
    _captured(customer, SAID, minutes=0)
    _captured(customer, "不考虑顶楼，夏天太热", minutes=5)
    assert MessageReading.objects.filter(message__customer=customer).count() == 2

    # when the customer is erased
    customer_erase(customer=customer, actor=staff_user, reason="客户行使删除权")

    # then no reading is left
    assert not MessageReading.objects.exists()
