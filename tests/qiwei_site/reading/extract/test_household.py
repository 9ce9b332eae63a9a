"""Who will live in the home, as facts under their own keys: elderly people, children, how many
people, pets. Someone else's household, a wish, a negation or a thing seen is none."""

from __future__ import annotations

import pytest

from qiwei_site.reading.extract import FACT, extract
from tests.qiwei_site.reading.extract.support import contents, context

HOUSEHOLDS = [
    ("我们有三只猫", {"宠物：三只猫"}),
    ("家里养了只柯基", {"宠物：一只柯基"}),
    ("有条边牧，比较大", {"宠物：一条边牧"}),
    ("跟爸妈一起住", {"家庭情况：跟爸妈一起住"}),
    ("父母和我们一起住", {"家庭情况：父母和我们一起住"}),
    ("我们家老人八十多了", {"家庭情况：我们家老人"}),
    ("带着两个孩子，老大上初中", {"家庭情况：带着两个孩子"}),
    ("家里有个读幼儿园的女儿", {"家庭情况：家里有个读幼儿园的女儿"}),
    ("我一个人住，要安静", {"家庭情况：我一个人住", "偏好：安静"}),
    ("我们是一家四口", {"家庭情况：一家四口"}),
    ("小两口住", {"家庭情况：小两口住"}),
    ("我跟男朋友一起住", {"家庭情况：我跟男朋友一起住"}),
    # beside a requirement it explains
    ("家里有老人，必须有电梯", {"家庭情况：家里有老人", "必须：电梯"}),
    ("养了两只猫，房东得能接受", {"宠物：两只猫", "必须：房东能接受"}),
]
NOT_HOUSEHOLDS = [
    "我不养宠物",  # a negation
    "没有孩子",
    "朋友家有只狗",  # someone else's
    "楼上有个小孩天天跑",  # a thing seen
    "想养只猫",  # a wish
    "可以养狗吗？",  # a question
    "周末带孩子去看房",  # an outing
    "房东家有老人吗",
]


@pytest.mark.parametrize(("text", "expected"), HOUSEHOLDS)
def test_extract_household_facts_of_the_customers_own_home(text, expected):
    # given a customer saying who will live in the home, when extracted
    assert contents(text) == expected


@pytest.mark.parametrize("text", NOT_HOUSEHOLDS)
def test_extract_household_of_someone_else_or_a_wish_is_no_fact(text):
    # given someone else's household, a wish, a negation or an outing, when extracted, then no fact
    found = contents(text)
    assert not [content for content in found if content.startswith(("家庭情况", "宠物"))]


def test_extract_household_facts_keep_separate_keys():
    # given one message naming elderly people, a child and a pet
    candidates = extract("家里有老人，还有个三岁的孩子，养了只猫", context()).candidates
    # then each is a fact of its own, so none supersedes another
    assert {c.key for c in candidates} == {"fact:household_elderly", "fact:household_children", "fact:pets"}
    assert {c.type for c in candidates} == {FACT}
