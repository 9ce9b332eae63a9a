"""Recall's three families of misses (issue 22 item 6): a question asked again does not outrank its
answer, a short list of facts sharing one character with the query still gives its best match,
and relative dates are read against the day each message was sent."""

from __future__ import annotations

import datetime as dt

import pytest

from qiwei_site.reading.recall import (
    _DATE_RULES,
    _QUESTION_RULES,
    QUESTION,
    date_mentions,
    document,
    features,
    is_question,
    rank,
    rank_documents,
)


def ranked(texts: list[str], query: str, *, days: list[str] | None = None, asked: str | None = None) -> list[int]:
    documents = [document(features(text)) for text in texts]
    sent_on = [dt.date.fromisoformat(day) for day in days] if days is not None else None
    query_on = dt.date.fromisoformat(asked) if asked else None
    return rank_documents(features(query), documents, 6, sent_on=sent_on, query_on=query_on)


# --- the rule tables ------------------------------------------------------------------


@pytest.mark.parametrize(("name", "example"), [(name, example) for name, _p, _t, example in _DATE_RULES])
def test_date_rules_each_read_their_example(name, example):
    # given a rule's own example(s) / when read
    for text in example.split(" / "):
        # then the text names a date
        assert date_mentions(text), f"{name}: {text}"


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("昨天去看了那套两居", ["d-1"]),
        ("我3月2号下午有空", ["m3.2"]),
        ("下周三我搬家", ["w1.3"]),
        ("上周看的房子", ["w-1"]),
        ("两天前房东来过", ["d-2"]),
        ("大前天交的押金", ["d-3"]),
        ("2026年3月2日签约", ["y2026.3.2"]),
        ("my lease ends on april 10, 2026.", ["y2026.4.10"]),
        ("two days ago the landlord texted", ["d-2"]),
        ("last wednesday and next week", ["p3", "w1"]),
        ("the day before yesterday", ["d-2"]),
    ],
)
def test_date_mentions_read_relative_and_absolute_dates(text, tokens):
    # given a text naming dates / when read / then each is one token, the longer reading first
    assert date_mentions(text) == tokens


@pytest.mark.parametrize(
    "text", ["周末想去看房", "预算3.5万", "一周两次", "天气不错", "the weekend is fine", "may i come"]
)
def test_date_mentions_leave_texts_without_a_date_alone(text):
    assert date_mentions(text) == []


@pytest.mark.parametrize(("name", "example"), [(name, example) for name, _pattern, example in _QUESTION_RULES])
def test_question_rules_each_read_their_example(name, example):
    assert is_question(example), name


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("Great. Does the rent include utilities?", True),
        ("I went there yesterday, it was lovely and the kitchen is huge. How about you?", False),
        ("押一付三，押金一个月房租", False),
        ("好的，谢谢", False),
    ],
)
def test_is_question_needs_questions_to_hold_most_of_the_text(text, asked):
    assert is_question(text.lower()) is asked


def test_features_marks_a_question_and_its_dates_without_weight():
    # given a question naming a date / when its features are computed
    found = {feature: weight for feature, weight, _count in features("昨天那套房能养狗吗？")}
    # then the marker and the date are there, weighing nothing (a document's length is unchanged)
    assert found[QUESTION] == 0.0
    assert found["t:d-1"] == 0.0
    text_features = features("昨天那套房能养狗吗？")
    unmarked = sum(weight * count for feature, weight, count in text_features if feature[0] not in "tq")
    assert document(text_features)[1] == pytest.approx(unmarked)


# --- (a) a question does not answer itself ---------------------------------------------------


@pytest.mark.parametrize(
    ("history", "query", "answer"),
    [
        (["押金是多少？", "押一付三，押金一个月房租", "好的，谢谢"], "押金是多少啊？", 1),
        (["我想问一下能不能养狗", "房东说小型犬可以", "离地铁站多远？", "步行八分钟"], "能养狗吗", 1),
        (
            ["When can I move in?", "The earliest date is the 15th.", "Can I bring my cat?", "Cats are fine."],
            "when can I move in",
            1,
        ),
    ],
)
def test_rank_documents_puts_the_answer_before_a_repeated_question(history, query, answer):
    # given a question asked before and answered by the next turn
    # when the customer asks it again
    best = ranked(history, query)
    # then the answer comes first, the earlier question after it
    assert best[0] == answer
    assert best[1] == answer - 1


def test_rank_documents_skips_a_follow_up_question_to_reach_the_answer():
    # given a question followed by another question, then the answer
    history = ["物业费多少钱一平？", "停车费呢？", "物业费每平3.5元，停车费三百", "好的"]
    # when asked again / then the answer after the follow-up ranks first
    assert ranked(history, "物业费一平多少钱")[0] == 2


def test_rank_documents_keeps_a_statement_that_matches_before_its_neighbour():
    # given a matching statement (not a question) and a reply after it
    history = ["我家养了一只布偶猫，房东要同意", "好的，我问问房东"]
    # then the statement stays first
    assert ranked(history, "布偶猫可以养吗")[0] == 0


def test_rank_documents_leaves_a_question_with_nothing_after_it_first():
    # given the repeated question is the last candidate / then it is still recalled
    assert ranked(["预算八千", "押金是多少？"], "押金是多少")[0] == 1


# --- (b) a short list sharing one character ---------------------------------------------------


@pytest.mark.parametrize(
    ("facts", "query", "expected"),
    [
        (["我养了一只猫", "我在上海工作", "我喜欢跑步"], "你家有宠物猫吗", 0),
        (["我是做程序员的", "晚上经常加班", "老家在湖南"], "你家乡是哪里", 2),
        (["我不抽烟", "作息比较规律", "偶尔在家做饭"], "会在屋里煮饭吗", 2),
    ],
)
def test_rank_documents_returns_the_best_single_character_match_in_a_short_list(facts, query, expected):
    # given a few facts, one sharing a single uncommon character with the query and nothing else shared
    # when ranked / then that fact is returned, alone
    assert ranked(facts, query) == [expected]


def test_rank_documents_returns_no_single_character_match_beyond_a_short_list():
    # given the same fact among more messages than a short list holds (yet too few for the rarity
    # fallback to call a lone character rare)
    history = ["我养了一只猫"] + [f"第{n}套房子周末可以看，采光一般" for n in range(24)]
    # then a lone shared character is not evidence enough
    assert ranked(history, "你家有宠物猫吗") == []


@pytest.mark.parametrize(
    ("facts", "query"),
    [
        (["我想租房", "我想看房", "我想买房"], "房东人好吗"),  # the character is in every fact
        (["他人很好", "在上海工作", "喜欢跑步"], "你好吗，最近忙不忙"),  # a common character
    ],
)
def test_rank_documents_returns_no_single_character_match_that_tells_nothing(facts, query):
    assert ranked(facts, query) == []


def test_rank_documents_single_character_match_only_when_no_term_is_shared():
    # given a short list where one fact shares a real word with the query and another a character
    facts = ["我养了一只猫", "宠物医院在附近", "我喜欢跑步"]
    # then the word match wins and the lone character is not added
    assert ranked(facts, "你家有宠物猫吗")[0] == 1


# --- (c) relative dates ------------------------------------------------------------------------


def test_rank_documents_matches_an_absolute_date_with_yesterday_said_the_day_after():
    # given 看房 said on 1 March, and "昨天" said on 3 March (so 2 March)
    history = ["周末想去看房", "昨天去看了那套两居，采光不错", "预算还能再加一点"]
    days = ["2026-03-01", "2026-03-03", "2026-03-05"]
    # when asked about 3月2号 a week later / then the 昨天 message comes first
    assert ranked(history, "我3月2号看的那套房怎么样来着", days=days, asked="2026-03-10")[0] == 1


def test_rank_documents_matches_yesterday_in_the_query_with_a_date_named_before():
    # given a date named ahead of time
    history = ["我3月2号下午有空", "周末我要加班", "地铁站旁边那套还在吗"]
    days = ["2026-02-26", "2026-02-27", "2026-02-28"]
    # when asked "yesterday" on 3 March / then the message naming 2 March is recalled
    assert ranked(history, "昨天约的是几点", days=days, asked="2026-03-03") == [0]


def test_rank_documents_matches_a_week_and_a_weekday():
    # given two viewings a week apart, each said "today"
    history = ["今天去看了绿地的房子", "还行，就是有点吵", "今天去看了万科的房子"]
    days = ["2026-03-04", "2026-03-04", "2026-03-11"]
    # when asked about last week on 12 March / then the one of the week before comes first
    assert ranked(history, "上周看的房子是哪个小区", days=days, asked="2026-03-12")[0] == 0
    # and 下周三 said on Thursday 5 March is 11 March
    assert ranked(
        ["下周三我搬家", "钥匙什么时候给我"],
        "3月11号那天我有什么安排",
        days=["2026-03-05", "2026-03-09"],
        asked="2026-03-09",
    ) == [0]


def test_rank_documents_matches_english_relative_days():
    history = ["The plumber is coming tomorrow morning.", "Great, I'll be home.", "The electrician came this morning."]
    days = ["2026-07-09", "2026-07-09", "2026-07-14"]
    assert ranked(history, "Who came on July 10?", days=days, asked="2026-07-20")[0] == 0


def test_rank_documents_without_days_reads_no_relative_date():
    # given 昨天 said on different days, and no days passed
    history = ["昨天去看了那套房子", "预算八千"]
    # then a date in the query finds nothing through it (only the words match)
    assert ranked(history, "3月2号") == []
    # and rank() over texts, which has no days, answers as before
    assert rank("3月2号", history, 6) == []


def test_rank_documents_a_date_nobody_names_does_not_dilute_the_query():
    # given a message matching the query's words but naming no date
    history = ["押金交了八千", "周末看房"]
    # when the query also names a date / then the word match is still found
    assert ranked(history, "2026年3月2号交的押金", days=["2026-03-01", "2026-03-01"], asked="2026-03-10") == [0]


def test_rank_documents_reads_a_month_and_day_in_the_nearest_year():
    # given 1月2号 said in late December (so next year's January 2nd)
    history = ["1月2号交房", "好的"]
    days = ["2026-12-28", "2026-12-28"]
    # when asked on 3 January "the day before yesterday"
    assert ranked(history, "前天是什么事", days=days, asked="2027-01-04") == [0]


@pytest.mark.parametrize(
    "text", ["了解一下周边", "这周边有超市吗", "目前天气不错", "然后天台可以用吗", "说明天然气费另算", "楼上周围很吵"]
)
def test_date_words_inside_other_words_are_no_dates(text):
    # Given a relative-date word that is part of another word (found by a review)
    # Then no date is read from it
    assert date_mentions(text) == []
