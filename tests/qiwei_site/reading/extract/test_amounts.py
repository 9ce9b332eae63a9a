"""Amounts as customers write them become a budget that keeps their words beside what they mean;
amounts about something else (押金, 中介费) or with nothing to attach them to stay out."""

from __future__ import annotations

import pytest

from qiwei_site.reading.extract import extract_candidates
from qiwei_site.reading.values import amounts_in, canonical_numbers
from tests.qiwei_site.reading.extract.support import contents

BUDGET_SHAPES = [
    # Chinese numerals, with a unit and a bound
    ("预算八千左右", {"预算：八千左右（约8000元）"}),
    ("租金四千五以内", {"预算：四千五以内（≤4500元）"}),
    ("月租不超过九千", {"预算：九千以内（≤9000元）"}),
    ("房租最多三千二", {"预算：三千二以内（≤3200元）"}),
    ("房租八千封顶", {"预算：八千以内（≤8000元）"}),
    ("预算一万出头", {"预算：一万出头（约≥10000元）"}),
    ("预算大概九千", {"预算：九千左右（约9000元）"}),
    ("预算差不多七千", {"预算：七千左右（约7000元）"}),
    # ranges: written out, and neighbouring digits before a unit
    ("预算三到四千", {"预算：三到四千（3000–4000元）"}),
    ("租金在四千到五千之间", {"预算：四千到五千（4000–5000元）"}),
    ("预算七八千的样子", {"预算：七八千（约7000–8000元）"}),
    ("房租七八千都行", {"预算：七八千（约7000–8000元）"}),
    # totals, down payments and monthly payments; the qualifier a buyer attaches
    ("总价两百八十万左右", {"预算：两百八十万左右（约280万元）"}),
    ("首付一百二十万", {"预算：首付一百二十万（120万元）"}),
    ("月供别超过九千", {"预算：月供九千以内（≤9000元）"}),
    ("总价四百万满五唯一", {"预算：四百万（400万元，满五唯一）"}),
    ("总价三百五十万含税的话能接受", set()),  # "的话": a condition, never an absolute
    ("总价三百五十万含税也能接受", {"预算：三百五十万（350万元，含税）"}),
    # digits keep their words as they are
    ("月租5k以内", {"预算：5千以内"}),
    ("预算3500到4000", {"预算：3500-4000"}),
    # a cap in a long sentence, beside the other facts
    (
        "我们一家四口想在南山找个三居室，租金别超过一万三，最好离学校近",
        {
            "家庭情况：一家四口",
            "户型：三居室",
            "意向区域：南山（南山区）",
            "预算：一万三以内（≤13000元）",
            "偏好：离学校近",
        },
    ),
    ("想要七千以内的一居室", {"预算：七千以内（≤7000元）", "户型：一居室"}),
    ("麻烦帮我找两千五左右的单间", {"预算：两千五左右（约2500元）", "户型：单间"}),
]

NOT_A_BUDGET = [
    "押金三千可以吗",  # a question
    "中介费要两千",  # an amount, but not the budget
    "物业费一年两千多",
    "四千五的那套我不要",  # a listing, not a limit
    "我上个月交了三千房租",  # what they paid, not what they look for
    "一楼两千多的那套太旧了",
    "不要超过八千",  # a cap on what? (rent, deposit, fee): nothing to attach it to
    "可能九千左右吧，我再想想",  # hedged: a value to ask about, not a fact
]


# A cap stated with its limit is the budget without the word 预算.
CAPS_WITH_A_TAIL = [
    ("最多八千，再高就不看了", {"预算：八千以内（≤8000元）"}),
    ("九千块是我的底线", {"预算：九千以内（≤9000元）"}),
    ("房租四千顶天了", {"预算：四千以内（≤4000元）"}),
    ("六千五以上的就不要了", {"预算：六千五以内（≤6500元）"}),  # a refused floor is the cap
    ("超过一万二我就租不起了", {"预算：一万二以内（≤12000元）"}),
    ("月租不要超过七千，超了就算了", {"预算：七千以内（≤7000元）"}),
    ("一个月最多五千块", {"预算：五千以内（≤5000元）"}),  # a monthly cap in money
    ("总价最多三百万，再多就买不起了", {"预算：三百万以内（≤300万元）"}),
    ("最多能接受三千二", {"预算：三千二以内（≤3200元）"}),
    ("月租最多出到五千五", {"预算：五千五以内（≤5500元）"}),
    ("价格的话，两千五以内最好", {"预算：两千五以内（≤2500元）"}),  # a topic clause, not a condition
    ("预算呢，七千上下", {"预算：七千上下（约7000元）"}),
    ("三千多的也可以", {"预算：三千多（约3000–4000元）"}),
]
NOT_CAPS = [
    "超过十二点就睡了",  # a time
    "超过三个人不行",  # people
    "定金最多给一千吧",  # a deposit
    "押金超过两个月就算了",
    "最多等你三天",
    "最多要五千",  # a cap with no tail and nothing to attach it to
]


@pytest.mark.parametrize(("text", "expected"), CAPS_WITH_A_TAIL)
def test_extract_cap_with_its_limit_is_the_budget(text, expected):
    # given a cap said with its limit ("是上限", "再多就算了", "超过…就不考虑"), when extracted
    assert contents(text) == expected


@pytest.mark.parametrize("text", NOT_CAPS)
def test_extract_cap_on_something_else_is_no_budget(text):
    # given a bound on a time, people, a deposit, or a bare cap, when extracted
    found = contents(text)
    # then no budget is written
    assert not [content for content in found if content.startswith("预算")]


@pytest.mark.parametrize(("text", "expected"), BUDGET_SHAPES)
def test_extract_budget_reads_amount_shapes(text, expected):
    # given a customer stating a budget in their own shape, when extracted
    found = contents(text)
    # then the budget keeps the words and shows what they mean
    assert found == expected


@pytest.mark.parametrize("text", NOT_A_BUDGET)
def test_extract_budget_leaves_out_other_amounts(text):
    # given an amount that is not the customer's budget, when extracted
    found = contents(text)
    # then no budget is written
    assert not [content for content in found if content.startswith("预算")]


@pytest.mark.parametrize(
    ("words", "low", "high", "bound", "approx"),
    [
        ("八千五", 8500, 8500, "exact", False),
        ("一万三左右", 13000, 13000, "exact", True),
        ("三到四千", 3000, 4000, "range", False),
        ("七八千", 7000, 8000, "range", True),
        ("不超过九千", None, 9000, "max", False),
        ("至少两千", 2000, None, "min", False),
        ("两百八十万", 2800000, 2800000, "exact", False),
        ("1万5", 15000, 15000, "exact", False),
        ("4k以内", None, 4000, "max", False),
        ("五千多", 5000, 6000, "range", True),  # up to the next step of its unit
        ("一万多", 10000, 20000, "range", True),
        ("3000多", 3000, 4000, "range", True),
        ("别超过九千", None, 9000, "max", False),
        ("不能低于两千", 2000, None, "min", False),  # a negated "below" is a floor
        ("最好别少于八十平", 80, None, "min", False),
        ("最多出到六千", None, 6000, "max", False),
    ],
)
def test_amounts_in_reads_value_and_bound(words, low, high, bound, approx):
    # given the words of one amount, when read
    (amount,) = amounts_in(words)
    # then the value, its bound and whether it is approximate are what the words say
    assert (amount.low, amount.high, amount.bound, amount.approx) == (low, high, bound, approx)


@pytest.mark.parametrize(
    "text", ["三室一厅", "2号线附近", "便宜一点", "十分满意", "一家三口", "万一不行呢", "三个多月", "多少钱"]
)
def test_amounts_in_finds_no_amount_in_ordinary_words(text):
    # given words that hold a numeral but no amount, when read, then there is none
    assert amounts_in(text) == []


def test_canonical_numbers_match_chinese_and_digits():
    # given the same budget in Chinese numerals and in digits
    spoken, written = canonical_numbers("预算八千左右"), canonical_numbers("预算 8000 左右")
    # then both read as the same number (what recall matches on)
    assert spoken == written == ["8000"]


def test_amount_keeps_what_it_is_about():
    # given a sentence with a deposit and a rent
    deposit, rent = amounts_in("押金两千，月租七千八")
    # then each amount knows its topic, so only the rent can be the budget
    assert (deposit.topic, rent.topic) == ("押金", "月租")
    assert (deposit.high, rent.high) == (2000, 7800)


@pytest.mark.parametrize(
    "text",
    ["一万二" * 2000, "1" * 5000, "九" * 400 + "万", "预算" + "9" * 400 + "元", "八千" * 1500 + "以内"],
)
def test_amounts_in_long_numeral_runs_are_no_amount_and_never_crash(text):
    # Given a pasted id or a repeated run far longer than any amount a customer states
    # (a run of 一万二 once overflowed a float and failed the capture job for good)
    # When amounts are read, and the whole message is extracted
    from qiwei_site.reading.extract import extract_candidates

    found = amounts_in(text)
    extract_candidates(text)
    # Then every amount found is finite and none is absurd
    assert all(a.low is None or a.low < 10**13 for a in found)


def test_budget_parts_have_their_own_keys_beside_the_total():
    # Given a total budget, a down payment and a monthly instalment in one message
    found = {c.key: c.content for c in extract_candidates("总价三百万左右，首付九十万，月供别超过一万")}
    # Then each is kept under its own key: the down payment does not replace the total
    assert found == {
        "profile:budget": "预算：三百万左右（约300万元）",
        "fact:budget_down_payment": "预算：首付九十万（90万元）",
        "fact:budget_monthly_payment": "预算：月供一万以内（≤10000元）",
    }
