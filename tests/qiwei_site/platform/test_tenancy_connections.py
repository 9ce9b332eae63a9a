"""Account connections bounded per process (issue 13).

The pool itself (at most QIWEI_ACCOUNT_CONN_CAP connections, least recently used closed first,
waits, dead and lost connections) on stand-in connections; releasing at the end of every
`use_account`, request and task, and every loop over all accounts closing each account, on SQLite
(each open connection is an open `<account>.sqlite3` descriptor, counted from /proc). The same on
a real PostgreSQL in tests/integration/test_connections_pg.py."""

from __future__ import annotations

import gc
import os
import shutil
import threading
from pathlib import Path

import pytest
from celery.signals import task_postrun
from django.core.management import call_command
from django.db import connections

from conversations.models import Customer
from qiwei_site.platform import connections as pool_module
from qiwei_site.platform import tenancy
from qiwei_site.platform.connections import AccountConnectionPool, ConnectionCapReached, account_pool
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.services import membership_grant
from qiwei_site.platform.tenancy import account_atomic, alias_for, use_account
from tests.conftest import client_for, make_account
from tests.factories import CustomerFactory, StaffUserFactory

CAP = 3


class StandIn:
    """What the pool needs of a driver connection: close()."""

    def __init__(self, account: str):
        self.account = account
        self.closed = False
        self.dead = False

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def pool(settings) -> AccountConnectionPool:
    settings.QIWEI_ACCOUNT_CONN_CAP = CAP
    settings.QIWEI_ACCOUNT_CONN_WAIT_SECONDS = 5.0
    settings.QIWEI_DB_CONN_MAX_AGE = 60
    return AccountConnectionPool()


def take(pool: AccountConnectionPool, account: str, made: list[StandIn] | None = None) -> StandIn:
    def connect() -> StandIn:
        raw = StandIn(account)
        if made is not None:
            made.append(raw)
        return raw

    return pool.checkout((account,), connect, lambda raw: not raw.dead)


def give(pool: AccountConnectionPool, raw: StandIn, *, keep: bool = True) -> None:
    pool.checkin((raw.account,), raw, keep=keep, reusable=True)


def test_account_pool_holds_at_most_the_cap_however_many_accounts(pool):
    # Given a cap of three and ten accounts served one after another, twice
    made: list[StandIn] = []
    for _ in range(2):
        for n in range(10):
            give(pool, take(pool, f"store{n}", made))
            # Then no more than the cap is ever open
            assert pool.stats().open <= CAP
    # And every connection beyond the cap was closed
    assert pool.stats().peak == CAP
    assert sum(not raw.closed for raw in made) == CAP


def test_account_pool_closes_the_least_recently_used_idle_connection_first(pool, settings):
    settings.QIWEI_ACCOUNT_CONN_CAP = 2
    # Given two accounts used, then the first used again (the second is now the least recent)
    first = take(pool, "pudong")
    give(pool, first)
    second = take(pool, "xuhui")
    give(pool, second)
    again = take(pool, "pudong")
    give(pool, again)
    # When a third account needs a connection
    give(pool, take(pool, "jingan"))
    # Then the second account's connection was closed, the first one's reused and kept
    assert again is first
    assert second.closed and not first.closed
    assert take(pool, "pudong") is first


def test_account_pool_waits_for_a_connection_to_come_back(pool, settings):
    settings.QIWEI_ACCOUNT_CONN_CAP = 1
    held = take(pool, "pudong")
    got: list[StandIn] = []
    waiting = threading.Thread(target=lambda: got.append(take(pool, "xuhui")))
    # Given every slot in use when another thread needs an account
    waiting.start()
    while pool.stats().waits == 0 and waiting.is_alive():
        threading.Event().wait(0.01)
    # When the holder hands its connection back
    give(pool, held)
    waiting.join(timeout=10)
    # Then the waiting thread gets its connection (the idle one closed to make room)
    assert [raw.account for raw in got] == ["xuhui"]
    assert held.closed
    assert pool.stats().waits == 1


def test_account_pool_all_in_use_fails_after_the_wait(pool, settings):
    settings.QIWEI_ACCOUNT_CONN_CAP = 1
    settings.QIWEI_ACCOUNT_CONN_WAIT_SECONDS = 0.1
    # Given the only slot held (and still referenced) by someone
    held = take(pool, "pudong")
    # When another account needs a connection, then it is refused after the wait, naming the cap
    with pytest.raises(ConnectionCapReached, match="上限 1"):
        take(pool, "xuhui")
    assert pool.stats().open == 1 and not held.closed


def test_account_pool_drops_a_dead_idle_connection_at_checkout(pool):
    # Given an idle connection whose server hung up while it waited
    old = take(pool, "pudong")
    give(pool, old)
    old.dead = True
    # When the account is used again
    fresh = take(pool, "pudong")
    # Then it gets a new connection, and the dead one is closed
    assert fresh is not old and old.closed
    assert pool.stats().open == 1


def test_account_pool_frees_the_slot_of_a_connection_never_handed_back(pool, settings):
    settings.QIWEI_ACCOUNT_CONN_CAP = 1
    settings.QIWEI_ACCOUNT_CONN_WAIT_SECONDS = 2.0
    # Given a thread that took the only slot and died without handing it back
    worker = threading.Thread(target=lambda: take(pool, "pudong"))
    worker.start()
    worker.join()
    gc.collect()
    # When another account needs a connection
    raw = take(pool, "xuhui")
    # Then it gets one: the lost connection's slot was freed
    assert raw.account == "xuhui"
    assert pool.stats().open == 1


def test_account_pool_release_without_keep_closes(pool):
    raw = take(pool, "pudong")
    give(pool, raw, keep=False)
    assert raw.closed
    assert pool.stats().open == 0


def test_account_pool_closes_idle_connections_after_max_age(pool, settings, monkeypatch):
    # Given an idle connection, and QIWEI_DB_CONN_MAX_AGE seconds passing
    settings.QIWEI_DB_CONN_MAX_AGE = 30
    raw = take(pool, "pudong")
    give(pool, raw)
    now = pool_module.time.monotonic()
    monkeypatch.setattr(pool_module.time, "monotonic", lambda: now + 31)
    # When any account is used
    other = take(pool, "xuhui")
    # Then the old idle connection was closed
    assert raw.closed and not other.closed
    assert pool.stats().open == 1


def test_account_pool_renews_a_busy_connection_after_max_age(pool, settings, monkeypatch):
    # Given a connection in use for longer than QIWEI_DB_CONN_MAX_AGE since it was opened
    settings.QIWEI_DB_CONN_MAX_AGE = 30
    raw = take(pool, "pudong")
    now = pool_module.time.monotonic()
    monkeypatch.setattr(pool_module.time, "monotonic", lambda: now + 31)
    # When it is handed back, then it is closed rather than kept (as Django's CONN_MAX_AGE did)
    give(pool, raw)
    assert raw.closed
    assert pool.stats().open == 0


def test_account_pool_renews_connections_opened_together_over_a_spell(pool, settings, monkeypatch):
    # Given three connections opened at the same moment, each aged at birth by a different share
    # of the lifetime (the pool draws it; here 0, half and all of LIFETIME_SPREAD)
    settings.QIWEI_DB_CONN_MAX_AGE = 100
    spread = pool_module.LIFETIME_SPREAD
    draws = iter([0.0, spread / 2, spread])
    monkeypatch.setattr(pool_module.random, "uniform", lambda low, high: next(draws))
    raws = [take(pool, f"store{n}") for n in range(3)]
    now = pool_module.time.monotonic()
    # When all are handed back 95 s after opening (a lifetime of 100 s)
    monkeypatch.setattr(pool_module.time, "monotonic", lambda: now + 100 * (1 - spread / 4))
    for raw in raws:
        give(pool, raw)
    # Then the two aged past their lifetime are renewed and the youngest is kept: they are not all
    # renewed in one stall of new backends
    assert [raw.closed for raw in raws] == [False, True, True]
    # And none outlives the lifetime
    monkeypatch.setattr(pool_module.time, "monotonic", lambda: now + 101)
    survivor = take(pool, "store0")
    give(pool, survivor)
    assert survivor.closed


def test_account_pool_many_threads_never_exceed_the_cap(pool):
    # Given eight threads (a gthread worker) over twenty accounts, cap three
    errors: list[BaseException] = []

    def serve(worker: int) -> None:
        try:
            for n in range(60):
                give(pool, take(pool, f"store{(worker * 7 + n) % 20}"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=serve, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then nobody failed and the process never held more than the cap
    assert errors == []
    assert pool.stats().peak <= CAP


def test_account_pool_after_fork_child_starts_empty_and_leaves_parent_connections_open(pool):
    idle = take(pool, "pudong")
    give(pool, idle)
    busy = take(pool, "xuhui")
    pool.after_fork_in_child()
    assert pool.stats().open == 0
    assert not idle.closed and not busy.closed  # closing them would end the parent's server sessions


def open_account_files(settings) -> int:
    """SQLite connections this process has open on account databases (main files only)."""
    accounts = str(Path(settings.QIWEI_DATA_DIR) / "accounts") + os.sep
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(accounts) and target.endswith(".sqlite3"):
            count += 1
    return count


def thread_holds(account_id: str) -> bool:
    wrapper = getattr(connections._connections, alias_for(account_id), None)
    return wrapper is not None and wrapper.connection is not None


@pytest.fixture
def capped(settings):
    settings.QIWEI_ACCOUNT_CONN_CAP = CAP
    tenancy.account_connections_release_idle(keep=False)
    account_pool.close_idle()
    account_pool.reset_peak()
    yield settings
    tenancy.account_connections_release_idle(keep=False)


@pytest.fixture
def branches(db, capped) -> list[str]:
    """Eight 门店 accounts, none of them selected."""
    ids = [f"store{n}" for n in range(8)]
    for n, account_id in enumerate(ids):
        make_account(account_id, f"链家{n}号门店")
    tenancy.account_connections_release_idle(keep=False)  # creating them left the last ones open
    return ids


def test_account_connections_sqlite_kept_up_to_the_cap_least_recently_used_closed(branches, capped):
    # Given one thread serving each of eight accounts in turn
    for n, account_id in enumerate(branches):
        with use_account(account_id):
            CustomerFactory(display_name=f"客户{n}")
            assert thread_holds(account_id)
        # Then leaving an account keeps its connection, but never more than the cap of them
        assert thread_holds(account_id)
        assert open_account_files(capped) == min(n + 1, CAP)
    # And the ones kept are the most recently used
    assert [thread_holds(account_id) for account_id in branches] == [False] * (8 - CAP) + [True] * CAP


def test_account_connections_sqlite_use_refreshes_recency(branches, capped):
    # Given the cap filled by three accounts, the first of them used again
    for account_id in (*branches[:CAP], branches[0]):
        with use_account(account_id):
            Customer.objects.count()
    # When a fourth account is used
    with use_account(branches[CAP]):
        Customer.objects.count()
    # Then the least recently used (the second) was closed, not the first
    assert thread_holds(branches[0]) and not thread_holds(branches[1])
    assert open_account_files(capped) == CAP


def test_account_connections_sqlite_kept_connection_follows_a_recreated_file(branches, capped):
    # Given a connection kept open to an account's file
    account_id = branches[0]
    with use_account(account_id) as alias:
        CustomerFactory(display_name="王女士")
        with connections[alias].cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    path = Path(connections[alias_for(account_id)].settings_dict["NAME"])
    # When the file is replaced behind it (the account erased and created again by another process)
    fresh = path.with_suffix(".fresh")
    shutil.copyfile(path, fresh)
    with use_account(account_id):
        Customer.objects.all().delete()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    os.replace(fresh, path)
    # Then the next use reads the file the path names now, not the deleted one
    with use_account(account_id):
        assert list(Customer.objects.values_list("display_name", flat=True)) == ["王女士"]


def test_account_connections_sqlite_not_used_by_a_forked_child(branches, capped):
    # Given a kept connection in this thread
    with use_account(branches[0]):
        Customer.objects.count()
    wrapper = connections[alias_for(branches[0])]
    raw = wrapper.connection
    # When a child process would start from this state
    tenancy._forget_kept_sqlite_after_fork()
    # Then the child's wrapper holds no connection and the inherited one is closed, not kept aside
    # (kept aside, SQLite would give the child's next connection to the file no lock of its own)
    assert wrapper.connection is None and not tenancy._kept_sqlite()
    assert raw not in pool_module._orphans
    with pytest.raises(Exception, match="closed"):
        raw.execute("SELECT 1")


def test_account_connections_sqlite_forked_child_writes_survive_the_parent(branches, capped, tmp_path):
    # Given a kept connection in this process, and a child forked from it that writes to the account
    with use_account(branches[0]):
        CustomerFactory(conversation_id="wm_parent_001", display_name="父进程客户")
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            with use_account(branches[0]):
                CustomerFactory(conversation_id="wm_child_001", display_name="子进程客户")
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # When the parent closes its kept connection (evicted, or at exit)
    tenancy.account_connections_release_idle(keep=False)
    # Then the child's committed row is still there
    with use_account(branches[0]):
        assert Customer.objects.filter(conversation_id="wm_child_001").exists()


def test_account_connections_sqlite_other_threads_let_go_of_an_erased_account(branches, capped):
    # Given another thread (a gunicorn thread) that served an account and keeps its connection
    account_id = branches[0]
    step_one, step_two, done = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def serve() -> None:
        with use_account(account_id):
            Customer.objects.count()
        seen["kept"] = thread_holds(account_id)
        step_one.set()
        step_two.wait(10)
        # its next request ends
        tenancy.account_connections_release_idle()
        seen["after"] = thread_holds(account_id) or alias_for(account_id) in tenancy._kept_sqlite()
        done.set()

    worker = threading.Thread(target=serve)
    worker.start()
    step_one.wait(10)
    # When this thread erases the account's database
    tenancy.drop_account_database(account_id)
    step_two.set()
    done.wait(10)
    worker.join(10)
    # Then the other thread closed what it kept of it at its next request end
    assert seen == {"kept": True, "after": False}


def test_account_connections_sqlite_erased_account_closes_its_connection(branches, capped):
    # Given a kept connection, when the account's database is dropped
    with use_account(branches[0]):
        Customer.objects.count()
    tenancy.drop_account_database(branches[0])
    # Then no descriptor to it is left open
    assert not thread_holds(branches[0])
    assert open_account_files(capped) == 0


def test_account_connections_released_at_request_end(branches, capped):
    # Given a supervisor of one account and an API request to it (no account selected in the test:
    # the API view selects its account without use_account)
    user = StaffUserFactory()
    membership_grant(user=user, account=WeComAccount.objects.get(pk=branches[0]))
    # When the request has been answered
    response = client_for(user).get(f"/api/accounts/{branches[0]}/audit/")
    # Then this thread keeps its SQLite connection for the next request, and only that one
    assert response.status_code == 200
    assert alias_for(branches[0]) in tenancy._kept_sqlite()
    assert open_account_files(capped) == 1


def test_account_connections_kept_inside_nested_use_and_transactions(branches, capped):
    account_id = branches[0]
    # Given the account selected twice over, and a transaction open on it
    with use_account(account_id):
        with use_account(account_id):
            Customer.objects.count()
        # Then leaving the inner selection keeps the connection
        assert thread_holds(account_id)
        with account_atomic():
            CustomerFactory(display_name="李先生")
            # And nothing releases it while the transaction is open
            assert tenancy.account_connections_release_idle() == 0
            assert thread_holds(account_id)
    # While leaving the outermost selection hands it back (kept open: SQLite)
    assert alias_for(account_id) in tenancy._kept_sqlite()


def test_account_connections_celery_task_end_releases_what_the_task_left_open(branches, capped):
    # Given a task body that opened an account connection outside use_account (a probe)
    alias = tenancy.register_account_database(branches[0])
    connections[alias].ensure_connection()
    assert thread_holds(branches[0])
    # When the task ends
    task_postrun.send(sender=None, task_id="capture-sweep", task=None, args=(), kwargs={})
    # Then the connection was released (kept open: SQLite)
    assert alias_for(branches[0]) in tenancy._kept_sqlite()


@pytest.mark.long
def test_migrate_accounts_over_many_accounts_closes_each_before_the_next(db, capped, capsys):
    # Given thirty accounts (ten times the cap)
    ids = [f"shop{n:02d}" for n in range(30)]
    for account_id in ids:
        make_account(account_id, f"分店{account_id}")
    # When every account is migrated
    call_command("migrate_accounts", "--force", "--jobs", "1")
    # Then each was migrated, and none is left open
    out = capsys.readouterr().out
    assert all(f"{account_id}: 已迁移" in out for account_id in ids)
    assert open_account_files(capped) == 0


def test_account_connections_capture_sweep_closes_each_account(branches, capped):
    from memory.tasks.capture import capture_sweep_all

    # When the periodic sweep visits every account
    summary = capture_sweep_all()
    # Then it visited all eight and left no account connection open
    assert sorted(summary) == sorted(branches)
    assert open_account_files(capped) == 0


def test_account_connections_cap_zero_keeps_django_per_thread_connections(db, settings):
    # Given the pool switched off
    settings.QIWEI_ACCOUNT_CONN_CAP = 0
    make_account("legacy", "旧门店")
    # When the account has been used
    with use_account("legacy") as alias:
        Customer.objects.count()
        engine = connections[alias].settings_dict["ENGINE"]
    # Then it is Django's own backend and the thread keeps its connection (the behaviour before)
    assert engine == "django.db.backends.sqlite3"
    assert thread_holds("legacy")


def test_account_database_url_template_can_name_a_server_per_account(settings):
    # Given accounts spread over several servers by a host name per account
    settings.QIWEI_ACCOUNT_DATABASE_URL = "postgres://qiwei@{account}.accounts.db.internal:5432/qiwei_acct_{account}"
    # When two accounts' databases are located
    pudong, xuhui = tenancy.account_database_config("pudong"), tenancy.account_database_config("xuhui")
    # Then each names its own server and database, through the pooled backend
    assert (pudong["HOST"], pudong["NAME"]) == ("pudong.accounts.db.internal", "qiwei_acct_pudong")
    assert (xuhui["HOST"], xuhui["NAME"]) == ("xuhui.accounts.db.internal", "qiwei_acct_xuhui")
    assert pudong["ENGINE"] == "qiwei_site.platform.connections.postgresql"


def test_account_database_behind_pgbouncer_has_no_server_side_state(settings):
    # Given PostgreSQL reached through PgBouncer in transaction pooling, and a URL asking to prepare
    settings.QIWEI_PGBOUNCER = True
    settings.QIWEI_ACCOUNT_DATABASE_URL = "postgres://qiwei@127.0.0.1:6432/qiwei_acct_{account}?prepare_threshold=5"
    config = tenancy.account_database_config("pudong")
    # Then no named cursor and no prepared statement can outlive a transaction
    assert config["DISABLE_SERVER_SIDE_CURSORS"] is True
    assert "prepare_threshold" not in config["OPTIONS"]


def test_socket_is_quiet_reads_descriptors_above_1024():
    # Given an idle connection whose descriptor is above select()'s 1024 limit (a busy worker)
    import socket

    ours, server = socket.socketpair()
    high = os.dup2(ours.fileno(), 1500)
    try:
        # Then a quiet socket is quiet, and one the server wrote to or hung up on is not
        assert pool_module.socket_is_quiet(high)
        server.send(b"E")
        assert not pool_module.socket_is_quiet(high)
    finally:
        os.close(high)
        ours.close()
        server.close()


class _FakeCatalogue:
    """A stand-in server answering `SELECT datname FROM pg_database`, counting connections."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.connections = 0

    def connect(self, **kwargs):
        self.connections += 1
        catalogue = self

        class _Conn:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def execute(self, sql, params=None):
                assert sql == "SELECT datname FROM pg_database"
                return [(name,) for name in catalogue.names]

        return _Conn()


def test_account_database_exists_asks_the_server_once_for_every_known_account(monkeypatch):
    import psycopg

    # Given a server holding three account databases, listed by a stand-in catalogue
    server = _FakeCatalogue(["postgres", "qiwei_acct_pudong", "qiwei_acct_xuhui"])
    monkeypatch.setattr(psycopg, "connect", server.connect)
    monkeypatch.setattr(tenancy, "_known_databases", {})
    config = {"HOST": "pg.internal", "PORT": "6432", "USER": "qiwei", "PASSWORD": ""}
    # When a process checks both accounts before their first use behind PgBouncer
    assert tenancy._postgres_database_exists({**config, "NAME": "qiwei_acct_pudong"})
    assert tenancy._postgres_database_exists({**config, "NAME": "qiwei_acct_xuhui"})
    # Then it asked the server once, not once per account
    assert server.connections == 1
    # And a database it has not seen yet is looked up again (created since), a missing one is not there
    server.names.append("qiwei_acct_minhang")
    assert tenancy._postgres_database_exists({**config, "NAME": "qiwei_acct_minhang"})
    assert not tenancy._postgres_database_exists({**config, "NAME": "qiwei_acct_gone"})
    assert server.connections == 3


def test_account_pool_shared_by_schemas_prefers_a_connection_that_served_the_account(pool, settings):
    # Given one pool key for every account (the schema layout), a cap of two, and two idle
    # connections, one that served 浦东 and one that served 徐汇 and 静安
    settings.QIWEI_ACCOUNT_CONN_CAP = 2
    key = ("schema:qiwei_accounts",)
    first = pool.checkout(key, lambda: StandIn("any"), lambda raw: True, affinity="acct_pudong")
    second = pool.checkout(key, lambda: StandIn("any"), lambda raw: True, affinity="acct_xuhui")
    pool_module.schemas_served(first).add("acct_pudong")
    pool_module.schemas_served(second).update({"acct_xuhui", "acct_jingan"})
    pool.checkin(key, first, keep=True, reusable=True)
    pool.checkin(key, second, keep=True, reusable=True)
    # When 徐汇 asks, it gets the connection whose backend has its schema cached, not the latest
    assert pool.checkout(key, lambda: StandIn("any"), lambda raw: True, affinity="acct_xuhui") is second
    pool.checkin(key, second, keep=True, reusable=True)
    # And, at the cap, an account neither served takes the one that has served the fewest schemas
    assert pool.checkout(key, lambda: StandIn("any"), lambda raw: True, affinity="acct_minhang") is first


def test_account_pool_shared_by_schemas_opens_a_connection_below_the_cap_rather_than_share_one(pool):
    # Given one pool key for every account (the schema layout), below the cap, and an idle
    # connection whose backend has read 浦东's schema
    key = ("schema:qiwei_accounts",)
    pudong = pool.checkout(key, lambda: StandIn("pudong"), lambda raw: True, affinity="acct_pudong")
    pool_module.schemas_served(pudong).add("acct_pudong")
    pool.checkin(key, pudong, keep=True, reusable=True)
    # When 徐汇, which no connection has served, asks
    xuhui = pool.checkout(key, lambda: StandIn("xuhui"), lambda raw: True, affinity="acct_xuhui")
    pool_module.schemas_served(xuhui).add("acct_xuhui")
    pool.checkin(key, xuhui, keep=True, reusable=True)
    # Then it gets a connection of its own (the accounts spread over the cap's slots, each backend
    # reading fewer schemas), and 浦东's stays idle for 浦东
    assert xuhui is not pudong and xuhui.account == "xuhui"
    assert pool.stats().open == 2
    assert pool.checkout(key, lambda: StandIn("new"), lambda raw: True, affinity="acct_pudong") is pudong
