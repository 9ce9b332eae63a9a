"""The audit proves itself (issue 25, item 3): rows are append-only in the database, each account's
audit and the registry's journal are hash chains, and `manage.py audit_verify` names the row that was
edited, deleted or moved behind the service's back."""

from __future__ import annotations

import io
import itertools

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connections, transaction

from conversations.models import AuditAction, AuditEvent, RegistryAuditEvent
from qiwei_site.platform import audit_chain
from qiwei_site.platform.audit import (
    AuditEntry,
    account_audit_verify,
    audit_record,
    audit_records_bulk,
    audit_words_rewrite,
    registry_audit_record,
    registry_audit_verify,
)
from qiwei_site.platform.tenancy import current_alias

CONVERSATION = "wm_audit_chain_wang"


def write_rows() -> list[AuditEvent]:
    """A few rows as services write them: one at a time and a batch."""
    first = audit_record(
        action=AuditAction.CUSTOMER_UPDATED,
        conversation_id=CONVERSATION,
        actor="admin-王主管",
        reason="客户要求改为人工接待",
        payload={"fields": ["mode"]},
    )
    batch = audit_records_bulk(
        [
            AuditEntry(
                action=AuditAction.MEMORY_ITEM_CAPTURED,
                conversation_id=CONVERSATION,
                actor="capture",
                reason="客户原话：预算五千左右",
                payload={"item_id": 11, "key": "profile:budget"},
            ),
            AuditEntry(
                action=AuditAction.MEMORY_ITEM_CAPTURED,
                conversation_id=CONVERSATION,
                actor="capture",
                reason="客户原话：想要两居室",
                payload={"item_id": 12, "key": "profile:layout"},
            ),
        ]
    )
    last = audit_record(
        action=AuditAction.DRAFT_SENT,
        conversation_id=CONVERSATION,
        actor="agent-小李",
        reason="审核后发送",
        payload={"draft_id": 7},
    )
    return [first, *batch, last]


def drop_triggers(table: str = "conversations_auditevent", using: str | None = None) -> None:
    """What someone with the database's owner rights could do before editing a row."""
    alias = using or current_alias()
    with connections[alias].cursor() as cursor:
        for name in audit_chain.trigger_names(table, connections[alias].vendor):
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}")


def verify_output(*args: str) -> str:
    out = io.StringIO()
    call_command("audit_verify", *args, stdout=out)
    return out.getvalue()


def test_audit_rows_are_chained_in_order_one_at_a_time_and_in_bulk(account):
    # Given rows written one at a time and in a batch (after the account's own `account_created`)
    rows = write_rows()
    # When they are read back in chain order
    chained = list(AuditEvent.objects.order_by("chain_seq"))
    # Then every row links to the one before it, the batch included, in the order written
    assert [row.chain_seq for row in chained] == list(range(1, len(chained) + 1))
    assert [row.pk for row in chained][-len(rows) :] == [row.pk for row in rows]
    for previous, row in itertools.pairwise(chained):
        assert row.prev_hash == previous.chain_hash
        assert row.chain_hash == audit_chain.chain_link(previous.chain_hash, row.entry_hash)
    report = account_audit_verify()
    assert report.intact and report.rows == len(chained)


def test_audit_row_edited_behind_the_service_is_refused_by_the_database(account):
    # Given a written row
    row = write_rows()[0]
    # When someone updates it directly, through the ORM or in SQL
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(using=current_alias()):
        AuditEvent.objects.filter(pk=row.pk).update(reason="客户同意自动回复")
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(using=current_alias()),
        connections[current_alias()].cursor() as cursor,
    ):
        cursor.execute("UPDATE conversations_auditevent SET actor_name = 'nobody' WHERE id = %s", [row.pk])
    # Then the row is as written
    assert AuditEvent.objects.get(pk=row.pk).reason == "客户要求改为人工接待"


def test_audit_row_deleted_behind_the_service_is_refused_by_the_database(account):
    # Given written rows
    rows = write_rows()
    # When someone deletes one, or all of them
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(using=current_alias()):
        AuditEvent.objects.filter(pk=rows[1].pk).delete()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(using=current_alias()):
        AuditEvent.objects.all().delete()
    # Then every row stays
    assert AuditEvent.objects.filter(pk__in=[row.pk for row in rows]).count() == len(rows)


def test_audit_row_replaced_in_sql_is_refused_by_the_database(account):
    # Given written rows (found in review: INSERT OR REPLACE deletes without the delete trigger)
    rows = write_rows()
    last = rows[-1]
    # When someone replaces the last one in SQL, hashes and all
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(using=current_alias()),
        connections[current_alias()].cursor() as cursor,
    ):
        cursor.execute(
            "INSERT OR REPLACE INTO conversations_auditevent (id, action, actor_id, actor_name, reason, payload, "
            "created_at, conversation_id, payload_hash, entry_hash, scrubbed_hash, prev_hash, chain_hash, chain_seq) "
            "SELECT id, action, actor_id, actor_name, '未审核直接发送', payload, created_at, conversation_id, "
            "payload_hash, entry_hash, scrubbed_hash, '', '', NULL FROM conversations_auditevent WHERE id = %s",
            [last.pk],
        )
    # Then the row is as written and the chain verifies
    assert AuditEvent.objects.get(pk=last.pk).reason == "审核后发送"
    assert account_audit_verify().intact


def test_audit_row_inserted_without_the_writer_is_refused(account):
    # Given no hashes (a row made with the ORM, not by `audit_record`)
    # When it is inserted
    with pytest.raises(DatabaseError, match="audit service"), transaction.atomic(using=current_alias()):
        AuditEvent.objects.create(action=AuditAction.DRAFT_SENT, conversation_id=CONVERSATION, reason="伪造的发送记录")
    # Then nothing was written
    assert not AuditEvent.objects.filter(reason="伪造的发送记录").exists()


def test_audit_scrub_unlock_rewrites_words_only(account):
    # Given a row and the scrub's unlock
    row = write_rows()[1]
    alias = current_alias()
    # When the unlocked transaction tries to move the row in time, and to delete it
    with pytest.raises(DatabaseError, match="append-only"), audit_chain.audit_unlocked(audit_chain.SCRUB, using=alias):
        AuditEvent.objects.filter(pk=row.pk).update(actor_name="someone-else")
    with pytest.raises(DatabaseError, match="append-only"), audit_chain.audit_unlocked(audit_chain.SCRUB, using=alias):
        AuditEvent.objects.filter(pk=row.pk).delete()
    # Then both are refused; its words may change, through the scrub's writer, and the chain still verifies
    audit_words_rewrite([(row.pk, "客户原话：［已遗忘内容已移除］", {"item_id": 11})], using=alias)
    scrubbed = AuditEvent.objects.get(pk=row.pk)
    assert scrubbed.reason == "客户原话：［已遗忘内容已移除］" and scrubbed.scrubbed_hash
    assert scrubbed.chain_hash == row.chain_hash or row.chain_hash == ""  # the in-memory row has no link
    report = account_audit_verify()
    assert report.intact and report.scrubbed == 1
    # And the unlock is gone with its transaction
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(using=alias):
        AuditEvent.objects.filter(pk=row.pk).update(reason="再改一次")


def test_registry_journal_is_append_only_and_chained(account):
    # Given the registry's journal (account_created, and one more row)
    registry_audit_record(
        action=AuditAction.ACCOUNT_UPDATED, account_id=account.pk, actor="admin-王主管", reason="改名"
    )
    # When someone edits or deletes a row of it
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        RegistryAuditEvent.objects.filter(account_id=account.pk).update(reason="改回原名")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        RegistryAuditEvent.objects.filter(account_id=account.pk).delete()
    # Then it is refused and the journal verifies
    report = registry_audit_verify()
    assert report.intact and report.rows >= 2


def test_audit_verify_reports_an_edited_row(account):
    # Given the triggers dropped and a row's words edited
    rows = write_rows()
    drop_triggers()
    AuditEvent.objects.filter(pk=rows[2].pk).update(reason="客户原话：预算一万")
    # When the chain is verified
    with pytest.raises(CommandError) as refused:
        verify_output("--account", account.pk)
    # Then the command fails naming the row and what is wrong, and the missing triggers
    message = str(refused.value)
    assert f"#{rows[2].pk}：原因或详情被改动" in message
    assert "触发器 conversations_auditevent_no_update 缺失" in message


def test_audit_verify_reports_a_row_whose_time_or_actor_changed(account):
    # Given a row whose actor is changed (its words untouched)
    rows = write_rows()
    drop_triggers()
    AuditEvent.objects.filter(pk=rows[3].pk).update(actor_name="system")
    # When verified
    report = account_audit_verify()
    # Then that row is named
    assert [str(problem) for problem in report.problems if problem.row_id == rows[3].pk] == [
        f"#{rows[3].pk}：时间、操作、操作人、所属会话/账号或详情哈希被改动"
    ]


def test_audit_verify_reports_a_deleted_row(account):
    # Given a row deleted from the middle of the chain
    rows = write_rows()
    drop_triggers()
    gone = AuditEvent.objects.get(pk=rows[1].pk)
    AuditEvent.objects.filter(pk=gone.pk).delete()
    # When verified
    report = account_audit_verify()
    # Then the row after it is reported: its sequence jumps and it no longer links
    after = rows[2].pk
    problems = [problem.problem for problem in report.problems if problem.row_id == after]
    assert any(f"第 {gone.chain_seq} 至 {gone.chain_seq} 行被删除" in problem for problem in problems)
    assert any("与链上前一行不相接" in problem for problem in problems)


def test_audit_verify_reports_reordered_rows(account):
    # Given two neighbouring rows whose places in the chain were exchanged
    rows = write_rows()
    drop_triggers()
    first, second = AuditEvent.objects.get(pk=rows[1].pk), AuditEvent.objects.get(pk=rows[2].pk)
    AuditEvent.objects.filter(pk=second.pk).update(chain_seq=None)
    AuditEvent.objects.filter(pk=first.pk).update(chain_seq=second.chain_seq)
    AuditEvent.objects.filter(pk=second.pk).update(chain_seq=first.chain_seq)
    # When verified
    report = account_audit_verify()
    # Then both moved rows and the row after them are named as out of place
    named = {problem.row_id for problem in report.problems if "与链上前一行不相接" in problem.problem}
    assert named == {first.pk, second.pk, rows[3].pk}


def test_audit_verify_command_summarises_intact_chains(account, other_account):
    # Given both accounts' audits and the registry's journal as services wrote them
    write_rows()
    # When every chain is verified
    output = verify_output()
    # Then each is summarised and the command succeeds
    assert f"账号 {account.pk} 的审计：5 行完整" in output
    assert f"账号 {other_account.pk} 的审计：1 行完整" in output
    assert "账号登记日志：" in output and "审计链完整：共核对 3 条链" in output


def test_audit_verify_command_refuses_an_unknown_account(account):
    with pytest.raises(CommandError, match="账号 nobody 不存在"):
        verify_output("--account", "nobody")


def test_audit_chain_survives_the_upgrade_of_rows_written_before_it(account):
    # Given an account database as it was before the chain, with rows written then
    alias = current_alias()
    call_command("migrate", "conversations", "0014", database=alias, verbosity=0)
    with connections[alias].cursor() as cursor:
        for reason in ["旧版本写入：收到消息", "旧版本写入：人工编辑记忆"]:
            cursor.execute(
                "INSERT INTO conversations_auditevent (action, actor_id, actor_name, reason, payload, created_at, "
                "conversation_id) VALUES ('messages_ingested', NULL, 'wecom-webhook', %s, '{\"count\": 1}', "
                "'2026-11-30 08:00:00.123456', %s)",
                [reason, CONVERSATION],
            )
    # When the database is upgraded
    call_command("migrate", "conversations", database=alias, verbosity=0)
    # Then the old rows are chained and new ones follow them
    write_rows()
    report = account_audit_verify()
    assert report.intact and report.rows == 1 + 2 + 4  # account_created, the two old rows, the new ones
    assert not audit_chain.triggers_missing("conversations_auditevent", using=alias)
