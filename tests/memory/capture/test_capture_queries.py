"""Statements per captured message (issue 13): a capture job costs a bounded number of SQL statements
whatever the message yields and however much the customer already has in memory.

What the count covers: every statement `capture_job_run` sends from the claim to the job's `done`,
for a job queued by ingest and run the way the worker runs it (`django_assert_max_num_queries` on
the account database, BEGIN and COMMIT of the write transaction included; on `default`, the
knowledge-index version that keys the cached place names). A single-item message is 10 statements
that read or write rows: claim · the job with its message and the message before it · the
message's kept reading (issue 36, item 9) · the customer's memory state (active items, profile,
snapshot head, whether decisions exist) · the reading made now, kept · the item · its history row ·
its audit row · the snapshot · done; plus BEGIN and COMMIT. Those are SQLite's
figures (the embedded default, whose write transaction holds the only write lock). On PostgreSQL,
where rows are locked one by one, the decisions are read after the items are locked, the customer
is locked and the snapshot head read under that lock before a version is written (3 more), and the
profile is read locked on its own: `BOUNDS` holds both.
"""

from __future__ import annotations

import pytest
from django.db import connections

from conversations.models import AuditEvent, CustomerProfile
from memory.capture.ingest import messages_ingest
from memory.capture.jobs import capture_job_run
from memory.models import CaptureJob, CaptureJobStatus, MemoryItem, MemorySnapshot, MemoryStatus
from qiwei_site.platform.tenancy import current_alias
from tests.memory.conftest import wecom_message

CONVERSATION = "wm_conv_queries"
TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK")
# Statements that read or write rows, per case and database vendor (BEGIN and COMMIT come on top).
BOUNDS = {
    "one_item": {"sqlite": 10, "postgresql": 13},
    "first_message": {"sqlite": 10, "postgresql": 13},
    "profile_fact": {"sqlite": 12, "postgresql": 16},
}


def bound(case: str) -> int:
    return BOUNDS[case][connections[current_alias()].vendor]


@pytest.fixture
def queued(account, monkeypatch):
    """Ingest customer messages with their capture jobs queued but not sent (a worker's business);
    returns the new jobs' ids."""
    monkeypatch.setattr("memory.capture.jobs._send", lambda account_id, ids: None)

    def _queued(*texts: str) -> list[int]:
        result = messages_ingest(
            conversation_id=CONVERSATION, messages=[wecom_message(text) for text in texts], actor="wecom-webhook"
        )
        return list(CaptureJob.objects.filter(message__in=result.created).order_by("id").values_list("pk", flat=True))

    return _queued


def _run_all(job_ids: list[int]) -> None:
    for job_id in job_ids:
        capture_job_run(job_id=job_id)


def _row_statements(captured) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if not q["sql"].startswith(TRANSACTION_CONTROL)]


def _active_contents() -> set[str]:
    return set(MemoryItem.objects.filter(status=MemoryStatus.ACTIVE).values_list("content", flat=True))


def test_capture_job_single_item_message_takes_ten_row_statements(queued, django_assert_max_num_queries):
    # given a customer whose memory already holds a budget, a layout and an exclusion
    _run_all(queued("我预算5000，想要两居室", "顶楼就不考虑了，夏天太热"))
    (job_id,) = queued("我比较喜欢南向的")
    # when the job of a message stating one new preference runs
    with (
        django_assert_max_num_queries(bound("one_item") + 2, connection=connections[current_alias()]) as account_db,
        django_assert_max_num_queries(1, connection=connections["default"]),
    ):
        capture_job_run(job_id=job_id)
    # then it took 10 statements that read or write rows (and BEGIN, COMMIT), and wrote the item
    # with its history and audit rows and a new snapshot
    assert len(_row_statements(account_db)) <= bound("one_item")
    assert CaptureJob.objects.get(pk=job_id).status == CaptureJobStatus.DONE
    item = MemoryItem.objects.get(content="偏好：南向")
    assert item.history.count() == 1
    assert AuditEvent.objects.filter(action="memory_item_captured", payload__item_id=item.pk).count() == 1
    assert "偏好：南向" in MemorySnapshot.objects.order_by("-version").first().content


def test_capture_job_three_item_message_takes_as_many_statements_as_one(queued, django_assert_max_num_queries):
    # given a customer with memory
    _run_all(queued("我预算5000，想要两居室"))
    (job_id,) = queued("我比较喜欢南向的，最好有电梯，不要一楼")
    # when a message stating three new things is captured
    with django_assert_max_num_queries(bound("one_item") + 2, connection=connections[current_alias()]) as account_db:
        capture_job_run(job_id=job_id)
    # then the three items share every statement: one insert, one history insert, one audit insert
    assert len(_row_statements(account_db)) <= bound("one_item")
    assert {"偏好：南向", "偏好：电梯", "不考虑：一楼"} <= _active_contents()
    assert AuditEvent.objects.filter(action="memory_item_captured").count() == 5  # 2 earlier + 3


def test_capture_job_first_message_of_a_customer_stays_within_the_bound(queued, django_assert_max_num_queries):
    # given a brand-new customer's first message, stating one preference
    (job_id,) = queued("我比较喜欢南向的")
    # when its job runs / then the empty memory costs no extra statement
    with django_assert_max_num_queries(
        bound("first_message") + 2, connection=connections[current_alias()]
    ) as account_db:
        capture_job_run(job_id=job_id)
    assert len(_row_statements(account_db)) <= bound("first_message")
    assert _active_contents() == {"偏好：南向"}


def test_capture_job_count_does_not_grow_with_the_customers_memory(queued, django_assert_max_num_queries):
    # given a customer who has already stated a dozen wishes
    _run_all(
        queued(
            "我预算5000，想要两居室",
            "最好有电梯",
            "不要一楼",
            "我比较喜欢精装修的",
            "最好离地铁近一点",
            "不考虑老小区",
            "希望有阳台",
            "别推荐合租的",
            "我更喜欢朝南的",
            "最好带车位",
        )
    )
    assert len(_active_contents()) >= 10
    (job_id,) = queued("最好能养宠物")
    # when one more wish is captured / then it costs what the first one did
    with django_assert_max_num_queries(bound("one_item") + 2, connection=connections[current_alias()]) as account_db:
        capture_job_run(job_id=job_id)
    assert len(_row_statements(account_db)) <= bound("one_item")


def test_capture_job_message_with_nothing_to_capture_writes_only_its_reading(queued, django_assert_max_num_queries):
    # given a customer's question that states nothing about them
    (job_id,) = queued("周六下午可以看房吗？")
    # when its job runs
    with django_assert_max_num_queries(7, connection=connections[current_alias()]) as account_db:
        capture_job_run(job_id=job_id)
    # then it is claimed, read, and its reading kept with its `done` in one short transaction:
    # nothing else is written
    writes = [q["sql"] for q in account_db.captured_queries if q["sql"].startswith(("INSERT", "UPDATE", "DELETE"))]
    assert [sql.split('"')[1] for sql in writes] == ["memory_capturejob", "memory_messagereading", "memory_capturejob"]
    assert CaptureJob.objects.get(pk=job_id).status == CaptureJobStatus.DONE
    assert not MemoryItem.objects.exists()


def test_capture_job_rerun_of_a_read_message_takes_no_write_lock(queued, django_assert_max_num_queries):
    # given a customer's question whose job ran, and the same job claimed again (a retry)
    (job_id,) = queued("周六下午可以看房吗？")
    capture_job_run(job_id=job_id)
    CaptureJob.objects.filter(pk=job_id).update(status=CaptureJobStatus.PENDING, next_attempt_at=None)
    # when it runs again
    with django_assert_max_num_queries(4, connection=connections[current_alias()]) as account_db:
        capture_job_run(job_id=job_id)
    # then the kept reading is used: claimed, read and marked done, and no write transaction opened
    assert not any(q["sql"].startswith("BEGIN") for q in account_db.captured_queries)
    assert CaptureJob.objects.get(pk=job_id).status == CaptureJobStatus.DONE


def test_capture_job_profile_fact_adds_only_the_profile_row_and_its_history(queued, django_assert_max_num_queries):
    # given a customer with memory
    _run_all(queued("我比较喜欢南向的"))
    (job_id,) = queued("叫我小王就行")
    profile_versions = CustomerProfile.history.count()
    # when a declared profile fact is captured
    with django_assert_max_num_queries(
        bound("profile_fact") + 2, connection=connections[current_alias()]
    ) as account_db:
        capture_job_run(job_id=job_id)
    # then the profile update and its history row are the only statements on top of an item's
    assert len(_row_statements(account_db)) <= bound("profile_fact")
    item = MemoryItem.objects.get(key="profile:preferred_name", status=MemoryStatus.ACTIVE)
    assert item.content == "称呼：小王"
    assert item.customer.profile.preferred_name == "小王"
    assert CustomerProfile.history.count() == profile_versions + 1
    assert AuditEvent.objects.filter(action="customer_profile_updated").count() == 1
