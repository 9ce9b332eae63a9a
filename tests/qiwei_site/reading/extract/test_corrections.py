"""Corrections and kinds (issue 22, item 3): a corrected cap replaces the budget under the same key,
an accepted amount is no release, a part of the price keeps its own key and an object restating a
fact's amount is no second item."""

from __future__ import annotations

import pytest

from qiwei_site.reading.extract import extract


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("其实最多到六千也行", ("profile:budget", "预算：六千以内（≤6000元）")),
        ("actually up to 6000 is fine", ("profile:budget", "预算：6000以内")),
        ("Up to 6k a month is OK", ("profile:budget", "预算：6000以内")),
    ],
)
def test_correction_of_the_cap_is_the_budget_and_nothing_else(text, expected):
    # Given a customer correcting their budget upwards
    extraction = extract(text)
    # Then it is the budget (same key, so it replaces the stale one) and no release of an amount
    assert [(c.key, c.content) for c in extraction.candidates] == [expected]
    assert extraction.releases == []


def test_budget_part_with_a_want_word_is_one_item():
    # Given a monthly instalment said with "最好"
    extraction = extract("月供最好控制在一万以内")
    # Then it is the instalment, not also a preference restating its amount
    assert [(c.key, c.content) for c in extraction.candidates] == [
        ("fact:budget_monthly_payment", "预算：月供一万以内（≤10000元）")
    ]


@pytest.mark.parametrize("text", ["一楼也可以", "其实顶楼也能接受"])
def test_also_fine_widens_an_exclusion(text):
    # Given "X is also fine" about an object
    extraction = extract(text)
    # Then it is a release of the exclusion, not a new want
    assert extraction.candidates == [] and len(extraction.releases) == 1
