"""What a model's hypothesis may be about (issue 35): the `TOPICS` it shares with its evidence, and
the `SENSITIVE` categories (PIPL art. 28, completed transactions) it may never be about."""

from __future__ import annotations

import pytest

from qiwei_site.reading.extract._common import CJK_RE
from qiwei_site.reading.hypotheses import SENSITIVE, TOPICS, sensitive, shared_topics, topics

# Rows whose own example the code does not read as the row says (each one is reported, not hidden).
_TOPIC_EXAMPLE_FAILS = {}
_SENSITIVE_EXAMPLE_FAILS = {}


def _params(rows, fails):
    for row in rows:
        reason = fails.get(row.name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(row, id=row.name, marks=marks)


# --- the tables ---------------------------------------------------------------------------------


@pytest.mark.parametrize("row", list(_params(TOPICS, _TOPIC_EXAMPLE_FAILS)))
def test_topic_row_example_is_about_its_topic(row):
    # given the row's example / when its topics are read / then the row is one of them
    assert row.name in topics(row.example), sorted(topics(row.example))


@pytest.mark.parametrize("row", list(_params(SENSITIVE, _SENSITIVE_EXAMPLE_FAILS)))
def test_sensitive_row_example_is_caught_by_its_row(row):
    # given the row's example / when it is checked / then this row catches it
    caught = sensitive(row.example)
    assert caught is not None and caught.name == row.name, caught


@pytest.mark.parametrize("rows", [TOPICS, SENSITIVE], ids=["topics", "sensitive"])
def test_hypothesis_rows_have_unique_names_and_chinese_labels(rows):
    # given a table / then every row is named once, labelled in Chinese and shows an example
    names = [row.name for row in rows]
    assert len(names) == len(set(names))
    for row in rows:
        assert CJK_RE.search(row.label), row.name
        assert row.example.strip(), row.name


def test_sensitive_covers_pipl_categories_and_completed_transactions():
    # given the sensitive table / then it names every PIPL art. 28 category and a done deal
    assert {row.name for row in SENSITIVE} >= {
        "criminal",
        "health",
        "religion",
        "ethnicity",
        "sexual_orientation",
        "biometrics",
        "financial_account",
        "whereabouts",
        "minor",
        "completed_transaction",
    }


# --- sensitive: what it catches, and what it leaves alone ---------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "可能在张江上班",
        "可能已经养猫",
        "预算可能能加到一万",
        "可能是一个人来上海工作",
        "可能比较在意采光",
        "可能看重通勤时间",
    ],
)
def test_customer_service_inference_is_not_sensitive(text):
    # given an ordinary inference about a housing search / then it falls under no sensitive row
    assert sensitive(text) is None


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("客户好像有高血压", "health"),
        ("客户可能是穆斯林", "religion"),
        ("客户应该已经交了定金", "completed_transaction"),
        ("客户可能有孩子要上学", "minor"),
        ("客户年薪大概五十万", "financial_account"),
    ],
)
def test_sensitive_inference_is_caught(text, name):
    # given a model's guess at a sensitive category / then the right row catches it
    caught = sensitive(text)
    assert caught is not None and caught.name == name, caught


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("customer may be pregnant", "health"),
        ("customer has a criminal record", "criminal"),
        ("customer goes to church", "religion"),
        ("customer earns a high salary", "financial_account"),
        ("customer has two children", "minor"),
        ("customer signed the lease", "completed_transaction"),
    ],
)
def test_english_sensitive_inference_is_caught(text, name):
    # given the same guesses in English / then the right row catches them
    caught = sensitive(text)
    assert caught is not None and caught.name == name, caught


@pytest.mark.parametrize(
    "text", ["might work near the office", "might have a cat", "budget might stretch to 10000", "might be living alone"]
)
def test_english_customer_service_inference_is_not_sensitive(text):
    # given an ordinary inference in English / then it falls under no sensitive row
    assert sensitive(text) is None


# --- shared topics ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hypothesis", "evidence", "topic"),
    [
        ("可能在张江上班，看重通勤时间", "我更喜欢地铁附近的，上班方便一点", "commute"),
        ("可能已经养猫", "预算3500左右，希望能养猫", "pets"),
    ],
)
def test_demo_hypothesis_shares_a_topic_with_its_evidence(hypothesis, evidence, topic):
    # given the demo's hypothesis and the message it cites
    # when their shared topics are read / then they share the topic the hypothesis is about
    assert topic in shared_topics(hypothesis, [evidence])


@pytest.mark.parametrize("hypothesis", ["客户是医生", "客户开宝马"])
def test_invented_hypothesis_shares_no_topic(hypothesis):
    # given a hypothesis about something the cited message never mentions
    # when their shared topics are read / then there are none
    assert shared_topics(hypothesis, ["我想在浦东租个两居室，预算八千左右"]) == frozenset()


def test_shared_topics_reads_every_evidence_message():
    # given a hypothesis whose topic only the second cited message mentions
    shared = shared_topics("可能已经养猫", ["我想在浦东租个两居室", "希望能养猫"])
    # then it shares that topic
    assert shared == frozenset({"pets"})


def test_shared_topics_without_evidence_is_empty():
    # given a hypothesis citing nothing / then it shares nothing
    assert shared_topics("可能在张江上班", []) == frozenset()


def test_topics_name_the_places_mentioned():
    # given a message naming a district / then the place is one of its topics
    assert "place:浦东新区" in topics("我想在浦东租个两居室")


@pytest.mark.parametrize(
    ("hypothesis", "evidence", "topic"),
    [
        ("might work near the office", "I want a place near my office", "commute"),
        ("might work near the office", "I want a place near my office", "area"),
        ("may have a cat", "I hope pets are allowed, I have a cat", "pets"),
        ("probably on a tight budget", "my budget is around 5000", "budget"),
        ("might need two bedrooms", "looking for a two bedroom flat", "layout"),
        ("may prefer a quiet area", "somewhere quiet please, no noise", "quiet"),
        ("prefers a high floor", "no ground floor please", "floor"),
        pytest.param("probably works in the city centre", "I work in the city centre", "commute"),
        pytest.param("might be moving next month", "I need to move in next month", "move"),
        pytest.param(
            "might want to live in Pudong",
            "I want to live in Pudong",
            "place:浦东新区",
            marks=pytest.mark.xfail(
                strict=True,
                reason="English place names are not read: places_in finds no place in 'Pudong', so an English "
                "hypothesis about an area shares nothing with the message naming it",
            ),
        ),
    ],
)
def test_english_hypothesis_shares_a_topic_with_its_evidence(hypothesis, evidence, topic):
    # given an English hypothesis and the English message it cites
    # when their shared topics are read / then they share the topic
    assert topic in shared_topics(hypothesis, [evidence]), (sorted(topics(hypothesis)), sorted(topics(evidence)))


@pytest.mark.parametrize("hypothesis", ["customer is a doctor", "customer drives a BMW"])
def test_invented_english_hypothesis_shares_no_topic(hypothesis):
    # given an English hypothesis about something the cited message never mentions
    # when their shared topics are read / then there are none
    assert shared_topics(hypothesis, ["I want a two bedroom flat, budget 8000"]) == frozenset()
