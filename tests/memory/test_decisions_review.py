"""Holes a review found in "decisions are final" (issue 14), each reproduced before it was mended."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from conversations.models import CustomerProfile
from memory.capture.backfill import Totals, customer_backfill
from memory.capture.services import capture_message
from memory.governance.services import memory_item_add, memory_item_edit, memory_item_forget
from memory.models import MemoryItem, MemoryStatus
from memory.profile import customer_profile_update
from qiwei_site.platform.errors import ValidationFailed
from tests.factories import CustomerFactory, MessageFactory

SUP = "主管"


def _active(customer, key):
    return MemoryItem.objects.filter(customer=customer, key=key, status=MemoryStatus.ACTIVE).first()


def _profile(customer):
    return CustomerProfile.objects.get(customer=customer)


@pytest.fixture
def customer(account):
    return CustomerFactory(conversation_id="wm_review", display_name="刘姐")


def test_decision_cleared_profile_field_stays_cleared_through_backfill(customer):
    m = MessageFactory(customer=customer, text="我想要一居室")
    capture_message(message=m)
    assert _profile(customer).layout == "一居室"
    # supervisor clears the field (a human edit)
    customer_profile_update(customer=customer, changes={"layout": ""}, actor=SUP, reason="客户说户型未定")
    assert _profile(customer).layout == "" and _active(customer, "profile:layout") is None
    customer_backfill(customer=customer, totals=Totals())
    # BUG if restored
    assert _profile(customer).layout == "", "cleared field restored by backfill"


def test_decision_cleared_profile_field_is_not_refilled_by_grounding_on_older_words(customer):
    m = MessageFactory(customer=customer, text="我想要一居室")
    capture_message(message=m)
    customer_profile_update(customer=customer, changes={"layout": ""}, actor=SUP, reason="户型未定")
    # the model proposes layout again on the next turn, grounded in the old message
    customer_profile_update(
        customer=customer, changes={"layout": "一居室"}, actor="capture", reason="grounded", source_message_ids=[m.pk]
    )
    assert _profile(customer).layout == "", "cleared field restored by grounding on older evidence"


def test_decision_forget_refuses_every_earlier_value_of_the_item(customer):
    m = MessageFactory(customer=customer, text="我想要一居室")
    capture_message(message=m)
    item = _active(customer, "profile:layout")
    memory_item_edit(item=item, content="两居室", actor=SUP, reason="更正")
    memory_item_forget(item=_active(customer, "profile:layout"), actor=SUP, reason="客户要求删除户型")
    assert _profile(customer).layout == ""
    capture_message(message=m)  # re-capture / backfill of the old message
    back = _active(customer, "profile:layout")
    assert back is None, "content purged by forget came back from the old message"


def test_decision_human_add_of_the_current_value_outranks_older_words(customer):
    old = MessageFactory(customer=customer, text="我想要一居室")  # t0
    new = MessageFactory(customer=customer, text="还是想要两居室吧")  # t1 > t0
    capture_message(message=old)
    capture_message(message=new)
    assert _profile(customer).layout in ("两居室", "两居")
    value = _profile(customer).layout
    # supervisor vouches for the current value: a human add under the profile key
    memory_item_add(customer=customer, key="profile:layout", content=value, actor=SUP, reason="电话确认")
    # a grounded update citing the OLDER message arrives (model re-read history)
    customer_profile_update(
        customer=customer, changes={"layout": "一居室"}, actor="capture", reason="grounded", source_message_ids=[old.pk]
    )
    assert _profile(customer).layout == value, "human-confirmed value overridden by older automatic evidence"


def test_decision_profile_item_longer_than_the_profile_column_is_refused(customer):
    m = MessageFactory(customer=customer, text="预算5000")
    capture_message(message=m)
    item = _active(customer, "profile:budget")
    assert item is not None
    long = "5000元以内，" + "押一付三可以商量" * 6
    with pytest.raises(ValidationFailed, match="最长 50"):
        memory_item_edit(item=item, content=long, actor=SUP, reason="补充")
    assert _profile(customer).budget == "5000"


def test_decision_human_type_edit_survives_recapture_of_its_message(customer):
    m = MessageFactory(customer=customer, text="我比较喜欢地铁附近的")
    capture_message(message=m)
    item = MemoryItem.objects.get(customer=customer, status=MemoryStatus.ACTIVE)
    memory_item_edit(item=item, type="fact", actor=SUP, reason="这是硬性事实")
    capture_message(message=m)  # re-capture / backfill of the very message the item came from
    now = MemoryItem.objects.get(customer=customer, key=item.key, status=MemoryStatus.ACTIVE)
    assert now.pk == item.pk and now.type == "fact", "human type edit undone by older automatic evidence"


def test_decision_todays_profile_edit_outranks_words_older_than_it(customer):
    from memory.models import MemoryDecision

    # Jan: a supervisor adds the budget (decision ADDED, dated Jan)
    added = memory_item_add(customer=customer, key="profile:budget", content="5000", actor=SUP, reason="电话")
    jan = timezone.now() - dt.timedelta(days=60)
    MemoryDecision.objects.filter(customer=customer).update(decided_at=jan)
    MemoryItem.objects.filter(pk=added.pk).update(updated_at=jan, created_at=jan)
    # Feb: the customer says 8000 (newer than Jan) -> auto item supersedes the human one
    feb_msg = MessageFactory(customer=customer, text="预算8000", sent_at=jan + dt.timedelta(days=30))
    capture_message(message=feb_msg)
    assert "8000" in _profile(customer).budget
    # now: the supervisor edits the profile field (human edit through the profile service)
    customer_profile_update(customer=customer, changes={"budget": "6000"}, actor=SUP, reason="客户电话改口")
    assert _profile(customer).budget == "6000"
    # grounding on the February message (older than today's human edit)
    customer_profile_update(
        customer=customer,
        changes={"budget": "8000"},
        actor="capture",
        reason="grounded",
        source_message_ids=[feb_msg.pk],
    )
    assert _profile(customer).budget == "6000", "today's human edit undone by February evidence"


def test_decision_rejected_value_does_not_return_written_another_way(customer):
    from memory.governance.services import memory_item_reject
    from sessions_epoch.pipeline import ground_profile_updates

    m = MessageFactory(customer=customer, text="我预算8000元左右")
    capture_message(message=m)
    item = _active(customer, "profile:budget")
    memory_item_reject(item=item, actor=SUP, reason="客户说的是别人的预算")
    grounded, evidence, _dropped, _proposed = ground_profile_updates(customer=customer, updates={"budget": "8000元"})
    customer_profile_update(
        customer=customer, changes=grounded, actor="capture", reason="grounded", source_message_ids=evidence["budget"]
    )
    back = _active(customer, "profile:budget")
    assert back is None, "rejected budget came back via grounding as a different string"
