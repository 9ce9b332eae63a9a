"""`memory.sql`: each hand-written statement gives what its ORM twin gives, on the same rows
(SQLite here; `tests/integration/test_sql_pg.py` runs the same comparisons on PostgreSQL)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conversations.models import (
    Alert,
    AlertLevel,
    Customer,
    CustomerProfile,
    FeedbackSource,
    FeedbackVerdict,
    Message,
    MessageDirection,
    MessageSecret,
    Recommendation,
    RecommendationFeedback,
    RecommendationStatus,
    TaskStatus,
)
from conversations.received import stored_form
from memory import sql
from memory.context.recall import recall_features_store
from memory.models import CaptureJob, MemoryCreatedBy, MemoryDecision, MemorySnapshot, MemoryStatus
from qiwei_site.platform.tenancy import current_alias
from tests.factories import CustomerFactory, MemoryItemFactory, MessageFactory, TaskFactory
from tests.memory import sql_twins

T0 = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)


def at(minutes: float) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


def busy_customer(conversation_id: str = "wm_sql_wang") -> dict[str, Any]:
    """A customer with everything a build and a capture read: ties on send times, a withdrawn
    message, a system line, stored recall features for some messages, open and done tasks (one
    with no due time), resolved and open alerts, twelve recommendations with feedback (ties on
    time), three snapshots, human and model items in every status, decisions and capture jobs."""
    customer = CustomerFactory(conversation_id=conversation_id, display_name="王先生")
    CustomerProfile.objects.filter(customer=customer).update(city="上海", budget="5000元以内", layout="两居室")
    texts = [
        ("inbound", "你好，想在浦东租个两居室"),
        ("outbound", "王先生您好，请问预算大概多少？"),
        ("inbound", "五千以内吧，最好近地铁"),
        ("system", "客户已添加为企业微信好友"),
        ("inbound", "周六上午可以看房吗"),
        ("outbound", "可以的，我帮您约张江那套"),
        ("inbound", "好的，谢谢"),
    ]
    messages = []
    for index, (direction, text) in enumerate(texts):
        # Pairs of messages share a send time: the order then falls to the id.
        messages.append(
            MessageFactory(customer=customer, direction=direction, text=text, sent_at=at(index // 2), sender="王先生")
        )
    withdrawn = MessageFactory(customer=customer, text="这条撤回了", sent_at=at(2), is_effective=False)
    # One message came with a mobile number: stored masked, its original sealed.
    text, sealed, categories = stored_form("我手机13812345678，白天都能打")
    messages.append(MessageFactory(customer=customer, text=text, sent_at=at(1.5)))
    MessageSecret.objects.create(message=messages[-1], sealed=sealed, categories=list(categories))
    recall_features_store(messages=messages[:4])  # features stored for some messages only
    TaskFactory(customer=customer, title="周六上午带看两居室", due_at=at(600))
    TaskFactory(customer=customer, title="回访预算", due_at=None)
    TaskFactory(customer=customer, title="同一时间的另一件事", due_at=at(600))
    TaskFactory(customer=customer, title="已经办完", status=TaskStatus.DONE, due_at=at(10))
    Alert.objects.create(customer=customer, level=AlertLevel.WARNING, text="客户提到押金纠纷")
    Alert.objects.create(customer=customer, level=AlertLevel.INFO, text="已处理", resolved=True)
    recommendations = []
    for index in range(12):
        recommendation = Recommendation.objects.create(
            customer=customer,
            text=f"张江地铁站旁两居室 {index + 1} 号",
            status=RecommendationStatus.RESOLVED if index == 3 else RecommendationStatus.OPEN,
        )
        Recommendation.objects.filter(pk=recommendation.pk).update(created_at=at(index // 3))
        recommendations.append(recommendation)
    for index, verdict in enumerate([FeedbackVerdict.INTERESTED, FeedbackVerdict.DECLINED, FeedbackVerdict.NEUTRAL]):
        feedback = RecommendationFeedback.objects.create(
            recommendation=recommendations[-1],
            customer=customer,
            source=FeedbackSource.CUSTOMER,
            verdict=verdict,
            comment=f"第{index + 1}次反馈",
        )
        RecommendationFeedback.objects.filter(pk=feedback.pk).update(created_at=at(30 + (index // 2)))
    for version in (1, 2, 3):
        MemorySnapshot.objects.create(
            customer=customer,
            version=version,
            content=f"偏好：近地铁（第{version}版）",
            sha256=f"{version:064d}",
            char_count=10,
            item_ids=[version, version + 1],
            left_out_ids=[],
            reason="测试",
        )
    MemoryItemFactory(
        customer=customer, content="预算五千以内", created_by=MemoryCreatedBy.HUMAN, source_message_ids=[]
    )
    MemoryItemFactory(
        customer=customer, content="近地铁", importance=5, confidence=0.9, source_message_ids=[messages[2].pk]
    )
    # Its sources: two of the customer's messages and an id no message has.
    MemoryItemFactory(
        customer=customer,
        content="不要一楼",
        expires_at=at(60 * 24 * 30),
        source_message_ids=[messages[0].pk, messages[4].pk, 987654],
    )
    MemoryItemFactory(customer=customer, content="想要三居", status=MemoryStatus.REJECTED)
    MemoryItemFactory(
        customer=customer, content="张江", status=MemoryStatus.SUPERSEDED, created_by=MemoryCreatedBy.HUMAN
    )
    MemoryDecision.objects.create(
        customer=customer, kind="reject", key_fingerprint="k" * 16, value_fingerprint="v" * 16, decided_at=at(5)
    )
    jobs = [CaptureJob.objects.create(customer=customer, message=message, payload={}) for message in messages[:5]] + [
        CaptureJob.objects.create(customer=customer, message=None, payload={"memory": [{"content": "近地铁"}]})
    ]
    return {"customer": customer, "messages": messages, "withdrawn": withdrawn, "jobs": jobs}


def bare_customer() -> Customer:
    """No profile, no messages, nothing else."""
    customer = CustomerFactory(conversation_id="wm_sql_empty", display_name="新客户")
    CustomerProfile.objects.filter(customer=customer).delete()
    return customer


# --- the context build's reads ------------------------------------------------------------------


@pytest.mark.django_db
def test_sql_context_reads_equal_their_orm_twins(account):
    # Given a busy customer, a bare one and an id with no customer
    world = busy_customer()
    ids = [world["customer"].pk, bare_customer().pk, 987654]
    for customer_id in ids:
        # Then every context read gives what its ORM twin gives
        assert_context_reads_equal(customer_id, world["messages"])


def assert_context_reads_equal(customer_id: int, messages: list[Message]) -> None:
    assert sql.version_and_profile(customer_id) == sql_twins.version_and_profile(customer_id)
    for size in (1, 3, 50):
        assert sql.window_newest(customer_id, size) == list(sql_twins.window_newest(customer_id, size))
        for message in messages:
            assert sql.window_up_to(customer_id, message.sent_at, message.pk, size) == list(
                sql_twins.window_up_to(customer_id, message.sent_at, message.pk, size)
            )
    assert sql.open_tasks(customer_id) == list(sql_twins.open_tasks(customer_id))
    assert sql.open_alerts(customer_id) == list(sql_twins.open_alerts(customer_id))
    assert sql.open_recommendations(customer_id) == sql_twins.open_recommendations(customer_id)
    assert sql.current_snapshot(customer_id) == list(sql_twins.current_snapshot(customer_id))
    assert sql.human_items(customer_id) == list(sql_twins.human_items(customer_id))
    assert sql.active_items(customer_id) == list(sql_twins.active_items(customer_id))


@pytest.mark.django_db
def test_sql_context_reads_see_what_the_busy_customer_holds(account):
    # Given a busy customer
    world = busy_customer()
    customer_id = world["customer"].pk
    # Then the reads are not trivially equal: each finds rows, typed as the ORM types them
    version, profile = sql.version_and_profile(customer_id)
    assert version > 0 and profile is not None and "上海" in profile
    window = sql.window_newest(customer_id, 50)
    assert [row[3] for row in window][:2] == ["好的，谢谢", "可以的，我帮您约张江那套"]
    assert "这条撤回了" not in [row[3] for row in window]
    assert isinstance(window[0][4], dt.datetime) and window[0][4].tzinfo is not None
    assert any(row[7] for row in window)  # stored features
    tasks = [row[1] for row in sql.open_tasks(customer_id)]
    assert [title for title in tasks if title != "回访预算"] == ["周六上午带看两居室", "同一时间的另一件事"]
    assert sorted(tasks) == sorted(["周六上午带看两居室", "同一时间的另一件事", "回访预算"])  # no due time: either end
    assert [row[2] for row in sql.open_alerts(customer_id)] == ["客户提到押金纠纷"]
    recommendations = sql.open_recommendations(customer_id)
    assert len(recommendations) == 10 and recommendations[0][1] == "张江地铁站旁两居室 12 号"
    assert recommendations[0][3:] == (FeedbackVerdict.NEUTRAL, "第3次反馈")
    assert sql.current_snapshot(customer_id) == [(3, "偏好：近地铁（第3版）", [3, 4])]
    assert len(sql.human_items(customer_id)) == 2
    assert [row[2] for row in sql.active_items(customer_id)] == ["近地铁", "不要一楼", "预算五千以内"]


# --- capture's reads -------------------------------------------------------------------------


def job_as_values(job: CaptureJob | None) -> Any:
    if job is None:
        return None
    message = job.message
    return (
        {field.attname: getattr(job, field.attname) for field in CaptureJob._meta.concrete_fields},
        {field.attname: getattr(job.customer, field.attname) for field in Customer._meta.concrete_fields},
        None
        if message is None
        else {field.attname: getattr(message, field.attname) for field in Message._meta.concrete_fields},
        job.previous_direction,  # type: ignore[attr-defined]
        job.previous_text,  # type: ignore[attr-defined]
        message is not None and message.customer is job.customer,
        None if message is None else message.sealed_text,  # type: ignore[attr-defined]
    )


def claimed_and_twin(job_id: int) -> tuple[Any, Any]:
    """The job as the claim returns it, and as the ORM twin reads it back after that claim."""
    ours = sql.capture_job_claim(job_id, at(0))
    return ours, sql_twins.capture_job_get(job_id)


@pytest.mark.django_db
def test_sql_capture_job_claim_returns_what_its_orm_twin_reads(account):
    # Given jobs for a first message, messages after a tie and after a system line, and a payload job
    world = busy_customer()
    previous = []
    for job in [*world["jobs"], None]:
        job_id = job.pk if job is not None else 987654
        # When each is claimed
        ours, twin = claimed_and_twin(job_id)
        # Then the claim returns the job as claimed, its customer, its message and the message
        # before it, as the ORM twin reads them back
        assert job_as_values(ours) == job_as_values(twin)
        assert (ours is None) == (job is None)
        if ours is not None:
            assert (ours.status, ours.attempts) == ("running", 1)
            previous.append(ours.previous_text)  # type: ignore[attr-defined]
    # (the system line is skipped; the message with a mobile number comes before the fifth, masked)
    assert previous[:5] == [
        None,
        "你好，想在浦东租个两居室",
        "王先生您好，请问预算大概多少？",
        "五千以内吧，最好近地铁",
        "我手机138****5678，白天都能打",
    ]


@pytest.mark.django_db
def test_sql_memory_state_equals_its_orm_twin(account):
    # Given a busy customer (profile, three active items, decisions, snapshots) and a bare one
    world = busy_customer()
    for customer_id in [world["customer"].pk, bare_customer().pk]:
        # Then the state read gives the ORM twin's rows (items in id order; the twin's are unordered)
        ours = sql.memory_state(customer_id)
        twin = sql_twins.memory_state_rows(customer_id=customer_id)
        assert ours == sorted(twin, key=state_row_item_id)
    busy = sql.memory_state(world["customer"].pk)
    assert len(busy) == 3 and busy[0][:3] == (3, "3".zfill(64), True)
    # And each item's evidence times are its own messages' (the newest of them; none for no sources)
    first, newest = world["messages"][0], world["messages"][4]
    assert [(row.evidence_received, row.evidence_sent) for row in busy] == [
        (None, None),
        (world["messages"][2].sent_at, world["messages"][2].sent_at),
        (min(newest.sent_at, newest.created_at), max(first.sent_at, newest.sent_at)),
    ]


def state_row_item_id(row: tuple[Any, ...]) -> int:
    """The item id of a memory-state row (0 for a customer with none), as the SQL orders them."""
    return row[-len(sql._ITEM_NAMES) - 2] or 0


# --- ties and withdrawn messages, at random ------------------------------------------------------

MESSAGES = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=4),  # minute: many ties
        st.sampled_from([MessageDirection.INBOUND, MessageDirection.OUTBOUND, MessageDirection.SYSTEM]),
        st.booleans(),  # effective
        st.integers(min_value=0, max_value=999_999),  # microseconds
    ),
    min_size=0,
    max_size=12,
)


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=MESSAGES, size=st.integers(min_value=1, max_value=6))
def test_sql_window_and_job_equal_their_twins_for_any_conversation(account, rows, size):
    # Given any conversation (ties on send time, withdrawn and system messages) with a job per message
    Customer.objects.filter(conversation_id="wm_sql_random").delete()
    customer = CustomerFactory(conversation_id="wm_sql_random")
    messages = [
        MessageFactory(
            customer=customer,
            direction=direction,
            is_effective=effective,
            sent_at=at(minute) + dt.timedelta(microseconds=micro if micro % 2 else 0),
            text=f"第{index}条：想看看两居室",
        )
        for index, (minute, direction, effective, micro) in enumerate(rows)
    ]
    # Then the window up to each message, and each job's message before, equal the ORM's
    assert sql.window_newest(customer.pk, size) == list(sql_twins.window_newest(customer.pk, size))
    for message in messages:
        assert sql.window_up_to(customer.pk, message.sent_at, message.pk, size) == list(
            sql_twins.window_up_to(customer.pk, message.sent_at, message.pk, size)
        )
        job = CaptureJob.objects.create(customer=customer, message=message, payload={})
        ours, twin = claimed_and_twin(job.pk)
        assert ours is not None and job_as_values(ours) == job_as_values(twin)


# --- capture's claim and finish -----------------------------------------------------------------

JOB_STATES = [
    {"status": "pending", "next_attempt_at": None, "attempts": 0},
    {"status": "pending", "next_attempt_at": at(-1), "attempts": 1},
    {"status": "pending", "next_attempt_at": at(0), "attempts": 1},  # due exactly now
    {"status": "pending", "next_attempt_at": at(1), "attempts": 2},  # not due yet
    {"status": "running", "next_attempt_at": None, "attempts": 1},
    {"status": "running", "next_attempt_at": None, "attempts": 2},
    {"status": "done", "next_attempt_at": None, "attempts": 1},
    {"status": "failed", "next_attempt_at": None, "attempts": 5},
]


def job_row(job_id: int) -> dict[str, Any]:
    return CaptureJob.objects.filter(pk=job_id).values(
        "status", "attempts", "started_at", "finished_at", "last_error", "updated_at", "next_attempt_at"
    )[0]


def assert_claim_and_finish_equal_their_twins(customer: Customer) -> None:
    from memory.capture.jobs import _finish_query

    now = at(0)

    def twin_claim(job_id: int) -> bool:
        queryset, values = sql_twins.capture_job_claim_query(job_id, now, now, now)
        return queryset.update(**values) == 1

    def twin_finish(job_id: int) -> int:
        queryset, values = _finish_query(job_id, 1, now, now)
        return queryset.update(**values)

    for state in JOB_STATES:
        for ours, twin in [
            (lambda pk: sql.capture_job_claim(pk, now) is not None, twin_claim),
            (lambda pk: sql.capture_job_finish(pk, 1, now), twin_finish),
        ]:
            # Given two jobs in the same state
            first, second = (
                CaptureJob.objects.create(customer=customer, payload={}, last_error="上次失败：超时", **state)
                for _ in range(2)
            )
            CaptureJob.objects.filter(pk__in=[first.pk, second.pk]).update(updated_at=at(-5))
            # When one is claimed (or finished) by the SQL and the other by the ORM twin
            # Then both report the same and leave the same row
            assert ours(first.pk) == twin(second.pk)
            assert job_row(first.pk) == job_row(second.pk)


@pytest.mark.django_db
def test_sql_capture_claim_and_finish_equal_their_orm_twins(account):
    assert_claim_and_finish_equal_their_twins(CustomerFactory(conversation_id="wm_sql_jobs"))
    claimed = CaptureJob.objects.create(customer=Customer.objects.get(conversation_id="wm_sql_jobs"), payload={})
    assert sql.capture_job_claim(claimed.pk, at(0)) is not None
    assert sql.capture_job_claim(claimed.pk, at(0)) is None  # one run wins
    assert job_row(claimed.pk)["status"] == "running" and job_row(claimed.pk)["attempts"] == 1
    assert sql.capture_job_finish(claimed.pk, 1, at(1)) == 1
    assert job_row(claimed.pk)["finished_at"] == at(1)


# --- ingest's reads of the customer -------------------------------------------------------------


def customer_as_values(customer: Customer | None) -> Any:
    if customer is None:
        return None
    return {field.attname: getattr(customer, field.attname) for field in Customer._meta.concrete_fields}


def assert_ingest_customer_reads_equal(conversation_ids: list[str]) -> None:
    for conversation_id in conversation_ids:
        ours = sql.customer_by_conversation(conversation_id)
        assert customer_as_values(ours) == customer_as_values(sql_twins.customer_by_conversation(conversation_id))
        if ours is None:
            continue
        with transaction.atomic(using=current_alias()):
            assert customer_as_values(sql.customer_locked(ours.pk)) == customer_as_values(
                sql_twins.customer_locked(ours.pk)
            )


@pytest.mark.django_db
def test_sql_ingest_customer_reads_equal_their_orm_twins(account):
    # Given a customer with every column set (a last message time, a whitelist, a name) and a bare one
    world = busy_customer()
    Customer.objects.filter(pk=world["customer"].pk).update(last_message_at=at(3), auto_send_whitelisted=True)
    bare = bare_customer()
    # Then the look-up by conversation id and the locked re-read give what the ORM gives, and an
    # unknown conversation is None
    assert_ingest_customer_reads_equal([world["customer"].conversation_id, bare.conversation_id, "wm_nobody_here"])
    # And a customer gone (erased meanwhile) is DoesNotExist, as the ORM's get says
    with transaction.atomic(using=current_alias()), pytest.raises(Customer.DoesNotExist):
        sql.customer_locked(987654)


@pytest.mark.django_db
def test_sql_customer_last_message_set_equals_its_orm_twin(account):
    # Given two customers alike
    first, second = CustomerFactory(conversation_id="wm_sql_last_a"), CustomerFactory(conversation_id="wm_sql_last_b")
    # When one's last message time is moved by the statement and the other's by the ORM twin
    assert sql.customer_last_message_set(first.pk, at(7), at(8)) == sql_twins.customer_last_message_set(
        second.pk, at(7), at(8)
    )
    # Then both rows hold the same times, and an unknown customer changes nothing
    rows = Customer.objects.filter(pk__in=[first.pk, second.pk]).values_list("last_message_at", "updated_at")
    assert set(rows) == {(at(7), at(8))}
    assert sql.customer_last_message_set(987654, at(7), at(8)) == 0


def message_as_values(message: Message) -> dict[str, Any]:
    return {field.attname: getattr(message, field.attname) for field in Message._meta.concrete_fields}


def assert_duplicate_check_equals_its_twin(customer_id: int, external_ids: list[str]) -> None:
    ours = sorted((message_as_values(m) for m in sql.messages_by_external_id(customer_id, external_ids)), key=str)
    twin = sorted((message_as_values(m) for m in sql_twins.messages_by_external_id(customer_id, external_ids)), key=str)
    assert ours == twin


@pytest.mark.django_db
def test_sql_ingest_duplicate_check_equals_its_orm_twin(account):
    # Given a busy customer's messages and another customer's under the same external id
    world = busy_customer()
    customer_id = world["customer"].pk
    stored = list(Message.objects.filter(customer_id=customer_id).values_list("external_id", flat=True))
    other = CustomerFactory(conversation_id="wm_sql_other")
    MessageFactory(customer=other, external_id=stored[0], text="别人的消息，同一个外部 ID")
    # Then the check finds what the ORM finds: one id, several, repeats, unknown ones, none at all,
    # and never another customer's message
    for ids in [stored[:1], stored, [stored[0], stored[0], "wx_unknown"], ["wx_unknown"], []]:
        assert_duplicate_check_equals_its_twin(customer_id, ids)
    assert {m.customer_id for m in sql.messages_by_external_id(customer_id, stored)} == {customer_id}
