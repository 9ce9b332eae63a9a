"""A schema per account in one PostgreSQL database (issue 23): isolation is the database's, and it
fails closed. Each account has a role owning its schema and nothing else; the pool's login role is
no superuser, does not inherit the account roles and may read no account schema; every transaction
switches to the account's role and schema with SET LOCAL, so a connection carries nothing from one
account into the next one's use."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator

import psycopg
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import connections, transaction
from psycopg import errors, sql

from conversations.models import Customer, Message
from qiwei_site.platform import tenancy
from qiwei_site.platform.connections import account_pool
from qiwei_site.platform.services import account_create, account_delete
from qiwei_site.platform.tenancy import alias_for, use_account
from tests.factories import CustomerFactory, MessageFactory
from tests.integration.conftest import POSTGRES

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def pg_layout() -> str:
    return "schema"


@pytest.fixture
def schema_accounts(postgres_accounts, settings) -> Iterator[Callable[[str], str]]:
    settings.QIWEI_ACCOUNT_CONN_CAP = 2
    account_pool.close_idle()
    account_pool.reset_peak()
    yield postgres_accounts
    account_pool.close_idle()
    connections.close_all()


def _database(account_id: str) -> str:
    return str(connections.settings[alias_for(account_id)]["NAME"])


def _login_connection(account_id: str) -> psycopg.Connection:
    """A connection as the pool's login role, with no switch: what a forgotten switch would run as."""
    config = connections.settings[alias_for(account_id)]
    return psycopg.connect(
        host=POSTGRES[0], port=POSTGRES[1], user=config["USER"], dbname=config["NAME"], autocommit=True
    )


def test_schema_layout_accounts_live_in_one_database_a_schema_and_role_each(schema_accounts):
    # Given two accounts in the schema layout
    a, b = schema_accounts("sha"), schema_accounts("shb")
    account_create(account_id=a, name="静安门店")
    account_create(account_id=b, name="闵行门店")
    # Then both are in the one database, each in its own schema owned by its own role
    assert _database(a) == _database(b)
    with _login_connection(a) as conn:
        owners = dict(
            conn.execute(
                "SELECT n.nspname, r.rolname FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner "
                "WHERE n.nspname = ANY(%s)",
                [[alias_for(a), alias_for(b)]],
            ).fetchall()
        )
    assert owners == {
        alias_for(a): tenancy.account_role(_database(a), a),
        alias_for(b): tenancy.account_role(_database(b), b),
    }


def test_schema_layout_statement_without_the_switch_is_refused_by_the_database(schema_accounts):
    # Given an account holding a customer
    account_id = schema_accounts("shrefuse")
    account_create(account_id=account_id, name="虹口门店")
    with use_account(account_id):
        CustomerFactory(conversation_id="wm_refuse", display_name="钱女士")
    schema = alias_for(account_id)
    with _login_connection(account_id) as conn:
        # When a transaction skips the switch and names the table by its schema
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute(sql.SQL("SELECT * FROM {}.conversations_customer").format(sql.Identifier(schema)))
        # Or by its bare name (the login role's search path holds no account table)
        with pytest.raises(errors.UndefinedTable):
            conn.execute("SELECT * FROM conversations_customer")
        # Or writes
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute(sql.SQL("DELETE FROM {}.conversations_customer").format(sql.Identifier(schema)))
    # Then the database refused each, and the row is still there
    with use_account(account_id):
        assert list(Customer.objects.values_list("display_name", flat=True)) == ["钱女士"]


def test_schema_layout_one_account_role_cannot_read_another_accounts_schema(schema_accounts):
    a, b = schema_accounts("shx"), schema_accounts("shy")
    account_create(account_id=a, name="嘉定门店")
    account_create(account_id=b, name="宝山门店")
    with use_account(b):
        CustomerFactory(conversation_id="wm_b", display_name="孙先生")
    # When account a's transaction names account b's table
    with use_account(a) as alias, pytest.raises(Exception) as refused, connections[alias].cursor() as cursor:
        cursor.execute(sql.SQL("SELECT * FROM {}.conversations_customer").format(sql.Identifier(alias_for(b))))
    # Then a's role is refused
    assert isinstance(refused.value.__cause__, errors.InsufficientPrivilege)


def test_schema_layout_connection_returned_by_one_account_and_taken_by_another_sees_only_the_second(
    schema_accounts, settings
):
    # Given two accounts and a pool of one connection
    settings.QIWEI_ACCOUNT_CONN_CAP = 1
    a, b = schema_accounts("shone"), schema_accounts("shtwo")
    account_create(account_id=a, name="松江门店")
    account_create(account_id=b, name="青浦门店")
    with use_account(a):
        CustomerFactory(conversation_id="wm_same", display_name="周先生")
    with use_account(b):
        CustomerFactory(conversation_id="wm_same", display_name="吴女士")
    account_pool.close_idle()
    # When account a uses the connection, inside a transaction, and hands it back
    with use_account(a) as alias, transaction.atomic(using=alias):
        assert list(Customer.objects.values_list("display_name", flat=True)) == ["周先生"]
        first_backend = connections[alias].connection.info.backend_pid
    # And account b takes it
    with use_account(b) as alias:
        names = list(Customer.objects.values_list("display_name", flat=True))
        second_backend = connections[alias].connection.info.backend_pid
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT current_user, current_setting('search_path')")
            user, search_path = cursor.fetchone()
    # Then it is the same server session, switched to b's role and schema, seeing only b's rows
    assert second_backend == first_backend
    assert names == ["吴女士"]
    assert user == tenancy.account_role(_database(b), b)
    assert search_path.split(", ")[0] == alias_for(b)
    # And outside any account's transaction the session is the login role again
    with _login_connection(a) as conn:
        row = conn.execute("SELECT usename FROM pg_stat_activity WHERE pid = %s", [second_backend]).fetchone()
    assert row is not None and row[0] == connections.settings[alias_for(a)]["USER"]


def test_schema_layout_threads_round_robin_over_accounts_never_see_another_account(schema_accounts, settings):
    # Given eight accounts, each with a customer and a message naming the account
    settings.QIWEI_ACCOUNT_CONN_CAP = 3
    ids = [schema_accounts(f"shrr{n}") for n in range(8)]
    for account_id in ids:
        account_create(account_id=account_id, name=f"门店{account_id}")
        with use_account(account_id):
            customer = CustomerFactory(conversation_id="wm_rr", display_name=account_id)
            MessageFactory(customer=customer, text=f"我是{account_id}的客户")
    wrong: list[str] = []
    failures: list[BaseException] = []
    barrier = threading.Barrier(6)

    def serve(worker: int) -> None:
        rng = random.Random(worker)
        try:
            barrier.wait()
            for _ in range(40):
                account_id = rng.choice(ids)
                with use_account(account_id):
                    if rng.random() < 0.3:
                        with tenancy.account_atomic():
                            seen = list(Message.objects.values_list("text", flat=True))
                    else:
                        seen = list(Customer.objects.values_list("display_name", flat=True))
                    expected = [f"我是{account_id}的客户"] if seen and seen[0].startswith("我是") else [account_id]
                    if seen != expected:
                        wrong.append(f"{account_id}: {seen}")
        except BaseException as exc:
            failures.append(exc)
        finally:
            connections.close_all()

    # When six threads share a pool of three connections over them
    account_pool.reset_peak()
    threads = [threading.Thread(target=serve, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then every answer was the account's own, and the pool never held more than three
    assert failures == []
    assert wrong == []
    assert account_pool.stats().peak <= 3


def test_schema_layout_connection_that_served_many_schemas_is_closed_when_handed_back(schema_accounts, settings):
    # Given a budget of two schemas per connection and a pool of one
    settings.QIWEI_ACCOUNT_CONN_CAP = 1
    settings.QIWEI_PG_SCHEMAS_PER_CONNECTION = 2
    ids = [schema_accounts(f"shcat{n}") for n in range(3)]
    for account_id in ids:
        account_create(account_id=account_id, name=f"门店{account_id}")
    account_pool.close_idle()
    backends = []
    # When one connection serves three accounts in turn
    for account_id in ids:
        with use_account(account_id) as alias:
            Customer.objects.count()
            backends.append(connections[alias].connection.info.backend_pid)
    # Then the first two shared it, and after the third it was closed, not kept
    assert backends[0] == backends[1] == backends[2]
    assert account_pool.stats().idle == 0
    with use_account(ids[0]) as alias:
        Customer.objects.count()
        assert connections[alias].connection.info.backend_pid != backends[0]


def test_schema_layout_refuses_a_superuser_login_role(settings, pg_layout, postgres_accounts):
    # Given the schema layout logging in as the server's superuser
    settings.QIWEI_ACCOUNT_DATABASE_URL = settings.QIWEI_ACCOUNT_DATABASE_URL.replace(
        settings.QIWEI_ACCOUNT_DATABASE_URL.split("//")[1].split("@")[0], "postgres", 1
    )
    account_id = postgres_accounts("shsuper")
    # When an account is created, it is refused with what to do, and nothing is made
    with pytest.raises(ImproperlyConfigured, match="NOINHERIT"):
        tenancy.ensure_account_database(account_id)


def test_schema_layout_account_delete_drops_its_schema_and_role(schema_accounts):
    account_id = schema_accounts("shdel")
    account_create(account_id=account_id, name="奉贤门店")
    with use_account(account_id):
        CustomerFactory(conversation_id="wm_del")
    database = _database(account_id)
    config = dict(connections.settings[alias_for(account_id)])
    # When the account is deleted
    account_delete(account_id=account_id, reason="门店关闭")
    # Then neither its schema nor its role remains
    with psycopg.connect(
        host=POSTGRES[0], port=POSTGRES[1], user=config["USER"], dbname=database, autocommit=True
    ) as conn:
        assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [alias_for(account_id)]).fetchone() is None
        assert (
            conn.execute(
                "SELECT 1 FROM pg_roles WHERE rolname = %s", [tenancy.account_role(database, account_id)]
            ).fetchone()
            is None
        )


def test_schema_layout_migrate_accounts_migrates_every_schema(schema_accounts):
    ids = [schema_accounts(f"shmig{n}") for n in range(4)]
    for account_id in ids:
        account_create(account_id=account_id, name=f"门店{account_id}")
    account_pool.reset_peak()
    call_command("migrate_accounts", verbosity=0)
    for account_id in ids:
        with use_account(account_id) as alias, connections[alias].cursor() as cursor:
            cursor.execute(f"SELECT fingerprint FROM {tenancy.SCHEMA_TABLE}")
            assert cursor.fetchone()[0] == tenancy.migration_fingerprint()
    assert account_pool.stats().peak <= 2


def test_schema_layout_executemany_runs_as_the_account_in_both_transaction_modes(schema_accounts):
    # Given two accounts with a customer of the same conversation id each
    a, b = schema_accounts("shema"), schema_accounts("shemb")
    account_create(account_id=a, name="金山门店")
    account_create(account_id=b, name="崇明门店")
    for account_id, name in ((a, "冯先生"), (b, "陈女士")):
        with use_account(account_id):
            CustomerFactory(conversation_id="wm_many", display_name=name)
    update = "UPDATE conversations_customer SET display_name = %s WHERE conversation_id = %s"
    # When account a runs executemany in autocommit, then inside a transaction
    with use_account(a) as alias:
        with connections[alias].cursor() as cursor:
            cursor.executemany(update, [("冯先生（已改）", "wm_many"), ("无此人", "wm_none")])
        with tenancy.account_atomic(), connections[alias].cursor() as cursor:
            cursor.executemany(update, [("冯先生（再改）", "wm_many")])
        names_a = list(Customer.objects.values_list("display_name", flat=True))
    with use_account(b):
        names_b = list(Customer.objects.values_list("display_name", flat=True))
    # Then only account a's row changed, each time
    assert names_a == ["冯先生（再改）"]
    assert names_b == ["陈女士"]


def test_schema_layout_refuses_a_login_role_that_inherits_account_privileges(schema_accounts):
    # Given an account made with a safe login role
    account_id = schema_accounts("shinh")
    account_create(account_id=account_id, name="黄浦门店")
    login = connections.settings[alias_for(account_id)]["USER"]
    tenancy.account_connections_close(account_id)
    # When the login role is later made to inherit the account roles' privileges
    admin = {"host": POSTGRES[0], "port": POSTGRES[1], "user": "postgres", "dbname": "postgres", "autocommit": True}
    with psycopg.connect(**admin) as conn:
        conn.execute(sql.SQL("ALTER ROLE {} INHERIT").format(sql.Identifier(login)))
    try:
        # Then a process meeting the account for the first time refuses to serve it
        tenancy.unregister_account_database(account_id)
        tenancy._migrated.discard(alias_for(account_id))
        with pytest.raises(tenancy.UnsafeLoginRole), use_account(account_id):
            pass
    finally:
        with psycopg.connect(**admin) as conn:
            conn.execute(sql.SQL("ALTER ROLE {} NOINHERIT").format(sql.Identifier(login)))


def test_schema_layout_cursor_kept_past_its_account_is_refused(schema_accounts, settings):
    # Given a pool of one connection and a cursor of account a kept after a's use ended
    settings.QIWEI_ACCOUNT_CONN_CAP = 1
    a, b = schema_accounts("shkeep"), schema_accounts("shtake")
    account_create(account_id=a, name="普陀门店")
    account_create(account_id=b, name="长宁门店")
    with use_account(b):
        CustomerFactory(conversation_id="wm_b", display_name="秘密客户")
    account_pool.close_idle()
    with use_account(a) as alias:
        stale = connections[alias].cursor().cursor  # the driver's cursor under Django's wrapper
        stale.execute("SELECT 1")
    # When account b holds the same connection inside its transaction and the stale cursor is used
    with use_account(b) as alias, transaction.atomic(using=alias):
        Customer.objects.count()
        assert connections[alias].connection is stale.connection
        # Then it is refused, not answered with b's rows
        with pytest.raises(psycopg.ProgrammingError, match="outlived"):
            stale.execute("SELECT display_name FROM conversations_customer")
