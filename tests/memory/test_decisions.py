"""Supervisors' decisions are final for automatic paths, and profile and memory are one truth
(issue 14; DESIGN §7). Each automatic path — capture, re-capture, repeated words, backfill,
grounding — is tried against each decision — reject, forget, expire, human edit."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from conversations.models import CustomerProfile, MessageDirection
from memory.capture.backfill import Totals, customer_backfill
from memory.capture.ingest import messages_ingest
from memory.capture.services import capture_message
from memory.governance.services import (
    memory_item_add,
    memory_item_edit,
    memory_item_expire,
    memory_item_forget,
    memory_item_reject,
)
from memory.models import MemoryDecision, MemoryItem, MemoryStatus
from memory.profile import customer_profile_update
from tests.factories import CustomerFactory, MessageFactory, StaffUserFactory

SUPERVISOR = "主管王经理"


def _active(customer, key: str) -> MemoryItem | None:
    return MemoryItem.objects.filter(customer=customer, key=key, status=MemoryStatus.ACTIVE).first()


def _profile(customer) -> CustomerProfile:
    return CustomerProfile.objects.get(customer=customer)


def _say(customer, text: str, *, sent_at: dt.datetime | None = None):
    """A customer message, captured the way the worker captures it."""
    message = MessageFactory(customer=customer, text=text, **({"sent_at": sent_at} if sent_at else {}))
    capture_message(message=message)
    return message


def _later(minutes: int = 5) -> dt.datetime:
    return timezone.now() + dt.timedelta(minutes=minutes)


@pytest.fixture
def customer(account):
    return CustomerFactory(conversation_id="wm_liu", display_name="刘姐")


# --- reject ------------------------------------------------------------------------------------


def test_rejected_value_never_returns_from_recapture_repeats_or_backfill(customer):
    # given a captured layout the supervisor rejects
    first = _say(customer, "我想要一居室")
    item = _active(customer, "profile:layout")
    assert item is not None and _profile(customer).layout == "一居室"
    memory_item_reject(item=item, actor=SUPERVISOR, reason="客户其实要两居")
    # when every automatic path sees the same words again: re-capture, a new message, backfill
    capture_message(message=first)
    _say(customer, "我想要一居室", sent_at=_later())
    totals = Totals()
    customer_backfill(customer=customer, totals=totals)
    # then nothing comes back, and the profile agrees with memory
    assert _active(customer, "profile:layout") is None
    assert _profile(customer).layout == ""
    assert totals.written == 0


def test_rejected_preference_is_not_revived_by_the_same_words(customer):
    _say(customer, "我比较喜欢养猫的小区")
    item = MemoryItem.objects.get(customer=customer, status=MemoryStatus.ACTIVE, type="preference")
    memory_item_reject(item=item, actor=SUPERVISOR, reason="误读")
    _say(customer, "我比较喜欢养猫的小区", sent_at=_later())
    assert not MemoryItem.objects.filter(customer=customer, status=MemoryStatus.ACTIVE, type="preference").exists()


def test_a_different_value_after_a_rejection_is_still_captured(customer):
    # the decision is about one value, not about the customer's later, different words
    _say(customer, "我想要一居室")
    memory_item_reject(item=_active(customer, "profile:layout"), actor=SUPERVISOR, reason="记错")
    _say(customer, "我想要两居室", sent_at=_later())
    assert _active(customer, "profile:layout").content == "户型：两居室"
    assert _profile(customer).layout == "两居室"


# --- forget ------------------------------------------------------------------------------------


def test_forgotten_value_never_returns_and_is_kept_only_as_a_fingerprint(customer):
    # given a form of address the customer asked us to forget
    _say(customer, "叫我刘姐就好")
    item = _active(customer, "profile:preferred_name")
    memory_item_forget(item=item, actor=SUPERVISOR, reason="客户要求删除")
    # when the old words are replayed and repeated
    for message in customer.messages.all():
        capture_message(message=message)
    _say(customer, "叫我刘姐就好", sent_at=_later())
    customer_backfill(customer=customer, totals=Totals())
    # then it stays forgotten, and the decision rows (its words and its meaning) hold no content
    assert _active(customer, "profile:preferred_name") is None
    assert _profile(customer).preferred_name == ""
    decisions = list(MemoryDecision.objects.filter(customer=customer, kind="forgotten"))
    assert len(decisions) == 2
    for decision in decisions:
        assert "刘姐" not in f"{decision.key_fingerprint}{decision.value_fingerprint}"
        assert len(decision.value_fingerprint) == 64


# --- expire ------------------------------------------------------------------------------------


def test_expired_value_is_not_revived_by_old_evidence_but_is_by_a_new_statement(customer):
    _say(customer, "入住时间是12月1号")
    item = _active(customer, "profile:move_in_date")
    assert item is not None
    memory_item_expire(item=item, actor=SUPERVISOR, reason="日期已过")
    assert _profile(customer).move_in_date == ""
    # old evidence (re-capture, backfill) does not bring it back
    for message in customer.messages.all():
        capture_message(message=message)
    customer_backfill(customer=customer, totals=Totals())
    assert _active(customer, "profile:move_in_date") is None
    # the customer stating it again, after the expiry, does
    _say(customer, "入住时间是12月1号", sent_at=_later())
    assert _active(customer, "profile:move_in_date") is not None
    assert _profile(customer).move_in_date.startswith("12月1号")


# --- decisions are keyed by meaning, not spelling (issue 21, item 3) ---------------------------


def test_rejected_amount_does_not_return_in_another_spelling(customer):
    # given a budget the supervisor rejected
    _say(customer, "预算八千以内")
    memory_item_reject(item=_active(customer, "profile:budget"), actor=SUPERVISOR, reason="客户说错了")
    # when the customer later writes the same amount other ways
    for words in ("预算8000以内", "预算8k以内", "预算8千以内"):
        _say(customer, words, sent_at=_later())
    # then none of them brings it back; a different amount still does
    assert _active(customer, "profile:budget") is None
    _say(customer, "预算9000以内", sent_at=_later(10))
    assert _profile(customer).budget == "9000以内"


def test_forgotten_district_does_not_return_by_its_short_name(customer):
    _say(customer, "想在浦东新区附近找房")
    memory_item_forget(item=_active(customer, "profile:district"), actor=SUPERVISOR, reason="客户要求删除")
    _say(customer, "想在浦东附近找房", sent_at=_later())
    assert _active(customer, "profile:district") is None and _profile(customer).district == ""


def test_expired_date_does_not_return_when_the_model_proposes_it_without_the_date(customer):
    # given a move-in date said on 20 November (下个月15号 → 2026-12-15) that a supervisor expired
    said = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)
    message = _say(customer, "下个月15号入住", sent_at=said)
    item = _active(customer, "profile:move_in_date")
    assert item is not None and "2026-12-15" in item.content
    memory_item_expire(item=item, actor=SUPERVISOR, reason="日期已过")
    # when the model proposes the relative words alone, grounded in that message
    customer_profile_update(
        customer=customer,
        changes={"move_in_date": "下个月15号"},
        actor="pipeline",
        reason="模型画像更新",
        source_message_ids=[message.pk],
    )
    # then the expired date stays expired
    assert _active(customer, "profile:move_in_date") is None
    assert _profile(customer).move_in_date == ""


def test_customer_words_repeating_a_replaced_value_do_not_undo_the_edit(customer):
    # given the customer asked to be called 刘姐 and a supervisor changed it to 刘女士
    _say(customer, "叫我刘姐就好")
    memory_item_edit(
        item=_active(customer, "profile:preferred_name"),
        content="称呼：刘女士",
        actor=SUPERVISOR,
        reason="客户要求正式称呼",
    )
    # when the customer later says 刘姐 again
    _say(customer, "叫我刘姐就好", sent_at=_later())
    # then the supervisor's value stands
    assert _profile(customer).preferred_name == "刘女士"
    assert _active(customer, "profile:preferred_name").content == "称呼：刘女士"
    # and a genuinely new value is still captured
    _say(customer, "叫我小刘就行", sent_at=_later(10))
    assert _profile(customer).preferred_name == "小刘"


def test_a_profile_edit_replacing_a_value_holds_against_its_repeat(customer):
    _say(customer, "预算7500以内")
    customer_profile_update(customer=customer, changes={"budget": "8000以内"}, actor=SUPERVISOR, reason="电话确认")
    _say(customer, "预算七千五以内", sent_at=_later())
    assert _profile(customer).budget == "8000以内"


def test_a_replaced_value_a_supervisor_sets_back_takes_evidence_again(customer):
    _say(customer, "叫我刘姐就好")
    item = _active(customer, "profile:preferred_name")
    memory_item_edit(item=item, content="称呼：刘女士", actor=SUPERVISOR, reason="正式称呼")
    memory_item_edit(
        item=_active(customer, "profile:preferred_name"), content="称呼：刘姐", actor=SUPERVISOR, reason="客户坚持"
    )
    said = _say(customer, "叫我刘姐就好", sent_at=_later())
    current = _active(customer, "profile:preferred_name")
    assert current.content == "称呼：刘姐" and said.pk in current.source_message_ids


def test_a_spelling_only_edit_does_not_block_the_value_later(customer):
    # given a budget a supervisor only respelt (found by review: it recorded a replaced value)
    _say(customer, "预算八千以内")
    memory_item_edit(
        item=_active(customer, "profile:budget"), content="预算：8000元以内", actor=SUPERVISOR, reason="统一写法"
    )
    # when the customer changes their mind and then comes back to it
    _say(customer, "预算9000以内", sent_at=_later())
    _say(customer, "还是预算8000以内吧", sent_at=_later(10))
    # then the value is captured again
    assert "8000" in _profile(customer).budget


def test_a_rejected_lower_bound_does_not_refuse_the_upper_bound(customer):
    # 8000以上 and 8000以内 are different values (found by review: meaning dropped the bound)
    _say(customer, "预算8000以上")
    memory_item_reject(item=_active(customer, "profile:budget"), actor=SUPERVISOR, reason="客户说反了")
    _say(customer, "预算8000以内", sent_at=_later())
    assert _active(customer, "profile:budget") is not None


# --- human edits outrank older evidence --------------------------------------------------------


def test_human_edit_outranks_older_words_and_yields_to_newer_different_words(customer):
    # given the customer said 7500 and a supervisor corrected it to 8000 after a phone call
    old = _say(customer, "预算7500以内")
    memory_item_edit(
        item=_active(customer, "profile:budget"), content="预算：8000以内", actor=SUPERVISOR, reason="电话确认"
    )
    assert _profile(customer).budget == "8000以内"
    # when the old message is replayed, and backfill runs
    capture_message(message=old)
    customer_backfill(customer=customer, totals=Totals())
    # then the human value stands
    assert _active(customer, "profile:budget").content == "预算：8000以内"
    # and when the customer later states a different value, it supersedes the edit, linked
    _say(customer, "预算9000以内", sent_at=_later())
    current = _active(customer, "profile:budget")
    assert current.content == "预算：9000以内"
    assert MemoryItem.objects.get(customer=customer, content="预算：8000以内").superseded_by_id == current.pk
    assert _profile(customer).budget == "9000以内"


def test_human_added_constraint_is_not_overturned_by_an_older_preference(customer):
    # given an older message that liked the ground floor, and a supervisor's constraint after it
    old = MessageFactory(customer=customer, text="一楼也挺喜欢的")
    memory_item_add(
        customer=customer,
        content="不考虑：一楼",
        type="constraint",
        key="constraint:一楼",
        actor=SUPERVISOR,
        reason="客户电话里说一楼太潮",
    )
    # when the old message is captured (a late job or a backfill)
    capture_message(message=old)
    # then the human constraint is still the active one
    assert _active(customer, "constraint:一楼").content == "不考虑：一楼"


# --- grounding ---------------------------------------------------------------------------------


def test_grounded_update_cannot_restore_a_rejected_profile_value(customer):
    message = _say(customer, "预算7500以内")
    memory_item_reject(item=_active(customer, "profile:budget"), actor=SUPERVISOR, reason="客户说错了")
    # when the model's output grounds the same value in the same message
    customer_profile_update(
        customer=customer,
        changes={"budget": "7500以内"},
        actor="pipeline",
        reason="模型画像更新",
        source_message_ids=[message.pk],
    )
    # then neither memory nor the profile take it
    assert _active(customer, "profile:budget") is None
    assert _profile(customer).budget == ""


# --- profile and memory are one truth ------------------------------------------------------------


def test_profile_follows_every_governance_write_of_a_profile_item(customer):
    staff = StaffUserFactory()
    # add through the memory path with a profile key
    memory_item_add(customer=customer, content="静安区", key="profile:district", actor=staff, reason="电话确认")
    assert _profile(customer).district == "静安区"
    assert _active(customer, "profile:district").content == "意向区域：静安区"
    # edit
    memory_item_edit(item=_active(customer, "profile:district"), content="徐汇区", actor=staff, reason="改了")
    assert _profile(customer).district == "徐汇区"
    # reject
    memory_item_reject(item=_active(customer, "profile:district"), actor=staff, reason="不对")
    assert _profile(customer).district == ""


def test_profile_api_and_memory_api_agree(account, staff_client):
    # given a customer known through ingest
    messages_ingest(
        conversation_id="wm_zhou",
        messages=[
            {
                "external_id": "m1",
                "direction": MessageDirection.INBOUND,
                "text": "你好",
                "sent_at": timezone.now().isoformat(),
                "sender": "周先生",
            }
        ],
        actor="wecom",
    )
    base = "/api/accounts/acme/conversations/wm_zhou/"
    # when a supervisor adds a profile-keyed item through the memory API
    response = staff_client.post(
        base + "memory/", {"content": "预算：6000以内", "key": "profile:budget", "reason": "电话确认"}, format="json"
    )
    assert response.status_code == 201, response.json()
    # then the profile API shows the same value, and rejecting the item clears it
    assert staff_client.get(base + "profile/").json()["budget"] == "6000以内"
    item_id = response.json()["id"]
    assert staff_client.post(base + f"memory/{item_id}/reject/", {"reason": "错了"}, format="json").status_code == 200
    assert staff_client.get(base + "profile/").json()["budget"] == ""


def test_backfill_on_a_governed_account_reports_no_changes(customer):
    # given a history the supervisor curated (reject, forget, edit, expire)
    _say(customer, "我想要一居室")
    _say(customer, "叫我刘姐")
    _say(customer, "预算7500以内")
    _say(customer, "入住时间是12月1号")
    memory_item_reject(item=_active(customer, "profile:layout"), actor=SUPERVISOR, reason="错")
    memory_item_forget(item=_active(customer, "profile:preferred_name"), actor=SUPERVISOR, reason="删")
    memory_item_edit(item=_active(customer, "profile:budget"), content="预算：8000以内", actor=SUPERVISOR, reason="改")
    memory_item_expire(item=_active(customer, "profile:move_in_date"), actor=SUPERVISOR, reason="过期")
    # when backfill replays everything
    totals = Totals()
    customer_backfill(customer=customer, totals=totals)
    # then it changes nothing
    assert totals.written == 0
    assert _active(customer, "profile:budget").content == "预算：8000以内"
    assert _profile(customer).as_dict() == {
        "preferred_name": "",
        "city": "",
        "budget": "8000以内",
        "district": "",
        "layout": "",
        "move_in_date": "",
    }
