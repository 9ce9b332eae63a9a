"""Fixtures for governance tests: a customer with realistic renting conversation and memory."""

from __future__ import annotations

import pytest

from conversations.models import MessageDirection
from memory.items import memory_item_put
from memory.models import MemoryType
from tests.factories import CustomerFactory, MessageFactory


@pytest.fixture
def customer(account):
    return CustomerFactory(conversation_id="wm_wang_001", display_name="王先生")


@pytest.fixture
def messages(customer):
    return [
        MessageFactory(customer=customer, text="你好，我想在浦东租个两居室，预算4500左右"),
        MessageFactory(customer=customer, text="我更喜欢地铁附近的，上班方便", direction=MessageDirection.INBOUND),
        MessageFactory(customer=customer, text="好的，我帮您看看2号线沿线的房源", direction=MessageDirection.OUTBOUND),
        MessageFactory(customer=customer, text="不考虑顶楼，夏天太热"),
    ]


@pytest.fixture
def preference(customer, messages):
    """A captured preference, cited from the customer's own words."""
    return memory_item_put(
        customer=customer,
        type=MemoryType.PREFERENCE,
        key="preference:location",
        content="更喜欢地铁附近",
        source_message_ids=[messages[1].pk],
        actor="capture",
        reason="客户原话",
    ).item


@pytest.fixture
def hypothesis(customer, messages):
    """A model inference waiting for a supervisor."""
    return memory_item_put(
        customer=customer,
        type=MemoryType.HYPOTHESIS,
        key="hypothesis:commute",
        content="可能在陆家嘴上班",
        source_message_ids=[messages[1].pk],
        confidence=0.5,
        actor="model",
        reason="模型推断",
    ).item
