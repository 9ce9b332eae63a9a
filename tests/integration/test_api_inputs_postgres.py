"""On PostgreSQL (issue 11 items 2 and 3): the inputs PostgreSQL refuses outright — NUL in a string,
a lone surrogate, a 20-digit LIMIT — are JSON 400s, not 500s; and a snapshot table that really fails
inside the turn's transaction still gives a draft (the failed read is rolled back to a savepoint)."""

from __future__ import annotations

import pytest
from django.db import connections
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from conversations.models import AuditEvent, Message
from memory.capture.ingest import messages_ingest
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.services import account_create, membership_grant
from qiwei_site.platform.tenancy import alias_for, use_account
from sessions_epoch.models import SessionEpoch
from tests.factories import StaffUserFactory

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

CID = "wm_pg_sun"


@pytest.fixture
def account_id(postgres_accounts) -> str:
    account = postgres_accounts("pginput")
    account_create(account_id=account, name="静安门店")
    with use_account(account):
        messages_ingest(
            conversation_id=CID,
            messages=[{"external_id": "sun_001", "text": "想在静安寺附近租一居室，预算七千", "sender": "孙女士"}],
            actor="wecom",
        )
    return account


@pytest.fixture
def client(account_id) -> APIClient:
    user = StaffUserFactory()
    membership_grant(user=user, account=WeComAccount.objects.get(id=account_id))
    client = APIClient()
    client.raise_request_exception = False
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def test_postgres_inputs_it_cannot_store_are_json_400(account_id, client):
    # given an account on PostgreSQL, which refuses NUL and lone surrogates in text
    base = f"/api/accounts/{account_id}"
    messages = f"{base}/conversations/{CID}/messages/"
    cases = [
        ("POST", messages, b'{"external_id": "sun_\\u0000", "text": "ok"}'),
        ("POST", messages, b'{"external_id": "sun_002", "text": "\\ud800"}'),
        ("POST", messages, b'{"external_id": "sun_003", "text": "ok", "sender": "\\udfff"}'),
        ("POST", f"{base}/conversations/wm%00sun/messages/", b'{"external_id": "sun_004", "text": "ok"}'),
        ("GET", f"{base}/conversations/wm%00sun/messages/", b""),
        ("GET", f"{messages}?q=%E5%9C%B0%00%E9%93%81", b""),
        ("GET", f"{messages}?limit=99999999999999999999", b""),
        ("GET", f"{base}/audit/?limit=99999999999999999999", b""),
        ("GET", f"{base}/audit/?conversation_id=wm%00sun", b""),
        ("GET", f"{base}/messages/?q=%00", b""),
    ]
    for method, url, body in cases:
        # when each reaches the API
        response = client.generic(method, url, data=body, content_type="application/json")
        # then it is a JSON 400 with a code
        assert response["Content-Type"].startswith("application/json"), (url, response.content[:200])
        assert response.status_code == 400, (url, response.status_code, response.json())
        assert response.json()["code"], url
    with use_account(account_id):
        assert list(Message.objects.values_list("external_id", flat=True)) == ["sun_001"]
    connections.close_all()


def test_postgres_missing_snapshot_table_still_drafts(account_id, client):
    # given the snapshot table fails for real inside the turn's transaction
    alias = alias_for(account_id)
    with use_account(account_id), connections[alias].cursor() as cursor:
        cursor.execute("ALTER TABLE memory_memorysnapshot RENAME TO memory_memorysnapshot_lost")
    try:
        # when the first draft is asked for
        response = client.post(f"/api/accounts/{account_id}/conversations/{CID}/drafts/", {}, format="json")
    finally:
        with use_account(account_id), connections[alias].cursor() as cursor:
            cursor.execute("ALTER TABLE memory_memorysnapshot_lost RENAME TO memory_memorysnapshot")
    # then a draft is produced, the epoch opened without a memory version, and the failure audited
    assert response.status_code == 201, response.content[:300]
    with use_account(account_id):
        assert SessionEpoch.objects.get().memory_version is None
        assert AuditEvent.objects.filter(action="memory_recall_failed", payload__stage="epoch_open").exists()
    connections.close_all()
