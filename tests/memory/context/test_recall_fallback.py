"""Recall without empty hands: when nothing clears the coverage bar, the best lexical matches that
share a rare term with the question; noise still gets nothing (issue 15 item 5)."""

from __future__ import annotations

import pytest

from conversations.models import MessageDirection
from memory.context.recall import recall_for
from memory.recall import rank
from qiwei_site.reading import recall as recall_module
from tests.memory.context.conftest import filler

IN, OUT = MessageDirection.INBOUND, MessageDirection.OUTBOUND

SMALL_TALK = ["好的，我看一下", "嗯嗯", "收到，谢谢", "您稍等，我查一下", "明白了", "好的没问题", "您看什么时候方便"]


def history_with(*facts: str, rounds: int = 6) -> list[str]:
    """A customer's older messages: the facts, spread among everyday small talk."""
    documents = [*SMALL_TALK * rounds]
    for position, fact in enumerate(facts):
        documents.insert(position * 7 + 3, fact)
    return documents


@pytest.fixture
def no_message_clears_the_bar(monkeypatch):
    # A coverage bar no document can clear: what a long question sharing little with the right message meets.
    monkeypatch.setattr(recall_module, "_MIN_COVERAGE", 1.01)


@pytest.mark.parametrize(
    ("fact", "question"),
    [
        ("我家里养了一只布偶猫，房东得同意才行", "小猫可以带过去吗"),
        ("孩子明年上小学，想离学校近一些", "附近学校怎么样，对口哪个"),
        ("我在张江上班，每天骑电动车", "电动车停哪里"),
        ("之前住的房子隔音特别差，晚上睡不好", "这套隔音如何"),
        ("预算8000左右，最多不超过九千", "八千能谈吗"),
        ("I can only do viewings on Saturday mornings", "what about saturday"),
    ],
)
def test_rank_falls_back_to_a_rare_shared_term_when_nothing_clears_the_bar(no_message_clears_the_bar, fact, question):
    # Given an old fact among small talk, and a question no message covers enough
    documents = history_with("想在浦东租个一居室", fact, "周末才有空看房")
    # When ranking
    best = rank(question, documents, 6)
    # Then the message sharing the question's rare term is recalled rather than nothing
    assert best and documents[best[0]] == fact


@pytest.mark.parametrize(
    "question",
    [
        "好的，谢谢您",  # small talk: every word of it is everywhere in the history
        "嗯嗯，明白",
        "您看一下吧",
        "那就这样吧",
        "这是什么意思",
    ],
)
def test_rank_fallback_lets_no_noise_in(no_message_clears_the_bar, question):
    # Given facts among small talk, and a question sharing only common words or nothing
    documents = history_with("我家里养了一只布偶猫", "预算8000左右", "不要一楼，太潮")
    # When nothing clears the bar
    # Then the fallback finds no rare shared term, and nothing is recalled
    assert rank(question, documents, 6) == []


def test_rank_fallback_needs_a_history_long_enough_to_know_what_is_rare(no_message_clears_the_bar):
    # Given only three older messages: every term is "rare" in so few, so none is evidence
    documents = ["好的房子", "周末看房", "预算八千"]
    # Then a question sharing a single character with one of them gets nothing
    assert rank("好的", documents, 6) == []


def test_rank_fallback_in_a_short_history_takes_a_shared_word_not_a_lone_character(no_message_clears_the_bar):
    # Given a customer with only a few older messages
    documents = ["您好，想租个一居室", "我家里养了一只布偶猫", "周末可以看房", "收到"]
    # Then a shared word is still evidence, a shared common character is not
    assert rank("布偶可以吗", documents, 6) == [1]
    assert rank("好的呀", documents, 6) == []


def test_rank_fallback_is_used_only_when_nothing_clears_the_bar():
    # Given a history where one message clears the bar
    documents = history_with("不考虑顶楼，老人爬不动", "顶楼太热了")
    # When the question is about it
    best = rank("顶楼不考虑", documents, 6)
    # Then what clears the bar is returned, not every message that shares a rare term
    assert documents[best[0]] == "不考虑顶楼，老人爬不动"


def test_recall_for_finds_a_short_question_sharing_one_rare_character(customer, chat, settings):
    # Given the customer mentioned their cat long ago, then a lot of small talk
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 12
    old = chat(
        customer,
        [(IN, "您好，我想在浦东这边租个房子"), (IN, "我家里养了一只布偶猫，房东得同意才行"), *filler(60)],
    )
    latest = chat(customer, [(IN, "小猫可以带过去吗")], start=old[-1].sent_at.replace(hour=23))[0]
    # When recalling for the short question (it shares only 猫 with the old message)
    recalled = recall_for(customer, latest)
    # Then the old message is recalled
    assert [m.id for m in recalled] == [old[1].id]


def test_recall_for_small_talk_recalls_nothing(customer, chat, settings):
    # Given facts and small talk
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 12
    old = chat(customer, [(IN, "我家里养了一只布偶猫"), (IN, "预算8000左右"), *filler(30)])
    latest = chat(customer, [(IN, "那就这样吧")], start=old[-1].sent_at.replace(hour=23))[0]
    # Then nothing is recalled
    assert recall_for(customer, latest) == []
