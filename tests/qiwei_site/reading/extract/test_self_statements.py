"""Capture writes by itself only what the customer firmly states about themself (issue 35 review:
H1, H3, M1): a negated want is no positive fact; someone else's words, forwarded or quoted words,
wants under a condition, hedged wants and a choice between two values wait for a supervisor; an
acceptance of that kind relaxes nothing. Firm self-statements beside them are still written.

The messages are our own, in the families the review named, not the benchmark's strings.
"""

from __future__ import annotations

import pytest

from qiwei_site.reading.extract import extract

from .support import contents, context, proposed, released


def _auto_contents_holding(text: str, value: str) -> set[str]:
    """What the message writes by itself that names `value`, whatever its stance."""
    return {content for content in contents(text) if value in content}


# --- negation: a want negated or taken back is no positive fact -----------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("我们不会考虑精装修", "精装修"),
        ("我不准备买学区房", "学区房"),
        ("两居室就算了吧", "两居"),
    ],
)
def test_negated_want_is_never_written_as_a_want(text, value):
    # given a customer negating or taking back a want
    # when the message is read
    written = _auto_contents_holding(text, value)
    # then nothing is written as a want of that value (a refusal may be)
    assert written <= {f"不考虑：{value}", f"不考虑：{value}室"}, written
    assert not any(content.startswith(("偏好", "户型", "必须")) for content in written)


def test_negated_want_after_its_verb_is_read_as_a_refusal():
    # given "I am not going to buy in a school district"
    # when it is read
    # then it is the refusal it says, written by itself
    assert "不考虑：学区房" in contents("我不准备买学区房")


def test_value_no_longer_needed_is_a_release_not_a_want():
    # given a customer saying they no longer need a parking space
    extraction = extract("车位不用了", context())
    # then no want is written; at most the earlier need is relaxed
    assert not extraction.candidates
    assert {release.content for release in extraction.releases} <= {"不强求：车位"}


def test_budget_said_to_be_impossible_is_not_written():
    # given an amount the customer says is out of reach
    # when it is read
    # then no budget is written, nor proposed
    assert not {c for c in contents("我预算一万五是不可能的") if c.startswith("预算")}
    assert not {c for c in proposed("我预算一万五是不可能的") if c.startswith("预算")}


# --- third party: somebody else's want is only proposed --------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("我表哥想要带花园的", "带花园"),
        ("我闺蜜预算六千，想住徐汇", "徐汇"),
    ],
)
def test_third_party_want_is_not_written(text, value):
    # given a want whose subject is a relative or a friend
    # when it is read
    # then nothing of it is written by itself; it waits for a supervisor
    assert not _auto_contents_holding(text, value)
    assert any(value in content for content in proposed(text))


def test_household_requirement_stays_the_customers_own():
    # given the customer's household requiring something of the customer's own home
    # then it is still written by itself (the requester is inside the customer's requirement)
    assert "必须：带电梯" in contents("我家里人要求一定要带电梯")


# --- forwarded and quoted words -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "王磊：我们想在浦东租两居室",  # a bare name as the speaker's label, no header
        "转发一下我姐发的：我们想在浦东租两居室",  # a forwarding header
        "[聊天记录]\n周倩 2025-03-02 19:20\n我们想在浦东租两居室",  # a merged record's stamp line
    ],
)
def test_forwarded_words_are_proposed_not_written(text):
    # given somebody else's words pasted into the chat
    # when they are read
    # then nothing is written by itself; the layout and the area wait for a supervisor
    assert not contents(text)
    assert {"户型：两居室", "意向区域：浦东（浦东新区）"} <= proposed(text)


def test_field_label_is_no_speaker():
    # given the customer filling in a field with a colon
    # then it is the customer's own layout, written by itself
    assert "户型：三居室" in contents("户型：三居室")


def test_quoted_acceptance_is_proposed_not_released():
    # given an acceptance in quotes, attributed to the customer's husband
    text = "「临街的也行」，我老公的原话"
    # then it relaxes nothing by itself
    assert not released(text)
    assert "可以接受：临街" in proposed(text)


# --- hypothetical and conditional ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "item"),
    [
        ("等孩子上了小学，我们就要学区房", "偏好：学区房"),
        ("只要离地铁近，我就要老小区", "偏好：老小区"),
        ("前提是有电梯，我要高层", "偏好：高层"),
        ("一旦涨了工资，预算可以到九千", "预算：九千（9000元）"),
    ],
)
def test_want_under_a_condition_is_proposed_not_written(text, item):
    # given a want that holds only once something else happens
    # when it is read
    # then it is proposed, never written by itself
    assert item not in contents(text)
    assert item in proposed(text)


@pytest.mark.parametrize(
    "text",
    [
        "要是租金能便宜五百，临街也可以",
        "临街也行，前提是隔音好",
        "临街也可以，只要不吵",
        "转发一下我老婆发的：其实临街也能接受",
        "陈涛：临街也可以考虑",
        "临街也可以吧，我再想想",
    ],
)
def test_acceptance_that_is_not_firm_relaxes_nothing(text):
    # given an acceptance under a condition, forwarded, or hedged
    # when it is read
    extraction = extract(text, context())
    # then it is no release (it cannot supersede a refusal) but a proposal
    assert not extraction.releases
    assert "可以接受：临街" in {candidate.content for candidate in extraction.proposals}


@pytest.mark.parametrize("text", ["临街也能接受", "其实临街我也可以接受"])
def test_firm_acceptance_is_a_release(text):
    # given the customer's own plain acceptance
    # then it is a release that may relax an earlier refusal
    assert released(text) == {"可以接受：临街"}


def test_must_have_with_as_long_as_is_still_written():
    # given "as long as" after a want: one more must-have, no condition on the want
    written = contents("我要三居室，只要有电梯就行")
    # then both are written by themselves
    assert {"户型：三居室", "必须：电梯"} <= written


# --- hedged and alternatives -----------------------------------------------------------------------


def test_hedged_sentence_proposes_its_want():
    # given a want beside a clause that says the customer is not sure
    text = "说不好，先要两居吧"
    # then the layout is proposed, not written
    assert "户型：两居室" not in contents(text)
    assert "户型：两居室" in proposed(text)


@pytest.mark.parametrize(
    ("text", "either"),
    [
        ("我想要精装或者简装", {"偏好：精装", "偏好：简装"}),
        ("要么两居要么三居", {"户型：两居室", "户型：三居室"}),
    ],
)
def test_choice_between_two_values_is_not_written(text, either):
    # given a choice between two values
    # when it is read
    # then neither value is written by itself
    assert not contents(text) & either
    assert proposed(text) & either


def test_two_areas_are_both_the_customers():
    # given two areas named with 或者 (both are acceptable: areas are a list)
    # then they are still written
    assert "意向区域：静安、徐汇（静安区、徐汇区）" in contents("静安或者徐汇都可以")


# --- firm self-statements are still written by themselves --------------------------------------------


@pytest.mark.parametrize(
    ("text", "item"),
    [
        ("我预算八千", "预算：八千（8000元）"),
        ("我们要三居室", "户型：三居室"),
        ("不要顶楼", "不考虑：顶楼"),
        ("我想在静安租房", "意向区域：静安（静安区）"),
        ("我们预算一万二", "预算：一万二（12000元）"),
    ],
)
def test_firm_self_statement_is_written_by_itself(text, item):
    # given the customer firmly stating something about themself
    # when it is read
    # then it is written by itself, and nothing of it waits for review
    assert item in contents(text)
    assert item not in proposed(text)
