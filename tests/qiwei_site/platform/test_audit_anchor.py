"""An audit the application's own database user cannot rewrite unseen (issue 36, item 1): the tamper
procedure (a scrub unlock row, new words, their hash) and a cut tail are reported by `audit_verify`;
chain heads are anchored, signed with a key the database does not hold; ordinary scrubs verify."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connections

from conversations.models import AuditAction, AuditEvent
from memory.governance.messages import message_forget
from qiwei_site.operations.tasks import audit_anchor_all
from qiwei_site.platform import audit_anchor, audit_chain
from qiwei_site.platform.audit import account_audit_verify, audit_record
from qiwei_site.platform.tenancy import current_alias
from tests.factories import CustomerFactory, MessageFactory

CONVERSATION = "wm_anchor_zhou"


def _write(reason: str, **payload) -> AuditEvent:
    return audit_record(
        action=AuditAction.CUSTOMER_UPDATED,
        conversation_id=CONVERSATION,
        actor="admin-周主管",
        reason=reason,
        payload=payload,
    )


def _verify(*args: str) -> str:
    out = io.StringIO()
    call_command("audit_verify", *args, stdout=out)
    return out.getvalue()


def _anchor(*args: str) -> str:
    out = io.StringIO()
    call_command("audit_anchor", *args, stdout=out)
    return out.getvalue()


def _sql(statement: str, params: list | None = None) -> None:
    with connections[current_alias()].cursor() as cursor:
        cursor.execute(statement, params or [])


def test_audit_tamper_with_an_unlock_row_and_a_recomputed_hash_is_reported(account):
    # Given an anchored audit with a row saying the customer asked for a human
    row = _write("客户要求改为人工接待", fields=["mode"])
    _anchor()
    # When someone with the database's user inserts a scrub unlock, rewrites the row's words and
    # sets its scrubbed hash to the new words' hash (the procedure that passed at 5804d3c)
    words = audit_chain.payload_hash("客户同意自动回复", {"fields": ["auto"]})
    _sql(f"INSERT INTO {audit_chain.UNLOCK_TABLE} (purpose) VALUES ('scrub')")
    _sql(
        "UPDATE conversations_auditevent SET reason = %s, payload = %s, scrubbed_hash = %s WHERE id = %s",
        ["客户同意自动回复", json.dumps({"fields": ["auto"]}), words, row.pk],
    )
    _sql(f"DELETE FROM {audit_chain.UNLOCK_TABLE}")
    # Then audit_verify exits non-zero naming the row
    with pytest.raises(CommandError) as refused:
        _verify("--account", account.pk)
    assert f"#{row.pk}" in str(refused.value) and "清理" in str(refused.value)


def test_audit_tamper_with_any_scrub_signature_is_reported(account):
    # Given a row and someone who guesses at a signature
    row = _write("客户要求改为人工接待")
    _sql(f"INSERT INTO {audit_chain.UNLOCK_TABLE} (purpose) VALUES ('scrub')")
    _sql(
        "UPDATE conversations_auditevent SET reason = %s, scrubbed_hash = %s WHERE id = %s",
        ["客户同意自动回复", "0" * 64, row.pk],
    )
    _sql(f"DELETE FROM {audit_chain.UNLOCK_TABLE}")
    # Then the row does not verify
    report = account_audit_verify()
    assert not report.intact and any(problem.row_id == row.pk for problem in report.problems)


def test_audit_cut_tail_is_reported_against_the_anchor(account):
    # Given three rows, anchored
    rows = [_write(f"第 {n} 次修改接待方式") for n in range(3)]
    _anchor()
    # When the newest two are deleted (the flush unlock, as someone with the database's user could)
    _sql(f"INSERT INTO {audit_chain.UNLOCK_TABLE} (purpose) VALUES ('flush')")
    _sql("DELETE FROM conversations_auditevent WHERE id IN (%s, %s)", [rows[1].pk, rows[2].pk])
    _sql(f"DELETE FROM {audit_chain.UNLOCK_TABLE}")
    # Then the chain alone still links, but audit_verify reports the cut against the anchor
    with pytest.raises(CommandError) as refused:
        _verify("--account", account.pk)
    assert "链尾被截断" in str(refused.value)
    # And the anchoring refuses to sign the shorter chain
    with pytest.raises(CommandError):
        _anchor("--account", account.pk)


def test_audit_rebuilt_chain_is_reported_against_the_anchor(account):
    # Given an anchored chain
    rows = [_write(f"第 {n} 次修改接待方式") for n in range(3)]
    _anchor()
    # When someone drops the triggers and rebuilds the chain with new words in the middle row
    alias = current_alias()
    with connections[alias].cursor() as cursor:
        for name in audit_chain.trigger_names("conversations_auditevent", "sqlite"):
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
    ordered = list(AuditEvent.objects.order_by("chain_seq").values())
    previous = ""
    for entry in ordered:
        if entry["id"] == rows[1].pk:
            entry["reason"] = "客户同意自动回复"
        words = audit_chain.payload_hash(entry["reason"], entry["payload"])
        entry_hash = audit_chain.entry_hash(
            created_at=entry["created_at"],
            action=entry["action"],
            actor_id=entry["actor_id"],
            actor_name=entry["actor_name"],
            subject=entry["conversation_id"],
            payload_hash=words,
        )
        chain = audit_chain.chain_link(previous, entry_hash)
        AuditEvent.objects.filter(pk=entry["id"]).update(
            reason=entry["reason"], payload_hash=words, entry_hash=entry_hash, prev_hash=previous, chain_hash=chain
        )
        previous = chain
    # Then every row links again, but the anchored head no longer matches
    report = account_audit_verify()
    assert any("与锚点不符" in problem.problem for problem in report.problems)


def test_audit_ordinary_scrubs_verify_and_are_recorded_in_the_chain(account, staff_user):
    # Given a customer's message quoted in an audit reason, anchored
    customer = CustomerFactory(conversation_id=CONVERSATION)
    message = MessageFactory(customer=customer, text="我老婆怀孕了，想找安静点的房子")
    audit_record(
        action=AuditAction.CUSTOMER_UPDATED,
        conversation_id=CONVERSATION,
        actor="admin-周主管",
        reason="客户说：我老婆怀孕了，想找安静点的房子",
    )
    _anchor()
    # When the message is forgotten (its quotes scrubbed from the audit)
    message_forget(message=message, actor=staff_user, reason="客户要求删除")
    # Then the audit verifies, anchored, the scrub signed and recorded in the chain by row ids
    output = _verify("--account", account.pk)
    assert "已锚定" in output
    scrubbed = AuditEvent.objects.exclude(scrubbed_hash="")
    assert scrubbed.exists()
    record = AuditEvent.objects.get(action=AuditAction.AUDIT_WORDS_SCRUBBED)
    assert set(record.payload["row_ids"]) == set(scrubbed.values_list("pk", flat=True))
    assert "怀孕" not in json.dumps(record.payload, ensure_ascii=False)
    # And the anchoring signs the new head
    assert "已锚定" in _anchor("--account", account.pk)


def test_audit_scrubs_made_before_signing_are_flagged_until_signed(account):
    # Given a scrub made the old way: its hash is the plain hash of the words left
    row = _write("客户说：我老婆怀孕了")
    words = audit_chain.payload_hash("客户说：［已遗忘内容已移除］", {})
    with audit_chain.audit_unlocked(audit_chain.SCRUB, using=current_alias()):
        AuditEvent.objects.filter(pk=row.pk).update(reason="客户说：［已遗忘内容已移除］", scrubbed_hash=words)
    # Then verify flags it, until the upgrade step signs it
    assert not account_audit_verify().intact
    output = _anchor("--sign-scrubs", "--account", account.pk)
    assert "补签 1 行" in output
    assert account_audit_verify().intact


def test_audit_forged_anchor_log_line_is_reported(account):
    # Given an anchored audit
    _write("客户要求改为人工接待")
    _anchor()
    # When someone without the key appends an anchor line
    with audit_anchor.anchor_log_path().open("a", encoding="utf-8") as log:
        log.write(
            json.dumps({"chain": f"account:{account.pk}", "seq": 99, "head": "0" * 64, "at": "x", "mac": "f" * 64})
        )
        log.write("\n")
    # Then the full verify reports the line and the forged anchor is ignored
    with pytest.raises(CommandError) as refused:
        _verify()
    assert "签名不符" in str(refused.value)


def test_audit_anchor_task_signs_only_chains_that_grew(account):
    # Given an audit anchored by the beat task
    _write("客户要求改为人工接待")
    first = audit_anchor_all()
    lines = audit_anchor.anchor_log_path().read_text().splitlines()
    assert first["anchored"] >= 1 and first["broken"] == 0
    # When nothing was written since, the task appends nothing
    assert audit_anchor_all()["anchored"] == 0
    assert audit_anchor.anchor_log_path().read_text().splitlines() == lines
    # And after a new row it anchors the account's chain again
    _write("客户要求改回自动回复")
    assert audit_anchor_all()["anchored"] == 1
