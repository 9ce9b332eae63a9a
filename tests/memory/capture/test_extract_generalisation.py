"""extract_candidates beyond the textbook sentences: negation and degree before want/like verbs,
coordinated objects, first-person retractions and everyday English phrasing (issue 3 follow-up)."""

from __future__ import annotations

import pytest

from memory.capture import extract_candidates
from memory.models import MemoryItem, MemoryStatus
from qiwei_site.reading.extract import extract

SOFT = 0.6  # the most a softened negation ("不是很想要", "not a fan of") may claim


def keys(text: str) -> set[tuple[str, str]]:
    return {(c.type, c.key) for c in extract_candidates(text)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Softened negated wants: a constraint, held loosely
        ("我不是很想要带家具的", {("constraint", "constraint:带家具")}),
        ("不太想要带家具的，自己有家具", {("constraint", "constraint:带家具")}),
        ("不怎么喜欢老小区", {("constraint", "constraint:老小区")}),
        ("没那么喜欢高层", {("constraint", "constraint:高层")}),
        ("其实也没那么想要学区房", {("constraint", "constraint:学区房")}),
        ("我不太需要车位", {("constraint", "constraint:车位")}),
        ("说实话不太能接受老破小", {("constraint", "constraint:老破小")}),
        ("有点介意临街", {("constraint", "constraint:临街")}),
        # Plain negated wants
        ("不想要带家具的", {("constraint", "constraint:带家具")}),
        ("不喜欢临街的房子", {("constraint", "constraint:临街")}),
        ("我不希望是合租", {("constraint", "constraint:合租")}),
        ("最好不要顶楼，夏天太晒", {("constraint", "constraint:顶楼")}),
        ("尽量别超过5000，最好有电梯", {("preference", "preference:电梯")}),
        # Coordinated objects
        ("不要顶楼也不要一楼", {("constraint", "constraint:顶楼"), ("constraint", "constraint:一楼")}),
        ("不要顶楼，也不要一楼", {("constraint", "constraint:顶楼"), ("constraint", "constraint:一楼")}),
        ("顶楼、一楼都不要", {("constraint", "constraint:顶楼"), ("constraint", "constraint:一楼")}),
        ("不考虑顶楼或者一楼", {("constraint", "constraint:顶楼"), ("constraint", "constraint:一楼")}),
        ("顶楼和一楼都不考虑", {("constraint", "constraint:顶楼"), ("constraint", "constraint:一楼")}),
        ("不喜欢老小区也不喜欢没电梯的", {("constraint", "constraint:老小区"), ("constraint", "constraint:没电梯")}),
        ("喜欢南向和带阳台的", {("preference", "preference:南向"), ("preference", "preference:带阳台")}),
        ("南向的、带阳台的都喜欢", {("preference", "preference:南向"), ("preference", "preference:带阳台")}),
        ("我要整租不要合租", {("preference", "preference:整租"), ("constraint", "constraint:合租")}),
        ("想要南向的也要带阳台", {("preference", "preference:南向"), ("preference", "preference:带阳台")}),
        ("我不太喜欢合租，更想整租", {("constraint", "constraint:合租"), ("preference", "preference:整租")}),
        ("顶楼也不要", {("constraint", "constraint:顶楼")}),
        # The customer's own earlier words are not hearsay
        ("我跟你说，不要顶楼", {("constraint", "constraint:顶楼")}),
        ("我说了不要顶楼", {("constraint", "constraint:顶楼")}),
        # English
        ("Please forget what I said earlier, I now prefer a 3-bedroom.", {("fact", "profile:layout")}),
        ("I'd prefer a quiet neighbourhood", {("preference", "preference:quiet neighbourhood")}),
        ("I'd rather have a balcony", {("preference", "preference:balcony")}),
        ("I'd rather not live on the ground floor", {("constraint", "constraint:ground floor")}),
        ("I'd prefer not to live near the highway", {("constraint", "constraint:near highway")}),
        ("I'm not a fan of old buildings", {("constraint", "constraint:old buildings")}),
        ("Not too keen on the top floor", {("constraint", "constraint:top floor")}),
        ("I don't really like the ground floor", {("constraint", "constraint:ground floor")}),
        ("please avoid the top floor", {("constraint", "constraint:top floor")}),
        ("Anything but a basement please", {("constraint", "constraint:basement")}),
        ("Honestly I can't stand noisy neighbours", {("constraint", "constraint:noisy neighbours")}),
        (
            "no top floor or ground floor",
            {("constraint", "constraint:top floor"), ("constraint", "constraint:ground floor")},
        ),
        (
            "I don't want the top floor or the ground floor",
            {("constraint", "constraint:top floor"), ("constraint", "constraint:ground floor")},
        ),
        (
            "I want neither the top floor nor the ground floor",
            {("constraint", "constraint:top floor"), ("constraint", "constraint:ground floor")},
        ),
        ("I no longer need a parking space", {("constraint", "constraint:parking space")}),
        ("I said no pets", {("constraint", "constraint:pets")}),
        ("my budget is 5000", {("fact", "profile:budget")}),
        ("we need at least 2 bedrooms", {("fact", "profile:layout")}),
        (
            "We need at least 2 bedrooms and a balcony",
            {("fact", "profile:layout"), ("preference", "preference:balcony")},
        ),
        ("Just call me Mr. Chen", {("fact", "profile:preferred_name")}),
    ],
)
def test_extract_candidates_generalises_to_everyday_phrasing(text, expected):
    assert keys(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        # Double negation and acceptance are neither a preference nor a constraint
        "也不是不能接受一楼",
        "我也不是不考虑顶楼，就是怕热",
        "并不排斥老小区",
        "不介意老小区",
        "我不怕吵",
        "不排除顶楼",
        "我对朝向不是很在意",
        "对楼层没什么要求",
        "不是非要地铁附近",
        # Negation plus want about something that is not the home
        "不用了，谢谢",
        "不用带钥匙",
        "不太方便接电话",
        "我不太想今天去看房",
        "我不希望你们再打电话",
        "我还要上班，晚上再聊",
        "还需要多久",
        "也要问一下我老婆",
        "不要超过5000",
        # Someone else's words, even when coordinated or questioned
        "我老婆不要顶楼也不要一楼",
        "那套是顶楼还是一楼的？",
        "My boss said I should live near the office",
        # English acceptance, talk about the chat, and bare fragments
        "I don't mind the top floor",
        "I don't hate the top floor",
        "I'm open to older buildings",
        "It's not that I don't like the top floor",
        "I'd rather talk tomorrow",
        "I'd rather not say",
        "I'm not a fan",
        "anything but that",
    ],
)
def test_extract_candidates_generalisation_negatives_yield_nothing(text):
    assert extract_candidates(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "我不是很想要带家具的",
        "不怎么喜欢老小区",
        "没那么喜欢高层",
        "有点介意临街",
        "I'm not a fan of old buildings",
        "I'd rather not live on the ground floor",
        "I don't really like the ground floor",
    ],
)
def test_extract_candidates_softened_negation_is_a_low_confidence_constraint(text):
    # Given a softened dislike, when extracted, then it is a constraint held loosely
    (candidate,) = extract_candidates(text)
    assert candidate.type == "constraint"
    assert candidate.confidence <= SOFT
    assert candidate.importance <= 3


def test_extract_candidates_firm_negation_outranks_softened_negation():
    (firm,) = extract_candidates("不想要带家具的")
    (soft,) = extract_candidates("我不是很想要带家具的")
    assert firm.key == soft.key == "constraint:带家具"
    assert firm.confidence > soft.confidence


def test_extract_candidates_negated_want_links_to_the_preference_it_overrides():
    (soft,) = extract_candidates("我不是很想要带家具的")
    (preference,) = extract_candidates("想要带家具的")
    assert soft.supersedes_keys == (preference.key,) == ("preference:带家具",)
    assert preference.supersedes_keys == (soft.key,)


def test_capture_softened_negation_supersedes_the_earlier_preference(ingest):
    # Given the customer first wanted a furnished flat
    ingest("想要带家具的，拎包入住")
    preference = MemoryItem.objects.get(key="preference:带家具", status=MemoryStatus.ACTIVE)
    # When they later say they don't really want furniture
    ingest("我不是很想要带家具的，自己家具挺多")
    # Then the preference is superseded by a loosely held constraint, never read as a preference again
    preference.refresh_from_db()
    constraint = MemoryItem.objects.get(key="constraint:带家具", status=MemoryStatus.ACTIVE)
    assert preference.status == MemoryStatus.SUPERSEDED and preference.superseded_by_id == constraint.pk
    assert constraint.confidence <= SOFT
    assert not MemoryItem.objects.filter(key="preference:带家具", status=MemoryStatus.ACTIVE).exists()


@pytest.mark.parametrize(
    "text,released",
    [
        ("不需要车位", ["不强求：车位"]),
        ("车位不需要", ["不强求：车位"]),
        ("不用带家具", ["不强求：带家具"]),
        ("不需要车位和储藏室", ["不强求：车位", "不强求：储藏室"]),
        ("I don't need parking", ["Flexible on: parking"]),
        ("no need for a balcony", ["Flexible on: balcony"]),
    ],
)
def test_extract_non_need_is_a_release_not_an_exclusion(text, released):
    # Given a customer saying what they do not need
    # When it is read
    extraction = extract(text)
    # Then nothing is ruled out (a home with a parking space is still fine); the need is relaxed
    assert extraction.candidates == []
    assert [release.content for release in extraction.releases] == released
