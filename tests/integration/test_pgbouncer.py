"""Account databases through a real PgBouncer in transaction pooling (issue 13): Debian's
`pgbouncer`, started here on a free loopback port in front of the machine's PostgreSQL, with
QIWEI_PGBOUNCER=1. Creating and migrating accounts, ingest with capture, the context build, the
backfill (which iterates: no server-side cursor may be used) and the capture sweep all go through
it, for several accounts, while PgBouncer holds at most its own server-connection limit."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from django.core.management import call_command
from django.db import connections
from psycopg import sql

from memory.capture.jobs import capture_inline
from memory.models import MemoryItem
from memory.tasks.capture import capture_sweep_all
from qiwei_site.platform import tenancy
from qiwei_site.platform.connections import account_pool
from qiwei_site.platform.services import account_create, membership_grant
from qiwei_site.platform.tenancy import use_account
from tests.conftest import client_for
from tests.factories import StaffUserFactory
from tests.integration.conftest import POSTGRES, require_server
from tests.memory.conftest import wecom_message

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SCHEMA_LOGIN = "qiwei_it_pgb_login"  # the schema layout's login role (NOINHERIT), listed in PgBouncer's users
SERVER_CONNECTIONS = 4  # PgBouncer's max_user_connections: what the server may ever see from it


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pgbouncer_binary() -> str:
    found = shutil.which("pgbouncer") or next(
        (path for path in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if os.access(path, os.X_OK)), None
    )
    if found is None:
        message = "pgbouncer is not installed (Debian package `pgbouncer`)"
        if os.environ.get("QIWEI_REQUIRE_INTEGRATION") == "1":
            pytest.fail(f"{message}; QIWEI_REQUIRE_INTEGRATION=1 forbids skipping")
        pytest.skip(message)
    return found


SHIPPED = Path(__file__).resolve().parents[2] / "deploy" / "pgbouncer.ini"
# What the shipped settings fix for every installation; the rest (address, auth, sizes) is the host's.
SHIPPED_KEYS = ("pool_mode", "server_reset_query", "server_reset_query_always", "ignore_startup_parameters")


def shipped_settings() -> dict[str, str]:
    """The pooling and reset settings of `deploy/pgbouncer.ini`, as the README tells operators to keep them."""
    found: dict[str, str] = {}
    for line in SHIPPED.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if not line.startswith(";") and key.strip() in SHIPPED_KEYS:
            found[key.strip()] = value.strip()
    return found


@pytest.fixture
def pgbouncer(request) -> Iterator[int]:
    """A private PgBouncer on a free port with the shipped pooling and reset settings (or, with the
    `bare_pgbouncer` marker, transaction pooling without a reset); returns the port."""
    require_server("PostgreSQL", POSTGRES)
    binary = pgbouncer_binary()
    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="qiwei-pgbouncer-"))
    folder.chmod(0o755)  # PgBouncer refuses to run as root and drops to `postgres`, who must read it
    (folder / "userlist.txt").write_text(f'"postgres" ""\n"{SCHEMA_LOGIN}" ""\n')
    lines = [
        "[databases]",
        f"* = host={POSTGRES[0]} port={POSTGRES[1]}",
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        f"listen_port = {port}",
        "unix_socket_dir =",
        "auth_type = trust",
        f"auth_file = {folder / 'userlist.txt'}",
        "max_client_conn = 200",
        "default_pool_size = 2",
        f"max_user_connections = {SERVER_CONNECTIONS}",
        "server_idle_timeout = 5",
    ]
    shipped = shipped_settings()
    if request.node.get_closest_marker("bare_pgbouncer"):
        shipped = {"pool_mode": "transaction", "ignore_startup_parameters": "extra_float_digits"}
    lines += [f"{key} = {value}" for key, value in shipped.items()]
    if os.geteuid() == 0:
        lines.append("user = postgres")
    (folder / "pgbouncer.ini").write_text("\n".join(lines) + "\n")
    for path in folder.iterdir():
        path.chmod(0o644)
    log = open(folder / "pgbouncer.log", "wb")  # noqa: SIM115 - the child keeps it
    process = subprocess.Popen([binary, str(folder / "pgbouncer.ini")], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 15
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"pgbouncer did not start: {(folder / 'pgbouncer.log').read_text()[-2000:]}")
            time.sleep(0.05)
        yield port
    finally:
        process.send_signal(signal.SIGINT)  # immediate shutdown
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def bounced_accounts(pgbouncer, settings, pg_layout) -> Iterator[list[str]]:
    """Three accounts reached through PgBouncer, a database each or a schema each in one database
    (logging in as a role that is no superuser and NOINHERIT); dropped afterwards."""
    run = uuid.uuid4().hex[:6]
    settings.QIWEI_PGBOUNCER = True
    settings.QIWEI_ACCOUNT_CONN_CAP = 3
    schemas_db = f"qiwei_pgb_schemas_{run}"
    admin = {"host": POSTGRES[0], "port": POSTGRES[1], "user": "postgres", "dbname": "postgres", "autocommit": True}
    if pg_layout == "schema":
        with psycopg.connect(**admin) as conn:
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [SCHEMA_LOGIN]).fetchone():
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOINHERIT CREATEROLE").format(sql.Identifier(SCHEMA_LOGIN)))
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(schemas_db), sql.Identifier(SCHEMA_LOGIN))
            )
        settings.QIWEI_ACCOUNT_DATABASE_URL = f"postgres://{SCHEMA_LOGIN}@127.0.0.1:{pgbouncer}/{schemas_db}"
    else:
        settings.QIWEI_ACCOUNT_DATABASE_URL = f"postgres://postgres@127.0.0.1:{pgbouncer}/qiwei_pgb_{{account}}"
    ids = [f"{name}{run}" for name in ("xihu", "binjiang", "gongshu")]
    yield ids
    account_pool.close_idle()
    connections.close_all()
    for account_id in ids:
        tenancy.unregister_account_database(account_id)
    with psycopg.connect(**admin) as conn:
        if pg_layout == "schema":
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(schemas_db)))
            for account_id in ids:
                role = tenancy.account_role(schemas_db, account_id)
                conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
            return
        for account_id in ids:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(f"qiwei_pgb_{account_id}"))
            )


def store_names(account_ids: list[str]) -> list[str]:
    """The server-side database names the accounts live in (one, in the schema layout)."""
    return sorted({str(tenancy.account_database_config(account_id)["NAME"]) for account_id in account_ids})


def server_connections(names: list[str]) -> int:
    with psycopg.connect(
        host=POSTGRES[0], port=POSTGRES[1], user="postgres", dbname="postgres", autocommit=True
    ) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = ANY(%s)", [names]).fetchone()
    return int(row[0]) if row else 0


def test_pgbouncer_accounts_ingest_capture_context_backfill_and_sweep(bounced_accounts, pgbouncer):
    # Given three accounts created (database and migrations) through PgBouncer, and their supervisor
    user = StaffUserFactory()
    for n, account_id in enumerate(bounced_accounts):
        membership_grant(user=user, account=account_create(account_id=account_id, name=f"杭州{n}号门店"))
    client = client_for(user)
    for account_id in bounced_accounts:
        # When a customer's preferences are ingested (capture runs on commit) and a context is built
        url = f"/api/accounts/{account_id}/conversations/wm_lin_001/"
        # (capture runs in this thread at commit, whatever earlier tests did to the Celery app)
        with capture_inline():
            ingest = client.post(
                url + "messages/",
                [
                    wecom_message("你好，我想在滨江租一套两居室", external_id=f"{account_id}_1"),
                    wecom_message("我更喜欢南北通透的户型，不考虑顶楼", external_id=f"{account_id}_2"),
                ],
                format="json",
            )
        context = client.get(url + "context/")
        # Then both answer, and the context carries what capture kept
        assert ingest.status_code == 201, ingest.content
        assert context.status_code == 200, context.content
        assert "南北通透" in context.json()["prompt"]
    # And each account's memory is its own, written through PgBouncer's port
    for account_id in bounced_accounts:
        with use_account(account_id) as alias:
            assert MemoryItem.objects.filter(content__contains="南北通透").count() == 1
            assert connections[alias].connection.info.port == pgbouncer
    # And the backfill (an iterating read) and the capture sweep run through it too
    call_command("backfill_memory", verbosity=0)
    assert set(capture_sweep_all()) == set(bounced_accounts)
    # And the server never had more connections from PgBouncer than its limit
    assert server_connections(store_names(bounced_accounts)) <= SERVER_CONNECTIONS


def test_pgbouncer_iterating_read_survives_another_client_taking_its_server_connection(bounced_accounts, pgbouncer):
    # Given an account behind PgBouncer with three hundred customers
    account_id = bounced_accounts[0]
    account_create(account_id=account_id, name="西湖门店")
    with use_account(account_id) as alias:
        from conversations.models import Customer

        Customer.objects.bulk_create(Customer(conversation_id=f"wm_{n}", display_name=f"客户{n}") for n in range(300))
        rows = Customer.objects.order_by("pk").iterator(chunk_size=50)
        first = next(rows)
        # When, between two chunks, another client's transaction holds the server connection the
        # read was on (a named cursor would stay behind on it)
        with psycopg.connect(
            host="127.0.0.1", port=pgbouncer, user="postgres", dbname=connections[alias].settings_dict["NAME"]
        ) as other:
            other.execute("SELECT 1")  # inside a transaction: PgBouncer pins a server connection to it
            names = [first.display_name, *(customer.display_name for customer in rows)]
            other.rollback()
    # Then every row still arrives
    assert len(names) == 300


def _poison(pgbouncer: int, account_id: str) -> None:
    """Another client through PgBouncer leaves account A's role and schema on its server connection
    (session-level SET, outside any transaction), as a buggy script or a psql session might."""
    config = tenancy.account_database_config(account_id)
    with psycopg.connect(
        host="127.0.0.1", port=pgbouncer, user=SCHEMA_LOGIN, dbname=config["NAME"], autocommit=True
    ) as other:
        other.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(config["QIWEI_ROLE"])))
        other.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(config["QIWEI_SCHEMA"])))


def _unswitched(alias: str, statement: str) -> list[tuple]:
    """A statement sent on the account's connection without the switch (a cursor of psycopg's own)."""
    connections[alias].ensure_connection()
    raw = connections[alias].connection
    with raw.cursor() as cursor:
        cursor.execute(statement)
        return cursor.fetchall()


def _two_accounts(bounced_accounts: list[str]) -> tuple[str, str]:
    from conversations.models import Customer

    first, second = bounced_accounts[:2]
    account_create(account_id=first, name="西湖门店")
    account_create(account_id=second, name="滨江门店")
    with use_account(first):
        Customer.objects.create(conversation_id="wm_poison_wang", display_name="王先生")
    return first, second


@pytest.mark.parametrize("pg_layout", ["schema"], indirect=True)
def test_pgbouncer_poisoned_server_connection_never_reaches_another_accounts_unswitched_statement(
    bounced_accounts, pgbouncer
):
    # Given two accounts behind PgBouncer with the shipped settings, and a client that left account
    # A's role and schema on a pooled server connection
    account_a, account_b = _two_accounts(bounced_accounts)
    _poison(pgbouncer, account_a)
    with use_account(account_b) as alias:
        # When account B's block sends statements without the switch
        # Then they run as the login role: A's rows are refused, not answered
        assert _unswitched(alias, "SELECT current_user") == [(SCHEMA_LOGIN,)]
        with pytest.raises(psycopg.Error):
            _unswitched(alias, "SELECT display_name FROM conversations_customer")
        connections[alias].close()
        # And B's switched statements see B's data only
        from conversations.models import Customer

        assert not Customer.objects.filter(display_name="王先生").exists()


@pytest.mark.bare_pgbouncer
@pytest.mark.parametrize("pg_layout", ["schema"], indirect=True)
def test_pgbouncer_without_the_reset_the_poison_reaches_the_next_client(bounced_accounts, pgbouncer):
    # Given PgBouncer without the shipped reset (the control: what the settings are there for)
    account_a, account_b = _two_accounts(bounced_accounts)
    _poison(pgbouncer, account_a)
    with use_account(account_b) as alias:
        # When account B's block sends a statement without the switch, it runs as A (the danger)
        assert _unswitched(alias, "SELECT display_name FROM conversations_customer") == [("王先生",)]
        connections[alias].close()
        # And a switched transaction of B clears the session-level role it inherited (RESET ROLE):
        # afterwards the same server connection answers as the login role again
        from conversations.models import Customer

        assert Customer.objects.count() == 0
        assert _unswitched(alias, "SELECT current_user") == [(SCHEMA_LOGIN,)]


@pytest.mark.parametrize("pg_layout", ["schema"], indirect=True)
def test_pgbouncer_temporary_table_left_by_another_client_never_shadows_an_accounts_table(bounced_accounts, pgbouncer):
    # Given two accounts behind PgBouncer with the shipped settings, and a client that left a
    # temporary table named like an account table (searched before the account's schema) on a
    # pooled server connection
    _account_a, account_b = _two_accounts(bounced_accounts)
    config = tenancy.account_database_config(account_b)
    with psycopg.connect(
        host="127.0.0.1", port=pgbouncer, user=SCHEMA_LOGIN, dbname=config["NAME"], autocommit=True
    ) as other, other.transaction():  # one transaction: one server connection
        other.execute("CREATE TEMP TABLE conversations_customer (id bigint, display_name text)")
        other.execute("INSERT INTO conversations_customer VALUES (1, '伪造的客户')")
    # When account B reads its customers
    from conversations.models import Customer

    with use_account(account_b):
        names = list(Customer.objects.values_list("display_name", flat=True))
    # Then it reads its own table: the reset dropped the temporary one
    assert names == []
