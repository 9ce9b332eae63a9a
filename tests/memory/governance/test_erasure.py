"""customer_erase and `manage.py erase_customer`: every row about the customer goes, one audit stays."""

from __future__ import annotations

import io

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command

from conversations.models import AuditEvent, Customer, CustomerProfile, Message
from memory.governance.erasure import customer_erase
from memory.governance.services import memory_item_add
from memory.models import MemoryItem, MemorySnapshot
from memory.profile import customer_profile_update
from tests.factories import CustomerFactory, DraftFactory, MessageFactory, SessionEpochFactory


def rows_about(customer_pk: int) -> int:
    total = 0
    for model in apps.get_models():
        names = {f.name for f in model._meta.get_fields()}
        if model._meta.app_label in {"conversations", "memory", "sessions_epoch"} and "customer" in names:
            total += model._default_manager.filter(customer_id=customer_pk).count()
    return total + Customer.history.filter(id=customer_pk).count() + Customer.objects.filter(pk=customer_pk).count()


@pytest.fixture
def rich_customer(customer, messages, preference, staff_user):
    customer_profile_update(customer=customer, changes={"budget": "4500"}, actor=staff_user, reason="电话")
    memory_item_add(customer=customer, content="女儿明年上小学", actor=staff_user, reason="电话")
    DraftFactory(customer=customer)
    SessionEpochFactory(customer=customer)
    return customer


def test_customer_erase_removes_everything_and_keeps_one_audit(rich_customer, staff_user):
    # Given another customer who must not be touched
    bystander = MessageFactory(text="想看看徐汇的一居室").customer
    pk = rich_customer.pk
    assert rows_about(pk) > 10
    # When the customer is erased
    counts = customer_erase(customer=rich_customer, actor=staff_user, reason="客户要求删除全部数据")
    # Then nothing about them is left, history included
    assert rows_about(pk) == 0
    assert counts["conversations.Message"] == 4 and counts["history_rows"] > 0
    assert not MemoryItem.history.filter(customer_id=pk).exists()
    assert not CustomerProfile.history.filter(customer_id=pk).exists()
    # And the audit keeps one customer_erased row without content
    audit = AuditEvent.objects.get(action="customer_erased")
    assert (audit.conversation_id, audit.actor_id) == ("wm_wang_001", staff_user.pk)
    assert "4500" not in str(audit.payload) and "女儿" not in str(audit.payload)
    # And the bystander is intact
    assert Message.objects.filter(customer=bystander).count() == 1


def test_erase_customer_command_erases_with_yes(rich_customer, account):
    out = io.StringIO()
    call_command("erase_customer", account=account.id, conversation="wm_wang_001", yes=True, stdout=out)
    assert "已删除" in out.getvalue()
    assert not Customer.objects.filter(conversation_id="wm_wang_001").exists()
    assert not MemorySnapshot.objects.exists()
    assert AuditEvent.objects.get(action="customer_erased").actor_name == "erase_customer 命令"


def test_erase_customer_command_refuses_unknown_account_and_conversation(account):
    CustomerFactory(conversation_id="wm_li_002")
    with pytest.raises(CommandError, match="账号"):
        call_command("erase_customer", account="nosuch", conversation="wm_li_002", yes=True)
    with pytest.raises(CommandError, match="会话"):
        call_command("erase_customer", account=account.id, conversation="wm_nobody", yes=True)
    assert Customer.objects.filter(conversation_id="wm_li_002").exists()


def test_erase_customer_command_cancelled_without_yes(customer, account, monkeypatch):
    monkeypatch.setattr("builtins.input", lambda prompt: "no")
    with pytest.raises(CommandError, match="已取消"):
        call_command("erase_customer", account=account.id, conversation=customer.conversation_id)
    assert Customer.objects.filter(pk=customer.pk).exists()
