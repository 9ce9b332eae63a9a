"""Forms of address as customers introduce themselves ("我是许女士", "你好，我是小马", "免贵姓曾"), and as a
bare answer to the agent's "怎么称呼您？"; a role ("我是房东"), a trade or a word that only looks
like a name ("我是小白") is no 称呼."""

from __future__ import annotations

import pytest

from qiwei_site.reading.extract import extract
from tests.qiwei_site.reading.extract.support import contents, context

NAME_QUESTION = "您好，请问怎么称呼您？"

INTRODUCTIONS = [
    ("我是许女士", {"称呼：许女士"}),
    ("你好，我是小马", {"称呼：小马"}),
    ("您好我是老邓，之前联系过", {"称呼：老邓"}),
    ("我是杨经理", {"称呼：杨经理"}),
    ("叫我老邓就可以", {"称呼：老邓"}),
    ("我姓欧阳", {"称呼：欧阳（姓）"}),
    ("我姓叶，树叶的叶", {"称呼：叶（姓）"}),
    ("免贵姓曾，叫我小曾吧", {"称呼：小曾"}),  # the later, closer form wins
    ("鄙人姓胡", {"称呼：胡（姓）"}),
    ("你好，我这边姓潘", {"称呼：潘（姓）"}),
    ("我叫郭明，以后联系我就行", {"称呼：郭明"}),
    ("我是阿强", {"称呼：阿强"}),
]
ANSWERS = [
    ("彭", {"称呼：彭（姓）"}),
    ("姓彭，彭先生", {"称呼：彭先生"}),
    ("小彭就行", {"称呼：小彭"}),
    ("韩女士", {"称呼：韩女士"}),
    ("叫我阿伟", {"称呼：阿伟"}),
    ("免贵姓罗", {"称呼：罗（姓）"}),
]
NOT_NAMES = [
    "我是房东，想挂房子",  # roles
    "我是中介公司的",
    "我是这个小区的业主",
    "我是保洁",
    "我是做IT的",  # a trade
    "我是来咨询的",
    "我是小白，第一次租",  # a novice, not 白
    "我是老客户了",
    "我是王姐介绍的",  # someone else's name
    "我叫个车先",
    "不要叫我王总",  # refused
]
NOT_ANSWERS = ["随便", "先不说了", "嗯嗯", "好的"]


@pytest.mark.parametrize(("text", "expected"), INTRODUCTIONS)
def test_extract_address_reads_how_customers_introduce_themselves(text, expected):
    # given a customer introducing themselves, when extracted, then the 称呼 is what they chose
    assert contents(text) == expected


@pytest.mark.parametrize(("answer", "expected"), ANSWERS)
def test_extract_address_reads_a_bare_answer_to_the_name_question(answer, expected):
    # given the agent asked how to address the customer, when the customer answers with a name
    assert contents(answer, previous_outbound=NAME_QUESTION) == expected


@pytest.mark.parametrize("text", NOT_NAMES)
def test_extract_address_ignores_roles_trades_and_other_names(text):
    # given a role, a trade or a word that only looks like a name, when extracted
    found = contents(text)
    # then no 称呼 is written
    assert not [content for content in found if content.startswith("称呼")]


@pytest.mark.parametrize("answer", NOT_ANSWERS)
def test_extract_address_filler_after_the_name_question_is_no_name(answer):
    # given the agent asked for a name, when the customer answers with a filler, then nothing
    assert contents(answer, previous_outbound=NAME_QUESTION) == set()


def test_extract_address_is_the_profile_name():
    # given a self-introduction, when extracted
    (candidate,) = extract("我是许女士", context()).candidates
    # then it fills the profile's 称呼
    assert (candidate.key, candidate.field, candidate.value) == ("profile:preferred_name", "preferred_name", "许女士")
