"""Fixtures for the supervisor's admin pages: a renting customer whose memory holds one item of
every kind the review queue must tell apart (`customer` and `messages` come from tests/memory/conftest.py)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest
from django.utils import timezone

from conversations.models import MessageDirection
from memory.governance.services import memory_item_add
from memory.items import memory_item_put
from memory.models import MemoryItem, MemoryType
from tests.factories import CustomerFactory, MessageFactory


@dataclass
class ReviewItems:
    hypothesis: MemoryItem  # the model's inference, in the queue
    hedged: MemoryItem  # an automatic preference below the threshold, in the queue
    sure: MemoryItem  # an automatic constraint above the threshold: not in the queue
    human: MemoryItem  # a supervisor's fact: not in the queue
    lapsed: MemoryItem  # a hypothesis past its expiry, not yet swept: not in the queue
    neighbour: MemoryItem  # another customer's hypothesis in the same account, in the queue


def put(customer, *, type, key, content, sources, confidence, expires_at=None):
    return memory_item_put(
        customer=customer,
        type=type,
        key=key,
        content=content,
        source_message_ids=[m.pk for m in sources],
        confidence=confidence,
        expires_at=expires_at,
        actor="capture",
        reason="客户原话",
    ).item


@pytest.fixture
def phone_message(customer):
    return MessageFactory(
        customer=customer,
        direction=MessageDirection.INBOUND,
        sender="王先生",
        text="孩子明年上小学，最好离学校近一点，我电话13812345678",
    )


@pytest.fixture
def review_items(customer, messages, phone_message, staff_user) -> ReviewItems:
    hypothesis = put(
        customer,
        type=MemoryType.HYPOTHESIS,
        key="hypothesis:school",
        content="可能在为孩子上学找学区房",
        sources=[phone_message],
        confidence=0.5,
        expires_at=timezone.now() + dt.timedelta(days=7),
    )
    hedged = put(
        customer,
        type=MemoryType.PREFERENCE,
        key="preference:near_metro",
        content="可能更喜欢地铁附近",
        sources=[messages[1]],
        confidence=0.5,
    )
    sure = put(
        customer,
        type=MemoryType.CONSTRAINT,
        key="constraint:top_floor",
        content="不考虑顶楼",
        sources=[messages[3]],
        confidence=0.9,
    )
    human = memory_item_add(
        customer=customer, content="客户是中学教师，寒暑假方便看房", actor=staff_user, reason="电话回访"
    )
    lapsed = put(
        customer,
        type=MemoryType.HYPOTHESIS,
        key="hypothesis:car",
        content="可能有车",
        sources=[messages[0]],
        confidence=0.4,
        expires_at=timezone.now() + dt.timedelta(days=1),
    )
    MemoryItem.objects.filter(pk=lapsed.pk).update(expires_at=timezone.now() - dt.timedelta(minutes=5))
    li = CustomerFactory(conversation_id="wm_li_002", display_name="李女士")
    li_message = MessageFactory(customer=li, sender="李女士", text="我在徐汇上班，想找个能养猫的一居室")
    neighbour = put(
        li,
        type=MemoryType.HYPOTHESIS,
        key="hypothesis:cat",
        content="可能养猫",
        sources=[li_message],
        confidence=0.6,
    )
    return ReviewItems(hypothesis, hedged, sure, human, lapsed, neighbour)
