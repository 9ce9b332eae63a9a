"""Layouts in spoken forms ("两房两厅一卫", "一室户") and the floor area wanted ("面积至少九十平米",
"八十到一百平"), which is one preference (`preference:面积`); the size of a listing or of the home the
customer has now is no want."""

from __future__ import annotations

import pytest

from qiwei_site.reading.extract import extract
from tests.qiwei_site.reading.extract.support import contents, context

LAYOUTS = [
    ("两房两厅一卫", {"户型：两室两厅一卫"}),
    ("一房一厅就好", {"户型：一室一厅"}),
    ("想找一室户", {"户型：一室户"}),  # a layout of its own, not 一居室
    ("要个三房的", {"户型：三居室"}),
    ("四室两厅两卫的", {"户型：四室两厅两卫"}),
]
SIZES = [
    ("面积至少九十平米", {"偏好：面积九十平米以上（≥90平方米）"}),
    ("面积八十到一百平", {"偏好：面积八十到一百平（80–100平方米）"}),
    ("一百二十平以上", {"偏好：面积一百二十平以上（≥120平方米）"}),
    ("面积最好在六十平以上", {"偏好：面积六十平以上（≥60平方米）"}),
    ("希望面积大于七十平", {"偏好：面积七十平以上（≥70平方米）"}),
    ("面积别小于五十五平", {"偏好：面积五十五平以上（≥55平方米）"}),  # no refusal: a floor
    ("面积九十左右", {"偏好：面积九十左右（约90平方米）"}),  # the topic says square metres
    ("想要七十平左右的两居", {"户型：两居室", "偏好：面积七十平左右（约70平方米）"}),
    ("三居，一百一十平上下", {"户型：三居室", "偏好：面积一百一十平左右（约110平方米）"}),
    ("四十平以内的开间就够", {"户型：开间", "偏好：面积四十平以内（≤40平方米）"}),
]
NOT_WANTED = [
    "那套一室户还在吗",  # a listing
    "这套房是三室两厅吗",
    "我们家现在住三室",  # the home they have
    "现在租的是两室一厅",
    "实际使用面积多少",  # a question
    "那套房子才五十平",
    "之前那个八十平的太贵",
]


@pytest.mark.parametrize(("text", "expected"), LAYOUTS)
def test_extract_layout_reads_spoken_forms(text, expected):
    # given a layout as customers say it, when extracted
    assert contents(text) == expected


@pytest.mark.parametrize(("text", "expected"), SIZES)
def test_extract_size_is_one_area_preference(text, expected):
    # given the floor area a customer wants, when extracted
    # then it is a preference that keeps the words and shows the area as a value
    assert contents(text) == expected


def test_extract_later_size_supersedes_the_earlier():
    # given two statements of the size
    (first,) = extract("面积六十平左右", context()).candidates
    (second,) = extract("至少要八十平", context()).candidates
    # then they share one key, so the later replaces the earlier
    assert first.key == second.key == "preference:面积"


@pytest.mark.parametrize("text", NOT_WANTED)
def test_extract_size_of_a_listing_or_the_current_home_is_no_want(text):
    # given the layout or size of a listing or of the home the customer has, when extracted
    assert contents(text) == set()
