"""Relative dates resolve against when the message was sent (here Wednesday 2027-03-10, Shanghai):
the fact keeps the words and the date, and expires once the date has passed."""

from __future__ import annotations

import datetime as dt

import pytest

from qiwei_site.reading.extract import LEASE_END_KEY, VIEWING_KEY, extract, extract_candidates
from qiwei_site.reading.values import dates_in
from tests.qiwei_site.reading.extract.support import SENT_AT, SHANGHAI, contents, context

MOVE_IN = [
    ("下个月8号搬进去", "入住时间：下个月8号（2027-04-08）", dt.date(2027, 4, 8)),
    ("月底之前入住", "入住时间：月底（2027-03-21至2027-03-31）", dt.date(2027, 3, 31)),
    ("下周五入住", "入住时间：下周五（2027-03-19）", dt.date(2027, 3, 19)),
    ("后天就能搬", "入住时间：后天（2027-03-12）", dt.date(2027, 3, 12)),
    ("大后天搬家", "入住时间：大后天（2027-03-13）", dt.date(2027, 3, 13)),
    ("五一之后入住", "入住时间：五一之后（2027-05-06至2027-05-19）", dt.date(2027, 5, 19)),
    ("4月中旬起租", "入住时间：4月中旬（2027-04-11至2027-04-20）", dt.date(2027, 4, 20)),
    ("这个月20号入住", "入住时间：这个月20号（2027-03-20）", dt.date(2027, 3, 20)),
    ("8号入住", "入住时间：8号（2027-04-08）", dt.date(2027, 4, 8)),  # the 8th has passed this month
    ("两个星期后入住", "入住时间：两个星期后（2027-03-24至2027-03-30）", dt.date(2027, 3, 30)),
    ("国庆前要入住", "入住时间：国庆前（2027-03-10至2027-09-30）", dt.date(2027, 9, 30)),
    ("明年一月初搬过去", "入住时间：明年一月初（2028-01-01至2028-01-10）", dt.date(2028, 1, 10)),
]
OTHER_DATED = [
    ("现在这套房子6月底到期", LEASE_END_KEY, "租约到期：6月底（2027-06-21至2027-06-30）", dt.date(2027, 6, 30)),
    ("合同下下个月到期", LEASE_END_KEY, "租约到期：下下个月（2027-05-01至2027-05-31）", dt.date(2027, 5, 31)),
    ("看房时间约在这周六下午", VIEWING_KEY, "看房时间：这周六下午（2027-03-13）", dt.date(2027, 3, 13)),
    ("约了周日上午看房", VIEWING_KEY, "看房时间：周日上午（2027-03-14）", dt.date(2027, 3, 14)),
]
NOT_DATED = [
    "周末可以看房吗",  # a question
    "明天下午可以看房",  # an offer of a time, not an appointment
    "我上周刚搬过来",  # past
    "2号线附近就行",
    "如果下个月能入住就好了",  # a condition
]


def _expected_expiry(last_day: dt.date) -> dt.datetime:
    # the start of the day after the last day, plus one day of grace
    return dt.datetime.combine(last_day + dt.timedelta(days=2), dt.time.min, tzinfo=SHANGHAI)


@pytest.mark.parametrize(("text", "content", "last_day"), MOVE_IN)
def test_extract_move_in_date_resolves_and_expires(text, content, last_day):
    # given a move-in time in the customer's words, sent on 2027-03-10
    (candidate,) = extract(text, context()).candidates
    # then the fact keeps the words and the date, and expires after the date
    assert candidate.content == content
    assert candidate.expires_at == _expected_expiry(last_day)


@pytest.mark.parametrize(("text", "key", "content", "last_day"), OTHER_DATED)
def test_extract_viewing_time_and_lease_end_are_dated_facts(text, key, content, last_day):
    # given an appointment or the end of the current lease
    (candidate,) = extract(text, context()).candidates
    # then it is a dated fact under its own key that expires after its date
    assert (candidate.key, candidate.content) == (key, content)
    assert candidate.expires_at == _expected_expiry(last_day)


@pytest.mark.parametrize("text", NOT_DATED)
def test_extract_no_dated_fact_from_questions_offers_or_the_past(text):
    # given a time that states no move-in date, appointment or lease end, when extracted
    found = contents(text)
    # then no dated fact is written
    assert not [c for c in found if c.startswith(("入住时间", "看房时间", "租约到期"))]


def test_extract_without_a_send_time_keeps_the_words_only():
    # given no send time (a caller without a message), when a relative date is extracted
    (candidate,) = extract_candidates("下个月8号搬进去")
    # then the words are kept, with no date and no expiry
    assert (candidate.content, candidate.expires_at) == ("入住时间：下个月8号", None)


def test_extract_soon_has_no_date_but_goes_stale():
    # given "as soon as possible", when extracted
    (candidate,) = extract("我们想尽早搬进去，越快越好", context()).candidates
    # then there is no date to show, and it stops being true after about a month
    assert candidate.content == "入住时间：尽早"
    assert candidate.expires_at is not None and SENT_AT + dt.timedelta(days=25) < candidate.expires_at


@pytest.mark.parametrize(
    ("words", "first", "last"),
    [
        ("下周二", dt.date(2027, 3, 16), dt.date(2027, 3, 16)),
        ("这周末", dt.date(2027, 3, 13), dt.date(2027, 3, 14)),
        ("春节前", dt.date(2027, 3, 10), dt.date(2028, 1, 24)),  # the next lunar new year is 2028-01-26
        ("下个月中", dt.date(2027, 4, 11), dt.date(2027, 4, 20)),
        ("二十号", dt.date(2027, 3, 20), dt.date(2027, 3, 20)),
        ("2027年5月3日", dt.date(2027, 5, 3), dt.date(2027, 5, 3)),
    ],
)
def test_dates_in_resolves_against_the_send_day(words, first, last):
    # given date words, when resolved against the send day
    (span,) = dates_in(words, SENT_AT.date())
    # then the first and last day are the ones meant
    assert (span.first, span.last) == (first, last)
