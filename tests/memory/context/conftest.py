"""Fixtures for context assembly: conversations with realistic history."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

import pytest

from conversations.models import Customer, Message, MessageDirection
from tests.factories import BASE_TIME, CustomerFactory, MessageFactory
from tests.integration.conftest import pg_layout, postgres_accounts  # noqa: F401 - shared fixtures

FILLER = [
    "好的，我看一下",
    "嗯嗯",
    "收到，谢谢",
    "您稍等，我查一下",
    "明白了",
    "好的没问题",
]


@pytest.fixture
def chat(account) -> Callable[..., list[Message]]:
    """Write a conversation: (direction, text) pairs one minute apart, oldest first."""

    def write(customer: Customer, turns: Sequence[tuple[str, str]], start: dt.datetime = BASE_TIME) -> list[Message]:
        messages = []
        for offset, (direction, text) in enumerate(turns):
            sender = "客户" if direction == MessageDirection.INBOUND else "客服小安"
            messages.append(
                MessageFactory(
                    customer=customer,
                    direction=direction,
                    sender=sender,
                    text=text,
                    sent_at=start + dt.timedelta(minutes=offset),
                )
            )
        return messages

    return write


# Overrides the governance `customer` of tests/memory/conftest.py for the context tests.
@pytest.fixture
def customer(account) -> Customer:
    return CustomerFactory(conversation_id="wm_wang", display_name="王先生")


def filler(count: int) -> list[tuple[str, str]]:
    """Small talk that shares nothing with the topics under test."""
    turns = []
    for i in range(count):
        direction = MessageDirection.OUTBOUND if i % 2 else MessageDirection.INBOUND
        turns.append((direction, FILLER[i % len(FILLER)]))
    return turns


@pytest.fixture
def postgres_account_url(postgres_accounts) -> str:  # noqa: F811 - the shared fixture
    """An account id whose database lives on the machine's PostgreSQL (dropped afterwards)."""
    return postgres_accounts("ctx")
