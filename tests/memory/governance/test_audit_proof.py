"""The audit through governance (issue 25, item 3): forget and erasure scrub quotes out of audit rows
and the chain still verifies; capture's batched writes leave their history rows and chained audit."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.db import connections

from conversations.models import AuditAction, AuditEvent
from memory.governance.erasure import customer_erase
from memory.governance.messages import message_forget
from memory.governance.scrub import FORGOTTEN_MARK
from memory.governance.services import memory_item_add, memory_item_forget
from memory.models import MemoryItem, MemoryStatus
from qiwei_site.platform import audit_chain
from qiwei_site.platform.audit import account_audit_verify, audit_record
from qiwei_site.platform.tenancy import current_alias

NOTE = "女儿明年在张江上小学"


def quoted_audit(customer, staff_user) -> AuditEvent:
    """An audit row that quotes what is about to be forgotten (a supervisor's reason)."""
    return audit_record(
        action=AuditAction.CUSTOMER_UPDATED,
        conversation_id=customer.conversation_id,
        actor=staff_user,
        reason=f"电话里说{NOTE}，改为人工接待",
        payload={"note": f"客户原话：{NOTE}", "fields": ["mode"]},
    )


def test_memory_item_forget_scrubs_the_audit_and_the_chain_still_verifies(customer, staff_user):
    # Given an item and an audit row quoting it
    item = memory_item_add(customer=customer, content=NOTE, actor=staff_user, reason="电话沟通")
    quoted = quoted_audit(customer, staff_user)
    # When the item is forgotten
    memory_item_forget(item=item, actor=staff_user, reason="客户要求删除")
    # Then the row no longer quotes it, keeps its place in the chain, and every row verifies
    row = AuditEvent.objects.get(pk=quoted.pk)
    assert NOTE not in row.reason and FORGOTTEN_MARK in row.reason and NOTE not in str(row.payload)
    assert row.scrubbed_hash and row.payload_hash == quoted.payload_hash
    report = account_audit_verify()
    assert report.intact and report.scrubbed >= 1


def test_message_forget_scrubs_the_audit_and_the_chain_still_verifies(customer, messages, staff_user):
    # Given an audit row quoting a message
    message = messages[1]
    quoted = audit_record(
        action=AuditAction.CUSTOMER_UPDATED,
        conversation_id=customer.conversation_id,
        actor=staff_user,
        reason=f"客户说「{message.text}」",
    )
    # When the message is forgotten
    message_forget(message=message, actor=staff_user, reason="客户要求删除这条消息")
    # Then the quote is gone and the chain verifies
    assert message.text not in AuditEvent.objects.get(pk=quoted.pk).reason
    assert account_audit_verify().intact


def test_customer_erase_scrubs_the_audit_and_audit_verify_passes(customer, messages, staff_user, account):
    # Given a customer's audit quoting their words
    memory_item_add(customer=customer, content=NOTE, actor=staff_user, reason="电话沟通")
    quoted = quoted_audit(customer, staff_user)
    # When the customer is erased
    customer_erase(customer=customer, actor=staff_user, reason="客户王先生要求删除全部数据")
    # Then the kept audit quotes nothing of them and `manage.py audit_verify` passes
    assert NOTE not in AuditEvent.objects.get(pk=quoted.pk).reason
    out = io.StringIO()
    call_command("audit_verify", "--account", account.pk, stdout=out)
    assert f"账号 {account.pk} 的审计：" in out.getvalue() and "审计链完整" in out.getvalue()


def test_scrubbed_row_edited_afterwards_is_reported(customer, staff_user, account):
    # Given a scrubbed row, then edited behind the service's back (triggers dropped)
    item = memory_item_add(customer=customer, content=NOTE, actor=staff_user, reason="电话沟通")
    quoted = quoted_audit(customer, staff_user)
    memory_item_forget(item=item, actor=staff_user, reason="客户要求删除")
    with connections[current_alias()].cursor() as cursor:
        for name in audit_chain.trigger_names("conversations_auditevent", "sqlite"):
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
    AuditEvent.objects.filter(pk=quoted.pk).update(reason="电话里说要自动回复")
    # When verified
    # Then the command names the row
    with pytest.raises(CommandError, match=f"#{quoted.pk}：原因或详情被改动"):
        call_command("audit_verify", "--account", account.pk, stdout=io.StringIO())


def test_capture_batch_leaves_a_history_row_and_a_chained_audit_row_per_item(ingest):
    # Given a message that states several things at once
    ingest("我预算5000，想要两居室，顶楼就不考虑了")
    # When capture has written them in one batch (bulk_create, bulk history, bulk audit)
    items = list(MemoryItem.objects.filter(status=MemoryStatus.ACTIVE).order_by("pk"))
    assert len(items) >= 3
    # Then every item has its creation history row, with capture's reason
    history = MemoryItem.history.model.objects.filter(id__in=[item.pk for item in items], history_type="+")
    assert sorted(history.values_list("id", flat=True)) == [item.pk for item in items]
    assert all(row.history_change_reason for row in history)
    assert sorted(row.content for row in history) == sorted(item.content for item in items)
    # And an audit row each, chained in the order written
    captured = AuditEvent.objects.filter(action=AuditAction.MEMORY_ITEM_CAPTURED).order_by("chain_seq")
    assert sorted(row.payload["item_id"] for row in captured) == [item.pk for item in items]
    in_order_written = list(AuditEvent.objects.order_by("pk").values_list("chain_seq", flat=True))
    assert in_order_written == list(range(1, len(in_order_written) + 1))
    assert account_audit_verify().intact
