"""Ingest under races (issue 11 item 1): no message is lost or stored twice, and losing a race is
retried — a bounded number of times, then a 503 with Retry-After, never a 500.

`post_concurrently` and `check_race` are shared with tests/integration/test_ingest_concurrency.py,
which runs the same races with 50 threads on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
from django.db import IntegrityError, OperationalError, connections
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from conversations.models import AuditEvent, Customer, CustomerProfile, Message
from memory.capture import ingest
from memory.capture.ingest import messages_ingest
from memory.models import CaptureJob
from qiwei_site.platform.tenancy import use_account

TEXTS = [
    "你好，我想在浦东新区租个两居室",
    "预算六千以内，最好靠近地铁",
    "我养了一只猫，房东能接受吗？",
    "周六上午方便看房",
    "不考虑顶楼，电梯房优先",
]


def wecom_batch(ids: list[int], *, minutes_ago: int = 600) -> list[dict[str, Any]]:
    """Messages `wx_NNN`; even numbers are the customer's, odd ones the agent's."""
    base = timezone.now() - dt.timedelta(minutes=minutes_ago)
    return [
        {
            "external_id": f"wx_{n:03d}",
            "direction": "inbound" if n % 2 == 0 else "outbound",
            "text": TEXTS[n % len(TEXTS)],
            "sender": "王先生" if n % 2 == 0 else "客服小李",
            "sent_at": (base + dt.timedelta(seconds=n)).isoformat(),
        }
        for n in ids
    ]


@dataclass
class Answer:
    status: int | None
    content_type: str = ""
    body: Any = None
    error: str = ""


@dataclass
class RaceResult:
    answers: list[Answer] = field(default_factory=list)

    @property
    def statuses(self) -> Counter[int | None]:
        return Counter(answer.status for answer in self.answers)


def post_concurrently(*, token: str, requests: list[tuple[str, Any]]) -> RaceResult:
    """Post every (url, payload) from its own thread, all released at once by a barrier, through the
    real API stack (the Django test client; each thread has its own database connections)."""
    barrier = threading.Barrier(len(requests))
    answers: list[Answer] = [Answer(status=None) for _ in requests]

    def post(index: int, url: str, payload: Any) -> None:
        client = APIClient()
        client.raise_request_exception = False
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        try:
            barrier.wait(timeout=60)
            response = client.post(url, payload, format="json")
            content_type = response.get("Content-Type", "")
            body = response.json() if content_type.startswith("application/json") else response.content[:300]
            answers[index] = Answer(response.status_code, content_type, body)
        except BaseException as exc:  # recorded, and asserted on by the test
            answers[index] = Answer(None, error=repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=post, args=(i, url, payload)) for i, (url, payload) in enumerate(requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return RaceResult(answers)


def check_race(
    *, account_id: str, conversation_id: str, result: RaceResult, posted: list[list[int]], stored_before: set[int]
) -> None:
    """Every answer a 201 that accounts for every message it carried; every message stored exactly
    once, created exactly once across all answers, with one capture job per customer message."""
    assert result.statuses == Counter({201: len(posted)}), [
        (a.status, a.body, a.error) for a in result.answers if a.status != 201
    ][:5]
    created_total = 0
    for answer, ids in zip(result.answers, posted, strict=True):
        assert {m["external_id"] for m in answer.body["messages"]} == {f"wx_{n:03d}" for n in ids}
        assert answer.body["created"] + answer.body["duplicates"] == len(set(ids))
        created_total += answer.body["created"]
    expected = set().union(*map(set, posted)) | stored_before
    with use_account(account_id):
        customers = Customer.objects.filter(conversation_id=conversation_id)
        assert customers.count() == 1
        customer = customers.get()
        assert CustomerProfile.objects.filter(customer=customer).count() == 1
        stored = list(Message.objects.filter(customer=customer).values_list("external_id", flat=True))
        assert sorted(stored) == sorted(f"wx_{n:03d}" for n in expected)  # each exactly once
        assert created_total == len(expected - stored_before)
        inbound = Message.objects.filter(customer=customer, direction="inbound")
        assert CaptureJob.objects.filter(customer=customer).count() == inbound.count()
        assert customer.last_message_at == max(m.sent_at for m in Message.objects.filter(customer=customer))
        audited = [
            pk
            for event in AuditEvent.objects.filter(action="messages_ingested", conversation_id=conversation_id)
            for pk in event.payload["message_ids"]
        ]
        assert len(audited) == len(set(audited))
    connections.close_all()


@pytest.fixture
def no_capture(monkeypatch):
    """Capture jobs are stored but not run (a worker's business): the race is ingest's alone."""
    monkeypatch.setattr("memory.capture.jobs._send", lambda account_id, ids: None)


@pytest.fixture
def token(staff_user) -> str:
    return Token.objects.get_or_create(user=staff_user)[0].key


URL = "/api/accounts/acme/conversations/{cid}/messages/"


@pytest.mark.django_db(transaction=True)
def test_ingest_first_messages_racing_create_the_customer_once(token, no_capture):
    # given 20 deliveries of a brand-new conversation's first messages, released at once
    posted = [[n % 10] for n in range(20)]
    requests = [(URL.format(cid="wm_race_first"), wecom_batch(ids)) for ids in posted]
    # when they all arrive together
    result = post_concurrently(token=token, requests=requests)
    # then all are 201, one customer exists, and each message is stored and created exactly once
    check_race(account_id="acme", conversation_id="wm_race_first", result=result, posted=posted, stored_before=set())


@pytest.mark.django_db(transaction=True)
def test_ingest_overlapping_batches_on_an_existing_conversation(account, token, no_capture):
    # given a conversation that already holds its first messages
    messages_ingest(conversation_id="wm_race_batch", messages=wecom_batch([0, 1, 2]), actor="wecom")
    # and 20 batches whose windows overlap each other and the stored messages
    posted = [[(i * 3 + k) % 40 for k in range(8)] for i in range(20)]
    requests = [(URL.format(cid="wm_race_batch"), wecom_batch(ids)) for ids in posted]
    # when they all arrive together
    result = post_concurrently(token=token, requests=requests)
    # then nothing is lost and nothing is stored twice
    check_race(
        account_id="acme", conversation_id="wm_race_batch", result=result, posted=posted, stored_before={0, 1, 2}
    )


def _fail_first(monkeypatch, errors: list[Exception]) -> list[int]:
    """Make ingest's insert of the messages raise the given errors on its first calls, then behave
    (the other rows' inserts pass untouched)."""
    real = ingest.insert
    calls: list[int] = []

    def flaky(objs: Any, *args: Any, **kwargs: Any) -> Any:
        if objs and isinstance(objs[0], Message):
            calls.append(1)
            if len(calls) <= len(errors):
                raise errors[len(calls) - 1]
        return real(objs, *args, **kwargs)

    monkeypatch.setattr(ingest, "insert", flaky)
    return calls


def _serialization_failure() -> OperationalError:
    error = OperationalError("could not serialize access due to concurrent update")
    error.__cause__ = psycopg.errors.SerializationFailure("could not serialize access")
    return error


def test_ingest_lost_race_is_retried_and_stored_once(account, monkeypatch):
    # given the first two writes collide with concurrent ingests (unique violation, serialization failure)
    calls = _fail_first(monkeypatch, [IntegrityError("UNIQUE constraint"), _serialization_failure()])
    # when a batch is ingested
    result = messages_ingest(conversation_id="wm_race_retry", messages=wecom_batch([0, 1, 2, 3]), actor="wecom")
    # then the third attempt stored it, once
    assert len(calls) == 3 and len(result.created) == 4
    assert Message.objects.count() == 4 and CaptureJob.objects.count() == 2
    assert AuditEvent.objects.filter(action="messages_ingested").count() == 1


def test_ingest_race_lost_every_time_is_503_with_retry_after(agent_client, monkeypatch):
    # given writes that keep colliding
    monkeypatch.setattr(ingest, "RETRY_BACKOFF_SECONDS", 0)
    calls = _fail_first(monkeypatch, [IntegrityError("UNIQUE")] * 50)
    # when WeCom delivers a message
    response = agent_client.post(URL.format(cid="wm_race_lost"), wecom_batch([0]), format="json")
    # then, after a bounded number of attempts, it is a clear 503 the gateway can retry
    assert len(calls) == ingest.INGEST_ATTEMPTS
    assert response.status_code == 503 and response.json()["code"] == "storage_unavailable"
    assert response.json()["cause"] == "contention" and int(response["Retry-After"]) >= 1
    assert Message.objects.count() == 0


def test_ingest_lock_that_waited_out_the_timeout_is_not_retried(account, monkeypatch):
    # given a write lock wait that used up the whole busy timeout
    locked = OperationalError("database is locked")
    cause = sqlite3.OperationalError("database is locked")
    cause.sqlite_errorcode = 5  # type: ignore[attr-defined]
    locked.__cause__ = cause
    monkeypatch.setattr(ingest, "LOCK_RETRY_BELOW_SECONDS", 0.0)
    calls = _fail_first(monkeypatch, [locked] * 5)
    # when a batch is ingested / then the lock error goes out at once (the API answers 503 "locked")
    with pytest.raises(OperationalError):
        messages_ingest(conversation_id="wm_race_locked", messages=wecom_batch([0]), actor="wecom")
    assert len(calls) == 1
