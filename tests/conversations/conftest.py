"""Fixtures for the drafts and gateway tests: a fresh status cache per test and 王先生's conversation.

tests/sessions_epoch/conftest.py imports both, so the model-turn tests use the same ones."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
from django.core.cache import caches

from conversations.gateway import STATUS_CACHE_ALIAS
from conversations.models import CustomerProfile, MessageDirection
from tests.factories import BASE_TIME, CustomerFactory, MessageFactory


@pytest.fixture(autouse=True)
def _clear_shared_cache() -> Iterator[None]:
    caches[STATUS_CACHE_ALIAS].clear()
    yield
    caches[STATUS_CACHE_ALIAS].clear()


@pytest.fixture
def customer(account):
    """王先生, looking to rent a two-bedroom flat near the metro, with his own words on record."""
    customer = CustomerFactory(conversation_id="wm_wang_001", display_name="王先生")
    CustomerProfile.objects.filter(customer=customer).update(preferred_name="王先生")
    customer.refresh_from_db()
    MessageFactory(customer=customer, text="你好，我想在浦东租一套两居室", sent_at=BASE_TIME)
    MessageFactory(
        customer=customer,
        direction=MessageDirection.OUTBOUND,
        sender="顾问小李",
        text="好的王先生，请问预算大概多少？您是想要张江还是陆家嘴？",
        sent_at=BASE_TIME + dt.timedelta(minutes=1),
    )
    MessageFactory(
        customer=customer,
        text="预算４，５００左右，最好离地铁近一点，不考虑顶楼",
        sent_at=BASE_TIME + dt.timedelta(minutes=2),
    )
    return customer
