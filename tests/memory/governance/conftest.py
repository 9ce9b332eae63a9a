"""Fixtures for governance tests: memory items on the renting customer (`customer` and `messages`
come from tests/memory/conftest.py)."""

from __future__ import annotations

import pytest

from memory.items import memory_item_put
from memory.models import MemoryType


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
