"""An acceptance relaxes an active refusal only when it is the customer's own firm words (issue 35
review, H1): a forwarded one is proposed and the refusal stays."""

from __future__ import annotations

from memory.capture.services import capture_message
from memory.models import MemoryItem, MemoryStatus
from tests.factories import MessageFactory


def test_forwarded_acceptance_leaves_the_active_refusal_in_place(customer):
    # given the customer refused flats on a busy street
    capture_message(message=MessageFactory(customer=customer, text="临街的房子不考虑，太吵了"))
    refusal = MemoryItem.objects.get(customer=customer, key="constraint:临街", status=MemoryStatus.ACTIVE)
    # when they forward their wife's words accepting it
    capture_message(message=MessageFactory(customer=customer, text="转发一下我老婆发的：其实临街也能接受"))
    # then the refusal is still active and the acceptance waits for a supervisor
    refusal.refresh_from_db()
    assert refusal.status == MemoryStatus.ACTIVE
    assert not MemoryItem.objects.filter(customer=customer, key="preference:临街", status=MemoryStatus.ACTIVE)
    proposal = MemoryItem.objects.get(customer=customer, key="preference:临街", status=MemoryStatus.PROPOSED)
    assert proposal.held_back == "forwarded"


def test_own_acceptance_relaxes_the_active_refusal(customer):
    # given the same refusal
    capture_message(message=MessageFactory(customer=customer, text="临街的房子不考虑，太吵了"))
    refusal = MemoryItem.objects.get(customer=customer, key="constraint:临街", status=MemoryStatus.ACTIVE)
    # when the customer says it themself
    capture_message(message=MessageFactory(customer=customer, text="看了几套，临街我其实也能接受"))
    # then the acceptance is written and supersedes the refusal
    refusal.refresh_from_db()
    accepted = MemoryItem.objects.get(customer=customer, key="preference:临街", status=MemoryStatus.ACTIVE)
    assert refusal.status == MemoryStatus.SUPERSEDED and refusal.superseded_by_id == accepted.pk
