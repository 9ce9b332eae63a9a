"""The capture job's promises at their edges (issue 40, mutation testing of memory/capture/jobs.py):
one run wins a claim; a failed job is retried after a doubling backoff and fails for good after its
attempts, audited and alerted; a job whose claim was lost writes nothing; a stuck running job is swept
back and due jobs are sent again; a draft's hypotheses are stored with their confidence capped and
its proposals held for a supervisor; evidence that is gone is not cited.

The jobs' own timestamps come from a clock that stands at `AT` unless a test moves it, so every time
is asserted exactly."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from celery import current_app
from django.utils import timezone

from conversations.models import Alert, AlertKind, AlertLevel, AuditAction, AuditEvent, MessageDirection
from memory import sql
from memory.capture import jobs
from memory.capture import services as capture_services
from memory.capture.ingest import messages_ingest
from memory.capture.jobs import (
    CAPTURE_TASK_NAME,
    HYPOTHESIS_MAX_CONFIDENCE,
    READINGS_KEY,
    capture_inline,
    capture_job_enqueue,
    capture_job_run,
    capture_sweep,
    readings_job_enqueue,
)
from memory.models import CaptureJob, CaptureJobStatus, MemoryItem, MemorySnapshot
from tests.factories import CustomerFactory, MessageFactory
from tests.memory.conftest import wecom_message

AT = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)
SECOND = dt.timedelta(seconds=1)


class Clock:
    """`timezone.now` for a test: it stands at `now`, which the test moves."""

    def __init__(self) -> None:
        self.now = AT

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(timezone, "now", clock)
    return clock


@pytest.fixture
def sent(monkeypatch):
    """The broker messages a test's jobs send, recorded instead of run: (account, job ids) per commit."""
    calls: list[tuple[str, list[int]]] = []
    monkeypatch.setattr(jobs, "_send", lambda account_id, ids: calls.append((account_id, ids)))
    return calls


@pytest.fixture
def customer(account):
    return CustomerFactory(conversation_id="wm_zhao_040", display_name="赵女士")


def _failing_capture(monkeypatch, error: BaseException, *, clock: Clock | None = None) -> None:
    """Capture raises, as a locked or unreachable memory store would (after 5 s, on a given clock)."""

    def boom(**kwargs):
        if clock is not None:
            clock.now += dt.timedelta(seconds=5)
        raise error

    monkeypatch.setattr(capture_services, "capture_message", boom)


def _pending(customer, *, text: str = "我更喜欢地铁附近的房子", attempts: int = 0, **fields) -> CaptureJob:
    message = MessageFactory(customer=customer, text=text)
    return CaptureJob.objects.create(
        customer=customer, message=message, attempts=attempts, **{"next_attempt_at": AT, **fields}
    )


# --- retries ---------------------------------------------------------------------------------------


def test_failed_capture_job_waits_a_doubling_backoff_and_keeps_only_the_errors_first_line(
    customer, clock, settings, monkeypatch, caplog
):
    # given a job on its third attempt, while the memory store fails (5 s in) with an error echoing
    # customer text, and another customer's job running its third attempt too
    settings.QIWEI_CAPTURE_RETRY_BASE_SECONDS = 10
    settings.QIWEI_CAPTURE_MAX_ATTEMPTS = 5
    job = _pending(customer, attempts=2, enqueued_at=AT)
    other = _pending(CustomerFactory(), text="不考虑顶楼", status=CaptureJobStatus.RUNNING, attempts=3, started_at=AT)
    _failing_capture(monkeypatch, RuntimeError("数据库被锁定\n客户原话：我的手机号是13812345678"), clock=clock)
    failed_at = AT + dt.timedelta(seconds=5)
    # when it runs
    with caplog.at_level(logging.WARNING, logger="memory.capture.jobs"):
        returned = capture_job_run(job_id=job.pk)
    # then it waits 10 s × 2³ from its failure before its next attempt, and keeps the error's class and
    # first line only
    job.refresh_from_db()
    assert (job.status, job.attempts) == (CaptureJobStatus.PENDING, 3)
    assert job.next_attempt_at == failed_at + dt.timedelta(seconds=80)
    assert job.last_error == "RuntimeError: 数据库被锁定"
    assert (job.enqueued_at, job.finished_at, job.started_at, job.updated_at) == (None, None, AT, failed_at)
    assert f"capture job {job.pk} failed (attempt 3, final=False): RuntimeError: 数据库被锁定" in caplog.messages
    # and the caller gets the job as it ended, not as it was claimed
    assert (returned.status, returned.next_attempt_at) == (
        CaptureJobStatus.PENDING,
        failed_at + dt.timedelta(seconds=80),
    )
    # and the other customer's job is untouched
    other.refresh_from_db()
    assert (other.status, other.last_error, other.next_attempt_at) == (CaptureJobStatus.RUNNING, "", AT)
    # and the failure is audited as one to retry, with no alert
    event = AuditEvent.objects.get(action="memory_capture_failed")
    assert (event.reason, event.actor_name) == ("记忆提取失败，已安排重试", "capture")
    assert event.conversation_id == customer.conversation_id
    assert event.payload == {
        "job_id": job.pk,
        "message_id": job.message_id,
        "attempt": 3,
        "final": False,
        "error": "RuntimeError",
    }
    assert not Alert.objects.exists()


def test_failed_capture_job_backoff_grows_with_each_attempt(customer, clock, settings, monkeypatch):
    # given the memory store failing on a job's first and second attempts
    settings.QIWEI_CAPTURE_RETRY_BASE_SECONDS = 7
    settings.QIWEI_CAPTURE_MAX_ATTEMPTS = 5
    job = _pending(customer)
    _failing_capture(monkeypatch, RuntimeError("database is locked"))
    waits = []
    for _ in range(2):
        # when it runs each time it is due
        capture_job_run(job_id=job.pk)
        job.refresh_from_db()
        waits.append(job.next_attempt_at - AT)
        CaptureJob.objects.filter(pk=job.pk).update(next_attempt_at=AT)
    # then the second wait is twice the first
    assert waits == [dt.timedelta(seconds=14), dt.timedelta(seconds=28)]


def test_capture_job_fails_for_good_on_its_last_attempt_with_an_audit_and_one_alert(
    customer, clock, settings, monkeypatch
):
    # given a job on its last allowed attempt, failing with an error that says nothing
    settings.QIWEI_CAPTURE_MAX_ATTEMPTS = 3
    job = _pending(customer, attempts=2)
    _failing_capture(monkeypatch, TimeoutError())
    # when it runs
    returned = capture_job_run(job_id=job.pk)
    # then it has failed for good: never due again, finished now
    job.refresh_from_db()
    assert (job.status, job.attempts, job.last_error) == (CaptureJobStatus.FAILED, 3, "TimeoutError: ")
    assert (job.next_attempt_at, job.enqueued_at, job.finished_at) == (None, None, AT)
    assert returned.status == CaptureJobStatus.FAILED
    # and the audit says it was given up
    event = AuditEvent.objects.get(action="memory_capture_failed")
    assert event.reason == "记忆提取多次失败，已放弃"
    assert event.payload["final"] is True and event.payload["attempt"] == 3
    assert event.payload["error"] == "TimeoutError"
    # and the agents are alerted, critically, once for this job
    alert = Alert.objects.get()
    assert (alert.customer_id, alert.kind, alert.level, alert.cause) == (
        customer.pk,
        AlertKind.CAPTURE_FAILING,
        AlertLevel.CRITICAL,
        f"job:{job.pk}",
    )
    assert alert.text == f"记忆提取任务 #{job.pk} 多次失败（TimeoutError），该消息未写入记忆，请运维排查"
    assert alert.history.get().history_change_reason == "记忆提取多次失败"
    raised = AuditEvent.objects.get(action="alert_raised")
    assert (raised.actor_name, raised.reason) == ("capture", "记忆提取多次失败")
    # and it is not claimed again
    assert capture_job_run(job_id=job.pk) is None


def test_capture_job_error_summary_is_at_most_500_characters(customer, clock, settings, monkeypatch):
    # given a failure whose first line is very long
    settings.QIWEI_CAPTURE_MAX_ATTEMPTS = 5
    job = _pending(customer)
    _failing_capture(monkeypatch, ValueError("无法解析客户的回复" * 80))
    # when the job runs
    capture_job_run(job_id=job.pk)
    # then its last error keeps the first 500 characters of the summary
    job.refresh_from_db()
    assert job.last_error == ("ValueError: " + "无法解析客户的回复" * 80)[:500]


def test_capture_job_failure_is_not_recorded_over_a_run_that_took_the_job_over(customer, clock, settings, monkeypatch):
    # given a job whose run fails only after another run re-claimed it (the first was presumed dead)
    settings.QIWEI_CAPTURE_MAX_ATTEMPTS = 1
    job = _pending(customer)

    def taken_over_then_boom(**kwargs):
        CaptureJob.objects.filter(pk=job.pk).update(attempts=2)
        raise RuntimeError("database is locked")

    monkeypatch.setattr(capture_services, "capture_message", taken_over_then_boom)
    # when the failing run records its failure
    capture_job_run(job_id=job.pk)
    # then the other run's job is left as it is: no failure, no audit, no alert
    job.refresh_from_db()
    assert (job.status, job.attempts, job.last_error) == (CaptureJobStatus.RUNNING, 2, "")
    assert not AuditEvent.objects.filter(action="memory_capture_failed").exists()
    assert not Alert.objects.exists()


def test_capture_job_swept_back_while_its_run_failed_is_not_failed_by_that_run(customer, clock, settings, monkeypatch):
    # given a job whose run fails after the sweeper presumed the worker dead and set the job pending again
    settings.QIWEI_CAPTURE_MAX_ATTEMPTS = 1
    job = _pending(customer, text="叫我赵姐就好")

    def swept_back_then_boom(**kwargs):
        CaptureJob.objects.filter(pk=job.pk).update(status=CaptureJobStatus.PENDING, next_attempt_at=AT)
        raise RuntimeError("database is locked")

    monkeypatch.setattr(capture_services, "capture_message", swept_back_then_boom)
    # when the failing run records its failure
    capture_job_run(job_id=job.pk)
    # then the job waits for its next run, neither failed for good nor audited by the lost run
    job.refresh_from_db()
    assert (job.status, job.last_error, job.next_attempt_at) == (CaptureJobStatus.PENDING, "", AT)
    assert not AuditEvent.objects.filter(action="memory_capture_failed").exists()


# --- claim and finish ------------------------------------------------------------------------------


def test_capture_job_claim_is_won_by_one_run_only_when_due(customer, clock):
    # given a job due now and one due a second from now
    due = _pending(customer)
    later = _pending(customer, text="不考虑顶楼", next_attempt_at=AT + SECOND)
    later.refresh_from_db()
    # when two runs claim the first, and one the second
    first, second = sql.capture_job_claim(due.pk, AT), sql.capture_job_claim(due.pk, AT)
    # then the first run wins it, running from now with one attempt more; the second and the early one get nothing
    assert first is not None and second is None
    assert (first.status, first.attempts, first.started_at, first.updated_at) == (CaptureJobStatus.RUNNING, 1, AT, AT)
    assert first.customer.pk == customer.pk and first.message.text == "我更喜欢地铁附近的房子"
    assert sql.capture_job_claim(later.pk, AT) is None
    assert CaptureJob.objects.get(pk=later.pk).status == CaptureJobStatus.PENDING


def test_capture_job_finished_by_its_run_is_done_now_and_clears_its_last_error(customer, clock):
    # given a job that failed once and is due again
    job = _pending(customer, attempts=1, last_error="RuntimeError: database is locked")
    # when it runs and succeeds
    returned = capture_job_run(job_id=job.pk)
    # then it is done now with no error, as returned and as stored
    assert (returned.status, returned.finished_at, returned.last_error, returned.updated_at) == (
        CaptureJobStatus.DONE,
        AT,
        "",
        AT,
    )
    job.refresh_from_db()
    assert (job.status, job.attempts, job.finished_at, job.last_error, job.updated_at) == (
        CaptureJobStatus.DONE,
        2,
        AT,
        "",
        AT,
    )
    assert MemoryItem.objects.get(customer=customer).key == "preference:地铁附近"
    assert AuditEvent.objects.get(action="memory_item_captured").actor_name == "capture"


def test_capture_job_finish_is_refused_to_a_run_that_lost_its_claim(customer, clock):
    # given a job claimed by a run, then taken over by another (a second attempt)
    job = _pending(customer)
    sql.capture_job_claim(job.pk, AT)
    CaptureJob.objects.filter(pk=job.pk).update(attempts=2)
    # when the first run finishes its attempt, then the second finishes its own
    lost, won = sql.capture_job_finish(job.pk, 1, AT), sql.capture_job_finish(job.pk, 2, AT + SECOND)
    # then only the second marks it done
    job.refresh_from_db()
    assert (lost, won) == (0, 1)
    assert (job.status, job.finished_at, job.last_error) == (CaptureJobStatus.DONE, AT + SECOND, "")


def test_capture_job_of_an_agents_message_finishes_without_capturing(customer, clock):
    # given a job for the agent's own reply
    message = MessageFactory(
        customer=customer, text="您好，地铁附近的两居室我帮您留意", direction=MessageDirection.OUTBOUND
    )
    job = CaptureJob.objects.create(customer=customer, message=message, next_attempt_at=AT)
    # when it runs
    returned = capture_job_run(job_id=job.pk)
    # then it is done, and nothing the agent said became memory
    assert returned.status == CaptureJobStatus.DONE
    assert CaptureJob.objects.get(pk=job.pk).status == CaptureJobStatus.DONE
    assert not MemoryItem.objects.exists()


def test_capture_job_of_a_draft_whose_claim_was_lost_writes_nothing(customer, clock, monkeypatch):
    # given a draft's job whose claim is taken over while it writes the budget
    said = MessageFactory(customer=customer, text="预算可以到六千")
    job = CaptureJob.objects.create(
        customer=customer,
        payload={"profile_updates": {"budget": "6000"}, "source_message_ids": [said.pk]},
        next_attempt_at=AT,
    )
    real_update = jobs.customer_profile_update

    def update_then_lose_claim(**kwargs):
        real_update(**kwargs)
        CaptureJob.objects.filter(pk=job.pk).update(attempts=5)

    monkeypatch.setattr(jobs, "customer_profile_update", update_then_lose_claim)
    # when it runs
    assert capture_job_run(job_id=job.pk) is None
    # then the budget was rolled back with everything else, and the job is the other run's
    customer.profile.refresh_from_db()
    assert customer.profile.budget == ""
    assert not MemoryItem.objects.exists()
    assert CaptureJob.objects.get(pk=job.pk).status == CaptureJobStatus.RUNNING


def test_reading_job_whose_claim_was_lost_is_not_marked_done(customer, clock, monkeypatch, caplog):
    # given a reading job taken over while it reads
    job = CaptureJob.objects.create(customer=customer, payload={READINGS_KEY: True}, next_attempt_at=AT)

    def read_then_lose_claim(**kwargs):
        CaptureJob.objects.filter(pk=job.pk).update(attempts=3)

    monkeypatch.setattr(jobs, "readings_refresh", read_then_lose_claim)
    # when it runs
    with caplog.at_level(logging.WARNING, logger="memory.capture.jobs"):
        assert capture_job_run(job_id=job.pk) is None
    # then the job stays with the run that took it over, and the loss is logged
    assert CaptureJob.objects.get(pk=job.pk).status == CaptureJobStatus.RUNNING
    assert f"capture job {job.pk} was re-claimed by another run; its writes were rolled back" in caplog.messages


def test_reading_job_reads_the_customers_messages_and_writes_no_memory(customer, clock):
    # given a customer message no capture has read, and a reading job for the customer
    MessageFactory(customer=customer, text="我们一家三口，平时都在张江上班")
    job = CaptureJob.objects.create(customer=customer, payload={READINGS_KEY: True}, next_attempt_at=AT)
    # when it runs
    returned = capture_job_run(job_id=job.pk)
    # then it is done, the message is read, and nothing became memory
    assert returned.status == CaptureJobStatus.DONE
    assert customer.messages.filter(reading__isnull=False).count() == 1
    assert not MemoryItem.objects.exists()


def test_capture_job_reads_a_bare_answer_with_the_agents_question_before_it(customer, clock):
    # given the agent's question and the customer's bare answer after it, queued for capture
    MessageFactory(
        customer=customer,
        text="您对房子还有什么要求吗？",
        direction=MessageDirection.OUTBOUND,
        sent_at=AT - dt.timedelta(minutes=3),
    )
    MessageFactory(
        customer=customer,
        text="客服小李已加入会话",
        direction=MessageDirection.SYSTEM,
        sent_at=AT - dt.timedelta(minutes=2),
    )
    answer = MessageFactory(customer=customer, text="采光好一点的", sent_at=AT - dt.timedelta(minutes=1))
    job = CaptureJob.objects.create(customer=customer, message=answer, next_attempt_at=AT)
    # when the job runs
    capture_job_run(job_id=job.pk)
    # then the answer is read as answering the question (the system's notice between them is no
    # message of either side): a preference for light
    item = MemoryItem.objects.get(customer=customer, key="preference:采光好")
    assert (item.status, item.source_message_ids) == ("active", [answer.pk])


# --- a draft's hypotheses and proposals ------------------------------------------------------------


def test_draft_hypotheses_are_stored_capped_and_only_on_the_customers_own_words(customer, clock, settings):
    # given a draft's hypotheses: one the model is too sure of, one modest, one with no confidence, and
    # some resting on an agent's reply, another customer's words, nothing, or a message partly gone
    settings.QIWEI_HYPOTHESIS_TTL_HOURS = 48
    commute = MessageFactory(customer=customer, text="我在张江上班，每天坐2号线")
    family = MessageFactory(customer=customer, text="孩子明年上小学了")
    reply = MessageFactory(
        customer=customer, text="好的，张江附近的房源我整理一下", direction=MessageDirection.OUTBOUND
    )
    stranger = MessageFactory(customer=CustomerFactory(), text="我在陆家嘴上班")
    hypotheses = [
        {"key": "commute", "text": "通勤以张江为中心", "confidence": 0.9, "message_ids": [commute.pk, commute.pk]},
        {"key": "agent", "text": "想要张江附近", "confidence": 0.5, "message_ids": [reply.pk]},
        {"key": "school", "text": "看重学区", "confidence": 0.3, "message_ids": [str(family.pk), commute.pk]},
        {"key": "pets", "text": "可能养宠物", "message_ids": [family.pk]},
        {"key": "stranger", "text": "在陆家嘴上班", "confidence": 0.5, "message_ids": [stranger.pk]},
        {"key": "nothing", "text": "预算有限", "confidence": 0.5, "message_ids": []},
        {"key": "partly", "text": "家里有老人", "confidence": 0.5, "message_ids": [family.pk, 999_999]},
        "不是一条推断",
    ]
    job = CaptureJob.objects.create(customer=customer, payload={"hypotheses": hypotheses}, next_attempt_at=AT)
    # when the job runs
    returned = capture_job_run(job_id=job.pk)
    # then only those resting wholly on the customer's own words are stored, as automatic inbound
    # hypotheses, never more certain than 0.6, each citing its messages once, in order, until the TTL
    items = {item.key: item for item in MemoryItem.objects.filter(customer=customer)}
    assert sorted(items) == ["hypothesis:commute", "hypothesis:pets", "hypothesis:school"]
    assert [(items[k].content, items[k].confidence) for k in sorted(items)] == [
        ("通勤以张江为中心", HYPOTHESIS_MAX_CONFIDENCE),
        ("可能养宠物", 0.0),
        ("看重学区", 0.3),
    ]
    assert items["hypothesis:commute"].source_message_ids == [commute.pk]
    assert items["hypothesis:school"].source_message_ids == sorted([commute.pk, family.pk])
    for item in items.values():
        assert (item.type, item.status, item.direction, item.created_by) == ("hypothesis", "active", "inbound", "auto")
        assert item.expires_at == AT + dt.timedelta(hours=48)
    audits = AuditEvent.objects.filter(action="memory_item_captured")
    assert {(event.reason, event.actor_name) for event in audits} == {(jobs.HYPOTHESIS_REASON, "capture")}
    assert MemorySnapshot.objects.get(customer=customer).reason == jobs.HYPOTHESIS_REASON
    # and the job keeps only each hypothesis's key and ids, not its words
    kept = [{"key": h["key"], "message_ids": h["message_ids"]} for h in hypotheses if isinstance(h, dict)]
    stored = CaptureJob.objects.get(pk=job.pk)
    assert (stored.status, stored.finished_at, stored.payload) == (CaptureJobStatus.DONE, AT, {"hypotheses": kept})
    assert returned.payload == {"hypotheses": kept}


def test_draft_with_no_hypotheses_keeps_its_payload(customer, clock):
    # given a draft's job with a budget and an empty list of hypotheses
    said = MessageFactory(customer=customer, text="预算五千以内")
    payload = {"profile_updates": {"budget": "5000"}, "source_message_ids": [str(said.pk)], "hypotheses": []}
    job = CaptureJob.objects.create(customer=customer, payload=payload, next_attempt_at=AT)
    # when it runs
    capture_job_run(job_id=job.pk)
    # then the budget is the profile's, resting on the message, written for the draft's update, and
    # the payload is as it was
    customer.profile.refresh_from_db()
    assert customer.profile.budget == "5000"
    item = MemoryItem.objects.get(key="profile:budget")
    assert item.source_message_ids == [said.pk]
    audits = AuditEvent.objects.filter(action="memory_item_captured")
    assert {(e.reason, e.actor_name) for e in audits} == {(jobs.PROFILE_UPDATE_REASON, "capture")}
    assert MemorySnapshot.objects.get(customer=customer).reason == jobs.PROFILE_UPDATE_REASON
    job.refresh_from_db()
    assert (job.status, job.payload) == (CaptureJobStatus.DONE, payload)


def test_draft_profile_proposals_are_held_for_a_supervisor_only_on_the_customers_words(customer, clock, settings):
    # given a draft's proposals: the budget said in a bargaining clause, an unknown field, an entry that
    # is not one, and a floor resting on the agent's words
    settings.QIWEI_MEMORY_PROPOSAL_TTL_DAYS = 3
    said = MessageFactory(customer=customer, text="如果房东肯降价，四千五也可以考虑")
    reply = MessageFactory(customer=customer, text="这套在三楼", direction=MessageDirection.OUTBOUND)
    proposals = {
        "budget": {
            "value": "4500",
            "message_ids": [said.pk, str(said.pk)],
            "held_back": "conditional",
            "clause": "如果房东肯降价，四千五也可以考虑",
        },
        "favourite_colour": {"value": "蓝色", "message_ids": [said.pk]},
        "area": "张江",
        "floor": {"value": "三楼", "message_ids": [reply.pk]},
    }
    job = CaptureJob.objects.create(customer=customer, payload={"profile_proposals": proposals}, next_attempt_at=AT)
    # when it runs
    capture_job_run(job_id=job.pk)
    # then only the budget waits for a supervisor, as a proposal citing the customer's message
    item = MemoryItem.objects.get(customer=customer)
    assert (item.key, item.content, item.status, item.type) == ("profile:budget", "预算：4500", "proposed", "fact")
    assert (item.source_message_ids, item.direction) == ([said.pk], "inbound")
    assert (item.held_back, item.clause) == ("conditional", "如果房东肯降价，四千五也可以考虑")
    assert item.expires_at == AT + dt.timedelta(days=3)
    customer.profile.refresh_from_db()
    assert customer.profile.budget == ""
    assert CaptureJob.objects.get(pk=job.pk).status == CaptureJobStatus.DONE


# --- enqueue ---------------------------------------------------------------------------------------


def test_capture_job_enqueue_is_due_now_and_sent_once_per_message(customer, clock, sent, account):
    # given a customer message
    message = MessageFactory(customer=customer, text="最好有电梯")
    # when its capture is queued twice (a retried webhook)
    job = capture_job_enqueue(customer=customer, message=message)
    again = capture_job_enqueue(customer=customer, message=message, payload={"draft_id": 3})
    # then one job waits, due now, sent once to the broker
    assert again.pk == job.pk
    job.refresh_from_db()
    assert (job.status, job.payload, job.next_attempt_at, job.enqueued_at) == (CaptureJobStatus.PENDING, {}, AT, AT)
    assert sent == [(account.pk, [job.pk])]


def test_capture_job_enqueue_of_a_draft_is_a_new_job_each_time(customer, clock, sent, account):
    # given a draft's grounded budget
    payload = {"profile_updates": {"budget": "4500"}, "draft_id": 9}
    # when it is queued, then a draft with nothing is queued
    job = capture_job_enqueue(customer=customer, payload=payload)
    empty = capture_job_enqueue(customer=customer)
    # then each is its own job, due now, sent once
    job.refresh_from_db()
    empty.refresh_from_db()
    assert (job.payload, job.next_attempt_at, job.enqueued_at) == (payload, AT, AT)
    assert (empty.payload, empty.message_id, empty.next_attempt_at) == ({}, None, AT)
    assert sent == [(account.pk, [job.pk]), (account.pk, [empty.pk])]


def test_reading_job_waits_once_per_customer_while_pending_or_running(customer, clock, sent, account):
    # given a reading job queued for the customer
    first = readings_job_enqueue(customer=customer)
    first.refresh_from_db()
    assert (first.payload, first.message_id, first.next_attempt_at, first.enqueued_at) == (
        {READINGS_KEY: True},
        None,
        AT,
        AT,
    )
    # when another is asked for while it waits, and while it runs
    waiting = readings_job_enqueue(customer=customer)
    CaptureJob.objects.filter(pk=first.pk).update(status=CaptureJobStatus.RUNNING)
    running = readings_job_enqueue(customer=customer)
    # then none is added
    assert waiting is None and running is None
    # when it is done, or only another customer's or a message's job waits
    CaptureJob.objects.filter(pk=first.pk).update(status=CaptureJobStatus.DONE)
    other = CustomerFactory()
    readings_job_enqueue(customer=other)
    _pending(customer)
    capture_job_enqueue(customer=customer, payload={"draft_id": 4})
    second = readings_job_enqueue(customer=customer)
    # then a new one is queued and sent
    assert second is not None and second.pk != first.pk
    assert sent[0] == (account.pk, [first.pk]) and sent[-1] == (account.pk, [second.pk])


def test_no_broker_message_is_sent_for_no_jobs(account, sent):
    # when nothing was queued
    jobs.enqueue_after_commit([])
    # then nothing is sent
    assert sent == []


def test_capture_inline_runs_each_queued_job_in_this_thread(customer, clock, monkeypatch, account):
    # given a broker that would fail if used
    monkeypatch.setattr(current_app.tasks[CAPTURE_TASK_NAME], "delay", pytest.fail)
    first = _pending(customer, text="叫我赵姐就好")
    second = _pending(customer, text="不考虑顶楼")
    # when two jobs are queued inside capture_inline
    with capture_inline():
        jobs._send(account.pk, [first.pk, second.pk])
    # then both ran here
    assert set(CaptureJob.objects.values_list("status", flat=True)) == {CaptureJobStatus.DONE}


def test_capture_job_broker_outage_does_not_fail_the_caller_and_the_next_job_is_still_sent(
    customer, clock, monkeypatch, caplog, account
):
    # given a broker that refuses the first message and accepts the second
    delivered: list[int] = []

    def delay(account_id, job_id):
        if not delivered and job_id == first.pk:
            delivered.append(0)
            raise ConnectionError("broker unreachable")
        delivered.append(job_id)

    first = _pending(customer, text="叫我赵姐就好")
    second = _pending(customer, text="不考虑顶楼")
    monkeypatch.setattr(current_app.tasks[CAPTURE_TASK_NAME], "delay", delay)
    # when both are sent
    with caplog.at_level(logging.ERROR, logger="memory.capture.jobs"):
        jobs._send(account.pk, [first.pk, second.pk])
    # then the second is still sent, the outage logged, and the first waits for the sweeper
    assert delivered == [0, second.pk]
    assert f"capture job {first.pk} could not be queued" in caplog.messages
    assert CaptureJob.objects.get(pk=first.pk).status == CaptureJobStatus.PENDING


# --- the sweep -------------------------------------------------------------------------------------


def test_capture_sweep_recovers_a_job_stuck_past_the_grace_and_sends_it_again(customer, clock, sent, settings, account):
    # given running jobs (queued an hour ago): one on its last attempt, one started just past the grace,
    # one exactly at it, and a job finished long ago on its last attempt
    settings.QIWEI_CAPTURE_STUCK_SECONDS = 60
    settings.QIWEI_CAPTURE_MAX_ATTEMPTS = 3
    grace = dt.timedelta(seconds=60)
    clock.now = AT - dt.timedelta(hours=1)
    last = _pending(customer, text="叫我赵姐", status=CaptureJobStatus.RUNNING, attempts=3, started_at=AT - grace * 2)
    stuck = _pending(customer, status=CaptureJobStatus.RUNNING, attempts=2, started_at=AT - grace - SECOND)
    recent = _pending(customer, text="不考虑顶楼", status=CaptureJobStatus.RUNNING, attempts=1, started_at=AT - grace)
    _pending(customer, text="周末看房", status=CaptureJobStatus.DONE, attempts=3, started_at=AT - grace * 5)
    clock.now = AT
    # when the sweeper runs (its clock: now)
    result = capture_sweep()
    # then the one on its last attempt has failed for good as a lost worker, the stuck one is pending
    # again and sent now, the recent one is left running, and the finished one is left alone
    assert (result.recovered, result.requeued, result.failed) == ([stuck.pk], [stuck.pk], [last.pk])
    stuck.refresh_from_db()
    assert (stuck.status, stuck.attempts, stuck.next_attempt_at, stuck.enqueued_at, stuck.updated_at) == (
        CaptureJobStatus.PENDING,
        2,
        AT,
        AT,
        AT,
    )
    assert CaptureJob.objects.get(pk=recent.pk).status == CaptureJobStatus.RUNNING
    last.refresh_from_db()
    assert (last.status, last.last_error) == (CaptureJobStatus.FAILED, "TimeoutError: worker lost while running")
    assert sent == [(account.pk, [stuck.pk])]


def test_capture_sweep_recovers_the_stuck_jobs_in_order_up_to_its_limit(customer, clock, sent, settings):
    # given three jobs stuck long ago
    settings.QIWEI_CAPTURE_STUCK_SECONDS = 60
    long_ago = AT - dt.timedelta(hours=1)
    stuck = [
        _pending(customer, text=text, status=CaptureJobStatus.RUNNING, attempts=1, started_at=long_ago)
        for text in ("最好有电梯", "不考虑顶楼", "叫我赵姐就好")
    ]
    # when the sweeper runs with a limit of two
    result = capture_sweep(now=AT, limit=2)
    # then the two oldest jobs are recovered, the third waits for the next sweep
    assert result.recovered == [stuck[0].pk, stuck[1].pk]
    assert CaptureJob.objects.get(pk=stuck[2].pk).status == CaptureJobStatus.RUNNING


def test_capture_sweep_sends_due_jobs_once_their_broker_message_is_presumed_lost(
    customer, clock, sent, settings, account
):
    # given pending jobs: due earlier, due exactly now, never given a time, not yet due, one sent just
    # now, one sent exactly a grace ago, one sent longer ago, and a running and a finished job
    settings.QIWEI_CAPTURE_STUCK_SECONDS = 60
    grace = dt.timedelta(seconds=60)
    late = _pending(customer, text="最好有电梯", next_attempt_at=AT - grace)
    now_due = _pending(customer, text="不考虑顶楼")
    untimed = _pending(customer, text="叫我赵姐就好", next_attempt_at=None)
    _pending(customer, text="预算五千", next_attempt_at=AT + SECOND)
    _pending(customer, text="想要两居室", enqueued_at=AT - SECOND)
    _pending(customer, text="离地铁近一点", enqueued_at=AT - grace)
    lost = _pending(customer, text="要朝南的", enqueued_at=AT - grace - SECOND)
    _pending(customer, text="能养猫吗", status=CaptureJobStatus.RUNNING, started_at=AT)
    _pending(customer, text="周末看房", status=CaptureJobStatus.DONE)
    # when the sweeper runs
    result = capture_sweep(now=AT)
    # then the due ones whose message may be lost are sent again, by due time then id, the untimed first
    assert result.requeued == [untimed.pk, late.pk, now_due.pk, lost.pk]
    assert sent == [(account.pk, result.requeued)]
    assert set(CaptureJob.objects.filter(pk__in=result.requeued).values_list("enqueued_at", flat=True)) == {AT}


def test_capture_sweep_with_a_later_clock_leaves_the_jobs_due_for_the_worker(customer, clock, sent, settings):
    # given a job due in ten minutes, and a sweep run for a clock an hour ahead
    settings.QIWEI_CAPTURE_STUCK_SECONDS = 60
    job = _pending(customer, next_attempt_at=AT + dt.timedelta(minutes=10))
    ahead = AT + dt.timedelta(hours=1)
    # when it sweeps
    result = capture_sweep(now=ahead, limit=5)
    # then the job is sent, marked sent at the sweep's time and due by the worker's real clock
    assert result.requeued == [job.pk]
    job.refresh_from_db()
    assert (job.enqueued_at, job.next_attempt_at) == (ahead, AT)
    # and the worker can claim it now
    assert sql.capture_job_claim(job.pk, AT) is not None


def test_capture_sweep_sends_at_most_its_limit_of_due_jobs(customer, clock, sent, settings):
    # given three due jobs
    settings.QIWEI_CAPTURE_STUCK_SECONDS = 60
    due = [_pending(customer, text=text) for text in ("最好有电梯", "不考虑顶楼", "叫我赵姐就好")]
    # when the sweeper runs with a limit of two
    result = capture_sweep(now=AT, limit=2)
    # then it sends two, the third waits (never marked sent)
    assert result.requeued == [due[0].pk, due[1].pk]
    assert CaptureJob.objects.get(pk=due[2].pk).enqueued_at is None


def test_capture_sweep_sends_a_thousand_due_jobs_at_a_time(customer, clock, sent, settings):
    # given a backlog of 1,001 due drafts' jobs (a broker down for a while)
    settings.QIWEI_CAPTURE_STUCK_SECONDS = 60
    CaptureJob.objects.bulk_create(
        CaptureJob(customer=customer, payload={"draft_id": n}, next_attempt_at=AT) for n in range(1001)
    )
    # when the sweeper runs with its own limit
    result = capture_sweep()
    # then it sends the first thousand, and the last one waits for the next sweep
    assert len(result.requeued) == 1000
    assert CaptureJob.objects.filter(enqueued_at__isnull=True).get().payload == {"draft_id": 1000}


def test_capture_job_judges_the_words_as_received_not_as_stored_masked(customer, clock, sent):
    # given a message that told a door code, stored masked with its words as received sealed, queued
    messages_ingest(
        conversation_id=customer.conversation_id,
        messages=[wecom_message("门锁密码是Lx9#qa2041，看房时直接进")],
        actor="wecom-webhook",
    )
    job = CaptureJob.objects.get(customer=customer)
    assert "Lx9#qa2041" not in job.message.text
    # when its capture job runs
    capture_job_run(job_id=job.pk)
    # then the safety gate judged the sealed words: the message is blocked, and nothing is memory
    blocked = AuditEvent.objects.get(action=AuditAction.MEMORY_CAPTURE_BLOCKED)
    assert blocked.payload["message_id"] == job.message_id
    assert not MemoryItem.objects.exists()
