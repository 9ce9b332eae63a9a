"""The account router and its connections at their edges (issue 40, mutation testing of tenancy): a
customer's rows go to the selected account's store and nowhere else, the registry stays in
`default`, each store's tables live only where they belong, and a thread hands back every account
connection it is done with, whatever else it keeps."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.db import connections

from conversations.models import Customer, Message, RegistryAuditEvent
from memory.models import MemoryItem
from qiwei_site.platform import connections as pool_module
from qiwei_site.platform import tenancy
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.tenancy import (
    AccountRouter,
    CrossAccountAccess,
    InvalidAccountId,
    NoAccountSelected,
    account_atomic,
    alias_for,
    on_account_commit,
    use_account,
)
from tests.conftest import make_account
from tests.factories import CustomerFactory, MessageFactory

ROUTER = AccountRouter()


@pytest.fixture
def branches_two(db, settings) -> Iterator[list[str]]:
    """Two 门店 accounts with the pool on (SQLite connections kept per thread), none selected."""
    settings.QIWEI_ACCOUNT_CONN_CAP = 3
    ids = ["pudong", "xuhui"]
    for account_id, name in zip(ids, ["浦东门店", "徐汇门店"], strict=True):
        make_account(account_id, name)
    tenancy.account_connections_release_idle(keep=False)
    yield ids
    tenancy.account_connections_release_idle(keep=False)


# --- account ids and aliases --------------------------------------------------------------------


@pytest.mark.parametrize("account_id", ["a", "0", "shop_1", "a" * 40, "9_" + "x" * 38])
def test_account_id_accepts_lowercase_digits_and_underscores_up_to_forty(account_id):
    # Given an id of the allowed shape, when it is named as an alias
    # Then it is the store's alias as it is, and the alias gives the id back
    assert alias_for(account_id) == f"acct_{account_id}"
    assert tenancy.account_for_alias(f"acct_{account_id}") == account_id


@pytest.mark.parametrize("account_id", ["", "_shop", "Shop", "shop-1", "a" * 41, "门店", "shop\n", 7, None])
def test_account_id_refuses_every_other_shape(account_id):
    # Given an id a store's file or database name could not safely carry
    # When it is named as an alias
    with pytest.raises(InvalidAccountId) as refused:
        alias_for(account_id)
    # Then it is refused with the rule, in Chinese and in English
    assert str(refused.value) == (
        f"账号 ID {account_id!r} 不合法：只能使用小写字母、数字和下划线，以字母或数字开头，最长 40 个字符 "
        "(account id must match [a-z0-9][a-z0-9_]{0,39})."
    )


@pytest.mark.parametrize("alias", ["default", "acct", "account_acme", "xacct_acme"])
def test_account_for_alias_is_none_for_an_alias_that_is_not_an_account_store(alias):
    assert tenancy.account_for_alias(alias) is None


def test_current_alias_without_a_selection_refuses_and_inside_one_names_the_store(db):
    # Given no account selected, then naming the store is refused, saying where customer data is read
    with pytest.raises(
        NoAccountSelected, match=r"^客户数据查询必须在 use_account\(\) 中进行 \(no account selected\)\.$"
    ):
        tenancy.current_alias()
    assert tenancy._current_alias_or_none() is None
    # When one is selected, then it names that account's store
    tenancy.register_account_database("pudong")
    token = tenancy._current_account.set("pudong")
    try:
        assert tenancy.current_alias() == "acct_pudong" == tenancy._current_alias_or_none()
    finally:
        tenancy._current_account.reset(token)


# --- the router ---------------------------------------------------------------------------------


def test_router_sends_customer_data_to_the_selected_store_and_the_registry_to_default(account):
    # Given account `acme` selected
    # When the router is asked where each kind of row goes, for reading and for writing
    for route in (ROUTER.db_for_read, ROUTER.db_for_write):
        # Then customer data goes to the account's store, the registry and staff to default
        assert route(Customer) == route(Message) == route(MemoryItem) == "acct_acme"
        assert route(WeComAccount) == route(RegistryAuditEvent) == route(get_user_model()) == "default"


def test_router_refuses_a_row_of_another_store_for_reading_and_writing(account, other_account):
    # Given a customer of `acme`
    customer = CustomerFactory(display_name="王先生")
    # When it is used while `globex` is selected
    with use_account(other_account.pk):
        for route in (ROUTER.db_for_read, ROUTER.db_for_write):
            # Then the router refuses it, naming where it came from and what is selected
            with pytest.raises(CrossAccountAccess, match=r"conversations\.Customer row from acct_acme .* acct_globex"):
                route(Customer, instance=customer)
        # And a row not saved anywhere yet, or read from default, goes to the selected store
        assert ROUTER.db_for_write(Customer, instance=Customer(display_name="赵女士")) == "acct_globex"
        from_default = Customer(display_name="赵女士")
        from_default._state.db = "default"
        assert ROUTER.db_for_write(Customer, instance=from_default) == "acct_globex"
    # And in its own store it is routed there
    assert ROUTER.db_for_write(Customer, instance=customer) == "acct_acme"


def test_router_customer_message_saved_under_another_account_never_reaches_its_store(account, other_account):
    # Given a message of `acme`'s customer
    message = MessageFactory(customer=CustomerFactory(display_name="王先生"), text="我预算3000，想要两居室")
    # When code selecting `globex` tries to save and delete it
    with use_account(other_account.pk):
        with pytest.raises(CrossAccountAccess):
            message.save()
        with pytest.raises(CrossAccountAccess):
            message.delete()
        # Then `globex`'s store holds nothing of it
        assert not Message.objects.exists() and not Customer.objects.exists()
    # And `acme` still has it as it was
    assert list(Message.objects.values_list("text", flat=True)) == ["我预算3000，想要两居室"]


def test_router_allows_relations_within_a_store_and_to_default_never_across_stores(account, other_account):
    # Given rows of two stores and of default
    ours, also_ours = CustomerFactory(display_name="王先生"), CustomerFactory(display_name="李女士")
    with use_account(other_account.pk):
        theirs = CustomerFactory(display_name="赵女士")
    registry = WeComAccount.objects.get(pk=account.pk)
    unsaved = Customer(display_name="未保存")
    # Then two stores never relate; a store's row may name a row of default (a history row's user),
    # either way round; within one database, or with an unsaved row, Django decides
    assert ROUTER.allow_relation(ours, theirs) is False
    assert ROUTER.allow_relation(theirs, ours) is False
    assert ROUTER.allow_relation(ours, registry) is True
    assert ROUTER.allow_relation(registry, ours) is True
    assert ROUTER.allow_relation(ours, also_ours) is None
    assert ROUTER.allow_relation(registry, WeComAccount.objects.get(pk=other_account.pk)) is None
    assert ROUTER.allow_relation(ours, unsaved) is None
    assert ROUTER.allow_relation(unsaved, ours) is None


@pytest.mark.parametrize(
    ("app_label", "model_name", "in_store", "in_default"),
    [
        ("conversations", "customer", True, False),
        ("memory", "memoryitem", True, False),
        ("sessions_epoch", "sessionepoch", True, False),
        ("conversations", "wecomaccount", False, True),
        ("conversations", "accountmembership", False, True),
        ("conversations", "registryauditevent", False, True),
        ("conversations", None, True, False),  # RunSQL / RunPython of an account app
        ("auth", "user", False, True),
        ("platform", None, False, True),
        ("knowledge", "knowledgechunk", False, True),
    ],
)
def test_router_migrates_each_table_only_where_it_lives(app_label, model_name, in_store, in_default):
    # Given a migration of one app's table (or an operation of the app as a whole)
    # When it is asked for an account's store and for default
    # Then it runs in the one the router sends its rows to, never in both
    assert ROUTER.allow_migrate("acct_acme", app_label, model_name) is in_store
    assert ROUTER.allow_migrate("default", app_label, model_name) is in_default


# --- the selected account's transactions --------------------------------------------------------


def test_account_atomic_rolls_back_the_selected_stores_writes(account):
    # Given a write inside the selected account's transaction that then fails
    with pytest.raises(RuntimeError), account_atomic():
        CustomerFactory(display_name="王先生")
        assert connections["acct_acme"].in_atomic_block
        raise RuntimeError("客服系统中途出错")
    # Then nothing of it is kept in the account's store
    assert not Customer.objects.exists()


def test_account_atomic_nests_with_a_savepoint_unless_asked_not_to(account):
    # Given a transaction open on the account's store
    store = connections["acct_acme"]
    with account_atomic():
        # When inner blocks open with and without a savepoint
        with account_atomic():
            with_savepoint = store.savepoint_ids[-1]
        with account_atomic(savepoint=False):
            without = store.savepoint_ids[-1]
    # Then only the first made one (a failure inside it would roll back that block alone)
    assert with_savepoint is not None and without is None


def test_on_account_commit_runs_once_the_account_store_commits(account):
    # Given work queued inside the account's transaction
    done: list[str] = []
    with account_atomic():
        on_account_commit(lambda: done.append("回访提醒已排队"))
        # Then it waits for the account store's commit
        assert done == []
    # And runs then
    assert done == ["回访提醒已排队"]


# --- registering a store's connection -----------------------------------------------------------


def test_register_account_database_is_idempotent_and_unregister_forgets_it(db, settings):
    # Given an account's store registered twice
    first = tenancy.register_account_database("minhang")
    config = connections.settings[first]
    second = tenancy.register_account_database("minhang")
    # Then it is one alias with one configuration: a SQLite file named after the account
    assert first == second == "acct_minhang" and tenancy.is_registered("minhang")
    assert connections.settings[second] is config
    assert config["NAME"].endswith("/accounts/minhang.sqlite3")
    # When it is unregistered (twice: the second does nothing)
    tenancy.unregister_account_database("minhang")
    tenancy.unregister_account_database("minhang")
    # Then Django no longer knows the alias
    assert not tenancy.is_registered("minhang") and "acct_minhang" not in connections.settings


# --- handing connections back --------------------------------------------------------------------


def test_account_connections_close_leaves_no_idle_pooled_connection_of_the_account(db, settings):
    # Given the pool on, holding an idle connection of 浦东 and one of 徐汇 (stand-ins for a server's)
    settings.QIWEI_ACCOUNT_CONN_CAP = 3
    pudong, xuhui = _StandIn(), _StandIn()
    for alias, raw in (("acct_pudong", pudong), ("acct_xuhui", xuhui)):
        taken = pool_module.account_pool.checkout((alias,), lambda raw=raw: raw, lambda raw: True)
        pool_module.account_pool.checkin((alias,), taken, keep=True, reusable=True)
    try:
        # When a loop over every account is done with 浦东
        tenancy.account_connections_close("pudong")
        # Then 浦东's connection is closed and 徐汇's still waits in the pool
        assert pudong.closed and not xuhui.closed
    finally:
        pool_module.account_pool.close_idle()


def test_account_connections_of_erased_accounts_are_dropped_by_every_thread(branches_two):
    # Given another thread (a gunicorn thread) that served both 门店 and keeps their connections
    aliases = [alias_for(account_id) for account_id in branches_two]
    served, erased, seen = threading.Event(), threading.Event(), {}

    def serve() -> None:
        for account_id in branches_two:
            with use_account(account_id):
                Customer.objects.count()
        served.set()
        erased.wait(10)
        # its next request ends
        seen["released"] = tenancy.account_connections_release_idle()
        seen["wrappers"] = [getattr(connections._connections, alias, None) for alias in aliases]
        seen["kept"] = [alias for alias in aliases if alias in tenancy._kept_sqlite()]

    worker = threading.Thread(target=serve)
    worker.start()
    served.wait(10)
    # When this thread erases both accounts' stores
    for account_id in branches_two:
        tenancy.drop_account_database(account_id)
    erased.set()
    worker.join(10)
    # Then the other thread let go of both whole: nothing kept, no connection object left behind
    assert seen == {"released": 2, "wrappers": [None, None], "kept": []}


def test_account_connections_release_idle_counts_each_connection_handed_back(branches_two):
    # Given this thread kept both 门店's connections open after serving them
    for account_id in branches_two:
        with use_account(account_id):
            CustomerFactory(display_name="王先生")
    # When the end of a Celery task closes every one it is done with
    released = tenancy.account_connections_release_idle(keep=False)
    # Then both were closed and counted, and nothing is left to release
    assert released == 2 and not tenancy._kept_sqlite()
    assert tenancy.account_connections_release_idle(keep=False) == 0


def test_account_connections_with_the_pool_off_are_left_to_django(db, settings):
    # Given the pool switched off (QIWEI_ACCOUNT_CONN_CAP=0) and a store used outside any selection
    settings.QIWEI_ACCOUNT_CONN_CAP = 0
    make_account("legacy", "旧门店")
    with use_account("legacy") as alias:
        Customer.objects.count()
    # When a request ends, then nothing is released or counted: Django's per-thread connection stays
    assert tenancy.account_connection_release(alias) is False
    assert tenancy.account_connections_release_idle() == 0
    assert connections[alias].connection is not None


def test_unregistering_an_account_leaves_this_thread_nothing_of_it(branches_two):
    # Given this thread keeps its connection to 浦东 after serving it
    alias = alias_for(branches_two[0])
    with use_account(branches_two[0]):
        CustomerFactory(display_name="王先生")
    assert alias in tenancy._kept_sqlite()
    # When the account's store is unregistered
    tenancy.unregister_account_database(branches_two[0])
    # Then nothing of it is kept, open or left for a later release
    assert alias not in tenancy._kept_sqlite()
    assert getattr(connections._connections, alias, None) is None
    assert tenancy.account_connections_release_idle() == 0


def test_account_connection_selected_further_out_is_never_closed_by_the_cap(db, settings):
    # Given one kept connection per thread, and 闵行 (used before, so kept) selected again with
    # its customers being read a row at a time
    settings.QIWEI_ACCOUNT_CONN_CAP = 1
    for account_id, name in (("minhang", "闵行门店"), ("songjiang", "松江门店"), ("putuo", "普陀门店")):
        make_account(account_id, name)
    with use_account("minhang"):
        CustomerFactory(display_name="王先生")
        CustomerFactory(display_name="李女士")
    tenancy.account_connections_release_idle()
    assert list(tenancy._kept_sqlite()) == [alias_for("minhang")]  # a cap of one keeps one
    try:
        with use_account("minhang"):
            rows = Customer.objects.order_by("pk").values_list("display_name", flat=True).iterator(chunk_size=1)
            first = next(rows)
            # When code inside serves two other 门店 in turn (the cap then closes the least recently used)
            with use_account("songjiang"), use_account("putuo"):
                Customer.objects.count()
            # (the one past the cap and not in use is what was closed)
            assert alias_for("putuo") not in tenancy._kept_sqlite()
            # Then 闵行's connection, still in use further out, was not closed under the read
            assert [first, *rows] == ["王先生", "李女士"]
    finally:
        tenancy.account_connections_release_idle(keep=False)


def test_unregistering_an_account_closes_its_idle_pooled_connections(db, settings):
    # Given the pool on, holding an idle connection of 浦东 and one of 徐汇 (stand-ins for a server's)
    settings.QIWEI_ACCOUNT_CONN_CAP = 3
    pudong, xuhui = _StandIn(), _StandIn()
    for alias, raw in (("acct_pudong", pudong), ("acct_xuhui", xuhui)):
        taken = pool_module.account_pool.checkout((alias,), lambda raw=raw: raw, lambda raw: True)
        pool_module.account_pool.checkin((alias,), taken, keep=True, reusable=True)
    try:
        # When 浦东's store is unregistered (its database moved or dropped)
        tenancy.register_account_database("pudong")
        tenancy.unregister_account_database("pudong")
        # Then its idle connection is closed, 徐汇's kept
        assert pudong.closed and not xuhui.closed
    finally:
        pool_module.account_pool.close_idle()


def test_fork_from_a_thread_that_kept_no_account_connection_starts_cleanly(db):
    # Given a thread that never selected an account
    errors: list[BaseException] = []

    def child_start() -> None:
        try:
            # When a process is forked from it (the hook the child runs)
            tenancy._forget_kept_sqlite_after_fork()
        except BaseException as exc:  # the hook must raise nothing at all
            errors.append(exc)

    thread = threading.Thread(target=child_start)
    thread.start()
    thread.join(10)
    # Then the hook finds nothing to close and raises nothing
    assert errors == []


# --- the pool's choice of a connection ----------------------------------------------------------


class _StandIn:
    """What the pool needs of a driver connection: close()."""

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def schema_pool(settings) -> pool_module.AccountConnectionPool:
    settings.QIWEI_ACCOUNT_CONN_CAP = 4
    settings.QIWEI_DB_CONN_MAX_AGE = 60
    return pool_module.AccountConnectionPool()


def test_account_pool_gives_an_unknown_account_the_connection_that_served_the_fewest_schemas(schema_pool, settings):
    # Given one pool key for every account's schema and, at a cap of two, two idle connections, the
    # later one (by its place in memory) having served fewer schemas
    settings.QIWEI_ACCOUNT_CONN_CAP = 2
    key = ("schema:qiwei_accounts",)
    taken = [schema_pool.checkout(key, _StandIn, lambda raw: True, affinity="acct_pudong") for _ in range(2)]
    busier, quieter = sorted(taken, key=id)
    pool_module.schemas_served(busier).update({"acct_xuhui", "acct_jingan", "acct_minhang"})
    pool_module.schemas_served(quieter).add("acct_putuo")
    for raw in taken:
        schema_pool.checkin(key, raw, keep=True, reusable=True)
    # When an account neither served asks
    chosen = schema_pool.checkout(key, _StandIn, lambda raw: True, affinity="acct_songjiang")
    # Then it gets the one with the fewest schemas' catalogue to carry
    assert chosen is quieter


def test_account_pool_affinity_takes_a_connection_that_served_no_schema_yet(schema_pool):
    # Given one idle connection that has served no account's schema yet
    key = ("schema:qiwei_accounts",)
    raw = schema_pool.checkout(key, _StandIn, lambda raw: True)
    pool_module._served.pop(id(raw), None)
    schema_pool.checkin(key, raw, keep=True, reusable=True)
    # When an account asks for a connection by affinity
    # Then it is handed that one (not a new one)
    assert schema_pool.checkout(key, _StandIn, lambda raw: True, affinity="acct_pudong") is raw


def test_account_pool_connection_handed_out_again_has_a_new_lease(schema_pool):
    # Given a connection handed to 浦东 and given back
    raw = schema_pool.checkout(("acct_pudong",), _StandIn, lambda raw: True)
    first = pool_module.lease_of(raw)
    schema_pool.checkin(("acct_pudong",), raw, keep=True, reusable=True)
    # When it is handed out again
    again = schema_pool.checkout(("acct_pudong",), _StandIn, lambda raw: True)
    # Then it carries a later lease (a cursor made under the first refuses to run), and a
    # connection the pool never handed out has none
    assert again is raw and pool_module.lease_of(raw) == first + 1 >= 2
    assert pool_module.lease_of(_StandIn()) == 0


@pytest.mark.parametrize(
    ("alias", "pooled"),
    [("acct_pudong", True), ("acct_pudong__template", False), ("default", False), ("template__acct", False)],
)
def test_account_pool_serves_account_stores_only_never_a_template(alias, pooled):
    assert pool_module.is_pooled_alias(alias) is pooled


# --- how an account's connection is kept ----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "cap", "engine", "max_age", "health_checks"),
    [
        # SQLite files: kept open by each thread and checked at each first use; with the pool off, Django's own
        ("", 3, "qiwei_site.platform.connections.sqlite3", None, True),
        ("", 0, "django.db.backends.sqlite3", "unset", "unset"),
        # A PostgreSQL database each: through the process's pool, never aged by Django; with it off,
        # Django's per-thread connection of QIWEI_DB_CONN_MAX_AGE seconds, checked before reuse
        (
            "postgres://qiwei@db.internal:5432/qiwei_acct_{account}",
            3,
            "qiwei_site.platform.connections.postgresql",
            None,
            False,
        ),
        ("postgres://qiwei@db.internal:5432/qiwei_acct_{account}", 0, "django.db.backends.postgresql", 45, True),
        # A schema each in one database: the switching backend always, pooled when the pool is on
        (
            "postgres://qiwei@db.internal:5432/qiwei_accounts",
            3,
            "qiwei_site.platform.connections.postgresql",
            None,
            False,
        ),
        ("postgres://qiwei@db.internal:5432/qiwei_accounts", 0, "qiwei_site.platform.connections.postgresql", 45, True),
    ],
)
def test_account_connection_is_kept_as_its_layout_and_the_pool_need(
    db, settings, url, cap, engine, max_age, health_checks
):
    # Given where accounts live and whether the pool is on
    settings.QIWEI_ACCOUNT_DATABASE_URL = url
    settings.QIWEI_ACCOUNT_CONN_CAP = cap
    settings.QIWEI_DB_CONN_MAX_AGE = 45
    # When 浦东's store is located
    config = tenancy.account_database_config("pudong")
    # Then its connection is opened, kept and checked as that layout needs
    assert config["ENGINE"] == engine
    assert config.get("CONN_MAX_AGE", "unset") == max_age
    assert config.get("CONN_HEALTH_CHECKS", "unset") == health_checks
