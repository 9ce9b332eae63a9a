"""Durable capture jobs: a failing memory store never fails ingest; failures back off, are audited
and retried by the sweeper; a job completes exactly once; killed workers are recovered."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from conversations.models import AuditEvent
from memory.capture import evidence as capture_evidence
from memory.capture import services as capture_services
from memory.capture.jobs import capture_job_enqueue, capture_job_run, capture_sweep
from memory.governance.services import memory_item_forget
from memory.items import MemoryWrites
from memory.models import CaptureJob, CaptureJobStatus, MemoryItem, MemorySnapshot
from memory.tasks import capture_sweep_all
from tests.factories import CustomerFactory, MessageFactory
from tests.memory.conftest import wecom_message


@pytest.fixture
def failing_store(monkeypatch):
    """The memory store raises when it writes, as a locked or unreachable database would."""

    def boom(*args, **kwargs):
        raise RuntimeError("database is locked")

    monkeypatch.setattr(MemoryWrites, "flush", boom)
    return monkeypatch


def test_ingest_api_succeeds_and_job_backs_off_when_memory_store_fails(staff_client, failing_store, settings):
    settings.QIWEI_CAPTURE_RETRY_BASE_SECONDS = 10
    before = timezone.now()
    # When a customer message is ingested while the memory store is failing
    response = staff_client.post(
        "/api/accounts/acme/conversations/wm_conv_9001/messages/", wecom_message("我更喜欢地铁附近的"), format="json"
    )
    # Then ingest still answers 201, the failure is audited and the job waits for a later retry
    assert response.status_code == 201, response.content
    job = CaptureJob.objects.get()
    assert (job.status, job.attempts) == (CaptureJobStatus.PENDING, 1)
    assert job.next_attempt_at >= before + dt.timedelta(seconds=20)
    assert "RuntimeError" in job.last_error
    event = AuditEvent.objects.get(action="memory_capture_failed")
    assert event.payload["job_id"] == job.pk and event.payload["final"] is False
    assert MemoryItem.objects.count() == 0

    # When the store recovers and the sweeper runs after the back-off
    failing_store.undo()
    assert capture_sweep().requeued == []  # not due yet
    result = capture_sweep(now=job.next_attempt_at + dt.timedelta(seconds=1))
    # Then the job is retried and succeeds
    job.refresh_from_db()
    assert result.requeued == [job.pk]
    assert (job.status, job.attempts, job.last_error) == (CaptureJobStatus.DONE, 2, "")
    assert MemoryItem.objects.get().key == "preference:地铁附近"


def test_capture_job_fails_for_good_after_max_attempts(account, failing_store, settings):
    settings.QIWEI_CAPTURE_MAX_ATTEMPTS = 2
    settings.QIWEI_CAPTURE_RETRY_BASE_SECONDS = 0
    customer = CustomerFactory()
    job = capture_job_enqueue(customer=customer, message=MessageFactory(customer=customer, text="不要一楼"))
    job.refresh_from_db()
    assert (job.status, job.attempts) == (CaptureJobStatus.PENDING, 1)
    capture_sweep(now=timezone.now() + dt.timedelta(hours=1))
    job.refresh_from_db()
    assert (job.status, job.attempts) == (CaptureJobStatus.FAILED, 2)
    finals = [e.payload["final"] for e in AuditEvent.objects.filter(action="memory_capture_failed").order_by("id")]
    assert finals == [False, True]


def test_capture_job_run_claims_once(account, settings):
    # Given a job that already completed
    customer = CustomerFactory()
    job = capture_job_enqueue(customer=customer, message=MessageFactory(customer=customer, text="比较喜欢精装修"))
    job.refresh_from_db()
    assert job.status == CaptureJobStatus.DONE
    # When a duplicate broker message delivers it again
    again = capture_job_run(job_id=job.pk)
    # Then nothing runs
    job.refresh_from_db()
    assert again is None and job.attempts == 1
    assert MemoryItem.objects.get().source_message_ids == [job.message_id]


def test_capture_job_of_killed_worker_is_recovered_by_sweeper(account, settings):
    settings.QIWEI_CAPTURE_STUCK_SECONDS = 60
    customer = CustomerFactory()
    message = MessageFactory(customer=customer, text="叫我陈姐就好")
    # Given a job a worker claimed and then died with (running, never finished)
    started = timezone.now() - dt.timedelta(minutes=5)
    job = CaptureJob.objects.create(
        customer=customer, message=message, status=CaptureJobStatus.RUNNING, attempts=1, started_at=started
    )
    # When the sweeper runs
    result = capture_sweep()
    # Then the job is recovered and completed by a fresh run
    job.refresh_from_db()
    assert result.recovered == [job.pk] and result.requeued == [job.pk]
    assert (job.status, job.attempts) == (CaptureJobStatus.DONE, 2)
    assert MemoryItem.objects.get().content == "称呼：陈姐"


def test_capture_job_lost_claim_rolls_back_its_writes(account, monkeypatch):
    # Given a job whose claim is taken over while it runs (the sweeper thought the worker dead)
    customer = CustomerFactory()
    message = MessageFactory(customer=customer, text="不考虑顶楼")
    job = CaptureJob.objects.create(customer=customer, message=message, next_attempt_at=timezone.now())
    real_apply = capture_services.capture_apply

    def capture_then_lose_claim(plan, **kwargs):
        outcome = real_apply(plan, **kwargs)
        CaptureJob.objects.filter(pk=job.pk).update(attempts=99)
        return outcome

    monkeypatch.setattr(capture_services, "capture_apply", capture_then_lose_claim)
    # When the run finishes
    assert capture_job_run(job_id=job.pk) is None
    # Then its writes were rolled back and the job is not marked done by it
    job.refresh_from_db()
    assert job.status == CaptureJobStatus.RUNNING and MemoryItem.objects.count() == 0


def test_capture_job_profile_updates_payload_updates_profile(account):
    customer = CustomerFactory()
    message = MessageFactory(customer=customer, text="预算可以到4500")
    job = capture_job_enqueue(
        customer=customer,
        payload={"profile_updates": {"budget": "4500"}, "source_message_ids": [message.pk], "draft_id": 7},
    )
    job.refresh_from_db()
    customer.profile.refresh_from_db()
    assert job.status == CaptureJobStatus.DONE
    assert customer.profile.budget == "4500"
    item = MemoryItem.objects.get(key="profile:budget")
    assert (item.content, item.source_message_ids, item.created_by) == ("预算：4500", [message.pk], "auto")


def test_capture_sweep_all_sweeps_active_accounts(account, settings):
    settings.QIWEI_CAPTURE_STUCK_SECONDS = 5
    customer = CustomerFactory()
    message = MessageFactory(customer=customer, text="最好有电梯")
    CaptureJob.objects.create(customer=customer, message=message, next_attempt_at=timezone.now())
    summary = capture_sweep_all()
    assert summary["acme"]["requeued"] == 1
    assert CaptureJob.objects.get().status == CaptureJobStatus.DONE


def test_capture_job_of_a_draft_writes_profile_and_hypothesis_in_one_batch(account):
    # given a draft's grounded budget and a hypothesis, both resting on the customer's message
    customer = CustomerFactory()
    message = MessageFactory(customer=customer, text="预算4500，我在张江上班")
    hypothesis = {
        "key": "commute_zhangjiang",
        "text": "通勤以张江为中心",
        "confidence": 0.9,
        "message_ids": [message.pk],
    }
    # when its capture job runs
    job = capture_job_enqueue(
        customer=customer,
        payload={
            "profile_updates": {"budget": "4500"},
            "source_message_ids": [message.pk],
            "hypotheses": [hypothesis],
            "draft_id": 8,
        },
    )
    job.refresh_from_db()
    # then both are written, the snapshot gets one new version, and the job keeps no hypothesis text
    assert job.status == CaptureJobStatus.DONE
    assert MemoryItem.objects.get(key="profile:budget").content == "预算：4500"
    assert MemoryItem.objects.get(key="hypothesis:commute_zhangjiang").confidence == 0.6
    assert MemorySnapshot.objects.filter(customer=customer).count() == 1
    assert job.payload["hypotheses"] == [{"key": "commute_zhangjiang", "message_ids": [message.pk]}]
    assert {e.payload.get("type") for e in AuditEvent.objects.filter(action="memory_item_captured")} == {
        "fact",
        "hypothesis",
    }


def test_capture_job_honours_a_forget_made_while_it_read_the_message(account, staff_user, monkeypatch):
    # given a preference captured from an earlier message, and a job for the same words again
    customer = CustomerFactory()
    capture_job_enqueue(customer=customer, message=MessageFactory(customer=customer, text="我比较喜欢南向的"))
    earlier = MemoryItem.objects.get(key="preference:南向")
    job = CaptureJob.objects.create(
        customer=customer,
        message=MessageFactory(customer=customer, text="还是比较喜欢南向的"),
        next_attempt_at=timezone.now(),
    )
    real_extract = capture_evidence.extract

    def extract_while_the_supervisor_forgets(*args, **kwargs):
        # the customer asked to be forgotten: a supervisor does it while the job extracts, before it writes
        memory_item_forget(item=earlier, actor=staff_user, reason="客户要求删除")
        return real_extract(*args, **kwargs)

    # capture reads every message through the one evidence check (memory.capture.evidence)
    monkeypatch.setattr(capture_evidence, "extract", extract_while_the_supervisor_forgets)
    # when the job runs
    capture_job_run(job_id=job.pk)
    # then the job decided on what its own write transaction read: the value does not come back,
    # and nothing was written about the forgotten item (no history row, no audit naming it)
    job.refresh_from_db()
    assert job.status == CaptureJobStatus.DONE
    assert not MemoryItem.objects.filter(key="preference:南向").exists()
    assert not MemoryItem.history.filter(id=earlier.pk).exists()
    captured = AuditEvent.objects.filter(action="memory_item_captured", payload__item_id=earlier.pk)
    assert captured.count() == 1  # the first capture only
