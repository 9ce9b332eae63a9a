"""Session epochs at their edges (issue 40, mutation testing): an epoch rotates exactly at its turn
and age limits, not one turn or one millisecond later; every rotation closes the old epoch with its
reason, chains the new one to it and audits both; an invalid session is retried once in a new
epoch, an exceeded budget leaves the next turn a fresh one."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import OperationalError
from django.utils import timezone

from conversations.models import AuditEvent
from memory.snapshots import snapshot_refresh
from sessions_epoch.clients import ModelResult
from sessions_epoch.models import CloseReason, SessionEpoch
from sessions_epoch.pipeline import draft_generate
from sessions_epoch.services import CLOSED_EPOCHS_KEPT, epoch_count_turn, epoch_for_turn, epoch_rotate
from tests.factories import CustomerFactory, MemoryItemFactory, SessionEpochFactory
from tests.sessions_epoch.test_pipeline import ScriptedClient, _answer

DAY_MS = 24 * 3600 * 1000


def _rotated() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action="session_epoch_rotated").order_by("id"))


def test_epoch_rotates_exactly_at_its_turn_limit(customer, settings):
    # given epochs of three turns, and an epoch that has run two
    settings.CLAUDE_CODE_SESSION_MAX_TURNS = 3
    epoch = epoch_for_turn(customer=customer)
    epoch_count_turn(epoch=epoch)
    epoch_count_turn(epoch=epoch)

    # when the third turn asks for an epoch, is counted, and a fourth asks
    third = epoch_for_turn(customer=customer)
    epoch_count_turn(epoch=third)
    fourth = epoch_for_turn(customer=customer)

    # then the third still ran in the same epoch and the fourth in a new one, for the turn limit
    assert third.pk == epoch.pk
    assert fourth.pk != epoch.pk and fourth.turns == 0 and fourth.closed_at is None
    assert (epoch.client, fourth.client) == ("", "")
    epoch.refresh_from_db()
    assert (epoch.turns, epoch.close_reason) == (3, CloseReason.MAX_TURNS)
    assert [(event.payload["close_reason"], event.actor_name) for event in _rotated()] == [("max_turns", "pipeline")]


def test_epoch_rotates_exactly_at_its_age_limit(customer, settings):
    # given a one-day age limit and an epoch opened at nine in the morning
    settings.CLAUDE_CODE_SESSION_MAX_AGE_MS = DAY_MS
    opened = timezone.now() - dt.timedelta(days=2)
    epoch = epoch_for_turn(customer=customer, now=opened)

    # when turns ask for an epoch one millisecond before the day is over, then exactly at its end
    before = epoch_for_turn(customer=customer, now=opened + dt.timedelta(milliseconds=DAY_MS - 1))
    at_limit = epoch_for_turn(customer=customer, now=opened + dt.timedelta(milliseconds=DAY_MS))

    # then the first is still the same epoch and the second a new one, closed for age at that moment
    assert before.pk == epoch.pk
    assert at_limit.pk != epoch.pk and at_limit.started_at == opened + dt.timedelta(days=1)
    epoch.refresh_from_db()
    assert epoch.close_reason == CloseReason.MAX_AGE
    assert epoch.closed_at == opened + dt.timedelta(days=1)


def test_epoch_rotation_closes_the_old_one_and_audits_what_it_carried(customer):
    # given a customer with a memory snapshot and an open epoch of two turns
    MemoryItemFactory(customer=customer, content="只考虑张江地铁站步行十分钟内的两居室", key="constraint:metro")
    snapshot, _ = snapshot_refresh(customer=customer, reason="测试")
    old = epoch_for_turn(customer=customer)
    epoch_count_turn(epoch=old)
    epoch_count_turn(epoch=old)

    # when the model reports the session invalid
    new = epoch_rotate(customer=customer, reason=CloseReason.INVALID, actor="pipeline")

    # then the old epoch is closed for that reason, with a readable history, and the new one follows it
    old.refresh_from_db()
    assert old.closed_at is not None and old.close_reason == CloseReason.INVALID
    assert old.history.first().history_change_reason == "关闭会话：会话无效"
    assert new.history.first().history_change_reason == "轮换会话：会话无效"
    assert new.parent_session_id == old.session_id and new.memory_version == snapshot.version
    assert new.turns == 0 and new.closed_at is None and not new.model_session_started
    # and the rotation is audited with the old epoch's turns and both sessions
    (event,) = _rotated()
    assert event.reason == "会话轮换：会话无效" and event.actor_name == "pipeline"
    assert event.conversation_id == customer.conversation_id
    assert event.payload == {
        "close_reason": "invalid",
        "old_session_id": old.session_id,
        "old_turns": 2,
        "new_session_id": new.session_id,
        "parent_session_id": old.session_id,
        "memory_version": snapshot.version,
        "pruned_epochs": 0,
    }


def test_epoch_rotate_without_an_open_epoch_follows_the_latest_closed_one(customer):
    # given two epochs of earlier days, both closed, none open, the later one recorded first
    start = timezone.now() - dt.timedelta(days=3)
    latest = SessionEpochFactory(
        customer=customer, started_at=start + dt.timedelta(days=1), closed_at=start + dt.timedelta(days=1, hours=1)
    )
    SessionEpochFactory(customer=customer, started_at=start, closed_at=start + dt.timedelta(hours=1))

    # when an epoch is rotated by hand
    new = epoch_rotate(customer=customer, reason=CloseReason.MANUAL, actor="客服主管")

    # then the new epoch follows the latest one, and the audit says no epoch was open
    assert new.parent_session_id == latest.session_id and new.closed_at is None
    (event,) = _rotated()
    assert event.payload["old_session_id"] == "" and event.payload["old_turns"] == 0
    assert event.payload["parent_session_id"] == latest.session_id


def test_epoch_rotate_keeps_the_client_unless_another_is_named(customer):
    # given an open epoch of the Claude Code client
    epoch_for_turn(customer=customer, client="claude_code")

    # when it is rotated with no client named, then again naming another
    kept = epoch_rotate(customer=customer, reason=CloseReason.BUDGET_EXCEEDED, actor="pipeline")
    switched = epoch_rotate(customer=customer, reason=CloseReason.MANUAL, actor="pipeline", client="openai")

    # then the first successor keeps the client and the second takes the named one
    assert kept.client == "claude_code"
    assert switched.client == "openai"


def test_epoch_rotate_refuses_an_unknown_reason(customer):
    # given an open epoch
    epoch = epoch_for_turn(customer=customer)

    # when a rotation is asked for with a reason that is not a close reason
    with pytest.raises(ValueError, match="unknown close reason"):
        epoch_rotate(customer=customer, reason="客户要求", actor="pipeline")

    # then the epoch stays open and nothing was rotated
    epoch.refresh_from_db()
    assert epoch.closed_at is None and not _rotated()


def test_epoch_first_opening_is_audited_with_its_session(customer):
    # given a customer with no epoch yet
    assert not SessionEpoch.objects.filter(customer=customer).exists()

    # when the first turn asks for one
    epoch = epoch_for_turn(customer=customer, actor="pipeline", client="offline")

    # then it is opened with no parent, for that client, and its opening is audited
    assert epoch.client == "offline" and epoch.parent_session_id == ""
    assert epoch.history.first().history_change_reason == "开启会话"
    event = AuditEvent.objects.get(action="session_epoch_opened")
    assert event.reason == "开启模型会话" and event.actor_name == "pipeline"
    assert event.conversation_id == customer.conversation_id
    assert event.payload == {"session_id": epoch.session_id, "memory_version": None}


def test_epoch_opens_without_a_memory_version_when_the_snapshot_cannot_be_read(customer, monkeypatch, caplog):
    # given a memory provider whose snapshot table cannot be read
    class Unreadable:
        def memory_version(self, customer):
            raise OperationalError("no such table: memory_memorysnapshot")

    monkeypatch.setattr("sessions_epoch.services.get_provider", lambda: Unreadable())

    # when an agent's turn opens the customer's first epoch
    epoch = epoch_for_turn(customer=customer, actor="客服小李")

    # then the epoch opens without a version, and the failure is audited for that agent with the reason
    assert epoch.memory_version is None and epoch.closed_at is None
    failure = AuditEvent.objects.get(action="memory_recall_failed")
    assert failure.actor_name == "客服小李" and failure.conversation_id == customer.conversation_id
    assert failure.reason == "开启会话时读取记忆快照失败，会话不带记忆版本"
    assert failure.payload == {"stage": "epoch_open", "error": "OperationalError"}
    # and logged with the conversation, with the error's traceback
    (logged,) = [record for record in caplog.records if record.name == "sessions_epoch.services"]
    assert logged.getMessage() == "reading the memory snapshot for wm_wang_001 failed; epoch opens without one"
    assert logged.exc_info is not None


def test_epoch_of_another_customer_is_never_taken(customer):
    # given 李女士 in the middle of a model session
    other = CustomerFactory(conversation_id="wm_li_002", display_name="李女士")
    hers = epoch_for_turn(customer=other)

    # when a turn for 王先生 asks for an epoch
    his = epoch_for_turn(customer=customer)

    # then he gets his own, and hers stays open and untouched
    assert his.pk != hers.pk and his.customer_id == customer.pk
    hers.refresh_from_db()
    assert hers.closed_at is None and hers.turns == 0


def test_epoch_count_turn_counts_one_and_marks_the_session_started(customer):
    # given an epoch that has run four turns
    epoch = epoch_for_turn(customer=customer)
    SessionEpoch.objects.filter(pk=epoch.pk).update(turns=4)

    # when a turn is counted
    counted = epoch_count_turn(epoch=epoch, reason="生成一轮回复")

    # then it has five, its model session exists, and the caller's copy says so too
    stored = SessionEpoch.objects.get(pk=epoch.pk)
    assert (stored.turns, stored.model_session_started) == (5, True)
    assert (counted.turns, epoch.turns, epoch.model_session_started) == (5, 5, True)
    assert stored.history.first().history_change_reason == "生成一轮回复"


def test_epoch_rotation_prunes_to_the_newest_closed_epochs_and_says_how_many(customer):
    # given as many closed epochs as are kept, the one closed first recorded last, one open epoch,
    # and another customer's closed epochs
    start = timezone.now() - dt.timedelta(days=30)
    for index in range(1, CLOSED_EPOCHS_KEPT):
        SessionEpochFactory(
            customer=customer,
            started_at=start + dt.timedelta(hours=index),
            closed_at=start + dt.timedelta(hours=index, minutes=20),
            close_reason=CloseReason.MAX_TURNS,
        )
    first_closed = SessionEpochFactory(
        customer=customer, started_at=start, closed_at=start + dt.timedelta(minutes=20), close_reason=CloseReason.MANUAL
    )
    other = CustomerFactory(conversation_id="wm_li_002", display_name="李女士")
    for index in range(3):
        SessionEpochFactory(customer=other, started_at=start, closed_at=start + dt.timedelta(minutes=index))
    epoch_for_turn(customer=customer)

    # when the open one is rotated (one more closed epoch than are kept)
    epoch_rotate(customer=customer, reason=CloseReason.INVALID, actor="pipeline")

    # then exactly the one closed first went, the audit counts it, and the other customer keeps all
    assert SessionEpoch.objects.filter(customer=customer, closed_at__isnull=False).count() == CLOSED_EPOCHS_KEPT
    assert not SessionEpoch.objects.filter(pk=first_closed.pk).exists()
    assert _rotated()[-1].payload["pruned_epochs"] == 1
    assert SessionEpoch.objects.filter(customer=other).count() == 3


class _RecordingClient(ScriptedClient):
    """A scripted model that also keeps the hints each call was given."""

    def __init__(self, *outputs):
        super().__init__(*outputs)
        self.hints: list[dict[str, str] | None] = []

    def generate(self, *, prompt, session, hints=None):
        self.hints.append(hints)
        return super().generate(prompt=prompt, session=session, hints=hints)


def test_turn_with_an_invalid_session_is_retried_once_in_a_new_epoch(customer, provider):
    # given an epoch opened by another client, and a model whose session was lost: its first answer
    # refuses the session
    refused = ModelResult(client="scripted", session_invalid=True, error="会话不存在")
    client = _RecordingClient(refused, _answer())
    first = epoch_for_turn(customer=customer, client="claude_code")
    epoch_count_turn(epoch=first)

    # when an agent has a draft generated
    draft = draft_generate(customer=customer, actor="客服小李", client=client)

    # then the same request ran again once, in a new epoch of this client, as a new session
    assert len(client.sessions) == 2
    assert client.sessions[0].resume is True and client.sessions[1].resume is False
    assert client.prompts == [provider.prompt, provider.prompt]
    assert client.hints[0] == client.hints[1] and client.hints[0]["preferred_name"] == "王先生"
    new = SessionEpoch.objects.get(closed_at__isnull=True)
    assert draft.session_id == new.session_id == client.sessions[1].session_id
    assert new.parent_session_id == first.session_id and new.turns == 1 and new.client == "scripted"
    first.refresh_from_db()
    assert (first.close_reason, first.turns) == (CloseReason.INVALID, 1)
    assert _rotated()[-1].actor_name == "客服小李"
    model = draft.context_trace["model"]
    assert model["resumed"] is False
    assert model["rotations"] == [{"reason": "invalid", "from": first.session_id, "to": new.session_id}]


def test_turn_refused_twice_is_not_counted(customer, provider):
    # given a model that refuses even a fresh session
    refused = ModelResult(client="scripted", session_invalid=True, error="会话不存在")
    client = ScriptedClient(refused)

    # when a draft is generated
    draft = draft_generate(customer=customer, actor="pipeline", client=client)

    # then it was tried twice, the new epoch counts no turn, and a human gets the failed draft
    assert len(client.sessions) == 2
    new = SessionEpoch.objects.get(closed_at__isnull=True)
    assert new.turns == 0 and not new.model_session_started
    assert draft.requires_human


def test_turn_over_budget_is_counted_and_the_next_turn_starts_a_new_epoch(customer, provider, staff_user):
    # given a model that answers but reports its budget spent
    spent = ModelResult(client="scripted", output=_answer(), budget_exceeded=True, error="预算超限")
    client = ScriptedClient(spent, _answer())

    # when an agent has two drafts generated
    first = draft_generate(customer=customer, actor=staff_user, client=client)
    second = draft_generate(customer=customer, actor=staff_user, client=client)

    # then the first turn ran in the epoch it opened, counted there by the agent, then closed for the budget
    old = SessionEpoch.objects.get(session_id=first.session_id)
    assert (old.turns, old.close_reason, old.client) == (1, CloseReason.BUDGET_EXCEEDED, "scripted")
    # (each history row by the agent: the opening, the counted turn, the closing, the successor's opening)
    rows = {row.history_change_reason: row.history_user for row in SessionEpoch.history.all()}
    assert rows == {
        "开启会话": staff_user,
        "生成一轮": staff_user,
        "关闭会话：预算超限": staff_user,
        "轮换会话：预算超限": staff_user,
    }
    opened = AuditEvent.objects.get(action="session_epoch_opened")
    assert opened.actor_name == staff_user.get_username() and opened.payload["session_id"] == old.session_id
    # and the next turn ran in the new epoch, a fresh session
    new = SessionEpoch.objects.get(session_id=second.session_id)
    assert new.parent_session_id == old.session_id and new.turns == 1
    assert [event.actor_name for event in _rotated()] == [staff_user.get_username()]
    assert first.context_trace["model"]["rotations"] == [
        {"reason": "budget_exceeded", "from": old.session_id, "to": new.session_id}
    ]
    assert second.context_trace["model"]["rotations"] == []
    assert [session.resume for session in client.sessions] == [False, False]


def test_turn_over_budget_opens_the_next_epoch_for_the_client_that_ran(customer, provider):
    # given an epoch opened by the Claude Code client, and now a scripted model that overspends
    old = epoch_for_turn(customer=customer, client="claude_code")
    spent = ModelResult(client="scripted", output=_answer(), budget_exceeded=True, error="预算超限")

    # when a draft is generated with it
    draft_generate(customer=customer, actor="pipeline", client=ScriptedClient(spent))

    # then the turn ran in the open epoch, and the one that follows it is the scripted client's
    new = SessionEpoch.objects.get(closed_at__isnull=True)
    assert new.parent_session_id == old.session_id and new.client == "scripted"
