"""Issue 22's remaining phrasing families, each a table: limits on what the customer pays said
without 预算 (fees have their own key), a request whose want goes on over its clauses, the company
the customer brings, the account's after-sales outcomes said as verbs, a branch named by its place,
and the question shapes that ask rather than state."""

from __future__ import annotations

import pytest

from qiwei_site.reading.extract import ExtractContext, extract, extract_candidates
from qiwei_site.reading.values import amounts_in
from qiwei_site.reading.values.vocabulary import Vocabulary, parse_vocabulary
from tests.qiwei_site.reading.extract.support import contents, context, proposed

SHOP = Vocabulary(
    parse_vocabulary("## 业务词汇\n- 售后方式：退款、换货、退货、补发、维修\n- 退款方式：支付宝、微信、银行卡\n")
)


def keyed(text: str) -> dict[str, str]:
    return {candidate.key: candidate.content for candidate in extract(text, context()).candidates}


def shop_contents(text: str) -> list[str]:
    return [candidate.content for candidate in extract_candidates(text, ExtractContext(vocabulary=SHOP))]


@pytest.mark.parametrize(
    ("text", "key", "content"),
    [
        ("邮费最多十块", "fact:budget_fee:邮费", "预算：邮费十以内（≤10元）"),
        ("安装费别超过三百", "fact:budget_fee:安装费", "预算：安装费三百以内（≤300元）"),
        ("差价一百以内我能补", "fact:budget_fee:差价", "预算：差价一百以内（≤100元）"),
        ("运费的话最多出十块", "fact:budget_fee:运费", "预算：运费十以内（≤10元）"),
    ],
)
def test_fee_limit_is_a_budget_of_its_own(text, key, content):
    # Given a limit the customer sets on a fee beside the price, when extracted
    found = keyed(text)
    # then it is kept under the fee's own key, never the budget's
    assert found == {key: content}


def test_fee_limit_beside_the_budget_keeps_both():
    # Given a budget and a limit on the difference in one message
    found = keyed("预算五千，多出三百以内也行")
    # then both are kept, each under its own key
    assert found == {"profile:budget": "预算：五千（5000元）", "fact:budget_fee:差价": "预算：差价三百以内（≤300元）"}


@pytest.mark.parametrize("text", ["押金最多给两千", "物业费一年两千多", "运费是十二块吗", "上次邮费花了二十"])
def test_deal_terms_stated_fees_and_questions_are_no_limit(text):
    # Given a deal term, what a fee costs, a question or what was paid, when extracted
    found = contents(text)
    # then no budget is written
    assert not [content for content in found if content.startswith("预算")]


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("一节课最多两百", "预算：一节课两百以内（≤200元）"),
        ("一年下来不超过三万", "预算：一年下来三万以内（≤30000元）"),
        ("课时费一百到一百五之间", "预算：课时费一百到一百五（100–150元）"),
    ],
)
def test_price_per_unit_with_a_limit_is_the_budget(text, content):
    # Given a price per lesson, per year, or a course fee with a limit
    # then it is the budget, with the unit it is said per
    assert keyed(text) == {"profile:budget": content}


def test_amount_before_a_measure_word_ends_before_its_one():
    # Given "4000一期": the 一 belongs to 一期
    found = amounts_in("3k到4k一期能接受", bare=True)
    # then the range is 3000–4000, not 4000 and 100
    assert [(amount.low, amount.high) for amount in found] == [(3000.0, 4000.0)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("能帮我找一套两居，带车位的吗", {"户型：两居室", "偏好：带车位"}),
        ("你可以帮我找一个安静点的，人均一百左右的餐厅吗", {"偏好：安静", "预算：人均一百左右（约100元）"}),
    ],
)
def test_request_goes_on_over_its_clauses(text, expected):
    # Given a request opened in one clause and closed with a question's particle in the last
    # then the clauses after it go on with the request: all of it proposed together (issue 35: the
    # sentence asks), none of it written by itself
    assert contents(text) == set()
    assert proposed(text) == expected


def test_request_then_a_new_question_is_no_want():
    # Given a request, then a question whether there is anything suitable
    # then the question adds nothing
    assert contents("帮我找一个安静的酒店，有合适的吗？") == {"偏好：安静"}


def test_company_is_no_other_speaker():
    # Given the customer looking with someone they bring
    # then the want is the customer's own
    assert contents("我想带爸妈找一家安静的酒店") == {"偏好：安静"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("这双鞋我想退了", ["偏好：退货"]),
        # "不用换了" settles it (issue 35): the exchange is refused, the refund wanted
        ("不用换了，直接退钱吧", ["不考虑：换货", "偏好：退款"]),
        ("要不修一下吧", ["偏好：维修"]),
        ("钱退回我的支付宝就行", ["偏好：支付宝"]),
        ("希望能尽快退款", ["偏好：退款"]),
    ],
)
def test_after_sales_outcome_said_as_a_verb(text, expected):
    # Given an account whose vocabulary names its after-sales outcomes
    # then the verb the customer uses reads as the outcome wanted
    assert shop_contents(text) == expected


@pytest.mark.parametrize(
    "text", ["退款到账了吗", "换乘地铁过去", "上次维修花了三百", "退款和换货哪个快？", "已经申请退款了"]
)
def test_after_sales_words_without_a_want_are_nothing(text):
    # Given a question, another verb, something past or a status
    # then nothing is kept
    assert shop_contents(text) == []


def test_instruction_about_refunds_still_refused():
    # Given a demand on us beside the outcome, the clause stays an instruction
    assert shop_contents("你们必须给我退款并且赔偿") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("想去闵行校区上课", {"意向区域：闵行（闵行区）"}),
        ("其实浦东的门店也可以", {"意向区域：浦东（浦东新区）"}),
    ],
)
def test_branch_named_by_its_place_gives_the_area(text, expected):
    # Given the customer choosing a branch by its place, the place is their area
    assert contents(text) == expected


def test_branch_inside_a_shop_name_is_no_area():
    # Given a shop's name with its branch in brackets
    # then no area is read from it
    assert not [c for c in contents("全聚德(昌平店)附近有酒店吗") if c.startswith("意向区域")]


@pytest.mark.parametrize("text", ["月租是五千对吧", "这个小区安静不安静"])
def test_tag_and_a_not_a_questions_state_nothing(text):
    # Given "…对吧" and an A-not-A question
    # then nothing is kept
    assert contents(text) == set()
