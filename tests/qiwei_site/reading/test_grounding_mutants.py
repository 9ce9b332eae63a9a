"""The grounding reader's rules one at a time, on candidates built by hand (issue 25,
`scripts/mutation.sh grounding`): what the reader parsed from the customer's words decides, not the
words the candidate keeps; a value must stand alone; a date needs the message's send time."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from qiwei_site.reading.extract import Candidate, ExtractContext
from qiwei_site.reading.grounding import carries_content, read_field, reads_same
from qiwei_site.reading.safety import scan, without_personal_numbers
from qiwei_site.reading.values import Amount, DateSpan, Place

SENT = ExtractContext(sent_at=dt.datetime(2026, 11, 1, 17, 0, tzinfo=ZoneInfo("Asia/Shanghai")))
BUDGET = Amount(words="四千五", low=4500.0, high=4500.0, bound="exact", unit="元", topic="预算", start=2, end=5)
MOVE_IN = DateSpan(words="下个月15号", first=dt.date(2026, 12, 15), last=dt.date(2026, 12, 15), start=0, end=6)
SOON = DateSpan(words="尽快", first=dt.date(2026, 11, 1), last=dt.date(2026, 11, 7), soon=True, start=0, end=2)
PUDONG = Place(words="浦东", name="浦东新区", rank="district", city="上海市", code="310115", start=3, end=5)


def _candidate(field: str, value: str, *values: Amount | DateSpan | Place) -> Candidate:
    return Candidate(type="fact", key=f"profile:{field}", content=value, field=field, value=value, values=tuple(values))


@pytest.mark.parametrize(
    ("field", "proposed", "candidate"),
    [
        ("budget", "4500元", _candidate("budget", "预算就按之前说的", BUDGET)),
        ("move_in_date", "2026-12-15", _candidate("move_in_date", "就那天搬", MOVE_IN)),
        ("district", "浦东新区", _candidate("district", "就那边", PUDONG)),
    ],
    ids=["amount", "date", "place"],
)
def test_reads_same_compares_the_values_the_reader_parsed_not_the_words_kept(field, proposed, candidate):
    # given a candidate whose parsed value is not spelt in its words
    # when the model's value is compared, then the parsed value decides
    assert reads_same(field, proposed, candidate, SENT)


@pytest.mark.parametrize(
    ("field", "proposed", "candidate"),
    [
        ("budget", "5000元", _candidate("budget", "预算就按之前说的", BUDGET)),
        ("move_in_date", "2026-12-16", _candidate("move_in_date", "就那天搬", MOVE_IN)),
        ("district", "徐汇区", _candidate("district", "就那边", PUDONG)),
    ],
    ids=["amount", "date", "place"],
)
def test_reads_same_refuses_another_value_than_the_one_parsed(field, proposed, candidate):
    assert not reads_same(field, proposed, candidate, SENT)


def test_reads_same_reads_the_words_when_nothing_was_parsed():
    # given candidates with no parsed values: their words are read the same way as the model's value
    budget = _candidate("budget", "四千五左右")
    move_in = _candidate("move_in_date", "12月15号")
    city = _candidate("city", "上海")
    # then equal canonical values agree, others do not
    assert reads_same("budget", "4500", budget, SENT) and not reads_same("budget", "4600", budget, SENT)
    assert reads_same("move_in_date", "2026-12-15", move_in, SENT)
    assert not reads_same("move_in_date", "2026-12-14", move_in, SENT)
    assert reads_same("city", "上海市", city, SENT) and not reads_same("city", "北京市", city, SENT)


def test_reads_same_needs_the_send_time_for_a_date():
    # given a date read from a message whose send time is unknown
    candidate = _candidate("move_in_date", "就那天搬", MOVE_IN)
    # then no proposed date can be resolved, so none agrees
    assert not reads_same("move_in_date", "2026-12-15", candidate, ExtractContext())
    # while the very same words still agree as words
    assert reads_same("move_in_date", "就那天搬", candidate, ExtractContext())


def test_reads_same_never_agrees_on_a_soon_date():
    # given "as soon as possible", read as the coming week
    candidate = _candidate("move_in_date", "越快越好", SOON)
    # then no date the model names agrees with it
    assert not reads_same("move_in_date", "2026-11-01至2026-11-07", candidate, SENT)


@pytest.mark.parametrize(
    ("field", "proposed"),
    [
        ("budget", "4500元，另外要能养猫"),
        ("district", "浦东新区，靠近地铁"),
        ("move_in_date", "2026-12-15，要先看房"),
    ],
)
def test_reads_same_refuses_a_value_with_more_beside_it(field, proposed):
    # given the right value with other words beside it
    candidate = {
        "budget": _candidate("budget", "预算四千五", BUDGET),
        "district": _candidate("district", "浦东", PUDONG),
    }
    candidate["move_in_date"] = _candidate("move_in_date", "下个月15号", MOVE_IN)
    # then it does not agree: only decoration may stand beside the value
    assert not reads_same(field, proposed, candidate[field], SENT)


def test_reads_same_allows_decoration_beside_the_value():
    candidate = _candidate("budget", "预算四千五", BUDGET)
    assert reads_same("budget", "「4500元」！", candidate, SENT)


def test_reads_same_refuses_another_field_an_empty_reading_or_an_empty_value():
    budget = _candidate("budget", "4500", BUDGET)
    # another field, though the text is equal
    assert not reads_same("layout", "4500", budget, SENT)
    # a candidate that read no value
    assert not reads_same("budget", "4500", _candidate("budget", "", BUDGET), SENT)
    # a model value that is only blanks, even against a candidate of blanks
    assert not reads_same("budget", "   ", _candidate("budget", "   "), SENT)


def test_reads_same_text_fields_agree_only_by_their_words():
    # given a layout read as words
    candidate = _candidate("layout", "两居室")
    # then the same words agree (however spaced), other words do not
    assert reads_same("layout", " 两居室 ", candidate, SENT)
    assert not reads_same("layout", "二居室", candidate, SENT)


def test_read_field_is_any_candidate_of_the_message():
    # given one message read as a layout and a budget
    candidates = [_candidate("layout", "两居室"), _candidate("budget", "预算四千五", BUDGET)]
    # then either field is found among them, and a field no candidate reads is not
    assert read_field("budget", "4500", candidates, SENT)
    assert read_field("layout", "两居室", candidates, SENT)
    assert not read_field("district", "浦东新区", candidates, SENT)
    assert not read_field("budget", "4500", [], SENT)


def test_carries_content_is_false_for_small_talk_and_a_cut_out_number_with_thanks():
    # given a greeting, and a number cut out with only its label and thanks left
    with_thanks = "我的手机号是13812345678，谢谢"
    # then neither carries content a hypothesis could rest on
    assert not carries_content("你好")
    assert not carries_content(without_personal_numbers(with_thanks, scan(with_thanks).spans))
