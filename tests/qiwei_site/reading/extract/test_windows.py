"""Time windows (issue 22, item 2): when the customer can be reached, served or taught, in any
trade, with one key per purpose; a window ruled out is a constraint."""

from __future__ import annotations

import pytest

from qiwei_site.reading.extract import ExtractContext, extract_candidates
from qiwei_site.reading.extract.windows import time_window


def contents(text: str, asked: str = "") -> list[str]:
    return [c.content for c in extract_candidates(text, ExtractContext(previous_outbound=asked))]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("快递下午六点以后送", ["偏好：下午六点以后送"]),
        ("电话的话晚上联系我", ["偏好：晚上联系"]),
        ("12点到两点之间联系我比较方便", ["偏好：12点到两点之间联系"]),
        ("孩子周六上午有空", ["偏好：周六上午"]),
        ("周三晚上不行，别的时间都可以", ["不考虑：周三晚上"]),
        ("时间改成周日下午吧", ["偏好：周日下午"]),
    ],
)
def test_time_window_is_read_with_its_purpose(text, expected):
    # Given a customer naming when to contact, deliver or teach (or when not to)
    # When the message is read
    # Then the window is kept with what it is for
    assert contents(text) == expected


def test_time_window_bare_answer_needs_the_agent_to_have_asked_when():
    # Given a bare window
    # When it answers "什么时间方便？" it is a preference; said out of the blue it is nothing
    assert contents("工作日下午吧", asked="方便什么时间送货上门？") == ["偏好：工作日下午"]
    assert contents("工作日下午吧") == []


def test_time_window_later_window_for_the_same_purpose_shares_the_key():
    # Given two windows for calling
    first, second = time_window("晚上联系我"), time_window("改成中午联系吧")
    # Then the second replaces the first (one key per purpose)
    assert first is not None and second is not None and first.key == second.key


@pytest.mark.parametrize("text", ["晚上上班", "周六下午看房", "如果周末的话就送过来", "周末在家"])
def test_time_window_without_a_purpose_or_under_a_condition_is_nothing(text):
    # Given a time said about work, a viewing appointment, a condition or a bare whereabouts
    # Then no window preference is read from it
    keys = [c.key for c in extract_candidates(text)]
    assert not any(key.startswith("preference:time:") for key in keys), keys
