"""Acceptance relaxes: "X也能接受" is no wish, but it releases an earlier "不考虑：X" through the one
write path; a relaxed requirement ("朝向无所谓") releases the earlier want. A supervisor's decision
still wins, and an acceptance with nothing to relax writes nothing."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from memory.capture.services import capture_message
from memory.governance.services import memory_item_add
from memory.models import MemoryCreatedBy, MemoryItem, MemoryStatus, MemoryType
from qiwei_site.reading.extract import RELEASE_ALONE
from tests.factories import CustomerFactory, MessageFactory
from tests.qiwei_site.reading.extract.support import contents, released

RELEASES = [
    ("其实顶楼也能接受", {"可以接受：顶楼"}),
    ("老房子也可以考虑", {"可以接受：老房子"}),
    ("合租也行，便宜就好", {"可以接受：合租"}),
    ("不介意没有电梯", {"可以接受：没有电梯"}),
    ("北向的也没问题", {"可以接受：北向"}),
    ("想了想，可以接受临街的", {"可以接受：临街"}),
    ("朝向无所谓", {"不强求：朝向"}),
    ("对楼层没什么要求", {"不强求：楼层"}),
    ("也不是非要学区房", {"不强求：学区房"}),
    ("装修不挑", {"不强求：装修"}),
    ("I can live with a north-facing flat", {"Accepts: north-facing"}),
]
NO_RELEASE = [
    "顶楼也可以吗？",  # a question
    "我老婆说一楼也行",  # someone else's words
    "如果便宜，一楼也可以",  # a condition
    "我不能接受顶楼",  # a refusal
    "顶楼也行，开玩笑的",  # taken back
]


@pytest.mark.parametrize(("text", "expected"), RELEASES)
def test_extract_acceptance_is_a_release_not_a_candidate(text, expected):
    # given an acceptance or a relaxed requirement, when extracted
    # then it is no preference or constraint of its own, only a release
    assert contents(text) == set()
    assert released(text) == expected


@pytest.mark.parametrize("text", NO_RELEASE)
def test_extract_questions_hearsay_conditions_and_refusals_release_nothing(text):
    # given an acceptance asked about, reported, conditional, or a plain refusal, when extracted
    # then nothing is released
    assert released(text) == set()


def test_extract_accepted_total_price_is_the_budget():
    # given a buyer accepting a total price with its payment terms
    # then the price is the budget, with the qualifier beside it
    assert contents("总价两百六十万满五唯一也能接受") == {"预算：两百六十万（260万元，满五唯一）"}


def _say(customer, text, minutes):
    message = MessageFactory(customer=customer, text=text, sent_at=timezone.now() - dt.timedelta(minutes=minutes))
    capture_message(message=message)
    return message


def test_capture_acceptance_supersedes_the_earlier_constraint(account):
    # given a customer who ruled out the top floor
    customer = CustomerFactory()
    _say(customer, "顶楼不考虑，夏天太晒", minutes=30)
    constraint = MemoryItem.objects.get(customer=customer, key="constraint:顶楼", status=MemoryStatus.ACTIVE)
    # when they later accept it
    acceptance = _say(customer, "看了几套之后觉得顶楼也能接受", minutes=5)
    # then the constraint is superseded by the acceptance, which cites the new message
    constraint.refresh_from_db()
    current = MemoryItem.objects.get(customer=customer, key="preference:顶楼", status=MemoryStatus.ACTIVE)
    assert constraint.status == MemoryStatus.SUPERSEDED and constraint.superseded_by_id == current.pk
    assert (current.type, current.content, current.source_message_ids) == (
        MemoryType.PREFERENCE,
        "可以接受：顶楼",
        [acceptance.pk],
    )


def test_capture_acceptance_with_nothing_to_relax_is_only_proposed(account):
    # given a customer with no constraint on low floors
    customer = CustomerFactory()
    # when they say it is acceptable
    _say(customer, "低楼层也可以考虑", minutes=5)
    # then no memory is written (an acceptance is no wish of its own): a supervisor may read it as a
    # proposal (issue 35), which never reaches the snapshot or the profile
    assert not MemoryItem.objects.filter(customer=customer).exclude(status=MemoryStatus.PROPOSED).exists()
    (proposal,) = MemoryItem.objects.filter(customer=customer)
    assert proposal.held_back == RELEASE_ALONE


def test_capture_relaxed_requirement_supersedes_the_earlier_want(account):
    # given a customer who wanted a school-district flat
    customer = CustomerFactory()
    _say(customer, "想要学区房", minutes=30)
    # when they relax it
    _say(customer, "其实也不一定要学区房", minutes=5)
    # then the want is superseded by the relaxed statement under the same key
    (current,) = MemoryItem.objects.filter(customer=customer, key="preference:学区房", status=MemoryStatus.ACTIVE)
    assert current.content == "不强求：学区房"
    assert MemoryItem.objects.filter(customer=customer, key="preference:学区房").count() == 2


def test_capture_acceptance_older_than_a_supervisor_decision_is_refused(account):
    # given a supervisor who recorded the exclusion after the customer's message was sent
    customer = CustomerFactory()
    message = MessageFactory(customer=customer, text="顶楼其实也能接受", sent_at=timezone.now() - dt.timedelta(hours=2))
    human = memory_item_add(
        customer=customer,
        content="不考虑：顶楼",
        type=MemoryType.CONSTRAINT,
        key="constraint:顶楼",
        actor="supervisor",
        reason="电话里客户再次确认不要顶楼",
    )
    # when the older acceptance is captured (a retried job, a backfill)
    capture_message(message=message)
    # then the supervisor's constraint stands and no acceptance is written
    human.refresh_from_db()
    assert human.status == MemoryStatus.ACTIVE and human.created_by == MemoryCreatedBy.HUMAN
    assert not MemoryItem.objects.filter(customer=customer, key="preference:顶楼").exists()
