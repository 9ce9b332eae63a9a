"""The expiry task and `manage.py expire_memory` run the same service for each account."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from conversations.models import AuditEvent
from memory.governance.services import memory_item_add, memory_item_confirm
from memory.models import MemoryItem, MemoryStatus, MemoryType
from memory.tasks import memory_expire_account, memory_expire_all
from qiwei_site.platform.tenancy import use_account
from tests.factories import CustomerFactory


def make_due_item(conversation_id: str, content: str) -> MemoryItem:
    """An active temporary item whose expiry has already passed (written directly, as a backfill would)."""
    customer = CustomerFactory(conversation_id=conversation_id)
    return MemoryItem.objects.create(
        customer=customer,
        type=MemoryType.EVENT,
        key=f"event:{conversation_id}",
        content=content,
        expires_at=timezone.now() - dt.timedelta(minutes=5),
    )


def test_memory_expire_account_task_expires_due_items(account):
    # Given an item past its expiry in acme
    item = make_due_item("wm_zhang_003", "本周六上午方便看房")
    # When the task runs for acme
    expired = memory_expire_account(account.id)
    # Then it is superseded and audited by the expiry process
    item.refresh_from_db()
    assert expired == 1 and item.status == MemoryStatus.SUPERSEDED
    assert AuditEvent.objects.get(action="memory_item_expired").actor_name == "expiry"


def test_memory_expire_all_covers_every_active_account(account, other_account):
    # Given due items in both accounts
    acme_item = make_due_item("wm_zhang_003", "本周六上午方便看房")
    with use_account(other_account.id):
        globex_item = make_due_item("wm_chen_004", "周日下午看两居室")
    # When the beat task runs (eager in tests)
    assert memory_expire_all.delay().get() == 2
    # Then both expired, each in its own database
    acme_item.refresh_from_db()
    assert acme_item.status == MemoryStatus.SUPERSEDED
    with use_account(other_account.id):
        globex_item.refresh_from_db()
        assert globex_item.status == MemoryStatus.SUPERSEDED


def test_expire_memory_command_prints_counts(account, other_account):
    make_due_item("wm_zhang_003", "本周六上午方便看房")
    out = io.StringIO()
    call_command("expire_memory", stdout=out)
    text = out.getvalue()
    assert "acme\t已失效 1 条" in text and "globex\t已失效 0 条" in text and "共失效 1 条" in text
    out = io.StringIO()
    call_command("expire_memory", account="acme", stdout=out)
    assert "共失效 0 条" in out.getvalue()


def test_expire_memory_command_unknown_account(account):
    with pytest.raises(CommandError, match="不存在"):
        call_command("expire_memory", account="nosuch")


def test_expire_memory_command_a_week_later_keeps_a_confirmed_hypothesis(account, staff_user, monkeypatch):
    # Given a hypothesis added by a supervisor (expiring after the TTL) and then confirmed
    customer = CustomerFactory(conversation_id="wm_zhao_005")
    item = memory_item_add(
        customer=customer,
        type=MemoryType.HYPOTHESIS,
        content="可能在张江上班，通勤优先2号线",
        actor=staff_user,
        reason="客户提到在张江",
    )
    memory_item_confirm(item=item, actor=staff_user, reason="客户确认在张江上班")
    # When `manage.py expire_memory` and the task run eight days later
    later = timezone.now() + dt.timedelta(days=8)
    monkeypatch.setattr(timezone, "now", lambda: later)
    call_command("expire_memory", "--account", account.id, stdout=io.StringIO())
    memory_expire_account(account.id)
    # Then the confirmed fact is still active, and no expiry was audited
    item.refresh_from_db()
    assert (item.type, item.status) == (MemoryType.FACT, MemoryStatus.ACTIVE)
    assert not AuditEvent.objects.filter(action="memory_item_expired").exists()
