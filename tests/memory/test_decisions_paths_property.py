"""A supervisor's rejection or forget is final on every automatic path (issue 40, DESIGN §7): after
any sequence of customer statements (capture), re-captures of old messages, backfills and model
turns — the model's profile updates and hypotheses grounded by `memory.capture.grounding` through
the turn pipeline — no value a supervisor rejected or forgot, in any spelling, is active in memory,
in the profile or in the current snapshot, and no rejected or forgotten hypothesis comes back.

(tests/memory/test_decisions_property.py holds the human paths and the other invariants; this one
drives the model's paths, which that machine only reaches through `customer_profile_update`.)

Runs QIWEI_PROPERTY_EXAMPLES sequences of 30 steps (20 by default, about 12 s).
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
from typing import cast

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from conversations.models import Customer, CustomerProfile, Message
from memory.capture.backfill import Totals, customer_backfill
from memory.capture.services import capture_message
from memory.governance.services import memory_item_forget, memory_item_reject
from memory.models import MemoryItem, MemoryStatus, MemoryType
from memory.snapshots import snapshot_current
from qiwei_site.operations.smoke_support import ScriptedClient
from qiwei_site.reading.fields import profile_item_value
from sessions_epoch.pipeline import draft_generate
from tests.factories import CustomerFactory, MessageFactory
from tests.memory.test_decisions_property import FIELDS, SAYINGS, _meaning, _spelling, _stated

EXAMPLES = int(os.environ.get("QIWEI_PROPERTY_EXAMPLES", "20"))
SUPERVISOR = "主管"
# What a customer says that a model may read a hunch from: (message, hypothesis key, hypothesis).
HUNCHES = (
    ("我在陆家嘴上班，想找通勤近一点的", "commute", "可能在陆家嘴上班"),
    ("家里有只猫，房东让养吗", "pet", "可能养猫，需要确认房东是否允许"),
)
_conversations = itertools.count(1)


def new_customer(conversation_id: str) -> Customer:
    return cast(Customer, CustomerFactory(conversation_id=conversation_id))


def new_message(customer: Customer, text: str, **fields: object) -> Message:
    return cast(Message, MessageFactory(customer=customer, text=text, **fields))


def _turn(reply: str, updates: dict[str, str], hypotheses: list[dict]) -> ScriptedClient:
    return ScriptedClient(
        {
            "reply": reply,
            "confidence": 0.5,
            "requiresHuman": True,
            "profileUpdates": updates,
            "reasons": ["客户原话"],
            "hypotheses": hypotheses,
        }
    )


class AutomaticPaths(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.banned: set[tuple[str, str]] = set()  # (field, meaning) a supervisor rejected or forgot
        self.banned_hunches: set[tuple[str, str]] = set()  # (key, text) of hypotheses rejected or forgotten
        self.messages: list[Message] = []
        self.said: dict[int, tuple[str, int]] = {}  # message id -> (field, value choice) it states
        self.clock = timezone.now() + dt.timedelta(minutes=1)

    @initialize()
    def customer_arrives(self) -> None:
        self.customer = new_customer(f"wm_paths_{next(_conversations):05d}")

    def _says(self, text: str) -> Message:
        self.clock += dt.timedelta(minutes=1)
        message = new_message(self.customer, text, sent_at=self.clock)
        self.messages.append(message)
        capture_message(message=message)
        return message

    # --- automatic paths -----------------------------------------------------------------------------

    @rule(field=st.sampled_from(FIELDS), choice=st.integers(0, 2), spelling=st.integers(0, 2))
    def customer_says(self, field: str, choice: int, spelling: int) -> None:
        message = self._says(SAYINGS[field][0].format(_spelling(field, choice, spelling)))
        self.said[message.pk] = (field, choice)

    @rule(hunch=st.integers(0, len(HUNCHES) - 1))
    def customer_says_something_to_read_into(self, hunch: int) -> None:
        self._says(HUNCHES[hunch][0])

    @rule(data=st.data())
    def old_message_recaptured(self, data: st.DataObject) -> None:
        if self.messages:
            capture_message(message=data.draw(st.sampled_from(self.messages)))

    @rule()
    def backfill_runs(self) -> None:
        customer_backfill(customer=self.customer, totals=Totals())

    @rule(data=st.data(), spelling=st.integers(0, 2))
    def model_updates_the_profile(self, data: st.DataObject, spelling: int) -> None:
        # The model proposes, in any spelling, a value the customer said (grounding finds it there)
        said = [self.said[message.pk] for message in self.messages if message.pk in self.said]
        if not said:
            return
        field, choice = data.draw(st.sampled_from(said))
        client = _turn("好的，已记下", {field: _stated(field, _spelling(field, choice, spelling))}, [])
        draft_generate(customer=self.customer, actor="pipeline", client=client, regenerate=True)

    @rule(data=st.data(), hunch=st.integers(0, len(HUNCHES) - 1))
    def model_supposes(self, data: st.DataObject, hunch: int) -> None:
        text, key, supposed = HUNCHES[hunch]
        cited = [message for message in self.messages if message.text == text]
        if not cited:
            return
        message = data.draw(st.sampled_from(cited))
        hypotheses = [{"text": supposed, "key": key, "confidence": 0.6, "messageIds": [message.pk]}]
        client = _turn("好的，我确认一下", {}, hypotheses)
        draft_generate(customer=self.customer, actor="pipeline", client=client, regenerate=True)

    # --- the supervisor ------------------------------------------------------------------------------

    @rule(data=st.data(), how=st.sampled_from(["reject", "forget"]))
    def supervisor_decides(self, data: st.DataObject, how: str) -> None:
        active = list(MemoryItem.objects.filter(customer=self.customer, status=MemoryStatus.ACTIVE).order_by("pk"))
        decidable = [
            item for item in active if item.type == MemoryType.HYPOTHESIS or item.key.removeprefix("profile:") in FIELDS
        ]
        if not decidable:
            return
        item = data.draw(st.sampled_from(decidable))
        if item.type == MemoryType.HYPOTHESIS:
            self.banned_hunches.add((item.key, item.content))
        else:
            field = item.key.removeprefix("profile:")
            self.banned.add(_meaning(field, profile_item_value(field, item.content)))
        if how == "reject":
            memory_item_reject(item=item, actor=SUPERVISOR, reason="不对")
        else:
            memory_item_forget(item=item, actor=SUPERVISOR, reason="客户要求删除")

    # --- the promise ---------------------------------------------------------------------------------

    @invariant()
    def rejected_and_forgotten_values_stay_out(self) -> None:
        if not hasattr(self, "customer"):
            return
        active = list(MemoryItem.objects.filter(customer=self.customer, status=MemoryStatus.ACTIVE))
        # not active in memory
        for item in active:
            field = item.key.removeprefix("profile:")
            if item.key.startswith("profile:") and field in FIELDS:
                assert _meaning(field, profile_item_value(field, item.content)) not in self.banned, item.content
            assert (item.key, item.content) not in self.banned_hunches, item.content
        # not in the profile
        profile = CustomerProfile.objects.get(customer=self.customer)
        for field in FIELDS:
            value = getattr(profile, field)
            if value:
                assert _meaning(field, value) not in self.banned, (field, value)
        # not in the snapshot the model is shown
        snapshot = snapshot_current(self.customer)
        if snapshot is not None:
            shown = MemoryItem.objects.filter(pk__in=snapshot.item_ids)
            assert {item.pk for item in shown} <= {item.pk for item in active}, "a decided item in the snapshot"
            for _key, content in self.banned_hunches:
                assert content not in snapshot.content, content


@pytest.mark.long
def test_no_automatic_path_writes_back_a_rejected_or_forgotten_value(account):
    run_state_machine_as_test(
        AutomaticPaths,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=30,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


@pytest.mark.parametrize("hunch", range(len(HUNCHES)))
def test_hunches_are_grounded_as_hypotheses(account, hunch):
    # the property relies on each hunch being kept by grounding, as a hypothesis
    text, key, supposed = HUNCHES[hunch]
    customer = new_customer(f"wm_hunch_{hunch}")
    message = new_message(customer, text)
    capture_message(message=message)
    client = _turn("好的", {}, [{"text": supposed, "key": key, "confidence": 0.6, "messageIds": [message.pk]}])
    draft_generate(customer=customer, actor="pipeline", client=client, regenerate=True)
    item = MemoryItem.objects.get(customer=customer, type=MemoryType.HYPOTHESIS)
    assert (item.key, item.content, item.status) == (f"hypothesis:{key}", supposed, MemoryStatus.ACTIVE)


@pytest.mark.parametrize("field", FIELDS)
def test_model_update_of_a_forgotten_value_is_grounded_and_still_refused(account, field):
    # and on grounding keeping a model's value the customer stated (so the model path writes)
    customer = new_customer(f"wm_grounded_{field}")
    spelt = _spelling(field, 0, 0)
    capture_message(message=new_message(customer, SAYINGS[field][0].format(spelt)))
    memory_item_forget(
        item=MemoryItem.objects.get(customer=customer, key=f"profile:{field}"), actor=SUPERVISOR, reason="清理"
    )
    # a forgotten value is never written back: say it again in another message, then let the model
    # propose it — grounding finds it in the customer's words, and decisions refuse it
    capture_message(message=new_message(customer, SAYINGS[field][0].format(spelt)))
    draft = draft_generate(
        customer=customer, actor="pipeline", client=_turn("好的", {field: _stated(field, spelt)}, []), regenerate=True
    )
    assert not MemoryItem.objects.filter(customer=customer, key=f"profile:{field}", status=MemoryStatus.ACTIVE)
    assert draft.context_trace["grounding"]["evidence"].get(field), "grounding kept the value"
