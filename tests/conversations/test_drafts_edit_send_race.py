"""A reviewer's edit racing a send (issue 21, item 4): the edit is either what the customer gets or
it is refused; never both answered as done while the customer gets the old text. The send reads the
approved text under the draft's lock, and an edit is refused once a delivery is under way."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from conversations import gateway as upstream
from conversations.drafts import draft_approve, draft_send
from conversations.gateway import LoopbackGateway
from conversations.models import Delivery, Draft
from qiwei_site.platform.errors import Conflict
from qiwei_site.platform.tenancy import use_account
from tests.factories import DraftFactory

ORIGINAL = "王先生您好，周六上午可以看张江的两居室。"
EDITED = "王先生您好，周六上午10点可以看张江的两居室，我在地铁口等您。"
# An edit is what is sent, or it is refused: while the send is under way, or after it (sent).
ALLOWED = {("ok", EDITED), ("draft_sending", ORIGINAL), ("draft_not_pending", ORIGINAL)}


@pytest.fixture
def approved(customer, staff_user):
    draft = DraftFactory(customer=customer, requires_human=True, confidence=0.7, reply=ORIGINAL)
    return draft_approve(draft=draft, actor=staff_user, reason="通过")


def test_an_edit_landing_before_the_claim_is_what_is_sent(approved, agent_user, staff_user, monkeypatch):
    # Given a send that has made its first check, and a reviewer whose edit lands just then
    from conversations import drafts

    original_claim = drafts._claim

    def claim_after_edit(*args, **kwargs):
        draft_approve(draft=approved, actor=staff_user, reason="补充时间地点", text=EDITED)
        return original_claim(*args, **kwargs)

    monkeypatch.setattr(drafts, "_claim", claim_after_edit)
    # When the send goes on
    delivery = draft_send(draft=approved, actor=agent_user, reason="发送")
    # Then the customer got the edited text
    assert delivery.text == EDITED
    assert [record["text"] for record in LoopbackGateway.sent_records()] == [EDITED]


def test_an_edit_after_the_claim_is_refused(approved, agent_user, staff_user, monkeypatch):
    # Given a send whose delivery is claimed and on its way upstream, and a reviewer editing then
    answers: list[str] = []

    def send_while_edited(self, **kwargs):
        with pytest.raises(Conflict) as refused:
            draft_approve(draft=approved, actor=staff_user, reason="补充时间地点", text=EDITED)
        answers.append(refused.value.code)
        return LoopbackGateway.send(self, **kwargs)

    monkeypatch.setattr(
        upstream, "get_gateway", lambda: type("Slow", (LoopbackGateway,), {"send": send_while_edited})()
    )
    # When the send finishes
    delivery = draft_send(draft=approved, actor=agent_user, reason="发送")
    # Then the edit was refused (the reviewer is told), and what was sent is what the draft says
    assert answers == ["draft_sending"]
    assert delivery.text == ORIGINAL
    assert (Draft.objects.get(pk=approved.pk).final_text or ORIGINAL) == ORIGINAL


def race_edit_and_send(draft_pk: int, agent_user, staff_user, account_id: str) -> tuple[str, str]:
    """One edit and one send at once, each in its own thread and connection: (edit outcome, sent text)."""
    barrier = threading.Barrier(2)
    outcome: dict[str, str] = {}

    def edit() -> None:
        try:
            with use_account(account_id):
                barrier.wait()
                draft_approve(draft=Draft(pk=draft_pk), actor=staff_user, reason="补充", text=EDITED)
                outcome["edit"] = "ok"
        except Conflict as exc:
            outcome["edit"] = exc.code
        finally:
            connections.close_all()

    def send() -> None:
        try:
            with use_account(account_id):
                barrier.wait()
                outcome["sent"] = draft_send(draft=Draft(pk=draft_pk), actor=agent_user, reason="发送").text
        finally:
            connections.close_all()

    threads = [threading.Thread(target=edit), threading.Thread(target=send)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcome["edit"], outcome["sent"]


@pytest.mark.django_db(transaction=True)
def test_edit_racing_send_is_sent_or_refused_on_sqlite(customer, agent_user, staff_user):
    # Given ten approved drafts, each edited and sent at the same moment
    for round_number in range(10):
        draft = DraftFactory(customer=customer, requires_human=True, confidence=0.7, reply=ORIGINAL)
        with use_account("acme"):
            draft_approve(draft=draft, actor=staff_user, reason="通过")
        edit, sent = race_edit_and_send(draft.pk, agent_user, staff_user, "acme")
        # Then either the edit went through and is what was sent, or it was refused
        assert (edit, sent) in ALLOWED, round_number
        delivery = Delivery.objects.get(draft_id=draft.pk)
        assert delivery.text == sent
