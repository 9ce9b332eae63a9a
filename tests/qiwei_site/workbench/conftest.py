"""Fixtures for the Workbench page tests: one customer with a realistic renting conversation."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.models import Alert, AlertLevel, Delivery, DeliveryStatus, DraftStatus, MessageDirection, TaskStatus
from memory.models import MemoryType
from memory.snapshots import snapshot_refresh
from qiwei_site.platform.audit import audit_record
from tests.factories import BASE_TIME, CustomerFactory, DraftFactory, MemoryItemFactory, MessageFactory, TaskFactory


@pytest.fixture
def renting_customer(account):
    """王先生 looks for a two-bedroom near the metro; one pending and one sent draft."""
    customer = CustomerFactory(conversation_id="wm_wang_001", display_name="王先生", last_message_at=BASE_TIME)
    customer.profile.budget = "月租 6000 以内"
    customer.profile.layout = "两居室"
    customer.profile.save()
    for index in range(35):
        inbound = index % 2 == 0
        MessageFactory(
            customer=customer,
            external_id=f"wang_{index:03d}",
            direction=MessageDirection.INBOUND if inbound else MessageDirection.OUTBOUND,
            sender="王先生" if inbound else "客服小李",
            text=f"第{index}条：我想找地铁附近的两居室，不考虑顶楼" if inbound else f"第{index}条：好的，我帮您筛选",
            sent_at=BASE_TIME + dt.timedelta(minutes=index),
        )
    TaskFactory(customer=customer, title="周六上午带看两居室")
    TaskFactory(customer=customer, title="已完成的旧待办", status=TaskStatus.DONE)
    Alert.objects.create(customer=customer, level=AlertLevel.WARNING, text="客户两次询问押金退还，注意跟进")
    Alert.objects.create(customer=customer, text="已处理的预警", resolved=True)
    MemoryItemFactory(customer=customer, type=MemoryType.PREFERENCE, key="preference:metro", content="更喜欢地铁附近")
    MemoryItemFactory(customer=customer, type=MemoryType.CONSTRAINT, key="constraint:top_floor", content="不考虑顶楼")
    snapshot_refresh(customer=customer, reason="测试初始化")
    DraftFactory(customer=customer, reply="王先生您好，周六上午方便看房吗？", status=DraftStatus.PENDING)
    sent = DraftFactory(customer=customer, reply="已为您预约看房", status=DraftStatus.SENT)
    Delivery.objects.create(draft=sent, idempotency_key=f"draft-{sent.pk}", status=DeliveryStatus.SENT, text=sent.reply)
    audit_record(action="memory_item_added", conversation_id=customer.conversation_id, actor="capture")
    audit_record(action="draft_generated", conversation_id="wm_someone_else", actor="turn")
    return customer
