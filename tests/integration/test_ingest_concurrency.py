"""Ingest under real concurrency (issue 11 item 1), on SQLite and on PostgreSQL: 50 threads posting
through the API at once — to a new and to an existing conversation, one message or an overlapping
batch each. Every message is stored exactly once, and no answer is 500 or above."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from memory.capture.ingest import messages_ingest
from qiwei_site.platform.services import account_create, membership_grant
from qiwei_site.platform.tenancy import use_account
from tests.factories import StaffUserFactory
from tests.memory.capture.test_ingest_races import check_race, post_concurrently, wecom_batch

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

THREADS = 50
STORED_BEFORE = {0, 1, 2, 3, 4}


@pytest.fixture
def pg_layout() -> str:
    """The PostgreSQL cases run in the default layout, a schema per account (requested lazily
    below, so the layout cannot be a parameter of its own here)."""
    return "schema"


@pytest.fixture(params=["sqlite", "postgresql"])
def account_id(request) -> str:
    """A fresh account on the backend under test."""
    on_postgres = request.param == "postgresql"
    account = request.getfixturevalue("postgres_accounts")("race") if on_postgres else "racesqlite"
    account_create(account_id=account, name="并发入库测试门店")
    return account


@pytest.fixture
def token(account_id) -> str:
    from qiwei_site.platform.models import WeComAccount

    user = StaffUserFactory()
    membership_grant(user=user, account=WeComAccount.objects.get(id=account_id))
    return Token.objects.get_or_create(user=user)[0].key


@pytest.fixture(autouse=True)
def no_capture(monkeypatch):
    """Capture jobs are stored, not run: the race under test is ingest's."""
    monkeypatch.setattr("memory.capture.jobs._send", lambda account_id, ids: None)


def _payloads(shape: str) -> list[list[int]]:
    if shape == "single":
        return [[n % 25] for n in range(THREADS)]  # every message delivered twice, at once
    return [[(i * 5 + k) % 100 for k in range(10)] for i in range(THREADS)]  # windows overlap ~5 times


@pytest.mark.parametrize("conversation", ["new", "existing"])
@pytest.mark.parametrize("shape", ["single", "batch"])
def test_ingest_fifty_threads_store_every_message_exactly_once(account_id, token, conversation, shape):
    # given a new conversation, or one already holding the first five messages
    conversation_id = f"wm_race_{conversation}_{shape}"
    stored_before: set[int] = set()
    if conversation == "existing":
        with use_account(account_id):
            messages_ingest(conversation_id=conversation_id, messages=wecom_batch(sorted(STORED_BEFORE)), actor="wecom")
        stored_before = STORED_BEFORE
    # and 50 deliveries (single messages or overlapping batches) released at the same instant
    posted = _payloads(shape)
    url = f"/api/accounts/{account_id}/conversations/{conversation_id}/messages/"
    # when they all reach the API together
    result = post_concurrently(token=token, requests=[(url, wecom_batch(ids)) for ids in posted])
    # then all 50 are 201, and every message is stored, and reported created, exactly once
    check_race(
        account_id=account_id,
        conversation_id=conversation_id,
        result=result,
        posted=posted,
        stored_before=stored_before,
    )
