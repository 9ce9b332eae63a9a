"""What the decision rules do when asked on their own, and the edges mutation testing found unpinned
(issue 25, `scripts/mutation.sh decisions`): the standalone form of `automatic_write_refusal` reads
decisions and message times itself; an older message repeating the current value is evidence, never
a change; relative dates are compared as of today."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import stat

import pytest
from django.utils import timezone

from memory import decisions
from memory.decisions import (
    FINAL_KINDS,
    CustomerDecisions,
    automatic_write_refusal,
    decision_record,
    evidence_time,
    fingerprint_key,
    key_fingerprint,
    meaning_fingerprint,
    same_meaning,
    value_fingerprint,
    value_fingerprints,
)
from memory.governance.services import memory_item_add, memory_item_forget
from memory.items import EVIDENCE_ADDED, memory_item_put
from memory.models import DecisionKind, MemoryCreatedBy, MemoryItem, MemoryStatus
from qiwei_site.reading.meaning import meaning
from qiwei_site.reading.normalise import normalize_content
from tests.factories import CustomerFactory, MessageFactory

SUPERVISOR = "主管王经理"
KEY = "preference:pets"
CATS = "想找可以养猫的房子"


@pytest.fixture
def customer(account):
    return CustomerFactory(conversation_id="wm_zhao_cat", display_name="赵女士")


def _message(customer, text: str, *, minutes: int):
    """A customer message sent and received `minutes` from now (negative: in the past)."""
    at = timezone.now() + dt.timedelta(minutes=minutes)
    message = MessageFactory(customer=customer, text=text, sent_at=at)
    MessageFactory._meta.model.objects.filter(pk=message.pk).update(created_at=at)
    message.refresh_from_db()
    return message


def test_automatic_write_refusal_alone_reads_the_customers_decisions(customer):
    # given a value the supervisor forgot
    said = _message(customer, "我想找可以养猫的房子", minutes=-60)
    item = memory_item_put(
        customer=customer,
        type="preference",
        key=KEY,
        content=CATS,
        actor="capture",
        reason="抽取",
        source_message_ids=[said.pk],
    ).item
    memory_item_forget(item=item, actor=SUPERVISOR, reason="客户要求删除")
    # when the rule is asked without the batch's decisions, about the same value said again later
    again = _message(customer, "还是想找可以养猫的房子", minutes=5)
    refusal = automatic_write_refusal(
        customer=customer, key=KEY, content=CATS, evidence_at=evidence_time(customer, [again.pk])
    )
    # then it reads the decision itself and refuses
    assert refusal == "该值已被主管拒绝或遗忘"


def test_automatic_write_refusal_alone_reads_when_the_active_value_was_said(customer):
    # given an automatic item resting on a message from ten minutes ago
    newer = _message(customer, "我想找可以养猫的房子", minutes=-10)
    memory_item_put(
        customer=customer,
        type="preference",
        key=KEY,
        content=CATS,
        actor="capture",
        reason="抽取",
        source_message_ids=[newer.pk],
    )
    older = _message(customer, "我想找可以养狗的房子", minutes=-60)
    # when asked without the batch's message times about a different value from an older message
    refusal = automatic_write_refusal(
        customer=customer, key=KEY, content="想找可以养狗的房子", evidence_at=evidence_time(customer, [older.pk])
    )
    # then the newer words win
    assert refusal == "更新的客户原话已覆盖该值"


def test_evidence_time_is_the_newest_cited_message_by_the_earlier_of_sent_and_received(customer):
    # given two messages, the newer one claiming a send time an hour after it reached us
    first = _message(customer, "预算八千左右", minutes=-30)
    second = _message(customer, "预算可以再高一点", minutes=-5)
    received_at = second.created_at
    MessageFactory._meta.model.objects.filter(pk=second.pk).update(sent_at=received_at + dt.timedelta(hours=1))
    # when the evidence time of both is read
    at = evidence_time(customer, [str(first.pk), second.pk])
    # then it is when the newest one reached us, not the future time it claims
    assert at == received_at
    assert evidence_time(customer, []) is None
    assert evidence_time(CustomerFactory(), [first.pk]) is None  # another customer's message is no evidence


def test_an_older_message_repeating_the_automatic_value_adds_evidence(customer):
    # given an automatic item resting on a recent message
    newer = _message(customer, "我想找可以养猫的房子", minutes=-5)
    memory_item_put(
        customer=customer,
        type="preference",
        key=KEY,
        content=CATS,
        actor="capture",
        reason="抽取",
        source_message_ids=[newer.pk],
    )
    # when an older message with the same value is captured late (a retried job)
    older = _message(customer, "想找可以养猫的房子", minutes=-90)
    result = memory_item_put(
        customer=customer,
        type="preference",
        key=KEY,
        content=CATS,
        actor="capture",
        reason="补抽",
        source_message_ids=[older.pk],
    )
    # then it is evidence for the same value, not a refused change
    assert result.outcome == EVIDENCE_ADDED
    assert result.item is not None and result.item.source_message_ids == [newer.pk, older.pk]


def test_an_older_message_repeating_the_supervisors_value_adds_evidence(customer):
    # given a supervisor's item
    older = _message(customer, "想找可以养猫的房子", minutes=-90)
    item = memory_item_add(
        customer=customer, type="preference", key=KEY, content=CATS, actor=SUPERVISOR, reason="电话里确认"
    )
    # when a message older than the supervisor's decision says the same value
    result = memory_item_put(
        customer=customer,
        type="preference",
        key=KEY,
        content=CATS,
        actor="capture",
        reason="抽取",
        source_message_ids=[older.pk],
    )
    # then it backs the supervisor's item, which stays theirs
    assert result.outcome == EVIDENCE_ADDED
    item = MemoryItem.objects.get(pk=item.pk)
    assert item.status == MemoryStatus.ACTIVE and item.created_by == MemoryCreatedBy.HUMAN
    assert item.source_message_ids == [older.pk]


def test_same_meaning_reads_relative_dates_as_of_today(account):
    # given "tomorrow" and tomorrow's date written out
    tomorrow = timezone.localdate() + dt.timedelta(days=1)
    # when compared, then they are one value; the day after is not
    assert same_meaning("明天入住", f"{tomorrow:%Y-%m-%d}入住")
    assert not same_meaning("明天入住", f"{tomorrow + dt.timedelta(days=1):%Y-%m-%d}入住")


def test_evidence_at_the_very_moment_of_an_expiry_counts_as_older(customer):
    # given a value expired at a known moment
    item = memory_item_put(
        customer=customer, type="preference", key=KEY, content=CATS, actor="capture", reason="抽取"
    ).item
    decided_at = timezone.now() - dt.timedelta(hours=1)
    decision_record(item=item, kind=DecisionKind.EXPIRED, at=decided_at)
    # when the same value comes with evidence from that very moment, then it does not come back
    refusal = automatic_write_refusal(
        customer=customer, key=KEY, content=CATS, evidence_at=decided_at, active=lambda _key: None
    )
    assert refusal == "该值已过期或被清空，证据早于该决定"
    # one microsecond later it does
    later = decided_at + dt.timedelta(microseconds=1)
    assert automatic_write_refusal(customer=customer, key=KEY, content=CATS, evidence_at=later) is None


def test_customer_decisions_add_keeps_the_ones_read_and_finds_a_key(customer):
    # given a customer's decisions read once: a rejection on one key
    item = memory_item_put(
        customer=customer, type="preference", key=KEY, content=CATS, actor="capture", reason="抽取"
    ).item
    decision_record(item=item, kind=DecisionKind.REJECTED)
    decisions = CustomerDecisions.load(customer)
    # when a forget on another key is recorded during the batch
    other = "preference:floor"
    decisions.add(decision_record(customer=customer, key=other, kind=DecisionKind.FORGOTTEN, contents=["不要一楼"]))
    # then both keys are found by their key fingerprint, and a key with none is not
    assert decisions.last(FINAL_KINDS, key=key_fingerprint(customer, KEY)) is not None
    assert decisions.last(FINAL_KINDS, key=key_fingerprint(customer, other)) is not None
    assert decisions.last(FINAL_KINDS, key=key_fingerprint(customer, "preference:pets_none")) is None
    assert decisions.last((DecisionKind.EXPIRED,), key=key_fingerprint(customer, KEY)) is None


def test_a_value_the_supervisor_set_back_in_other_words_may_be_said_again(customer):
    # given "下个月15号入住" (said in November) replaced by a supervisor, who later set the move-in
    # back to the same day written as a date
    said_on = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=8)))
    key = "profile:move_in_date"
    replaced = CustomerDecisions(
        rows=[
            (DecisionKind.REPLACED, key_fingerprint(customer, key), fp, said_on - dt.timedelta(days=3))
            for fp in value_fingerprints(customer, key, "下个月15号入住", on=said_on)
        ]
    )
    current = MemoryItem(
        customer=customer,
        key=key,
        content="2026-12-15入住",
        created_by=MemoryCreatedBy.HUMAN,
        updated_at=said_on - dt.timedelta(days=2),
    )
    # when the customer says it again in their own words, then it is the current value, not refused
    refusal = automatic_write_refusal(
        customer=customer,
        key=key,
        content="下个月15号入住",
        evidence_at=said_on,
        decisions=replaced,
        active=lambda governed_key: current if governed_key == key else None,
        received=lambda _ids: None,
    )
    assert refusal is None
    # while a value the supervisor replaced and did not set back stays refused
    current.content = "2027-01-15入住"
    refusal = automatic_write_refusal(
        customer=customer,
        key=key,
        content="下个月15号入住",
        evidence_at=said_on,
        decisions=replaced,
        active=lambda governed_key: current if governed_key == key else None,
        received=lambda _ids: None,
    )
    assert refusal == "主管已把该值改成了别的值"


@pytest.mark.parametrize(
    ("kind", "refusal"),
    [
        (DecisionKind.REJECTED, "该键上的值已被主管拒绝或遗忘，证据早于该决定"),
        (DecisionKind.FORGOTTEN, "该键上的值已被主管拒绝或遗忘，证据早于该决定"),
        (DecisionKind.CLEARED, "主管已清空该画像字段，证据早于该决定"),
    ],
)
def test_a_decision_on_the_key_holds_back_other_values_from_older_words(customer, kind, refusal):
    # given a decision on the budget key, about one value
    key = "profile:budget"
    decided_at = timezone.now() - dt.timedelta(hours=1)
    decision_record(customer=customer, key=key, kind=kind, contents=["预算：8000元"], at=decided_at)
    # when another value comes from words older than the decision, then it is held back
    older = decided_at - dt.timedelta(minutes=1)
    assert automatic_write_refusal(customer=customer, key=key, content="预算：6000元", evidence_at=older) == refusal
    # and from newer words it is not
    newer = decided_at + dt.timedelta(minutes=1)
    assert automatic_write_refusal(customer=customer, key=key, content="预算：6000元", evidence_at=newer) is None


def test_a_supervisors_value_outranks_older_words_of_another_value(customer):
    # given a supervisor's item
    memory_item_add(customer=customer, type="preference", key=KEY, content=CATS, actor=SUPERVISOR, reason="电话里确认")
    # when another value comes from words older than it, then it is held back; newer words pass
    older = timezone.now() - dt.timedelta(days=1)
    refusal = automatic_write_refusal(customer=customer, key=KEY, content="想找可以养狗的房子", evidence_at=older)
    assert refusal == "人工确认的内容优先于更早的自动证据"
    newer = timezone.now() + dt.timedelta(minutes=5)
    assert automatic_write_refusal(customer=customer, key=KEY, content="想找可以养狗的房子", evidence_at=newer) is None


def test_automatic_write_refusal_alone_reads_the_active_item_under_that_key(customer):
    # given a supervisor's item under another key, and a superseded one under this key
    memory_item_add(
        customer=customer,
        type="preference",
        key="preference:floor",
        content="不要一楼",
        actor=SUPERVISOR,
        reason="确认",
    )
    memory_item_add(customer=customer, type="preference", key=KEY, content=CATS, actor=SUPERVISOR, reason="确认")
    memory_item_add(
        customer=customer, type="preference", key=KEY, content="想找可以养狗的房子", actor=SUPERVISOR, reason="改口"
    )
    MemoryItem.objects.filter(customer=customer, key=KEY, status=MemoryStatus.ACTIVE).update(
        status=MemoryStatus.SUPERSEDED
    )
    # when older words give a value under this key, then nothing active is in the way
    older = timezone.now() - dt.timedelta(days=1)
    assert automatic_write_refusal(customer=customer, key=KEY, content="想找可以养鸟的房子", evidence_at=older) is None


def test_automatic_write_refusal_alone_looks_only_at_this_customers_items(customer):
    # given another customer whose supervisor set the same key
    memory_item_add(
        customer=CustomerFactory(display_name="钱先生"),
        type="preference",
        key=KEY,
        content="想找可以养狗的房子",
        actor=SUPERVISOR,
        reason="电话里确认",
    )
    # when our customer's older words are asked about, then nothing of theirs is in the way
    older = timezone.now() - dt.timedelta(days=1)
    assert automatic_write_refusal(customer=customer, key=KEY, content=CATS, evidence_at=older) is None


def test_a_supervisors_item_under_a_contradicted_key_outranks_older_words(customer):
    # given a supervisor's "no pets" constraint, and nothing yet under the preference key
    memory_item_add(
        customer=customer, type="constraint", key="constraint:pets", content="不养宠物", actor=SUPERVISOR, reason="确认"
    )
    # when older words would set a pet preference that supersedes the constraint
    older = timezone.now() - dt.timedelta(days=1)
    refusal = automatic_write_refusal(
        customer=customer, key=KEY, content=CATS, evidence_at=older, supersedes_keys=["constraint:pets"]
    )
    # then the supervisor's item holds
    assert refusal == "人工确认的内容优先于更早的自动证据"


def test_fingerprints_keep_their_format_so_stored_decisions_stay_recognised(customer, settings):
    # given a configured fingerprint key
    settings.QIWEI_MEMORY_FINGERPRINT_KEY = "固定的测试密钥"
    secret = "固定的测试密钥".encode()
    said_on = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=8)))

    def expected(*parts: str) -> str:
        message = "\x1f".join([str(customer.pk), *parts]).encode("utf-8")
        return hmac.new(secret, message, hashlib.sha256).hexdigest()

    # then each fingerprint is the HMAC of (customer, kind, key[, value]) joined by the unit separator,
    # as the decisions already stored were made
    assert fingerprint_key() == secret
    assert key_fingerprint(customer, KEY) == expected("key", KEY)
    assert value_fingerprint(customer, KEY, " 想找可以养猫的房子 ") == expected("value", KEY, normalize_content(CATS))
    assert meaning_fingerprint(customer, KEY, "下个月15号入住", on=said_on) == expected(
        "meaning", KEY, meaning("下个月15号入住", today=dt.date(2026, 11, 20))
    )


def test_meaning_fingerprint_without_a_day_leaves_relative_dates_unread(customer):
    # given "tomorrow" and tomorrow's date, with no day they were said on
    tomorrow = timezone.localdate() + dt.timedelta(days=1)
    # then they are not taken for one value
    assert meaning_fingerprint(customer, KEY, "明天入住", on=None) != meaning_fingerprint(
        customer, KEY, f"{tomorrow:%Y-%m-%d}入住", on=None
    )


def test_fingerprint_key_is_made_once_private_and_kept_in_the_data_dir(db, settings, tmp_path, monkeypatch):
    # given a new server process with no configured key and a data dir not made yet
    monkeypatch.setattr(decisions, "_key_cache", {})
    settings.QIWEI_MEMORY_FINGERPRINT_KEY = ""
    settings.QIWEI_KEY_DIR = tmp_path / "新部署" / "data"
    # when the key is first needed
    key = fingerprint_key()
    # then it is a random 256-bit key in a file only the server's user reads
    path = settings.QIWEI_KEY_DIR / "memory-fingerprint.key"
    assert path.read_text() == key.decode() and len(key) == 64 and int(key, 16) >= 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # and it is the same key afterwards, even once the file is gone (it is read once per process)
    path.unlink()
    assert fingerprint_key() == key


def test_a_forgotten_relative_date_is_known_by_the_day_it_was_said(customer):
    # given "下个月15号入住" said on 20 October (so 15 November), and a later message in November
    october = dt.datetime(2026, 10, 20, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=8)))
    said = MessageFactory(customer=customer, text="下个月15号入住", sent_at=october)
    MessageFactory(customer=customer, text="好的谢谢", sent_at=october + dt.timedelta(days=20))
    item = memory_item_put(
        customer=customer,
        type="fact",
        key="fact:move_in_plan",
        content="下个月15号入住",
        actor="capture",
        reason="抽取",
        source_message_ids=[said.pk],
    ).item
    # when the supervisor forgets it (weeks later), and the same day comes back written as a date
    decision_record(item=item, kind=DecisionKind.FORGOTTEN)
    refusal = automatic_write_refusal(
        customer=customer,
        key="fact:move_in_plan",
        content="2026-11-15入住",
        evidence_at=timezone.now(),
        active=lambda _key: None,
    )
    # then it is recognised as the forgotten value
    assert refusal == "该值已被主管拒绝或遗忘"


def test_a_supervisors_value_repeated_still_leaves_the_contradicted_key_to_its_supervisor(customer):
    # given a supervisor's pet preference and a supervisor's "no pets" constraint
    memory_item_add(customer=customer, type="preference", key=KEY, content=CATS, actor=SUPERVISOR, reason="确认")
    memory_item_add(
        customer=customer, type="constraint", key="constraint:pets", content="不养宠物", actor=SUPERVISOR, reason="确认"
    )
    # when older words repeat the preference and would supersede the constraint
    older = timezone.now() - dt.timedelta(days=1)
    refusal = automatic_write_refusal(
        customer=customer, key=KEY, content=CATS, evidence_at=older, supersedes_keys=["constraint:pets"]
    )
    # then the constraint's supervisor still outranks them
    assert refusal == "人工确认的内容优先于更早的自动证据"
