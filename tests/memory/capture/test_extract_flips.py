"""Meaning flips found in review: the extractor never writes what the customer did not state."""

from __future__ import annotations

import pytest

from memory.capture import extract_candidates


def keys(text: str) -> set[tuple[str, str]]:
    return {(c.type, c.key) for c in extract_candidates(text)}


def contents(text: str) -> set[str]:
    return {c.content for c in extract_candidates(text)}


# "No longer" / "以前…现在不…": the old preference is withdrawn; at most a constraint is written.
WITHDRAWN = [
    ("我不再喜欢高层了", {("constraint", "constraint:高层")}),
    ("我以前喜欢高层，现在不喜欢了", {("constraint", "constraint:高层")}),
    ("以前喜欢高层，现在不要了", {("constraint", "constraint:高层")}),
    ("我之前想要一楼，现在不想要了", {("constraint", "constraint:一楼")}),
    ("之前想要整租，后来不想要了", {("constraint", "constraint:整租")}),
    ("我原来想要两居室，现在想要三居室", {("fact", "profile:layout")}),
    ("我以前喜欢老小区", set()),
    ("我以前不喜欢顶楼，现在可以接受了", set()),
    ("我以前不喜欢顶楼，现在喜欢了", {("preference", "preference:顶楼")}),
    ("I used to like high floors, but not anymore", {("constraint", "constraint:high floors")}),
    ("I no longer like the top floor", {("constraint", "constraint:top floor")}),
    ("I used to want a studio but now I need a 2 bedroom", {("fact", "profile:layout")}),
]

# Jokes, irony, rhetoric and disowned statements: nothing at all.
NOT_MEANT = [
    ("我喜欢高层，开玩笑的", set()),
    ("我喜欢高层才怪", set()),
    ("我喜欢高层。开玩笑的", set()),
    ("我要顶楼，逗你的", set()),
    ("谁喜欢一楼啊", set()),
    ("哪有人喜欢顶楼啊", set()),
    ("难道我会喜欢一楼吗", set()),
    ("不是我喜欢高层，是我老婆", set()),
    ("不是我要一楼，是我妈要", set()),
    ("It's not that I like high floors", set()),
    ("I wouldn't say I like the north-facing ones", set()),
    ("It's not me who wants the top floor, it's my wife", set()),
    ("I like high floors, just kidding", set()),
]

# What follows a joke, or a denial of joking, still stands.
STILL_MEANT = [
    ("我喜欢高层。哈哈开玩笑的，其实我喜欢低层", {("preference", "preference:低层")}),
    ("我不是开玩笑，我真的不要一楼", {("constraint", "constraint:一楼")}),
    ("I'm not kidding, no pets please", {("constraint", "constraint:pets")}),
    ("我本来就喜欢高层", {("preference", "preference:高层")}),
    ("我比之前更喜欢高层了", {("preference", "preference:高层")}),
]

# Refused or judged forms of address: no 称呼, and no constraint made of "叫我老王" either.
ADDRESS_REFUSED = [
    "不用叫我王总",
    "不要叫我老王",
    "不要再叫我王总了",
    "别叫我王总",
    "叫我王总不太好",
    "我叫王总不太好",
    "Don't call me Mr. Wang",
]

ADDRESS_CLEAN = [
    ("叫我小王就行了", "称呼：小王"),
    ("叫我王总吧", "称呼：王总"),
    ("别叫我王总，叫我小王就行", "称呼：小王"),
    ("Call me Lisa", "称呼：Lisa"),
]

# Negated places: no city (or district) fact.
PLACE_NEGATED = [
    ("我不在北京", set()),
    ("我不是在上海工作", set()),
    ("我不会搬到上海", set()),
    ("我不在浦东新区住", set()),
    ("I don't live in Beijing anymore", set()),
    ("I'm not moving to Beijing", set()),
    ("I don't work in Shanghai", set()),
    ("我现在不在上海了，在杭州工作", {("fact", "profile:city")}),
]

# Clefts we do not parse and service requests: nothing.
JUNK_AND_REQUESTS = [
    "我喜欢的不是高层",
    "我要投诉",
    "我想要退押金",
    "我要退款",
    "我需要开发票",
    "我想换房",
    "我要报修，水管漏水",
    "I want a refund",
    "I need an invoice for the deposit",
]


@pytest.mark.parametrize(("text", "expected"), WITHDRAWN)
def test_extract_flips_withdrawn_preference_is_never_a_preference(text, expected):
    # given a message where the customer takes back an old wish
    # when it is extracted
    found = keys(text)
    # then exactly the current stance is written, never the withdrawn one
    assert found == expected


@pytest.mark.parametrize(
    "text",
    ["我不再喜欢高层了", "我以前喜欢高层，现在不喜欢了", "以前喜欢高层，现在不要了", "我之前想要一楼，现在不想要了"],
)
def test_extract_flips_withdrawal_supersedes_the_old_preference(text):
    # given a withdrawal of a preference
    # when it is extracted
    (candidate,) = extract_candidates(text)
    # then it is a constraint that supersedes the preference on the same object
    assert candidate.type == "constraint"
    assert candidate.supersedes_keys == (candidate.key.replace("constraint:", "preference:"),)
    assert candidate.content.startswith("不考虑：")


@pytest.mark.parametrize(("text", "expected"), NOT_MEANT + STILL_MEANT)
def test_extract_flips_jokes_rhetoric_and_disowned_statements(text, expected):
    # given a joke, a rhetorical question or a statement about someone else
    # when it is extracted
    # then only what the customer means for themselves is written
    assert keys(text) == expected


@pytest.mark.parametrize("text", ADDRESS_REFUSED)
def test_extract_flips_refused_address_writes_nothing(text):
    # given a refused or judged form of address
    # when it is extracted
    # then no 称呼 and nothing else is written
    assert extract_candidates(text) == []


@pytest.mark.parametrize(("text", "content"), ADDRESS_CLEAN)
def test_extract_flips_address_names_are_clean(text, content):
    # given a form of address with trailing particles
    # when it is extracted
    # then the name carries no 了/吧/就行
    assert contents(text) == {content}


@pytest.mark.parametrize(("text", "expected"), PLACE_NEGATED)
def test_extract_flips_negated_place_is_no_city(text, expected):
    # given a place the customer says they are not in / not moving to
    # when it is extracted
    # then no city or district is written for it
    assert keys(text) == expected


def test_extract_flips_city_after_negated_city_is_the_new_one():
    # given "not in Shanghai any more, working in Hangzhou"
    # when it is extracted
    # then the city is Hangzhou
    assert contents("我现在不在上海了，在杭州工作") == {"城市：杭州"}


@pytest.mark.parametrize("text", JUNK_AND_REQUESTS)
def test_extract_flips_junk_objects_and_service_requests_write_nothing(text):
    # given a cleft we cannot read safely, or a request for service
    # when it is extracted
    # then nothing is written (and certainly no 偏好：投诉 or 不考虑：的就是…)
    assert extract_candidates(text) == []


def test_extract_flips_preference_beside_a_complaint_survives():
    # given a real preference and a complaint in one message
    # when it is extracted
    # then only the preference is written
    assert keys("我要地铁附近的，我要投诉你们中介") == {("preference", "preference:地铁附近")}


def test_extract_flips_no_object_starts_with_de():
    # given several cleft sentences
    texts = ["我喜欢的不是高层", "我最讨厌的就是中介费", "我最喜欢的是南向", "我想要的是整租"]
    # when they are extracted
    written = [c.content for text in texts for c in extract_candidates(text)]
    # then no object begins with 的
    assert not [content for content in written if content.split("：", 1)[-1].startswith("的")]
