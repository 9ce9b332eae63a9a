"""A reviewer's edit racing a send on PostgreSQL (issue 21, item 4): the send reads the text under
the draft's row lock, so the edit is either what is sent or refused (`draft_sending`)."""

from __future__ import annotations

import pytest
from django.db import connections

from conversations.drafts import draft_approve
from conversations.models import Delivery
from qiwei_site.platform.services import account_create
from qiwei_site.platform.tenancy import use_account
from tests.conversations.test_drafts_edit_send_race import ALLOWED, ORIGINAL, race_edit_and_send
from tests.factories import CustomerFactory, DraftFactory, StaffUserFactory, UserFactory

pytestmark = pytest.mark.integration


@pytest.mark.django_db(transaction=True)
def test_edit_racing_send_is_sent_or_refused_on_postgres(postgres_accounts):
    account_id = postgres_accounts("pgrace")
    account_create(account_id=account_id, name="安居客服三部")
    agent, staff = UserFactory(), StaffUserFactory()
    for round_number in range(10):
        with use_account(account_id) as alias:
            assert connections[alias].vendor == "postgresql"
            customer = CustomerFactory(conversation_id=f"wm_race_{round_number}")
            draft = DraftFactory(customer=customer, requires_human=True, confidence=0.7, reply=ORIGINAL)
            draft_approve(draft=draft, actor=staff, reason="通过")
        edit, sent = race_edit_and_send(draft.pk, agent, staff, account_id)
        assert (edit, sent) in ALLOWED, round_number
        with use_account(account_id):
            assert Delivery.objects.get(draft_id=draft.pk).text == sent
