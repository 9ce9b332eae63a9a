"""Account connections on the machine's PostgreSQL (issue 13): however many accounts a process
serves, it holds at most QIWEI_ACCOUNT_CONN_CAP connections to account databases, as the server
sees them (pg_stat_activity, counted by the test's own database names) and as the pool counts
them; `migrate_accounts` over more accounts than the server's `max_connections` exits 0; a
request hands its connection back.

The server is asked at quiet moments, not sampled continuously: a connection the pool closed to
make room stays in pg_stat_activity for the millisecond its backend takes to exit, so a sample
taken during an eviction can show one more. The pool's own peak is exact."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from django.core.management import call_command
from django.db import connections
from psycopg import sql

from conversations.models import Customer
from qiwei_site.platform.connections import account_pool
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.services import account_create, membership_grant
from qiwei_site.platform.tenancy import account_connections_close, alias_for, use_account
from tests.conftest import client_for
from tests.factories import CustomerFactory, StaffUserFactory
from tests.integration.conftest import POSTGRES

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

CAP = 3


@pytest.fixture
def pg_layout() -> str:
    """These count server connections by each account's database name and evict per account: the
    database-per-account layout. The schema layout's pool: test_schema_layout_pg.py."""
    return "database"


def monitor() -> psycopg.Connection:
    return psycopg.connect(host=POSTGRES[0], port=POSTGRES[1], user="postgres", dbname="postgres", autocommit=True)


def server_connections(conn: psycopg.Connection, names: list[str]) -> int:
    row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = ANY(%s)", [names]).fetchone()
    return int(row[0]) if row else 0


def server_connections_settled(conn: psycopg.Connection, names: list[str], expected: int, seconds: float = 5.0) -> int:
    """The count once it reaches `expected` or `seconds` pass: a closed connection's backend leaves
    pg_stat_activity a moment after the client closes it (seen on a loaded 2-core machine)."""
    deadline = time.monotonic() + seconds
    count = server_connections(conn, names)
    while count != expected and time.monotonic() < deadline:
        time.sleep(0.05)
        count = server_connections(conn, names)
    return count


@pytest.fixture
def capped_postgres(postgres_accounts, settings) -> Iterator[Callable[[str], str]]:
    settings.QIWEI_ACCOUNT_CONN_CAP = CAP
    account_pool.close_idle()
    account_pool.reset_peak()
    yield postgres_accounts
    account_pool.close_idle()
    connections.close_all()


def db_names(ids: list[str]) -> list[str]:
    return [f"qiwei_it_{account_id}" for account_id in ids]


def test_postgres_one_thread_over_more_accounts_than_the_cap_holds_at_most_the_cap(capped_postgres):
    # Given eight accounts on PostgreSQL and a cap of three
    ids = [capped_postgres(f"hz{n}") for n in range(8)]
    for n, account_id in enumerate(ids):
        account_create(account_id=account_id, name=f"杭州{n}号门店")
    account_pool.reset_peak()
    with monitor() as conn:
        # When one thread serves each account in turn
        for n, account_id in enumerate(ids):
            with use_account(account_id):
                CustomerFactory(display_name=f"客户{n}", conversation_id=f"wm_hz_{n}")
                Customer.objects.count()
            # Then after each, the server sees no more than the cap from this process
            assert server_connections(conn, db_names(ids)) <= CAP
    assert account_pool.stats().peak <= CAP
    for n, account_id in enumerate(ids):
        with use_account(account_id):
            assert list(Customer.objects.values_list("display_name", flat=True)) == [f"客户{n}"]


def test_postgres_threads_serving_many_accounts_share_the_cap(capped_postgres):
    # Given six accounts and six threads (a gthread worker), cap three
    ids = [capped_postgres(f"sz{n}") for n in range(6)]
    for account_id in ids:
        account_create(account_id=account_id, name=f"深圳{account_id}")
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def serve(worker: int) -> None:
        try:
            barrier.wait()
            for round_ in range(4):
                for account_id in ids[worker % 3 :: 3]:
                    with use_account(account_id):
                        CustomerFactory(conversation_id=f"wm_{worker}_{round_}", display_name="赵女士")
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    # When they serve at once
    account_pool.reset_peak()
    threads = [threading.Thread(target=serve, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then no request failed, the process never held more than the cap, and the server agrees
    assert errors == []
    assert account_pool.stats().peak <= CAP
    with monitor() as conn:
        assert server_connections(conn, db_names(ids)) <= CAP
    with use_account(ids[0]):
        assert Customer.objects.filter(display_name="赵女士").count() == 8  # 2 threads × 4 rounds


def test_postgres_migrate_accounts_over_120_accounts_exits_0_within_the_cap(capped_postgres):
    # Given 120 accounts on one server (more than its max_connections of 100), their databases
    # copied from a migrated one to keep the test short
    first = capped_postgres("mig")
    account_create(account_id=first, name="迁移模板门店")
    account_connections_close(first)
    ids = [capped_postgres(f"mig{n:03d}") for n in range(119)]
    with monitor() as conn:
        for account_id in ids:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(f"qiwei_it_{account_id}"), sql.Identifier(f"qiwei_it_{first}")
                )
            )
    try:
        for account_id in ids:
            account_create(account_id=account_id, name=f"门店{account_id}")
        assert WeComAccount.objects.count() == 120
        # When every account is migrated
        account_pool.reset_peak()
        call_command("migrate_accounts", verbosity=0)  # raises CommandError (exit 1) on any failure
        # Then it succeeded, never holding more than the cap, and left nothing open
        assert account_pool.stats().peak <= CAP
        with monitor() as conn:
            assert server_connections(conn, db_names([first, *ids])) == 0
    finally:
        drop_side_by_side(db_names(ids))


def drop_side_by_side(names: list[str]) -> None:
    """A dropped database may wait for a checkpoint: drop them four at a time, not one by one."""
    account_pool.close_idle()

    def drop(chunk: list[str]) -> None:
        with monitor() as conn:
            for name in chunk:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(drop, [names[i::4] for i in range(4)]))


def test_postgres_request_hands_its_account_connection_back(capped_postgres):
    # Given a supervisor of an account on PostgreSQL
    account_id = capped_postgres("cd")
    account = account_create(account_id=account_id, name="成都门店")
    user = StaffUserFactory()
    membership_grant(user=user, account=account)
    # When an API request to the account has been answered
    response = client_for(user).get(f"/api/accounts/{account_id}/audit/")
    assert response.status_code == 200
    # Then the thread holds no connection to it; the pool keeps at most one, idle
    wrapper = getattr(connections._connections, alias_for(account_id), None)
    assert wrapper is None or wrapper.connection is None
    with monitor() as conn:
        assert server_connections(conn, db_names([account_id])) <= 1
        assert account_pool.stats().in_use == 0
        # And an idle pooled connection is closed when the pool lets it go
        account_pool.close_idle()
        assert server_connections_settled(conn, db_names([account_id]), 0) == 0


def test_postgres_least_recently_used_connection_is_closed_and_the_warm_one_reused(capped_postgres, settings):
    settings.QIWEI_ACCOUNT_CONN_CAP = 2
    first, second, third = (capped_postgres(f"nj{n}") for n in range(3))
    for account_id in (first, second, third):
        account_create(account_id=account_id, name=f"南京{account_id}")
    account_pool.close_idle()
    backend: dict[str, int] = {}
    # Given two accounts used, then the first again (the second is now the least recent)
    for account_id in (first, second, first):
        with use_account(account_id) as alias:
            Customer.objects.count()
            backend[account_id] = connections[alias].connection.info.backend_pid
    # When a third account needs a connection
    with use_account(third):
        Customer.objects.count()
    # Then the first account is served by the same server session, the second one's was closed
    with use_account(first) as alias:
        Customer.objects.count()
        assert connections[alias].connection.info.backend_pid == backend[first]
    with monitor() as conn:
        assert server_connections_settled(conn, db_names([second]), 0) == 0


def test_postgres_api_answers_503_when_every_slot_stays_busy(capped_postgres, settings):
    # Given a cap of one, held by another thread in the middle of its work
    settings.QIWEI_ACCOUNT_CONN_CAP = 1
    settings.QIWEI_ACCOUNT_CONN_WAIT_SECONDS = 0.2
    busy_account, asked = capped_postgres("wx0"), capped_postgres("wx1")
    for account_id in (busy_account, asked):
        account_create(account_id=account_id, name=f"无锡{account_id}")
    account_pool.close_idle()
    user = StaffUserFactory(is_superuser=True)
    holding, done = threading.Event(), threading.Event()

    def busy() -> None:
        with use_account(busy_account):
            Customer.objects.count()
            holding.set()
            done.wait(timeout=30)
        connections.close_all()

    worker = threading.Thread(target=busy)
    worker.start()
    holding.wait(timeout=30)
    try:
        # When a request needs the other account
        response = client_for(user).get(f"/api/accounts/{asked}/conversations/")
    finally:
        done.set()
        worker.join()
    # Then it is a 503 with a reason and a Retry-After, not a 500 and not a hang
    assert response.status_code == 503
    assert response.json()["code"] == "storage_unavailable"
    assert response["Retry-After"]
    # And once the slot is free again, the same request succeeds
    assert client_for(user).get(f"/api/accounts/{asked}/conversations/").status_code == 200
