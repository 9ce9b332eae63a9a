"""Fixtures for the schemathesis run: account `acme` seeded with realistic conversations, memory,
snapshots, drafts in every state and epochs, plus a staff token; the ids go to the CLI's hooks."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pytest_django.live_server_helper import LiveServer
from rest_framework.authtoken.models import Token

from conversations.business import alert_create, recommendation_create, task_create
from conversations.models import Delivery, DeliveryStatus, DraftStatus, MessageDirection
from memory.capture.ingest import messages_ingest
from memory.governance.services import memory_item_add
from memory.models import MemoryItem, MemoryType
from memory.snapshots import snapshot_refresh
from tests.factories import CustomerFactory, DraftFactory, MemoryItemFactory, SessionEpochFactory

BASE = dt.datetime(2026, 11, 2, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=8)))
CONVERSATIONS = {
    "wm_fuzz_wang": ("王先生", ["你好，我想在地铁附近租一套两居室，预算每月6000以内", "不考虑顶楼，最好下个月能入住"]),
    "wm_fuzz_li": ("李女士", ["想买一套三居室，总价500万左右，浦东优先", "周六上午可以看房吗？"]),
    "wm_fuzz_chen": (
        "陈小姐",
        ["Hi, I'm looking for a one-bedroom flat near Line 2, budget 5000 a month", "我养了一只猫"],
    ),
}
ERASABLE = ["wm_fuzz_erase_1", "wm_fuzz_erase_2", "wm_fuzz_erase_3"]


@dataclass
class Seeded:
    """Ids that exist in account `acme`, grouped so destructive operations get their own rows."""

    token: str
    conversation_ids: list[str]
    erasable_ids: list[str]
    items: list[tuple[str, str]] = field(default_factory=list)  # (conversation_id, item_id) to keep
    forgettable: list[tuple[str, str]] = field(default_factory=list)  # ... for DELETE (forget)
    retirable: list[tuple[str, str]] = field(default_factory=list)  # ... for reject and expire
    draft_ids: list[int] = field(default_factory=list)
    task_ids: list[int] = field(default_factory=list)
    alert_ids: list[int] = field(default_factory=list)
    recommendation_ids: list[int] = field(default_factory=list)


def _conversation(conversation_id: str, name: str, texts: list[str]) -> None:
    messages: list[dict[str, Any]] = []
    for index, text in enumerate(texts):
        messages.append(
            {
                "external_id": f"{conversation_id}_in_{index}",
                "direction": MessageDirection.INBOUND,
                "text": text,
                "sender": name,
                "sent_at": (BASE + dt.timedelta(minutes=2 * index)).isoformat(),
            }
        )
        messages.append(
            {
                "external_id": f"{conversation_id}_out_{index}",
                "direction": MessageDirection.OUTBOUND,
                "text": "好的，我帮您筛选一下合适的房源",
                "sender": "客服小李",
                "sent_at": (BASE + dt.timedelta(minutes=2 * index + 1)).isoformat(),
            }
        )
    # Capture runs eagerly in tests, so this also writes memory items and a snapshot.
    messages_ingest(conversation_id=conversation_id, messages=messages, actor="wecom-webhook")


@pytest.fixture
def seeded(account, staff_user) -> Seeded:
    for conversation_id, (name, texts) in CONVERSATIONS.items():
        _conversation(conversation_id, name, texts)
    for conversation_id in ERASABLE:
        _conversation(conversation_id, "张先生", ["我要退租，押金什么时候退？"])

    data = Seeded(
        token=Token.objects.get_or_create(user=staff_user)[0].key,
        conversation_ids=list(CONVERSATIONS),
        erasable_ids=ERASABLE,
    )
    customers = {c.conversation_id: c for c in CustomerFactory._meta.model.objects.all()}
    for conversation_id in CONVERSATIONS:
        customer = customers[conversation_id]
        for index, content in enumerate(["客户周末才有空看房", "需要能停车的小区", "公司在张江，通勤不超过40分钟"]):
            item = memory_item_add(
                customer=customer,
                content=content,
                type=MemoryType.FACT,
                key=f"fact:fuzz_{index}",
                actor=staff_user,
                reason="测试数据",
            )
            target = [data.items, data.retirable, data.forgettable][index]
            target.append((conversation_id, str(item.pk)))
        # Inferences, so confirm and reject have something they may act on.
        for index, content in enumerate(["可能近期有换工作的打算", "可能是给父母买房"]):
            item = MemoryItemFactory(
                customer=customer, type=MemoryType.HYPOTHESIS, key=f"hypothesis:fuzz_{index}", content=content
            )
            (data.retirable if index else data.items).append((conversation_id, str(item.pk)))
        snapshot_refresh(customer=customer, reason="测试初始化")
        pending = DraftFactory(customer=customer, reply=f"{customer.display_name}您好，周六上午方便看房吗？")
        approved = DraftFactory(customer=customer, reply="这套两居室离地铁站步行5分钟", status=DraftStatus.APPROVED)
        sent = DraftFactory(customer=customer, reply="已为您预约看房", status=DraftStatus.SENT)
        Delivery.objects.create(
            draft=sent, idempotency_key=f"draft-{sent.pk}", status=DeliveryStatus.SENT, text=sent.reply
        )
        rejected = DraftFactory(customer=customer, reply="这套房子顶楼", status=DraftStatus.REJECTED)
        data.draft_ids += [pending.pk, approved.pk, sent.pk, rejected.pk]
        # Business state people write, so update / resolve / feedback reach their services.
        task = task_create(customer=customer, title="周六上午带看浦东两居室", actor="fuzz-seed", reason="测试初始化")
        alert = alert_create(customer=customer, text="客户对中介费有异议，报价前先确认", actor="fuzz-seed")
        recommendation = recommendation_create(
            customer=customer, text="推荐地铁2号线附近的两居室，月租6000以内", actor="fuzz-seed"
        )
        data.task_ids.append(task.pk)
        data.alert_ids.append(alert.pk)
        data.recommendation_ids.append(recommendation.pk)
        SessionEpochFactory(customer=customer)
    # Capture's own items (with history) are fair game for the non-destructive operations too.
    data.items += [
        (item.customer.conversation_id, str(item.pk))
        for item in MemoryItem.objects.select_related("customer").filter(
            created_by="auto", customer__conversation_id__in=list(CONVERSATIONS)
        )[:12]
    ]
    return data


@pytest.fixture
def fuzz_server(transactional_db) -> Iterator[LiveServer]:
    """A threaded live server of its own, on 127.0.0.1 only (the shared `live_server` binds `localhost`)."""
    server = LiveServer("127.0.0.1")
    try:
        yield server
    finally:
        server.stop()


def write_ids(seeded: Seeded, path: Path) -> Path:
    path.write_text(json.dumps({"account_id": "acme", **asdict(seeded)}, ensure_ascii=False), encoding="utf-8")
    return path
