"""Places without their administrative suffix, and the account's own 片区, are where the customer
looks — in a place context; a workplace, a price remark or a longer word is no wanted area."""

from __future__ import annotations

import pytest

from qiwei_site.reading.extract import extended_value, extract
from qiwei_site.reading.values import PlaceNames, gazetteer_place, parse_place_list, places_in
from tests.qiwei_site.reading.extract.support import contents, context

AREA_QUESTION = "您想在哪个片区找房呢？"

DISTRICTS = [
    ("想在闵行找个两居室", {"户型：两居室", "意向区域：闵行（闵行区）"}),
    ("我们考虑余杭那边", {"意向区域：余杭（余杭区）"}),
    ("打算在天河租房，离公司近", {"意向区域：天河（天河区）"}),
    ("住徐汇或者长宁都行", {"意向区域：徐汇、长宁（徐汇区、长宁区）"}),
    ("想在海淀或者昌平买套小两居", {"户型：两居室", "意向区域：海淀、昌平（海淀区、昌平区）"}),
    ("考虑黄浦区那边", {"意向区域：黄浦区"}),
    # the account's own names, from its knowledge base
    ("想在大望路附近租个一居室", {"户型：一居室", "意向区域：大望路（朝阳区）"}),
    ("我们打算在酒仙桥一带找", {"意向区域：酒仙桥"}),
    ("公司搬到前滩了，想住前滩附近", {"意向区域：前滩（浦东新区）"}),
    # a bare answer to the agent's question
]
ANSWERS = [
    ("海淀吧", {"意向区域：海淀（海淀区）"}),
    ("西湖或者拱墅都可以", {"意向区域：西湖、拱墅（西湖区、拱墅区）"}),
    ("大望路那边", {"意向区域：大望路（朝阳区）"}),
]
NOT_AN_AREA = [
    "我在海淀上班",  # where they work
    "闵行的房价涨得厉害",  # a remark, no want
    "我不在徐汇住",  # negated
    "余杭那边还有房吗？",  # a question
    "我喜欢太平洋那边的海景",  # 太平 is a district, 太平洋 is not
    "和平里那边太吵了",  # 和平 is an everyday word
    "想找个安静的地方",
]


# One more area the customer would live in: an acceptance or a list of alternatives.
ALTERNATIVES = [
    ("龙岗那边也可以", {"意向区域：龙岗（龙岗区）"}),
    ("福田或者罗湖都能接受", {"意向区域：福田、罗湖（福田区、罗湖区）"}),
    ("青浦其实也考虑", {"意向区域：青浦（青浦区）"}),
    ("要不松江也行", {"意向区域：松江（松江区）"}),
    ("滨江那一块也能考虑", {"意向区域：滨江（滨江区）"}),
    ("浦口也不是不可以", {"意向区域：浦口（浦口区）"}),
    ("萧山的话也可以考虑", {"意向区域：萧山（萧山区）"}),  # 的话 marks the topic here, not a condition
    ("普陀也可以看看", {"意向区域：普陀（普陀区）"}),
    ("望京那边也可以看看", set()),  # unknown to the place vocabulary: a proposal (below), not memory
    ("想在浦东找。滨江那边也行", {"意向区域：浦东、滨江（浦东新区、滨江区）"}),  # both, in one item
]
NOT_ALTERNATIVES = [
    ("松江也行吗？", set()),  # a question
    ("我同事说青浦也行", set()),  # someone else's words
    ("如果便宜的话松江也行", set()),  # a condition
    ("也许松江也行", set()),  # too loose
    ("公司附近也行", set()),  # a landmark, not an area
]
UNKNOWN_AREAS = [
    ("想在张江附近找个一居", {"户型：一居室"}),  # 张江 is proposed (below): no place vocabulary knows it
    ("想在学校附近租", {"偏好：学校附近"}),  # a landmark is a preference
    ("我不在张江那边住", set()),
    ("在陆家嘴上班", set()),
]


@pytest.mark.parametrize(("text", "expected"), ALTERNATIVES + NOT_ALTERNATIVES)
def test_extract_place_alternative_is_one_more_area(text, expected):
    # given a customer accepting an area (or only seeming to), when extracted
    assert contents(text) == expected


def test_extract_place_alternative_extends_the_current_area():
    # given an alternative area, when extracted
    (candidate,) = extract("宝安那边也行", context()).candidates
    # then it is flagged to add to the profile's area, and the value it adds up to keeps both
    assert candidate.extends and candidate.field == "district"
    assert extended_value("南山（南山区）", candidate) == "南山、宝安（南山区、宝安区）"
    assert extended_value("", candidate) == candidate.value == "宝安（宝安区）"
    assert extended_value("宝安（宝安区）", candidate) == "宝安（宝安区）"


def test_gazetteer_binjiang_short_form_resolves_to_hangzhou():
    # given the short form 滨江 alone
    place = gazetteer_place("滨江")
    # then it is Hangzhou's 滨江区, with its division code
    assert place is not None and (place.name, place.city, place.code) == ("滨江区", "杭州市", "330108")


@pytest.mark.parametrize(("text", "expected"), UNKNOWN_AREAS)
def test_extract_unknown_name_in_an_area_frame_is_an_area(text, expected):
    # given a name the gazetteer does not know, after 在…附近 and a want, when extracted
    assert contents(text) == expected


@pytest.mark.parametrize("text", ["想在张江附近找个一居", "望京那边也可以看看", "想在已付定金附近租"])
def test_extract_area_unknown_to_the_place_vocabulary_is_only_proposed(text):
    # given a name in an area's frame that neither the gazetteer nor the account's places know
    found = extract(text, context())
    # then it is held back for a supervisor (issue 35: a place that is a place), never written by itself
    assert not [c for c in found.candidates if c.field == "district"]
    (area,) = [c for c in found.proposals if c.field == "district"]
    assert area.held_back == "place_form"


@pytest.mark.parametrize(("text", "expected"), DISTRICTS)
def test_extract_district_reads_short_and_account_place_names(text, expected):
    # given a customer naming the area they look in, when extracted
    # then the district keeps their words and, for a division, its full name
    assert contents(text) == expected


@pytest.mark.parametrize(("text", "expected"), ANSWERS)
def test_extract_district_reads_a_bare_answer_to_the_area_question(text, expected):
    # given the agent asked where, when the customer answers with places only
    # then the answer is the district
    assert contents(text, previous_outbound=AREA_QUESTION) == expected


@pytest.mark.parametrize("text", NOT_AN_AREA)
def test_extract_district_needs_a_place_context(text):
    # given a place name outside a place context (or none at all), when extracted
    found = contents(text)
    # then no district is written
    assert not [content for content in found if content.startswith("意向区域")]


def test_extract_place_exclusion_stays_a_constraint():
    # given a customer ruling an area out, when extracted, then it is a constraint, not a district
    assert contents("宝山就不考虑了，太远") == {"不考虑：宝山"}


def test_gazetteer_place_resolves_short_forms_and_ambiguity():
    # given short forms of divisions
    pudong, chaoyang = gazetteer_place("浦东"), gazetteer_place("朝阳")
    # then a unique one knows its city; one shared by several cities names no city
    assert pudong is not None and (pudong.name, pudong.city) == ("浦东新区", "上海市")
    assert chaoyang is not None and chaoyang.name == "朝阳区" and chaoyang.city == ""


def test_account_place_names_win_over_the_gazetteer():
    # given an account that lists 回龙观 under 昌平区
    names = PlaceNames(["回龙观（昌平区）"])
    # when a message names it, then it is the account's place with its parent
    (place,) = places_in("想住回龙观", names)
    assert (place.words, place.rank, place.city) == ("回龙观", "local", "昌平区")


def test_parse_place_list_reads_only_place_sections():
    # given a knowledge-base document with a place section and another section
    markdown = (
        "# 门店\n## 服务片区\n- 朝阳区：酒仙桥、大望路\n- 前滩（浦东新区）\n### 海淀区\n- 五道口\n"
        "## 交接流程\n- 价格谈判"
    )
    # when its place list is read
    names = parse_place_list(markdown)
    # then the listed names come with the district they lie in, and nothing from other sections
    assert names == ["酒仙桥（朝阳区）", "大望路（朝阳区）", "前滩（浦东新区）", "五道口（海淀区）"]
