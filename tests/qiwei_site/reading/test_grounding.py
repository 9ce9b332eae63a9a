"""The grounding reader, pure (issue 21, item 2): a model's value agrees with what extraction read only
by canonical value; small talk carries nothing a hypothesis could rest on."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from qiwei_site.reading.extract import ExtractContext, extract_candidates
from qiwei_site.reading.grounding import SMALL_TALK, carries_content, is_small_talk, read_field
from qiwei_site.reading.safety import scan, without_personal_numbers

SENT = ExtractContext(sent_at=dt.datetime(2026, 11, 1, 17, 0, tzinfo=ZoneInfo("Asia/Shanghai")))


def _reads(said: str, field: str, value: str) -> bool:
    return read_field(field, value, extract_candidates(said, SENT), SENT)


@pytest.mark.parametrize(("name", "_pattern", "example"), SMALL_TALK, ids=[row[0] for row in SMALL_TALK])
def test_small_talk_table_every_row_example_is_small_talk(name, _pattern, example):
    assert is_small_talk(example), name


@pytest.mark.parametrize(
    "text", ["你好！", "您好，在吗？", "嗯嗯", "好的～", "谢谢老板！", "ok👌", "OK", "哈哈哈", "  ", "在不在呀"]
)
def test_is_small_talk_reads_greetings_acknowledgements_and_fillers(text):
    assert is_small_talk(text)


@pytest.mark.parametrize("text", ["你好，我想在浦东租一套两居室", "好的，预算再加五百", "我每天开车去张江上班", "有猫"])
def test_is_small_talk_never_swallows_content(text):
    assert not is_small_talk(text) and carries_content(text)


def test_carries_content_is_false_for_a_cut_out_number_with_only_its_label():
    # given messages whose mobile number is cut out as capture does
    bare = "我的手机号是13812345678"
    with_words = "我的手机号是13812345678，周末可以看房"

    # then only the one with words beside the number carries content
    assert not carries_content(without_personal_numbers(bare, scan(bare).spans))
    assert carries_content(without_personal_numbers(with_words, scan(with_words).spans))


@pytest.mark.parametrize(
    ("said", "field", "value"),
    [
        ("预算四千五左右", "budget", "4500元/月"),
        ("预算4500", "budget", "四千五"),
        ("预算4,500元/月", "budget", "4500"),
        ("预算不要超过5500", "budget", "5500"),
        ("想要两居室", "layout", "两居室"),
        ("叫我刘姐", "preferred_name", "刘姐"),
        ("我想在浦东租", "district", "浦东新区"),
        ("我想在浦东租", "district", "浦东"),
        ("想在上海租房", "city", "上海市"),
        ("下个月15号入住", "move_in_date", "下个月15号"),
        ("下个月15号入住", "move_in_date", "2026-12-15"),
    ],
)
def test_read_field_agrees_on_an_equal_canonical_value(said, field, value):
    assert _reads(said, field, value)


@pytest.mark.parametrize(
    ("said", "field", "value"),
    [
        ("我家有5口人", "budget", "5万"),
        ("我朋友住在北京", "city", "北京"),
        ("你们老板在吗", "preferred_name", "老板"),
        ("预算四千五左右", "budget", "5400"),
        ("预算四千五左右", "budget", "4500元，两居室"),
        ("预算四千五左右", "layout", "4500"),
        ("下个月15号入住", "move_in_date", "2026-12-16"),
        ("我想在浦东租", "district", "徐汇"),
        ("想要两居室", "layout", "两居"),
    ],
)
def test_read_field_disagrees_without_the_same_field_and_value(said, field, value):
    assert not _reads(said, field, value)
