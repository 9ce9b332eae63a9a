"""extract_candidates, table-driven over realistic Chinese and English customer messages."""

from __future__ import annotations

import pytest

from memory.capture import extract_candidates
from qiwei_site.reading.extract import extract


def keys(text: str) -> set[tuple[str, str]]:
    return {(c.type, c.key) for c in extract_candidates(text)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我更喜欢地铁附近", {("preference", "preference:地铁附近")}),
        ("比较喜欢南向的房子", {("preference", "preference:南向")}),
        ("我比较倾向于精装修的", {("preference", "preference:精装修")}),
        ("最好有电梯", {("preference", "preference:电梯")}),
        ("必须要有停车位", {("preference", "preference:停车位")}),
        ("离地铁近一点最好", {("preference", "preference:离地铁近")}),
        ("不考虑顶楼", {("constraint", "constraint:顶楼")}),
        ("顶楼就不考虑了", {("constraint", "constraint:顶楼")}),
        ("一楼不要，太潮了", {("constraint", "constraint:一楼")}),
        ("不要一楼和顶楼", {("constraint", "constraint:一楼"), ("constraint", "constraint:顶楼")}),
        ("别推荐合租的", {("constraint", "constraint:合租")}),
        ("不能接受没有电梯的", {("constraint", "constraint:没有电梯")}),
        ("我要整租，不要合租", {("preference", "preference:整租"), ("constraint", "constraint:合租")}),
        ("不要中介费", {("constraint", "constraint:中介费")}),
        ("叫我小王就行", {("fact", "profile:preferred_name")}),
        ("称呼我王先生", {("fact", "profile:preferred_name")}),
        ("我姓王", {("fact", "profile:preferred_name")}),
        ("预算4500左右", {("fact", "profile:budget")}),
        ("想在浦东新区租房", {("fact", "profile:district")}),
        ("我在上海工作", {("fact", "profile:city")}),
        ("下个月15号入住", {("fact", "profile:move_in_date")}),
        (
            "我预算3000，想要地铁附近的两居室",
            {("fact", "profile:budget"), ("fact", "profile:layout"), ("preference", "preference:地铁附近")},
        ),
        ("I prefer a place near the subway", {("preference", "preference:near subway")}),
        ("I'd like the top floor", {("preference", "preference:top floor")}),
        ("I don't want the top floor", {("constraint", "constraint:top floor")}),
        ("no pets please", {("constraint", "constraint:pets")}),
        ("Call me Lisa", {("fact", "profile:preferred_name")}),
        ("My budget is 3000", {("fact", "profile:budget")}),
        ("I'd like a 2 bedroom apartment", {("fact", "profile:layout")}),
        ("We want to move in next month", {("fact", "profile:move_in_date")}),
    ],
)
def test_extract_candidates_explicit_statements(text, expected):
    assert keys(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "不是不考虑顶楼",
        "我朋友喜欢顶楼",
        "我老婆说，不要顶楼",
        "我老婆说只要南向的",
        "听说地铁附近的比较贵",
        "如果预算够的话，我想要三居室",
        "这套离地铁近吗？",
        "两居室多少钱一个月",
        "还没想好要不要学区房",
        "楼层无所谓",
        "你最好早点联系我",
        "不用了谢谢",
        "好的，明天下午可以看房",
        "我喜欢这套",
        "My wife likes the top floor",
        "If possible I'd like a balcony",
        "Do you have any near the subway?",
        "I want to know the price",
        "I'm not sure about the budget yet",
    ],
)
def test_extract_candidates_ignores_negation_hearsay_questions_and_hedges(text):
    assert extract_candidates(text) == []


def test_extract_candidates_same_statement_maps_to_same_key():
    first = extract_candidates("我更喜欢地铁附近的")
    second = extract_candidates("还是比较喜欢地铁附近")
    assert [c.key for c in first] == [c.key for c in second] == ["preference:地铁附近"]
    assert first[0].content == second[0].content


def test_extract_candidates_preference_and_constraint_on_same_object_are_linked():
    (constraint,) = extract_candidates("不考虑顶楼")
    (preference,) = extract_candidates("其实我喜欢顶楼")
    assert constraint.supersedes_keys == ("preference:顶楼",)
    assert preference.supersedes_keys == ("constraint:顶楼",)


def test_extract_weak_hedge_is_only_proposed():
    # Given a hedged want and a hedged budget
    found = extract("也许想要带阳台的，预算可能5000")
    # then nothing is written by itself: both wait for a supervisor, low in confidence (issue 35:
    # a hedge states nothing lasting)
    assert found.candidates == []
    assert [(c.key, c.confidence, c.held_back) for c in found.proposals] == [
        ("preference:带阳台", 0.5, "hedged"),
        ("profile:budget", 0.5, "hedged"),
    ]


def test_extract_candidates_profile_values_are_normalised():
    by_key = {c.key: c for c in extract_candidates("预算最多5000，想要2室1厅")}
    assert by_key["profile:budget"].content == "预算：5000以内"
    assert by_key["profile:layout"].value == "两室一厅"
