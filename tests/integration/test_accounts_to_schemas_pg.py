"""Moving an installation from a database per account to a schema per account (issue 23, item 3):
copy, verify row counts and checksums per table (the audit chain rebuilt equal), keep the old
databases until told; idempotent, resumable, with a dry run."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections
from psycopg import sql

from conversations.models import AuditEvent, Customer, Message
from memory.governance.services import memory_item_add, memory_item_forget
from memory.models import MemoryItem
from qiwei_site.platform import tenancy
from qiwei_site.platform.audit import account_audit_verify
from qiwei_site.platform.connections import account_pool
from qiwei_site.platform.layout_move import STATE_SCHEMA, STATE_TABLE
from qiwei_site.platform.services import account_create
from qiwei_site.platform.tenancy import use_account
from tests.factories import CustomerFactory, MessageFactory
from tests.integration.conftest import POSTGRES, require_server

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SUPERVISOR = "主管李娜"


def admin() -> psycopg.Connection:
    return psycopg.connect(host=POSTGRES[0], port=POSTGRES[1], user="postgres", dbname="postgres", autocommit=True)


@pytest.fixture
def two_layouts(settings) -> Iterator[dict[str, str]]:
    """Two accounts in the database-per-account layout, filled; then the settings switched to a
    new one-database schema layout (a login role of its own). Everything dropped afterwards."""
    require_server("PostgreSQL", POSTGRES)
    run = uuid.uuid4().hex[:6]
    old = f"postgres://postgres@{POSTGRES[0]}:{POSTGRES[1]}/qiwei_mv_{run}_{{account}}"
    login, database = f"qiwei_mv_login_{run}", f"qiwei_mv_schemas_{run}"
    ids = [f"mva{run}", f"mvb{run}"]
    settings.QIWEI_ACCOUNT_DATABASE_URL = old
    with admin() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOINHERIT CREATEROLE").format(sql.Identifier(login)))
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database), sql.Identifier(login)))
    try:
        yield {
            "old": old,
            "new": f"postgres://{login}@{POSTGRES[0]}:{POSTGRES[1]}/{database}",
            "a": ids[0],
            "b": ids[1],
        }
    finally:
        for account_id in ids:
            tenancy.unregister_account_database(account_id)
        account_pool.close_idle()
        connections.close_all()
        with admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))
            for account_id in ids:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                        sql.Identifier(f"qiwei_mv_{run}_{account_id}")
                    )
                )
                conn.execute(
                    sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(tenancy.account_role(database, account_id)))
                )
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(login)))


def fill(account_id: str, name: str) -> None:
    account_create(account_id=account_id, name=name)
    with use_account(account_id):
        customer = CustomerFactory(conversation_id="wm_move", display_name=f"{name}的客户")
        for text in ["我预算6000，想要两居室", "最好离地铁近一点", "周末才有空看房"]:
            MessageFactory(customer=customer, text=text)
        kept = memory_item_add(customer=customer, content="预算6000元", actor=SUPERVISOR, reason="电话确认")
        gone = memory_item_add(customer=customer, content="离婚后独自带孩子", actor=SUPERVISOR, reason="回访")
        memory_item_forget(item=gone, actor=SUPERVISOR, reason="客户要求删除")
        assert kept.pk
    tenancy.account_connections_close(account_id)


def switch_to_schemas(settings, layouts: dict[str, str]) -> None:
    for key in ("a", "b"):
        tenancy.unregister_account_database(layouts[key])
        tenancy._migrated.discard(tenancy.alias_for(layouts[key]))
    account_pool.close_idle()
    settings.QIWEI_ACCOUNT_DATABASE_URL = layouts["new"]


def snapshot(account_id: str) -> dict[str, object]:
    with use_account(account_id):
        return {
            "customers": list(Customer.objects.order_by("id").values_list("id", "display_name")),
            "messages": list(Message.objects.order_by("id").values_list("id", "text")),
            "items": list(MemoryItem.objects.order_by("id").values_list("id", "content", "status")),
            "audit": list(AuditEvent.objects.order_by("id").values_list("id", "action", "chain_hash")),
            "chain": account_audit_verify().intact,
        }


def test_accounts_to_schemas_copies_verifies_and_keeps_old_databases(settings, two_layouts, capsys):
    # Given two accounts with customers, messages, memory (one forgotten) and their audit
    fill(two_layouts["a"], "浦东门店")
    fill(two_layouts["b"], "徐汇门店")
    before = {key: snapshot(two_layouts[key]) for key in ("a", "b")}
    assert before["a"]["chain"] is True
    switch_to_schemas(settings, two_layouts)

    # When a dry run is asked for, it says what it would copy and writes nothing
    call_command("accounts_to_schemas", "--from", two_layouts["old"], "--dry-run")
    out = capsys.readouterr().out
    assert f"{two_layouts['a']}: 将复制" in out and f"{two_layouts['b']}: 将复制" in out
    with psycopg.connect(two_layouts["new"]) as conn:
        assert conn.execute("SELECT to_regclass(%s)", [f"{STATE_SCHEMA}.{STATE_TABLE}"]).fetchone()[0] is None

    # When the move runs
    call_command("accounts_to_schemas", "--from", two_layouts["old"])
    out = capsys.readouterr().out
    # Then each account is copied and verified, and reads the same in its schema, chain intact
    assert f"{two_layouts['a']}: 已复制并校验" in out and f"{two_layouts['b']}: 已复制并校验" in out
    for key in ("a", "b"):
        assert snapshot(two_layouts[key]) == before[key]
        with use_account(two_layouts[key]) as alias:
            assert connections[alias].settings_dict["QIWEI_SCHEMA"] == tenancy.alias_for(two_layouts[key])
            # And new rows get new ids after the copied ones
            customer = Customer.objects.get(conversation_id="wm_move")
            message = MessageFactory(customer=customer, text="搬迁后的新消息")
            assert message.pk > max(pk for pk, _ in before[key]["messages"])
    # And the old databases are still there
    with admin() as conn:
        names = {row[0] for row in conn.execute("SELECT datname FROM pg_database")}
    old_names = {f"{two_layouts['old'].rsplit('/', 1)[1].replace('{account}', two_layouts[k])}" for k in ("a", "b")}
    assert old_names <= names

    # When it runs again, nothing is copied twice
    call_command("accounts_to_schemas", "--from", two_layouts["old"])
    assert "此前已完成" in capsys.readouterr().out

    # When told to drop the old databases, they go
    call_command("accounts_to_schemas", "--from", two_layouts["old"], "--drop-old")
    assert "旧数据库已删除" in capsys.readouterr().out
    with admin() as conn:
        names = {row[0] for row in conn.execute("SELECT datname FROM pg_database")}
    assert not old_names & names


def test_accounts_to_schemas_starts_an_empty_unverified_schema_over(settings, two_layouts, capsys):
    fill(two_layouts["a"], "静安门店")
    before = snapshot(two_layouts["a"])
    switch_to_schemas(settings, two_layouts)
    # Given the schema a failed copy leaves (made and migrated, no row: the copy rolled back whole)
    tenancy.ensure_account_database(two_layouts["a"])
    tenancy.account_connections_close(two_layouts["a"])
    # When the move runs again
    call_command("accounts_to_schemas", "--from", two_layouts["old"], "--account", two_layouts["a"])
    # Then it copied the account: the schema holds exactly the old database's rows
    assert "已复制并校验" in capsys.readouterr().out
    assert snapshot(two_layouts["a"]) == before


def test_accounts_to_schemas_never_drops_rows_written_to_an_unverified_schema_unasked(settings, two_layouts, capsys):
    fill(two_layouts["a"], "卢湾门店")
    before = snapshot(two_layouts["a"])
    switch_to_schemas(settings, two_layouts)
    # Given an unverified schema that the application already wrote to (started too early)
    with use_account(two_layouts["a"]):
        CustomerFactory(conversation_id="wm_live", display_name="切换后写入")
    tenancy.account_connections_close(two_layouts["a"])
    # When the move runs again, it refuses and keeps the rows
    with pytest.raises(CommandError, match="重新运行"):
        call_command("accounts_to_schemas", "--from", two_layouts["old"], "--account", two_layouts["a"])
    assert "--overwrite" in capsys.readouterr().err
    with use_account(two_layouts["a"]):
        assert Customer.objects.filter(conversation_id="wm_live").exists()
    # When the operator says to copy over it, the schema holds exactly the old database's rows
    call_command("accounts_to_schemas", "--from", two_layouts["old"], "--account", two_layouts["a"], "--overwrite")
    assert "已复制并校验" in capsys.readouterr().out
    assert snapshot(two_layouts["a"]) == before


def test_accounts_to_schemas_refuses_when_settings_still_name_the_old_layout(two_layouts):
    fill(two_layouts["a"], "长宁门店")
    with pytest.raises(CommandError, match="schema"):
        call_command("accounts_to_schemas", "--from", two_layouts["old"], "--account", two_layouts["a"])


def test_accounts_to_schemas_leaves_an_old_database_behind_on_migrations_alone(settings, two_layouts, capsys):
    fill(two_layouts["a"], "闸北门店")
    old_db = two_layouts["old"].rsplit("/", 1)[1].replace("{account}", two_layouts["a"])
    with psycopg.connect(host=POSTGRES[0], port=POSTGRES[1], user="postgres", dbname=old_db, autocommit=True) as conn:
        conn.execute(f"UPDATE {tenancy.SCHEMA_TABLE} SET fingerprint = 'older'")
    switch_to_schemas(settings, two_layouts)
    with pytest.raises(CommandError, match="重新运行"):
        call_command("accounts_to_schemas", "--from", two_layouts["old"], "--account", two_layouts["a"])
    assert "migrate_accounts" in capsys.readouterr().err
