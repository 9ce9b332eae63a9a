"""Forget and erase on PostgreSQL (issue 14, item 7): no table row of the account database, history
tables included, keeps the content or a quoted part. Dead tuples until VACUUM: README, production."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.core.management import call_command
from django.db import connections

from conversations.models import AuditEvent
from memory.governance.erasure import customer_erase
from memory.governance.scrub import FORGOTTEN_MARK
from memory.governance.services import memory_item_add, memory_item_edit, memory_item_forget
from memory.profile import customer_profile_update
from qiwei_site.platform.services import account_create
from qiwei_site.platform.tenancy import use_account
from tests.factories import CustomerFactory, DraftFactory, MessageFactory
from tests.integration.conftest import POSTGRES
from tests.memory.governance.test_audit_trail import dump_account_database

pytestmark = pytest.mark.integration

SUPERVISOR = "主管张敏"
NOTE = "离婚后独自带孩子住，周末才方便看房"
NOTE_EDITED = "离婚后独自带孩子住，只有周日下午方便看房"


def windows(text: str, size: int = 4) -> set[str]:
    return {text[i : i + size] for i in range(len(text) - size + 1)}


@pytest.mark.django_db(transaction=True)
def test_postgres_forget_and_erase_leave_no_row_with_the_content(postgres_accounts):
    # Given an account on PostgreSQL with a customer, their messages, a supervisor's note (edited,
    # quoted in reasons and a draft's reasons), a profile value, and a bystander
    account_id = postgres_accounts("pgforget")
    account_create(account_id=account_id, name="安居客服一部")
    with use_account(account_id) as alias:
        assert connections[alias].vendor == "postgresql"
        customer = CustomerFactory(conversation_id="wm_wang_001", display_name="王先生")
        MessageFactory(customer=customer, text="我女儿明年在张江上小学，想找学区附近的")
        MessageFactory(customer=customer, text="不考虑顶楼，夏天太热")
        bystander = CustomerFactory(conversation_id="wm_zhao_002", display_name="赵女士")
        MessageFactory(customer=bystander, text="想看看徐汇的一居室，最好近一点")
        item = memory_item_add(customer=customer, content=NOTE, actor=SUPERVISOR, reason=f"电话回访：{NOTE}")
        memory_item_edit(item=item, content=NOTE_EDITED, actor=SUPERVISOR, reason="改为只有周日下午")
        memory_item_add(customer=customer, content="预算4800元", actor=SUPERVISOR, reason="和独自带孩子住那条一起记")
        customer_profile_update(customer=customer, changes={"district": "浦东"}, actor=SUPERVISOR, reason="电话")
        DraftFactory(customer=customer, reply="王先生您好，两居室我约了两套", reasons=["客户独自带孩子住，优先周日"])
        assert NOTE_EDITED in dump_account_database()

        # When the note is forgotten
        memory_item_forget(item=item, actor=SUPERVISOR, reason="客户要求删除「独自带孩子住」这条")
        # Then no row of any table (history included) holds the note or any 4-character run of it
        dump = dump_account_database()
        assert [w for w in windows(NOTE) | windows(NOTE_EDITED) if w in dump] == []
        assert "预算4800元" in dump and "不考虑顶楼" in dump
        assert AuditEvent.objects.get(action="memory_item_forgotten").reason == f"客户要求删除「{FORGOTTEN_MARK}」这条"

        # When the customer is erased
        customer_erase(customer=customer, actor=SUPERVISOR, reason="客户王先生要求删除全部数据")
        # Then nothing they said or we kept about them is in any row; the bystander and the audit stay
        dump = dump_account_database()
        for gone in ["女儿明年在张江上小学", "不考虑顶楼", "预算4800元", "浦东", "王先生", "两居室我约了两套"]:
            assert gone not in dump, gone
        assert "想看看徐汇的一居室" in dump
        assert AuditEvent.objects.get(action="customer_erased").reason == f"客户{FORGOTTEN_MARK}要求删除全部数据"


def raw_pages(alias: str) -> bytes:
    """Every page of every table, index and TOAST relation of the account's database (a database
    per account) or of its schema and the TOAST of its tables (a schema per account), dead tuples
    included. The schema layout reads them as the server's superuser: an account role may not."""
    config = connections.settings[alias]
    if config.get("QIWEI_SCHEMA"):
        with _superuser(config) as conn:
            return _pages(conn.cursor(), config["QIWEI_SCHEMA"])
    with connections[alias].cursor() as cursor:
        return _pages(cursor, None)


def _superuser(config: dict) -> psycopg.Connection:
    return psycopg.connect(host=POSTGRES[0], port=POSTGRES[1], user="postgres", dbname=config["NAME"], autocommit=True)


def _pages(cursor, schema: str | None) -> bytes:
    if schema is None:
        cursor.execute(
            "SELECT c.oid::regclass::text, pg_relation_size(c.oid) / current_setting('block_size')::int"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relkind IN ('r', 'i', 't') AND n.nspname IN ('public', 'pg_toast')"
        )
    else:
        # The schema's tables and indexes, their TOAST tables and the TOAST tables' indexes.
        cursor.execute(
            "WITH own AS (SELECT c.oid, c.reltoastrelid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            "             WHERE n.nspname = %s AND c.relkind IN ('r', 'i')),"
            " toast AS (SELECT reltoastrelid AS oid FROM own WHERE reltoastrelid <> 0),"
            " toast_index AS (SELECT indexrelid AS oid FROM pg_index WHERE indrelid IN (SELECT oid FROM toast)),"
            " every AS (SELECT oid FROM own UNION SELECT oid FROM toast UNION SELECT oid FROM toast_index)"
            " SELECT oid::regclass::text, pg_relation_size(oid) / current_setting('block_size')::int FROM every",
            [schema],
        )
    relations = cursor.fetchall()
    pages = []
    for relation, count in relations:
        for page in range(count):
            cursor.execute("SELECT get_raw_page(%s, %s)", [relation, page])
            pages.append(bytes(cursor.fetchone()[0]))
    return b"".join(pages)


def vacuum_full_until_clean(alias: str, needles: list[bytes], attempts: int = 20) -> int:
    """VACUUM (FULL) keeps row versions that a transaction still running when it starts might see
    ("recently dead"; here, other tests' transactions on the same server): repeat until they are
    gone, as an operator would. Returns the number of runs."""
    account_id = alias.removeprefix("acct_")
    for attempt in range(1, attempts + 1):
        # The README's command: as the account's owner, straight to the server, in either layout.
        call_command("account_vacuum", account_id, verbosity=0)
        pages = raw_pages(alias)
        if not any(needle in pages for needle in needles):
            return attempt
        time.sleep(0.5)
    return 0


@pytest.mark.django_db(transaction=True)
def test_postgres_forget_leaves_dead_tuples_until_vacuum_full_of_the_readme_tables(postgres_accounts):
    # Given an account on PostgreSQL that can read its raw pages, and a note that was edited
    account_id = postgres_accounts("pgvacuum")
    account_create(account_id=account_id, name="安居客服一部")
    with use_account(account_id) as alias:
        config = connections.settings[alias]
        if config.get("QIWEI_SCHEMA"):  # the account role may not: the server's superuser reads the pages
            with _superuser(config) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect SCHEMA public")
        else:
            with connections[alias].cursor() as cursor:
                try:
                    cursor.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
                except Exception as exc:  # not a superuser: the fact cannot be observed here
                    pytest.skip(f"pageinspect unavailable: {exc}")
        customer = CustomerFactory(conversation_id="wm_wang_001", display_name="王先生")
        item = memory_item_add(customer=customer, content=NOTE, actor=SUPERVISOR, reason=f"电话回访：{NOTE}")
        memory_item_edit(item=item, content=NOTE_EDITED, actor=SUPERVISOR, reason="补充")
        # When it is forgotten: no live row keeps it, but the data files still do (dead tuples)
        memory_item_forget(item=item, actor=SUPERVISOR, reason="客户要求删除")
        assert NOTE_EDITED not in dump_account_database()
        assert NOTE_EDITED.encode() in raw_pages(alias)
        # When the operator runs VACUUM (FULL) on the README's tables
        runs = vacuum_full_until_clean(alias, [NOTE.encode(), NOTE_EDITED.encode()])
        # Then no page of the account database holds it any more
        assert runs > 0
