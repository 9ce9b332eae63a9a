"""`memory.sql` on PostgreSQL: each hand-written statement gives what its ORM twin gives, on the
same rows as the SQLite tests (`tests/memory/test_sql.py`): NULL ordering, booleans, JSON and
time zones are the driver's here, not SQLite's."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
from django.db import DataError, connections, transaction

from conversations.models import Alert
from memory import sql
from qiwei_site.platform.services import account_create
from qiwei_site.platform.sql import insert_unless
from qiwei_site.platform.tenancy import use_account
from tests.factories import CustomerFactory
from tests.memory import sql_twins
from tests.memory.test_sql import (
    assert_claim_and_finish_equal_their_twins,
    assert_context_reads_equal,
    assert_duplicate_check_equals_its_twin,
    assert_ingest_customer_reads_equal,
    bare_customer,
    busy_customer,
    claimed_and_twin,
    job_as_values,
    state_row_item_id,
)
from tests.qiwei_site.platform.test_sql import (
    assert_insert_equals_bulk_create,
    assert_insert_unless_equals_its_twin,
    assert_update_rows_equals_bulk_update,
)

pytestmark = pytest.mark.integration


@pytest.mark.django_db(transaction=True)
def test_sql_reads_equal_their_orm_twins_on_postgres(postgres_accounts):
    # Given an account on PostgreSQL with a busy customer and a bare one
    account_id = postgres_accounts("pgsql")
    account_create(account_id=account_id, name="安居客服二部")
    with use_account(account_id) as alias:
        assert connections[alias].vendor == "postgresql"
        world = busy_customer()
        bare = bare_customer()
        # Then every context read equals its ORM twin
        for customer_id in [world["customer"].pk, bare.pk, 987654]:
            assert_context_reads_equal(customer_id, world["messages"])
        # And the capture reads too
        for job in world["jobs"]:
            ours, twin = claimed_and_twin(job.pk)
            assert ours is not None and job_as_values(ours) == job_as_values(twin)
        for customer_id in [world["customer"].pk, bare.pk]:
            ours = sql.memory_state(customer_id)
            twin = sql_twins.memory_state_rows(customer_id=customer_id)
            assert ours == sorted(twin, key=state_row_item_id)
        # And ingest's reads of the customer (the locked one with FOR UPDATE here)
        assert_ingest_customer_reads_equal([world["customer"].conversation_id, bare.conversation_id, "wm_nobody"])
        # And ingest's duplicate check
        stored = list(world["customer"].messages.values_list("external_id", flat=True))
        assert_duplicate_check_equals_its_twin(world["customer"].pk, [*stored[:2], "wx_unknown"])
        # And the last message time's move
        assert (
            sql.customer_last_message_set(bare.pk, dt.datetime(2026, 10, 1, 9, tzinfo=dt.UTC), dt.datetime.now(dt.UTC))
            == 1
        )
        # And the job claim and finish
        assert_claim_and_finish_equal_their_twins(bare)
        # And the values are typed as the ORM types them on this backend
        assert sql.current_snapshot(world["customer"].pk) == [(3, "偏好：近地铁（第3版）", [3, 4])]
        assert isinstance(sql.window_newest(world["customer"].pk, 1)[0][4], dt.datetime)
        assert sql.memory_state(world["customer"].pk)[0][2] is True


@pytest.mark.django_db(transaction=True)
def test_sql_insert_and_update_write_what_the_orm_writes_on_postgres(postgres_accounts):
    # Given an account on PostgreSQL
    account_id = postgres_accounts("pgins")
    account_create(account_id=account_id, name="安居客服三部")
    with use_account(account_id) as alias:
        assert connections[alias].vendor == "postgresql"
        # Then `insert` stores every row ingest and the audit write as `bulk_create` stores it (JSON as
        # jsonb, times as timestamptz), the keys come back in order, and the audit chain holds
        assert_insert_equals_bulk_create()
        # And `update_rows` as `bulk_update` (each CASE cast to its column's type here)
        assert_update_rows_equals_bulk_update()
        # And `insert_unless` once per match (each value cast to its column's type here)
        assert_insert_unless_equals_its_twin()
        # And a value longer than its column is refused, not cut by the cast (as bulk_create refuses it)
        customer = CustomerFactory(display_name="郑女士")
        long = Alert(customer=customer, kind="personal_number", level="info", text="号" * 400, cause="message:1")
        with pytest.raises(DataError), transaction.atomic(using=alias):
            insert_unless(long, match=["customer", "kind", "cause"])
        assert not Alert.objects.filter(customer=customer).exists()


@pytest.mark.django_db(transaction=True)
def test_insert_unless_inserts_once_when_two_transactions_race_on_postgres(postgres_accounts):
    # Given an account on PostgreSQL and a transaction that has inserted an alert for a cause and not
    # yet committed
    account_id = postgres_accounts("pgrace")
    account_create(account_id=account_id, name="安居客服四部")
    with use_account(account_id) as alias:
        customer = CustomerFactory(display_name="冯先生")
        customer_id = customer.pk
        second: dict[str, object] = {}
        started = threading.Event()

        def racing() -> None:
            # When a second transaction, on another connection, inserts for the same cause meanwhile
            with use_account(account_id):
                try:
                    started.set()
                    with transaction.atomic(using=alias):
                        alert = Alert(customer_id=customer_id, kind="transfer", level="warn", text="b", cause="msg:7")
                        second["result"] = insert_unless(alert, match=["customer", "kind", "cause"])
                finally:
                    connections.close_all()

        with transaction.atomic(using=alias):
            first = Alert(customer=customer, kind="transfer", level="warn", text="a", cause="msg:7")
            assert insert_unless(first, match=["customer", "kind", "cause"]) is not None
            thread = threading.Thread(target=racing)
            thread.start()
            started.wait(5)
            # Until the second waits on the first's lock (unlocked, it never does: it inserts at once)
            with connections[alias].cursor() as cursor:
                for _ in range(100):
                    cursor.execute("SELECT pg_stat_clear_snapshot()")
                    cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'advisory'")
                    if cursor.fetchone()[0]:
                        break
                    time.sleep(0.05)
        thread.join(10)
        # Then the second waited for the first to commit, saw its row and inserted nothing
        assert second == {"result": None}
        assert Alert.objects.filter(customer=customer, cause="msg:7").count() == 1
