"""What a model's hypothesis may be (issue 35): grounded in the customer's own words
「我想在浦东租个两居室，预算八千左右」, an inference is kept only when it is about what those words
talk about, is no sensitive category of PIPL art. 28 and no completed transaction, rests only on
the customer's own admissible messages, and is one of the first three kept this turn. Everything
else is dropped with a reason that says why, and only what is kept reaches the review queue."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.models import MessageDirection
from memory.attention import review_queue
from memory.capture.evidence import BLOCKED, NOT_INBOUND, OTHER_CUSTOMER
from memory.capture.grounding import HYPOTHESES_PER_TURN, OFF_TOPIC, hypotheses_ground
from memory.models import MemoryItem, MemoryStatus, MemoryType
from memory.providers import TurnHypothesis
from sessions_epoch.pipeline import draft_generate, ground_hypotheses
from tests.factories import BASE_TIME, CustomerFactory, MessageFactory
from tests.sessions_epoch.test_pipeline import ScriptedClient, _answer

SAID = "我想在浦东租个两居室，预算八千左右"
KEPT_ON_BUDGET = "客户预算可能能加到一万"
OVER_THE_LIMIT = f"本轮推断超过 {HYPOTHESES_PER_TURN} 条上限"


def _category(label: str) -> str:
    """The start of the reason a hypothesis of a sensitive category (or a completed transaction) gets."""
    return f"推断涉及{label}"


@pytest.fixture
def customer(account):
    return CustomerFactory(conversation_id="wm_zhou_035", display_name="周女士")


@pytest.fixture
def said(customer):
    """The customer's own words, stored as received (not captured: only the model turn writes)."""
    return MessageFactory(customer=customer, text=SAID, sent_at=BASE_TIME)


def _hypothesis(text: str, message_ids, *, key: str = "guess") -> TurnHypothesis:
    return TurnHypothesis(key=key, text=text, confidence=0.6, message_ids=tuple(message_ids))


def _ground(customer, *hypotheses: TurnHypothesis):
    kept, dropped = ground_hypotheses(customer=customer, hypotheses=list(hypotheses))
    return [h.text for h in kept], [(d["index"], d["reason"]) for d in dropped]


# --- one hypothesis at a time -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label"),
    [
        pytest.param("客户有犯罪记录", "犯罪记录", id="criminal_record"),
        pytest.param("客户已经签了合同并付清押金", "已完成的交易（签约、付款）", id="completed_transaction"),
        pytest.param("客户可能怀孕了", "健康状况", id="health_pregnancy"),
        pytest.param("客户月薪三万以上", "金融账户与收入", id="income"),
        pytest.param("客户的孩子在上小学", "未成年人", id="minor_child"),
    ],
)
def test_sensitive_or_transaction_hypothesis_is_dropped_with_its_category(customer, said, text, label):
    # when the model infers something sensitive from the customer's ordinary words
    kept, dropped = _ground(customer, _hypothesis(text, [said.pk]))

    # then it is dropped, and the reason names the category
    assert kept == []
    assert len(dropped) == 1
    index, reason = dropped[0]
    assert index == 0
    assert reason.startswith(_category(label)), reason


@pytest.mark.parametrize(
    "text",
    [pytest.param("客户是医生", id="occupation_doctor"), pytest.param("客户开宝马", id="drives_bmw")],
)
def test_hypothesis_about_something_the_words_never_talk_about_is_dropped_as_off_topic(customer, said, text):
    kept, dropped = _ground(customer, _hypothesis(text, [said.pk]))
    assert kept == []
    assert dropped == [(0, OFF_TOPIC)]


def test_hypothesis_about_what_the_customer_talked_about_is_kept(customer, said):
    kept, dropped = _ground(customer, _hypothesis(KEPT_ON_BUDGET, [said.pk]))
    assert kept == [KEPT_ON_BUDGET]
    assert dropped == []


def _other_customers(customer, said):
    return [MessageFactory(customer=CustomerFactory(display_name="李女士"), text=SAID).pk]


def _outbound(customer, said):
    reply = MessageFactory(
        customer=customer,
        direction=MessageDirection.OUTBOUND,
        sender="顾问小李",
        text="好的，浦东两居室预算八千左右可以找到，预算也可以加到一万看看",
        sent_at=BASE_TIME + dt.timedelta(minutes=1),
    )
    return [reply.pk]


def _password(customer, said):
    secret = MessageFactory(
        customer=customer, text="我的银行卡密码是 839201，帮我记一下", sent_at=BASE_TIME + dt.timedelta(minutes=2)
    )
    return [secret.pk]


def _own_and_password(customer, said):
    return [said.pk, *_password(customer, said)]


@pytest.mark.parametrize(
    ("cite", "reason"),
    [
        pytest.param(_other_customers, OTHER_CUSTOMER, id="message_of_another_customer"),
        pytest.param(_outbound, NOT_INBOUND, id="our_own_outbound_reply"),
        pytest.param(_password, BLOCKED, id="message_blocked_for_a_password"),
        pytest.param(_own_and_password, BLOCKED, id="own_words_plus_a_blocked_message"),
    ],
)
def test_on_topic_hypothesis_resting_on_inadmissible_evidence_is_dropped_with_the_evidence_reason(
    customer, said, cite, reason
):
    # given an on-topic inference that cites a message which is not the customer's admissible words
    message_ids = cite(customer, said)

    # when it is grounded
    kept, dropped = _ground(customer, _hypothesis(KEPT_ON_BUDGET, message_ids))

    # then the evidence check's reason is the one given
    assert kept == []
    assert dropped == [(0, reason)]


def test_only_the_first_three_on_topic_hypotheses_of_a_turn_are_kept(customer, said):
    texts = [
        KEPT_ON_BUDGET,
        "客户可能更看重浦东的位置",
        "客户可能需要两居",
        "客户月租可能在八千上下",
        "客户可能不考虑浦东以外的区",
    ]
    kept, dropped = _ground(customer, *(_hypothesis(text, [said.pk], key=f"guess_{n}") for n, text in enumerate(texts)))
    assert HYPOTHESES_PER_TURN == 3
    assert kept == texts[:3]
    assert dropped == [(3, OVER_THE_LIMIT), (4, OVER_THE_LIMIT)]


def test_a_sensitive_hypothesis_does_not_use_up_the_turns_limit(customer, said):
    # dropped ones are not counted: three on-topic inferences after two sensitive ones are all kept
    texts = ["客户有犯罪记录", "客户可能怀孕了", KEPT_ON_BUDGET, "客户可能需要两居", "客户可能更看重浦东的位置"]
    kept, dropped = _ground(customer, *(_hypothesis(text, [said.pk], key=f"guess_{n}") for n, text in enumerate(texts)))
    assert kept == texts[2:]
    assert [index for index, _reason in dropped] == [0, 1]


@pytest.mark.parametrize(
    ("text", "label"),
    [
        pytest.param("客户的父亲需要坐轮椅", "健康状况", id="health_disability"),
        pytest.param("客户有ＨＩＶ", "健康状况", id="health_full_width"),
        pytest.param("客户是Gay", "性取向", id="orientation_beside_cjk"),
        pytest.param("客户家住滨江花园12栋", "行踪与详细住址", id="whereabouts_address"),
        pytest.param("客户刚签完购房合同", "已完成的交易（签约、付款）", id="done_signing"),
        pytest.param("客户月入三万", "金融账户与收入", id="income"),
        pytest.param("客户可能在用公积金还房贷", "金融账户与收入", id="loan"),
    ],
)
def test_hypotheses_ground_drops_a_sensitive_hypothesis_citing_ordinary_words_with_its_category(
    customer, said, text, label
):
    # given the customer's ordinary words, and beside the guess an inference about what they said
    guesses = [_hypothesis(text, [said.pk]), _hypothesis(KEPT_ON_BUDGET, [said.pk], key="budget")]

    # when the grounding service judges them
    kept, dropped = hypotheses_ground(customer=customer, hypotheses=guesses)

    # then the guess is dropped, its reason naming the category, and the inference is kept
    assert kept == [1]
    assert len(dropped) == 1 and dropped[0][0] == 0
    assert dropped[0][1].startswith(_category(label)), dropped[0][1]


def test_hypotheses_ground_drops_a_hypothesis_sharing_only_a_character_as_off_topic(customer, said):
    # given 「…预算八千左右」 and a guess whose only link to it is the 万 of a company's name
    kept, dropped = hypotheses_ground(customer=customer, hypotheses=[_hypothesis("客户可能在万达上班", [said.pk])])
    # then it is about something else
    assert kept == []
    assert dropped == [(0, OFF_TOPIC)]


# --- through a full model turn ------------------------------------------------------------------


def _entry(key: str, text: str, message_ids) -> dict:
    return {"key": key, "text": text, "confidence": 0.7, "messageIds": list(message_ids)}


def _turn_categories(customer, said):
    own = [said.pk]
    return (
        [
            _entry("budget_up", KEPT_ON_BUDGET, own),
            _entry("criminal", "客户有犯罪记录", own),
            _entry("signed", "客户已经签了合同并付清押金", own),
            _entry("pregnant", "客户可能怀孕了", own),
            _entry("salary", "客户月薪三万以上", own),
        ],
        {
            "criminal": _category("犯罪记录"),
            "signed": _category("已完成的交易（签约、付款）"),
            "pregnant": _category("健康状况"),
            "salary": _category("金融账户与收入"),
        },
    )


def _turn_topics_and_evidence(customer, said):
    own = [said.pk]
    return (
        [
            _entry("child", "客户的孩子在上小学", own),
            _entry("doctor", "客户是医生", own),
            _entry("bmw", "客户开宝马", own),
            _entry("stranger", KEPT_ON_BUDGET, _other_customers(customer, said)),
            _entry("ours", KEPT_ON_BUDGET, _outbound(customer, said)),
        ],
        {
            "child": _category("未成年人"),
            "doctor": OFF_TOPIC,
            "bmw": OFF_TOPIC,
            "stranger": OTHER_CUSTOMER,
            "ours": NOT_INBOUND,
        },
    )


def _turn_limit(customer, said):
    own = [said.pk]
    return (
        [
            _entry("password", KEPT_ON_BUDGET, _password(customer, said)),
            _entry("budget_up", KEPT_ON_BUDGET, own),
            _entry("pudong", "客户可能更看重浦东的位置", own),
            _entry("two_bed", "客户可能需要两居", own),
            _entry("rent", "客户月租可能在八千上下", own),
        ],
        {"password": BLOCKED, "rent": OVER_THE_LIMIT},
    )


@pytest.mark.parametrize(
    "turn",
    [
        pytest.param(_turn_categories, id="sensitive_categories_and_a_transaction"),
        pytest.param(_turn_topics_and_evidence, id="minor_off_topic_and_other_words"),
        pytest.param(_turn_limit, id="blocked_message_and_the_limit_of_three"),
    ],
)
def test_a_model_turn_traces_each_dropped_hypothesis_and_queues_only_the_kept_ones(customer, said, turn):
    # given a model that answers with five hypotheses citing the messages of this turn
    entries, expected_reasons = turn(customer, said)
    client = ScriptedClient(_answer(requiresHuman=True, hypotheses=entries))

    # when a draft is generated through the real memory provider
    draft = draft_generate(customer=customer, actor="pipeline", client=client)

    # then the trace lists each dropped hypothesis with its key, evidence and reason (never its text)
    trace = draft.context_trace["hypotheses"]
    dropped = {item["key"]: item for item in trace["dropped"]}
    assert set(dropped) == set(expected_reasons)
    for key, reason in expected_reasons.items():
        assert dropped[key]["reason"].startswith(reason), (key, dropped[key]["reason"])
        entry = next(e for e in entries if e["key"] == key)
        assert dropped[key]["messageIds"] == sorted(entry["messageIds"])
        assert dropped[key]["index"] == entries.index(entry)
    kept = [entry for entry in entries if entry["key"] not in expected_reasons]
    assert [item["key"] for item in trace["kept"]] == [entry["key"] for entry in kept]
    for entry in entries:
        assert entry["text"] not in str(trace)
    # and the review queue holds exactly the kept hypotheses, as hypotheses with their evidence
    queued = list(review_queue(customer_id=customer.pk))
    assert sorted((item.key, item.content) for item in queued) == sorted(
        (f"hypothesis:{entry['key']}", entry["text"]) for entry in kept
    )
    for item in queued:
        assert (item.type, item.status) == (MemoryType.HYPOTHESIS, MemoryStatus.ACTIVE)
        assert item.source_message_ids == [said.pk]
    # and nothing dropped reached memory in any form
    stored = list(MemoryItem.objects.filter(customer=customer).values_list("content", flat=True))
    for key in expected_reasons:
        text = next(e["text"] for e in entries if e["key"] == key)
        if text not in {entry["text"] for entry in kept}:
            assert text not in stored
    assert draft.error == ""
