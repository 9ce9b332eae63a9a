"""The two tiers (issue 35), family by family and path by path.

Capture writes memory by itself only from a clause that is the customer's own words, about the
customer, stating something lasting, with the value in the field's own form. Each family below is a
message that looks like it states a want but does not; each carries the wrong value a careless
reader (or a model) would take from it. On every path that writes, the wrong value never becomes an
active memory item, a profile field, a line of the snapshot or of the prompt's memory:

- capture of the ingested message, re-capture of the same message, backfill of stored history —
  where the reader reads a want it holds back, a proposal waits for a supervisor, naming the rule
  (`admission.HOLD_BACKS`) that held it back;
- a model's profile update naming the wrong value, judged by `ground_profile_updates` and through a
  full `draft_generate` turn — never kept, at most proposed (and then staged as a proposal);
- a model's hypothesis restating it, citing the message — at most an active *hypothesis* (never a
  fact), and dropped, with its category, when it is sensitive or a completed transaction.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import pytest

from conversations.models import CustomerProfile, MessageDirection
from memory.capture.backfill import Totals, customer_backfill
from memory.capture.grounding import NOT_READ, OFF_TOPIC, PROPOSED_TO_REVIEW
from memory.capture.jobs import HYPOTHESIS_MAX_CONFIDENCE
from memory.capture.services import capture_message
from memory.models import MemoryItem, MemoryStatus, MemoryType
from memory.providers import PrefetchRequest, get_provider
from memory.snapshots import SECTION_TITLES, snapshot_current
from qiwei_site.reading.extract.admission import HOLD_BACK_LABELS, HOLD_BACKS
from qiwei_site.reading.fields import PROFILE_FIELD_NAMES, profile_item_key
from sessions_epoch.pipeline import draft_generate, ground_profile_updates
from tests.factories import BASE_TIME, CustomerFactory, MessageFactory
from tests.sessions_epoch.test_pipeline import ScriptedClient, _answer

HOLD_BACK_NAMES = frozenset(row.name for row in HOLD_BACKS)
HYPOTHESIS_HEADING = "## " + dict(SECTION_TITLES)[MemoryType.HYPOTHESIS]
CONVERSATION = "wm_conv_capture"  # the `ingest` fixture's conversation


@dataclass(frozen=True)
class Family:
    name: str
    said: str  # the customer's message
    field: str  # the profile field a careless reading fills…
    value: str  # …with this wrong value (what the model proposes)
    wrong: tuple[str, ...]  # every form the wrong value may be written in
    hypothesis: str  # a model's inference restating the wrong value
    held_back: frozenset[str] = frozenset()  # the rule(s) a proposal names; empty: nothing to propose
    dropped_as: str = ""  # why the hypothesis is dropped: a category (sensitive / transaction), or OFF_TOPIC
    asked: str = ""  # the agent's message just before, when the family needs one
    right: str = ""  # what the message does state, written by itself


def _held(*names: str) -> frozenset[str]:
    assert set(names) <= HOLD_BACK_NAMES, names
    return frozenset(names)


TRANSACTION = "已完成的交易（签约、付款）"

FAMILIES = (
    Family(
        "stock_question",
        "有没有两居室？",
        "layout",
        "两居室",
        ("两居",),
        "客户想租两居室",
        held_back=_held("question"),
    ),
    Family(
        "listing_question",
        "这套在浦东吗？",
        "district",
        "浦东",
        ("浦东",),
        "客户想在浦东找房",
        # The reader reads no topic in the question (a short place name before 吗 is no place name):
        # nothing there for an inference to share.
        dropped_as=OFF_TOPIC,
    ),
    Family(
        "listing_comparison",
        "这套是三居室吗？比刚才那套大吗",
        "layout",
        "三居室",
        ("三居", "三室"),
        "客户想要三居室",
    ),
    Family(
        "choice_between_listings",
        "这两套哪个好，我比较喜欢浦东那套",
        "district",
        "浦东",
        ("浦东",),
        "客户想在浦东找房",
        held_back=_held("comparison"),
    ),
    Family(
        "bargaining_offer",
        "能不能便宜点，三百万能卖吗",
        "budget",
        "三百万",
        ("三百万", "300万", "3000000"),
        "客户预算三百万",
    ),
    Family(
        "bargaining_condition",
        "便宜点的话我就定了",
        "budget",
        "便宜点",
        ("便宜",),
        "客户已经租下了这套房",
        dropped_as=TRANSACTION,
    ),
    Family(
        "listing_price_as_budget",
        "这套总价三百二十万",
        "budget",
        "3200000",
        ("三百二十万", "320万", "3200000"),
        "客户预算三百二十万",
        held_back=_held("listing_price", "listing"),
    ),
    Family(
        "app_template_line",
        "您好，我正在看中达广场的房子",
        "district",
        "中达广场",
        ("中达广场",),
        "客户已经在中达广场买下了房子",
        dropped_as=TRANSACTION,
    ),
    Family(
        "naming_cue_with_a_verb",
        "叫我去看房吧",
        "preferred_name",
        "去看房",
        ("去看房",),
        "客户想约时间去看房",
    ),
    Family(
        "trip_as_city",
        "下周去上海开会",
        "city",
        "上海",
        ("上海",),
        "客户想在上海租房",
        held_back=_held("trip"),
        dropped_as=OFF_TOPIC,  # as above: "上海开会" reads no place and no topic
    ),
    Family(
        "past_stay_as_city",
        "去年在南京住过半年",
        "city",
        "南京",
        ("南京",),
        "客户想在南京租房",
        held_back=_held("past"),
    ),
    Family("negated_budget", "我预算不是五千", "budget", "五千", ("五千", "5000"), "客户预算五千"),
    Family(
        "reason_as_preference",
        "不考虑顶楼，夏天太热了",
        "move_in_date",
        "夏天",
        ("夏天", "太热"),
        "客户怕热，所以不考虑顶楼",
        asked="您对楼层有要求吗？",
        right="不考虑：顶楼",
    ),
    Family(
        "forwarded_chat_record",
        "[聊天记录] 张先生：我想在浦东租三室，预算一万五",
        "layout",
        "三居室",
        ("三居", "三室", "浦东", "一万五", "15000"),
        "客户想在浦东租三室",
        held_back=_held("forwarded"),
    ),
    Family(
        "claim_in_a_place_slot",
        "想在已付定金附近租",
        "district",
        "已付定金",
        ("定金",),
        "客户已付定金",
        held_back=_held("place_form"),
        dropped_as=TRANSACTION,
    ),
)


def _by_path(paths: tuple[str, ...]) -> list:
    return [pytest.param(family, path, id=f"{family.name}-{path}") for family in FAMILIES for path in paths]


# --- helpers ------------------------------------------------------------------------------------


def _carries(text: str, family: Family) -> bool:
    return any(wrong in text for wrong in family.wrong)


def _stored(family: Family):
    """The family's message stored as received, not captured (the path under test is the only writer)."""
    customer = CustomerFactory(conversation_id=CONVERSATION, display_name="张先生")
    if family.asked:
        MessageFactory(
            customer=customer,
            direction=MessageDirection.OUTBOUND,
            sender="顾问小李",
            text=family.asked,
            sent_at=BASE_TIME,
        )
    message = MessageFactory(customer=customer, text=family.said, sent_at=BASE_TIME + dt.timedelta(minutes=1))
    return customer, message


def _ingested(ingest, family: Family):
    """The family's message ingested the way the WeCom webhook stores it (capture runs on it)."""
    if family.asked:
        ingest(family.asked, direction="outbound")
    (message,) = ingest(family.said).created
    return message.customer, message


def _proposals(customer) -> list[tuple]:
    return sorted(
        MemoryItem.objects.filter(customer=customer, status=MemoryStatus.PROPOSED).values_list(
            "id", "key", "content", "held_back", "source_message_ids"
        )
    )


def _memory_sections(prompt: str) -> str:
    """The prompt's core memory and profile sections (not the quoted conversation, which may quote
    the customer's words as they are)."""
    parts = re.split(r"^===== (.+) =====$", prompt, flags=re.MULTILINE)
    wanted = ("客户核心记忆快照", "当前画像、未完成待办、预警与业务反馈")
    return "\n".join(body for title, body in zip(parts[1::2], parts[2::2], strict=True) if title.endswith(wanted))


def _assert_never_a_fact(customer, family: Family) -> None:
    """No active item but a hypothesis, no profile field, no snapshot or prompt line but a hypothesis's
    carries the wrong value."""
    for item in MemoryItem.objects.filter(customer=customer, status=MemoryStatus.ACTIVE):
        if _carries(item.content, family):
            assert item.type == MemoryType.HYPOTHESIS, (item.key, item.type, item.content)
    profile = CustomerProfile.objects.get(customer=customer)
    for name in PROFILE_FIELD_NAMES:
        assert not _carries(getattr(profile, name), family), (name, getattr(profile, name))
    snapshot = snapshot_current(customer)
    heading = ""
    for line in (snapshot.content if snapshot else "").splitlines():
        if line.startswith("## "):
            heading = line
        elif _carries(line, family):
            assert heading == HYPOTHESIS_HEADING, (heading, line)
    built = get_provider().prefetch(PrefetchRequest(customer=customer))
    for line in _memory_sections(built.prompt).splitlines():
        if _carries(line, family):
            assert line.startswith("- 待确认推断："), line


def _assert_proposals_named(customer, family: Family, message) -> None:
    """Every proposal names a hold-back rule; where the family is a want held back, one carries the
    wrong value with that rule and the message as evidence."""
    proposals = _proposals(customer)
    for _id, key, content, held_back, _ids in proposals:
        assert held_back in HOLD_BACK_LABELS, (key, content, held_back)
    carrying = [p for p in proposals if _carries(p[2], family)]
    if family.held_back:
        assert carrying, f"no proposal carries {family.wrong}"
        for _id, key, content, held_back, ids in carrying:
            assert held_back in family.held_back, (key, content, held_back)
            assert ids == [message.pk]


# --- (a)–(c): capture, re-capture, backfill ----------------------------------------------------


@pytest.mark.parametrize(("family", "path"), _by_path(("capture", "recapture", "backfill")))
def test_capture_paths_never_write_the_wrong_value(account, ingest, family, path):
    # given the family's message, on the path under test
    if path == "backfill":
        customer, message = _stored(family)
        customer_backfill(customer=customer, totals=Totals())
    else:
        customer, message = _ingested(ingest, family)
        if path == "recapture":
            before = _proposals(customer)
            capture_message(message=message)
            # re-capture is idempotent: the same proposals, no new ones
            assert _proposals(customer) == before

    # then the wrong value is nowhere as a fact, and what is held back is a named proposal
    _assert_never_a_fact(customer, family)
    _assert_proposals_named(customer, family, message)
    if family.right:  # what the customer did state as lasting is still written by itself
        active = MemoryItem.objects.filter(customer=customer, status=MemoryStatus.ACTIVE)
        assert family.right in set(active.values_list("content", flat=True))


# --- (d): a model's profile update naming the wrong value --------------------------------------


@pytest.mark.parametrize(("family", "path"), _by_path(("grounding", "model_turn", "model_turn_after_capture")))
def test_a_models_profile_update_with_the_wrong_value_is_never_kept(account, ingest, family, path):
    # given the family's message (stored but not captured, or ingested and captured first), and a
    # model that proposes the wrong value
    customer, message = _ingested(ingest, family) if path == "model_turn_after_capture" else _stored(family)
    updates = {family.field: family.value}

    if path == "grounding":
        # when the update is grounded
        kept, evidence, dropped, proposed = ground_profile_updates(customer=customer, updates=updates)

        # then it is never kept; it is proposed exactly where the reader reads it only as a proposal
        assert kept == {} and evidence == {}
        assert [item["field"] for item in dropped] == [family.field]
        if family.held_back:
            assert dropped[0]["reason"] == PROPOSED_TO_REVIEW
            assert proposed[family.field]["held_back"] in family.held_back
            assert proposed[family.field]["message_ids"] == [message.pk]
        else:
            assert dropped[0]["reason"] == NOT_READ
            assert proposed == {}
        return

    # when a full model turn runs with that update
    client = ScriptedClient(_answer(requiresHuman=True, profileUpdates=updates))
    draft = draft_generate(customer=customer, actor="pipeline", client=client)

    # then the draft keeps nothing of it, and says where it went
    assert draft.error == ""
    assert family.field not in draft.profile_updates
    assert family.field in [item["field"] for item in draft.dropped_updates]
    grounding = draft.context_trace["grounding"]
    assert family.field not in grounding["evidence"]
    assert grounding["proposed"] == ({family.field: [message.pk]} if family.held_back else {})
    # and neither the profile nor active memory holds it; where proposed, a named proposal waits
    _assert_never_a_fact(customer, family)
    _assert_proposals_named(customer, family, message)
    if family.held_back:
        staged = MemoryItem.objects.get(
            customer=customer, status=MemoryStatus.PROPOSED, key=profile_item_key(family.field)
        )
        assert staged.held_back in family.held_back
        assert staged.source_message_ids == [message.pk]
    else:
        assert _proposals(customer) == []


# --- (e): a model's hypothesis restating the wrong value ---------------------------------------


@pytest.mark.parametrize("family", [pytest.param(f, id=f"{f.name}-hypothesis") for f in FAMILIES])
def test_a_models_hypothesis_restating_the_wrong_value_is_at_most_a_hypothesis(account, family):
    # given the family's message, stored but not captured, and a model inferring the wrong value from it
    customer, message = _stored(family)
    entry = {"key": "restated", "text": family.hypothesis, "confidence": 0.9, "messageIds": [message.pk]}
    client = ScriptedClient(_answer(requiresHuman=True, hypotheses=[entry]))

    # when a full model turn runs
    draft = draft_generate(customer=customer, actor="pipeline", client=client)

    # then a sensitive or transaction inference is dropped naming its category (one about nothing the
    # message talks about, as off-topic); any other is kept, as a hypothesis only
    trace = draft.context_trace["hypotheses"]
    stored = MemoryItem.objects.filter(customer=customer, key="hypothesis:restated")
    if family.dropped_as:
        assert trace["kept"] == []
        assert [item["key"] for item in trace["dropped"]] == ["restated"]
        reason = trace["dropped"][0]["reason"]
        expected = OFF_TOPIC if family.dropped_as == OFF_TOPIC else f"推断涉及{family.dropped_as}"
        assert reason.startswith(expected), reason
        assert not stored.exists()
    else:
        assert [item["key"] for item in trace["kept"]] == ["restated"]
        assert trace["dropped"] == []
        (item,) = stored
        assert (item.type, item.status, item.content) == (MemoryType.HYPOTHESIS, MemoryStatus.ACTIVE, family.hypothesis)
        assert item.confidence <= HYPOTHESIS_MAX_CONFIDENCE
        assert item.source_message_ids == [message.pk]
    assert (
        not MemoryItem.objects.filter(customer=customer, content=family.hypothesis)
        .exclude(type=MemoryType.HYPOTHESIS)
        .exists()
    )
    _assert_never_a_fact(customer, family)
