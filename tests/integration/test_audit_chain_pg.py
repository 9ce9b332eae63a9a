"""The audit on PostgreSQL (issue 25, item 3): the guard trigger refuses UPDATE and DELETE except a
scrub's, the deferred chain trigger links rows at commit under an advisory lock, so concurrent
writers keep one unbroken chain, and `audit_verify` finds an edit made with the triggers dropped."""

from __future__ import annotations

import io
import json
import threading

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connections, transaction

from conversations.models import AuditAction, AuditEvent
from qiwei_site.platform import audit_chain
from qiwei_site.platform.audit import (
    AuditEntry,
    account_audit_verify,
    audit_record,
    audit_records_bulk,
    audit_words_rewrite,
)
from qiwei_site.platform.services import account_create
from qiwei_site.platform.tenancy import use_account

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

CONVERSATION = "wm_pg_audit_zhou"


def write(reason: str) -> AuditEvent:
    return audit_record(
        action=AuditAction.CUSTOMER_UPDATED,
        conversation_id=CONVERSATION,
        actor="admin-王主管",
        reason=reason,
        payload={"fields": ["mode"]},
    )


@pytest.fixture
def pg_account(postgres_accounts):
    account_id = postgres_accounts("pgaudit")
    account_create(account_id=account_id, name="安居客服一部")
    return account_id


def test_postgres_audit_update_and_delete_are_refused_by_the_trigger(pg_account):
    with use_account(pg_account) as alias:
        # Given a written row (autocommit: chained at its commit)
        row = write("客户要求改为人工接待")
        # When someone updates or deletes it, through the ORM or in SQL
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(using=alias):
            AuditEvent.objects.filter(pk=row.pk).update(reason="客户同意自动回复")
        with (
            pytest.raises(DatabaseError, match="append-only"),
            transaction.atomic(using=alias),
            connections[alias].cursor() as cursor,
        ):
            cursor.execute("DELETE FROM conversations_auditevent WHERE id = %s", [row.pk])
        # Then the row is as written, linked, and the chain verifies
        kept = AuditEvent.objects.get(pk=row.pk)
        assert kept.reason == "客户要求改为人工接待" and kept.chain_seq == 2  # after account_created
        assert account_audit_verify().intact


def test_postgres_audit_truncate_is_refused_by_the_trigger(pg_account):
    with use_account(pg_account) as alias:
        # Given a written row (found in review: TRUNCATE fires no row trigger)
        row = write("客户要求改为人工接待")
        # When someone empties the table
        with (
            pytest.raises(DatabaseError, match="append-only"),
            transaction.atomic(using=alias),
            connections[alias].cursor() as cursor,
        ):
            cursor.execute("TRUNCATE conversations_auditevent")
        # Then the row stays and the chain verifies
        assert AuditEvent.objects.filter(pk=row.pk).exists()
        assert account_audit_verify().intact


def test_postgres_scrub_rewrites_words_and_the_chain_verifies(pg_account):
    with use_account(pg_account) as alias:
        row = write("电话里说女儿明年在张江上小学")
        audit_words_rewrite([(row.pk, "电话里说［已遗忘内容已移除］", {"fields": ["mode"]})], using=alias)
        report = account_audit_verify()
        assert report.intact and report.scrubbed == 1
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(using=alias):
            AuditEvent.objects.filter(pk=row.pk).update(reason="再改一次")


def test_postgres_concurrent_writers_keep_one_chain(pg_account):
    # Given several threads writing single rows and batches at once, each in its own transactions
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            with use_account(pg_account) as alias:
                for i in range(5):
                    with transaction.atomic(using=alias):
                        write(f"并发写入 {n}-{i}")
                        audit_records_bulk(
                            [AuditEntry(action=AuditAction.MEMORY_ITEM_CAPTURED, conversation_id=CONVERSATION)] * 2
                        )
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then every row is linked once, in one unbroken chain
    assert not errors
    with use_account(pg_account):
        report = account_audit_verify()
        assert report.intact and report.rows == 1 + 4 * 5 * 3


def test_postgres_audit_verify_reports_an_edit_made_with_the_triggers_dropped(pg_account):
    with use_account(pg_account) as alias:
        row = write("客户要求改为人工接待")
        with connections[alias].cursor() as cursor:
            for name in audit_chain.trigger_names("conversations_auditevent", "postgresql"):
                cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON conversations_auditevent")
        AuditEvent.objects.filter(pk=row.pk).update(reason="客户同意自动回复")
        problems = [str(problem) for problem in account_audit_verify().problems]
        assert f"#{row.pk}：原因或详情被改动（与写入时的哈希不符）" in problems
        assert any("触发器 conversations_auditevent_guard 缺失" in problem for problem in problems)


def _as_the_database_user(alias: str, *statements: tuple[str, list]) -> None:
    """What the application's database user can do on its own: one transaction, as the account's role."""
    with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
        for statement, params in statements:
            cursor.execute(statement, params)


def test_postgres_tamper_with_an_unlock_row_and_a_recomputed_hash_is_reported(pg_account):
    with use_account(pg_account) as alias:
        # Given an anchored row saying the customer asked for a human
        row = write("客户要求改为人工接待")
        call_command("audit_anchor", "--account", pg_account, stdout=io.StringIO())
        # When the database's user inserts a scrub unlock, rewrites the words and sets their hash
        words = audit_chain.payload_hash("客户同意自动回复", {"fields": ["auto"]})
        _as_the_database_user(
            alias,
            (f"INSERT INTO {audit_chain.UNLOCK_TABLE} (purpose) VALUES ('scrub')", []),
            (
                "UPDATE conversations_auditevent SET reason = %s, payload = %s, scrubbed_hash = %s WHERE id = %s",
                ["客户同意自动回复", json.dumps({"fields": ["auto"]}), words, row.pk],
            ),
            (f"DELETE FROM {audit_chain.UNLOCK_TABLE}", []),
        )
    # Then audit_verify exits non-zero naming the row
    with pytest.raises(CommandError) as refused:
        call_command("audit_verify", "--account", pg_account, stdout=io.StringIO())
    assert f"#{row.pk}" in str(refused.value)


def test_postgres_cut_tail_is_reported_against_the_anchor(pg_account):
    with use_account(pg_account) as alias:
        # Given three rows, anchored, and an ordinary scrub that still verifies
        rows = [write(f"第 {n} 次修改接待方式") for n in range(3)]
        audit_words_rewrite([(rows[0].pk, "［已遗忘内容已移除］", {"fields": ["mode"]})], using=alias)
        call_command("audit_anchor", "--account", pg_account, stdout=io.StringIO())
        assert account_audit_verify().intact
        # When the database's user deletes the newest rows under the flush unlock
        newest = list(AuditEvent.objects.order_by("-chain_seq").values_list("pk", flat=True)[:2])
        _as_the_database_user(
            alias,
            (f"INSERT INTO {audit_chain.UNLOCK_TABLE} (purpose) VALUES ('flush')", []),
            ("DELETE FROM conversations_auditevent WHERE id = ANY(%s)", [newest]),
            (f"DELETE FROM {audit_chain.UNLOCK_TABLE}", []),
        )
    # Then audit_verify reports the cut tail
    with pytest.raises(CommandError) as refused:
        call_command("audit_verify", "--account", pg_account, stdout=io.StringIO())
    assert "链尾被截断" in str(refused.value)
