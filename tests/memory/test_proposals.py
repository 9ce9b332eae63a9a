"""Proposals (issue 35, "two tiers"): what looks like a want but fails the contract of automatic
writes waits for a supervisor as a `proposed` memory item. It is never active memory, never in the
profile, the snapshot or the prompt; a supervisor accepts it (as read or corrected) or rejects it
(final); undecided, it expires; forgetting its evidence or the customer takes it away."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from conversations.models import AuditEvent, CustomerProfile
from memory.attention import REVIEW_PROPOSALS, attention_counts, review_queue
from memory.capture.backfill import Totals, customer_backfill
from memory.capture.services import capture_message
from memory.context.builder import AgentContextBuilder
from memory.governance.erasure import customer_erase
from memory.governance.messages import message_forget
from memory.governance.services import (
    memory_item_add,
    memory_item_forget,
    memory_item_reject,
    memory_items_expire_due,
    memory_proposal_accept,
)
from memory.items import memory_item_put
from memory.models import (
    DecisionKind,
    MemoryCreatedBy,
    MemoryDecision,
    MemoryDirection,
    MemoryItem,
    MemoryStatus,
    MemoryType,
)
from memory.snapshots import snapshot_current
from qiwei_site.platform.errors import Conflict, ValidationFailed
from tests.factories import MessageFactory

STOCK_QUESTION = "有没有带阳台的两居室？"
LAYOUT, BALCONY = "profile:layout", "preference:带阳台"


def say(customer, text: str, **fields):
    """The customer sends `text`; capture reads it. Returns (message, outcome)."""
    message = MessageFactory(customer=customer, text=text, sender="王先生", **fields)
    return message, capture_message(message=message)


def say_now(customer, text: str):
    """The customer sends `text` right now (after any decision taken so far in the test)."""
    return say(customer, text, sent_at=timezone.now())


def pending(customer, key: str) -> MemoryItem | None:
    return MemoryItem.objects.filter(customer=customer, key=key, status=MemoryStatus.PROPOSED).first()


def active(customer, key: str) -> MemoryItem | None:
    return MemoryItem.objects.filter(customer=customer, key=key, status=MemoryStatus.ACTIVE).first()


def layout_of(customer) -> str:
    return CustomerProfile.objects.get(customer=customer).layout


def audits(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("id"))


@pytest.fixture
def known(customer):
    """The customer already told us a budget and a refusal: active memory with a snapshot."""
    message, outcome = say(customer, "预算五千左右，不要顶楼")
    assert outcome.written == 2
    return message


@pytest.fixture
def asked(customer):
    """The customer asked after stock: two proposals wait (户型：两居室, 偏好：带阳台)."""
    message, _outcome = say(customer, STOCK_QUESTION)
    return message


# --- capture proposes, writes nothing ---------------------------------------------------------------


def test_stock_question_writes_proposals_only(customer, known, settings):
    # Given a customer with active memory and a snapshot, and proposals kept for ten days
    settings.QIWEI_MEMORY_PROPOSAL_TTL_DAYS = 10
    snapshot_before = snapshot_current(customer)
    active_before = set(
        MemoryItem.objects.filter(customer=customer, status=MemoryStatus.ACTIVE).values_list("pk", flat=True)
    )
    before = timezone.now()
    # When the customer asks after stock
    message, outcome = say(customer, STOCK_QUESTION)
    # Then what the question asks after waits as two proposals, held back as a question
    proposals = MemoryItem.objects.filter(customer=customer, status=MemoryStatus.PROPOSED).order_by("key")
    assert {(p.key, p.content, p.held_back) for p in proposals} == {
        (LAYOUT, "户型：两居室", "question"),
        (BALCONY, "偏好：带阳台", "question"),
    }
    for proposal in proposals:
        assert (proposal.created_by, proposal.direction) == (MemoryCreatedBy.AUTO, MemoryDirection.INBOUND)
        assert proposal.source_message_ids == [message.pk]
        assert proposal.clause  # the words it was read from
        assert before + dt.timedelta(days=10) <= proposal.expires_at <= timezone.now() + dt.timedelta(days=10)
    assert (outcome.proposed, outcome.written) == (2, 0)
    # And nothing became memory: the same active items, the profile's layout empty, no new snapshot
    assert (
        set(MemoryItem.objects.filter(customer=customer, status=MemoryStatus.ACTIVE).values_list("pk", flat=True))
        == active_before
    )
    assert active(customer, LAYOUT) is None and active(customer, BALCONY) is None
    assert layout_of(customer) == ""
    snapshot_after = snapshot_current(customer)
    assert (snapshot_after.version, snapshot_after.sha256) == (snapshot_before.version, snapshot_before.sha256)
    assert "两居室" not in snapshot_after.content and "阳台" not in snapshot_after.content
    # And each proposal is audited by its rule's name, without the customer's words
    rows = audits("memory_item_proposed")
    assert sorted(row.payload["item_id"] for row in rows) == sorted(p.pk for p in proposals)
    for row in rows:
        assert row.payload["held_back"] == "question" and row.payload["source_message_ids"] == [message.pk]
        assert "两居" not in str(row.payload) and "阳台" not in str(row.payload)


def test_stock_question_asked_again_adds_evidence_to_the_pending_proposal(customer, asked):
    # Given the proposals from the customer's first question
    first = pending(customer, LAYOUT)
    # When the customer asks the same again the next day
    again, outcome = say(customer, STOCK_QUESTION)
    # Then there is still one proposal per key, now citing both messages
    for key in (LAYOUT, BALCONY):
        assert MemoryItem.objects.filter(customer=customer, key=key).count() == 1
        assert pending(customer, key).source_message_ids == [asked.pk, again.pk]
    assert pending(customer, LAYOUT).pk == first.pk
    assert outcome.proposed == 0
    assert active(customer, LAYOUT) is None and layout_of(customer) == ""
    # And the added evidence is audited as such
    added = [row for row in audits("memory_item_proposed") if row.payload["outcome"] == "proposal_evidence_added"]
    assert {row.payload["item_id"] for row in added} == {first.pk, pending(customer, BALCONY).pk}
    assert all(row.payload["source_message_ids"] == [again.pk] for row in added)


def test_stock_question_asked_again_reports_no_memory_written(customer, asked):
    # When the customer asks the same again
    _again, outcome = say(customer, STOCK_QUESTION)
    # Then capture reports that it wrote no memory: the question only added evidence to proposals
    assert outcome.written == 0


def test_stock_question_captured_twice_changes_nothing(customer, asked):
    # Given the proposals from the customer's question
    rows = list(MemoryItem.objects.filter(customer=customer).values_list("pk", "source_message_ids", "status"))
    audit_rows = AuditEvent.objects.count()
    # When capture runs on the same message again (a retried job)
    capture_message(message=asked)
    # Then nothing changes and nothing more is audited
    assert list(MemoryItem.objects.filter(customer=customer).values_list("pk", "source_message_ids", "status")) == rows
    assert AuditEvent.objects.count() == audit_rows


def test_question_about_another_value_replaces_the_pending_proposal(customer):
    # Given a pending proposal 户型：两居室
    say(customer, "有没有两居室？")
    first = pending(customer, LAYOUT)
    assert first.content == "户型：两居室"
    # When the customer asks after another layout
    second_message, outcome = say(customer, "有没有三居室？")
    # Then the newer reading replaces the waiting one, which is kept and linked to it
    second = pending(customer, LAYOUT)
    assert (second.content, second.source_message_ids) == ("户型：三居室", [second_message.pk])
    first.refresh_from_db()
    assert (first.status, first.superseded_by_id) == (MemoryStatus.SUPERSEDED, second.pk)
    assert MemoryItem.objects.filter(customer=customer, key=LAYOUT, status=MemoryStatus.PROPOSED).count() == 1
    assert outcome.proposed == 1
    latest = audits("memory_item_proposed")[-1]
    assert (latest.payload["item_id"], latest.payload["superseded_ids"]) == (second.pk, [first.pk])
    # And still nothing is memory
    assert active(customer, LAYOUT) is None and layout_of(customer) == ""


def test_customer_stating_the_value_settles_the_proposal(customer, asked):
    # Given the pending proposal 户型：两居室 from the customer's question
    proposal = pending(customer, LAYOUT)
    # When the customer later says it outright
    _message, outcome = say(customer, "我想要两居室")
    # Then the value is memory and the profile's layout, and the proposal left the queue, linked to it
    item = active(customer, LAYOUT)
    assert item is not None and item.content == "户型：两居室" and item.created_by == MemoryCreatedBy.AUTO
    assert layout_of(customer) == "两居室"
    proposal.refresh_from_db()
    assert (proposal.status, proposal.superseded_by_id) == (MemoryStatus.SUPERSEDED, item.pk)
    assert pending(customer, LAYOUT) is None
    assert outcome.written == 1
    # And the other proposal, which nothing settled, still waits
    assert pending(customer, BALCONY) is not None
    assert list(review_queue(kind=REVIEW_PROPOSALS).values_list("key", flat=True)) == [BALCONY]


def test_acceptance_with_nothing_to_relax_is_proposed_as_release_alone(customer):
    # Given a customer who never refused the ground floor
    # When they say it would do after all
    _message, outcome = say(customer, "其实一楼也可以考虑")
    # Then it is no memory, only a proposal held back because there was nothing to relax
    proposal = MemoryItem.objects.get(customer=customer)
    assert (proposal.status, proposal.held_back, proposal.content) == (
        MemoryStatus.PROPOSED,
        "release_alone",
        "可以接受：一楼",
    )
    assert outcome.proposed == 1 and outcome.written == 0


# --- accept ------------------------------------------------------------------------------------------


def test_accept_as_read_makes_the_proposal_active_memory(customer, known, asked, staff_user):
    # Given the pending proposal 户型：两居室 and the customer's snapshot
    proposal = pending(customer, LAYOUT)
    version_before = snapshot_current(customer).version
    counts_before = attention_counts().proposals
    # When a supervisor accepts it as read
    item = memory_proposal_accept(item=proposal, actor=staff_user, reason="客户电话里确认要两居室")
    # Then it is active memory vouched for by a person, still citing the customer's message
    item.refresh_from_db()
    assert item.pk == proposal.pk
    assert (item.status, item.content, item.type) == (MemoryStatus.ACTIVE, "户型：两居室", MemoryType.FACT)
    assert (item.created_by, item.confidence, item.expires_at) == (MemoryCreatedBy.HUMAN, 1.0, None)
    assert item.source_message_ids == [asked.pk]
    # And the profile follows its key, and the snapshot is refreshed with it
    assert layout_of(customer) == "两居室"
    snapshot = snapshot_current(customer)
    assert snapshot.version == version_before + 1
    assert item.pk in snapshot.item_ids and "户型：两居室" in snapshot.content
    # And the decision is audited with the supervisor's reason, without the value
    audit = AuditEvent.objects.get(action="memory_proposal_accepted")
    assert (audit.actor_id, audit.reason) == (staff_user.pk, "客户电话里确认要两居室")
    assert audit.payload["item_id"] == item.pk
    assert (audit.payload["edited"], audit.payload["held_back"]) == (False, "question")
    assert "两居" not in str(audit.payload)
    history = MemoryItem.history.filter(id=item.pk).order_by("-history_date", "-history_id").first()
    assert (history.history_user_id, history.history_change_reason) == (staff_user.pk, "客户电话里确认要两居室")
    # And it left the review queue
    assert attention_counts().proposals == counts_before - 1
    assert item.pk not in review_queue().values_list("pk", flat=True)


def test_accept_with_an_edited_value_writes_the_supervisors_value(customer, asked, staff_user):
    # Given the pending proposal 户型：两居室
    proposal = pending(customer, LAYOUT)
    # When a supervisor accepts it corrected: the customer wants three bedrooms
    item = memory_proposal_accept(item=proposal, content="三居室", actor=staff_user, reason="客户电话说其实要三居室")
    # Then the corrected value is memory and the profile's layout
    item.refresh_from_db()
    assert (item.status, item.content, item.created_by) == (MemoryStatus.ACTIVE, "户型：三居室", MemoryCreatedBy.HUMAN)
    assert layout_of(customer) == "三居室"
    assert "户型：三居室" in snapshot_current(customer).content
    assert AuditEvent.objects.get(action="memory_proposal_accepted").payload["edited"] is True
    assert MemoryDecision.objects.filter(customer=customer, kind=DecisionKind.REPLACED).exists()


def test_accept_with_an_edited_value_is_not_undone_by_the_original_words(customer, asked, staff_user):
    # Given a proposal 户型：两居室 a supervisor accepted as 三居室
    memory_proposal_accept(
        item=pending(customer, LAYOUT), content="户型：三居室", actor=staff_user, reason="客户电话说其实要三居室"
    )
    # When the customer, later, says the words that were read as two bedrooms, outright and as a question
    say_now(customer, "我想要两居室")
    say_now(customer, "有没有两居室？")
    # Then the supervisor's value stands: nothing written, nothing proposed under the key
    assert active(customer, LAYOUT).content == "户型：三居室"
    assert layout_of(customer) == "三居室"
    assert pending(customer, LAYOUT) is None
    # But a value the customer has not said before still changes it (they changed their mind)
    say_now(customer, "我想要一居室")
    assert active(customer, LAYOUT).content == "户型：一居室"


def test_accept_supersedes_the_value_memory_held(customer, staff_user):
    # Given memory says two bedrooms, and the customer then asked after three
    say(customer, "我想要两居室")
    old = active(customer, LAYOUT)
    say(customer, "有没有三居室？")
    proposal = pending(customer, LAYOUT)
    assert proposal.content == "户型：三居室"
    # When a supervisor accepts the proposal
    memory_proposal_accept(item=proposal, actor=staff_user, reason="客户电话确认改成三居室")
    # Then the old value is superseded and linked to it, and the profile follows
    old.refresh_from_db()
    assert (old.status, old.superseded_by_id) == (MemoryStatus.SUPERSEDED, proposal.pk)
    assert active(customer, LAYOUT).pk == proposal.pk and layout_of(customer) == "三居室"


def test_accept_a_non_proposal_is_a_conflict(customer, known, asked, staff_user):
    # Given an active item and a proposal already rejected
    budget = active(customer, "profile:budget")
    rejected = memory_item_reject(item=pending(customer, BALCONY), actor=staff_user, reason="客户说阳台无所谓")
    for item in (budget, rejected):
        status = item.status
        # When a supervisor tries to accept it
        with pytest.raises(Conflict) as exc:
            memory_proposal_accept(item=item, actor=staff_user, reason="误点采纳")
        # Then it is refused by its own code, and the item is as it was
        assert exc.value.code == "not_a_proposal"
        item.refresh_from_db()
        assert item.status == status
    assert not AuditEvent.objects.filter(action="memory_proposal_accepted").exists()


@pytest.mark.parametrize("reason", ["", "   "])
def test_accept_without_a_reason_is_refused(customer, asked, staff_user, reason):
    proposal = pending(customer, LAYOUT)
    # When a supervisor accepts without saying why
    with pytest.raises(ValidationFailed) as exc:
        memory_proposal_accept(item=proposal, actor=staff_user, reason=reason)
    # Then it is refused, and the proposal still waits
    assert exc.value.code == "reason_required"
    proposal.refresh_from_db()
    assert proposal.status == MemoryStatus.PROPOSED and layout_of(customer) == ""


def test_accept_as_a_hypothesis_is_refused(customer, asked, staff_user):
    proposal = pending(customer, BALCONY)
    # When a supervisor tries to accept it as an inference to check
    with pytest.raises(ValidationFailed) as exc:
        memory_proposal_accept(item=proposal, type=MemoryType.HYPOTHESIS, actor=staff_user, reason="先当推断")
    # Then it is refused (accepted means a fact, preference, constraint or event), and it still waits
    assert exc.value.code == "invalid_type"
    proposal.refresh_from_db()
    assert proposal.status == MemoryStatus.PROPOSED and active(customer, BALCONY) is None


def test_accept_with_another_type(customer, asked, staff_user):
    # When a supervisor accepts the balcony as a hard requirement
    item = memory_proposal_accept(
        item=pending(customer, BALCONY), type=MemoryType.CONSTRAINT, actor=staff_user, reason="客户说必须带阳台"
    )
    # Then it is active with that type
    item.refresh_from_db()
    assert (item.status, item.type) == (MemoryStatus.ACTIVE, MemoryType.CONSTRAINT)


# --- reject ------------------------------------------------------------------------------------------


def test_reject_a_proposal_records_a_final_decision(customer, known, asked, staff_user):
    # Given the pending proposal 户型：两居室
    proposal = pending(customer, LAYOUT)
    version_before = snapshot_current(customer).version
    # When a supervisor rejects it
    memory_item_reject(item=proposal, actor=staff_user, reason="客户只是随口问问，实际要一居室")
    # Then it is rejected, the decision recorded, and neither profile nor snapshot changed
    proposal.refresh_from_db()
    assert proposal.status == MemoryStatus.REJECTED
    assert MemoryDecision.objects.filter(customer=customer, kind=DecisionKind.DECLINED).exists()
    audit = AuditEvent.objects.get(action="memory_item_rejected")
    assert audit.payload["item_id"] == proposal.pk and audit.payload["proposal"] is True
    assert layout_of(customer) == "" and snapshot_current(customer).version == version_before
    assert proposal.pk not in review_queue().values_list("pk", flat=True)


def test_rejected_proposal_never_comes_back_from_capture(customer, asked, staff_user):
    # Given a proposal 户型：两居室 a supervisor rejected
    rejected = pending(customer, LAYOUT)
    memory_item_reject(item=rejected, actor=staff_user, reason="客户只是随口问问")
    rows = MemoryItem.objects.filter(customer=customer, key=LAYOUT).count()
    # When the customer asks the same again, capture runs again on the first question, and a backfill replays
    say_now(customer, STOCK_QUESTION)
    capture_message(message=asked)
    customer_backfill(customer=customer, totals=Totals())
    # Then nothing is proposed or written under the key
    assert MemoryItem.objects.filter(customer=customer, key=LAYOUT).count() == rows
    assert pending(customer, LAYOUT) is None and active(customer, LAYOUT) is None
    assert layout_of(customer) == ""
    # Not even when the customer says it outright
    say_now(customer, "我想要两居室")
    assert active(customer, LAYOUT) is None and pending(customer, LAYOUT) is None
    # While the balcony, which nobody rejected, still waits
    assert pending(customer, BALCONY) is not None


# --- expiry ------------------------------------------------------------------------------------------


def test_expired_proposal_leaves_the_queue_without_a_decision(customer, asked, settings):
    # Given proposals kept for 14 days
    settings.QIWEI_MEMORY_PROPOSAL_TTL_DAYS = 14
    waiting = list(MemoryItem.objects.filter(customer=customer, status=MemoryStatus.PROPOSED))
    assert len(waiting) == 2
    # When the expiry sweep runs 15 days later
    expired = memory_items_expire_due(now=timezone.now() + dt.timedelta(days=15))
    # Then both proposals are superseded, audited by their rule, and no decision is recorded
    assert expired == 2
    for proposal in waiting:
        proposal.refresh_from_db()
        assert proposal.status == MemoryStatus.SUPERSEDED
    rows = audits("memory_proposal_expired")
    assert sorted(row.payload["item_id"] for row in rows) == sorted(p.pk for p in waiting)
    assert all(row.payload["held_back"] == "question" and row.actor_name == "expiry" for row in rows)
    assert "两居" not in str([row.payload for row in rows])
    assert not MemoryDecision.objects.filter(customer=customer).exists()
    assert attention_counts().proposals == 0
    # And the customer asking again later proposes it again
    say_now(customer, STOCK_QUESTION)
    again = pending(customer, LAYOUT)
    assert again is not None and again.pk not in {p.pk for p in waiting}


def test_unexpired_proposal_stays(customer, asked, settings):
    settings.QIWEI_MEMORY_PROPOSAL_TTL_DAYS = 14
    # When the sweep runs 13 days later
    assert memory_items_expire_due(now=timezone.now() + dt.timedelta(days=13)) == 0
    # Then both proposals still wait
    assert pending(customer, LAYOUT) is not None and pending(customer, BALCONY) is not None
    assert not AuditEvent.objects.filter(action="memory_proposal_expired").exists()


# --- forget and erase --------------------------------------------------------------------------------


def test_forgetting_the_only_source_message_removes_the_proposals(customer, asked, staff_user):
    proposal_ids = set(
        MemoryItem.objects.filter(customer=customer, status=MemoryStatus.PROPOSED).values_list("pk", flat=True)
    )
    # When the message they rest on is forgotten
    result = message_forget(message=asked, actor=staff_user, reason="客户发错了对象")
    # Then the proposals go with it, history and all
    assert set(result["items_forgotten"]) == proposal_ids
    assert not MemoryItem.objects.filter(pk__in=proposal_ids).exists()
    assert not MemoryItem.history.filter(id__in=proposal_ids).exists()
    assert attention_counts().proposals == 0


def test_forgetting_one_of_two_sources_keeps_the_proposal(customer, asked, staff_user):
    # Given the question asked twice
    again, _ = say(customer, STOCK_QUESTION)
    # When the first message is forgotten
    message_forget(message=asked, actor=staff_user, reason="客户发错了对象")
    # Then the proposals wait on the message left
    assert pending(customer, LAYOUT).source_message_ids == [again.pk]


def test_forgetting_the_message_a_clause_was_read_from_leaves_no_trace_of_it(customer, asked, staff_user):
    # Given the layout proposal, read from "有没有带阳台的两居室？", then asked after again in other words
    again, _ = say(customer, "还有两居室吗？")
    proposal = pending(customer, LAYOUT)
    assert proposal.source_message_ids == [asked.pk, again.pk] and "阳台" in proposal.clause
    # When the first message is forgotten
    message_forget(message=asked, actor=staff_user, reason="客户发错了对象")
    # Then the proposal waits on the message left, and nothing it keeps quotes the forgotten one
    proposal.refresh_from_db()
    assert proposal.source_message_ids == [again.pk]
    assert "阳台" not in proposal.clause
    assert not any("阳台" in (row.clause or "") for row in MemoryItem.history.filter(id=proposal.pk))


def test_forget_a_proposal(customer, asked, staff_user):
    proposal = pending(customer, LAYOUT)
    # When a supervisor forgets the proposal
    memory_item_forget(item=proposal, actor=staff_user, reason="客户要求删除")
    # Then it is gone with its history, audited without the value
    assert not MemoryItem.objects.filter(pk=proposal.pk).exists()
    assert not MemoryItem.history.filter(id=proposal.pk).exists()
    audit = AuditEvent.objects.get(action="memory_item_forgotten")
    assert audit.payload["item_id"] == proposal.pk and "两居" not in str(audit.payload)
    # And the same question does not propose it again
    say_now(customer, STOCK_QUESTION)
    assert pending(customer, LAYOUT) is None and pending(customer, BALCONY) is not None


def test_erasing_the_customer_removes_the_proposals(customer, asked, staff_user):
    customer_pk = customer.pk
    # When the customer is erased on request
    customer_erase(customer=customer, actor=staff_user, reason="客户要求删除全部数据")
    # Then no proposal, and no history of one, is left
    assert not MemoryItem.objects.filter(customer_id=customer_pk).exists()
    assert not MemoryItem.history.filter(customer_id=customer_pk).exists()
    assert attention_counts().proposals == 0


# --- never in the context ----------------------------------------------------------------------------


def test_proposals_never_reach_the_context(customer, known, asked, staff_user):
    # Given the proposals waiting beside active memory
    proposal_ids = set(
        MemoryItem.objects.filter(customer=customer, status=MemoryStatus.PROPOSED).values_list("pk", flat=True)
    )
    # When the context for the customer's question is built
    built = AgentContextBuilder().build(customer=customer, latest_message=asked)
    # Then active memory is there, the proposals are not
    assert "不考虑：顶楼" in built.prompt
    assert "户型：两居室" not in built.prompt and "偏好：带阳台" not in built.prompt
    assert not proposal_ids & set(built.trace["memory_item_ids"])
    # And once a supervisor accepts one, it is
    memory_proposal_accept(item=pending(customer, LAYOUT), actor=staff_user, reason="客户电话确认")
    built = AgentContextBuilder().build(customer=customer, latest_message=asked)
    assert "户型：两居室" in built.prompt and "偏好：带阳台" not in built.prompt


def test_proposal_clause_never_keeps_a_phone_number(customer):
    # Given a question that also carries a phone number
    say(customer, "我电话13812345678，有没有带阳台的两居室？")
    # Then the question is proposed, and no proposal keeps the number
    proposals = list(MemoryItem.objects.filter(customer=customer, status=MemoryStatus.PROPOSED))
    assert {p.key for p in proposals} == {LAYOUT, BALCONY}
    for proposal in proposals:
        assert "13812345678" not in proposal.clause and "13812345678" not in proposal.content
    assert not MemoryItem.objects.filter(customer=customer, status=MemoryStatus.ACTIVE).exists()


def test_proposal_clause_is_the_customers_own_words(customer, asked):
    # Then the clause a supervisor reads as the customer's words is found in what the customer sent
    for proposal in MemoryItem.objects.filter(customer=customer, status=MemoryStatus.PROPOSED):
        assert proposal.clause in asked.text, proposal.clause


def test_memory_item_put_by_a_human_settles_a_pending_proposal(customer, asked, staff_user):
    # Given the pending proposal 户型：两居室
    proposal = pending(customer, LAYOUT)
    # When a supervisor writes the layout by hand (a profile edit writes the item through the same path)
    result = memory_item_put(
        customer=customer,
        type=MemoryType.FACT,
        key=LAYOUT,
        content="户型：一居室",
        actor=staff_user,
        reason="电话确认要一居室",
        confidence=1.0,
        created_by=MemoryCreatedBy.HUMAN,
        direction=MemoryDirection.INTERNAL,
    )
    # Then the key holds the supervisor's value and the proposal left the queue, linked to it
    proposal.refresh_from_db()
    assert (proposal.status, proposal.superseded_by_id) == (MemoryStatus.SUPERSEDED, result.item.pk)
    assert pending(customer, LAYOUT) is None


# --- found in the adversarial review of issue 35 -------------------------------------------------


def test_newer_refusal_settles_the_opposite_proposal_so_accepting_cannot_undo_it(customer, staff_user):
    # Given a question read as a proposal 偏好：朝南, then the customer's firm refusal of it
    say(customer, "有没有朝南的房子？")
    proposal = pending(customer, "preference:朝南")
    assert proposal is not None
    say(customer, "我不要朝南的")
    assert active(customer, "constraint:朝南") is not None
    # When a supervisor tries to accept the older proposal
    # Then it has left the queue, settled by the newer words, and accepting it is refused
    proposal.refresh_from_db()
    assert proposal.status == MemoryStatus.SUPERSEDED
    with pytest.raises(Conflict):
        memory_proposal_accept(item=proposal, actor=staff_user, reason="采纳")
    assert active(customer, "constraint:朝南") is not None


def test_accepting_an_also_proposal_adds_the_area_instead_of_replacing_it(customer, staff_user):
    # Given a district, then a conditional alternative held back as a proposal
    say(customer, "想在西湖区租房")
    say(customer, "如果便宜的话，滨江那边也行")
    proposal = pending(customer, "profile:district")
    assert proposal is not None
    # When a supervisor accepts it
    memory_proposal_accept(item=proposal, actor=staff_user, reason="电话确认两个区都可以")
    # Then the profile keeps both areas
    district = CustomerProfile.objects.get(customer=customer).district
    assert "西湖" in district and "滨江" in district


def test_rejecting_a_proposal_rules_out_its_value_only(customer, staff_user):
    # Given a firm layout said before a question about another one
    firm, _ = say(customer, "我要三居室", sent_at=timezone.now() - dt.timedelta(minutes=5))
    MemoryItem.objects.filter(customer=customer, key=LAYOUT).delete()  # as if not captured yet
    say_now(customer, "有没有两居室？")
    proposal = pending(customer, LAYOUT)
    assert proposal is not None and "两居" in proposal.content
    # When the proposal is rejected ("just asking"), and the firm message is captured again (a retry)
    memory_item_reject(item=proposal, actor=staff_user, reason="只是问问")
    capture_message(message=firm)
    # Then the firm value is written: the rejection covered 两居室, not the whole key
    written = active(customer, LAYOUT)
    assert written is not None and "三居" in written.content


def test_backfill_of_a_message_that_arrived_long_ago_proposes_nothing(customer):
    # Given a question received 400 days ago
    long_ago = timezone.now() - dt.timedelta(days=400)
    message = MessageFactory(customer=customer, text=STOCK_QUESTION, sender="王先生", sent_at=long_ago)
    type(message).objects.filter(pk=message.pk).update(created_at=long_ago)
    # When a backfill reads it
    totals = Totals()
    customer_backfill(customer=customer, totals=totals)
    # Then no proposal waits for review (its review period ended long ago), and the totals say so
    assert not MemoryItem.objects.filter(customer=customer, status=MemoryStatus.PROPOSED).exists()
    assert totals.proposed == 0


def test_backfill_counts_the_proposals_it_makes(customer):
    # Given a question received today
    MessageFactory(customer=customer, text=STOCK_QUESTION, sender="王先生", sent_at=timezone.now())
    # When a backfill reads it
    totals = Totals()
    customer_backfill(customer=customer, totals=totals)
    # Then its proposals are counted
    assert totals.proposed == MemoryItem.objects.filter(customer=customer, status=MemoryStatus.PROPOSED).count() > 0


def test_another_spelling_of_a_pending_proposal_adds_evidence_instead_of_replacing_it(customer):
    # Given a bargaining budget held back as a proposal
    say(customer, "我预算九千五，能便宜点吗")
    first = pending(customer, "profile:budget")
    assert first is not None
    # When the same amount comes again in another spelling
    say(customer, "我预算9500，能便宜点吗")
    # Then the waiting proposal stays (with the new message as evidence), not replaced
    kept = pending(customer, "profile:budget")
    assert kept is not None and kept.pk == first.pk and len(kept.source_message_ids) == 2


def test_an_importance_edit_leaves_the_proposals_waiting(customer, staff_user):
    # Given an active budget and a different budget waiting as a proposal
    say(customer, "预算五千左右")
    say(customer, "我预算八千，能便宜点吗")
    proposal = pending(customer, "profile:budget")
    assert proposal is not None
    # When a supervisor only changes the active item's importance
    from memory.governance.services import memory_item_edit

    memory_item_edit(item=active(customer, "profile:budget"), importance=5, actor=staff_user, reason="重要")
    # Then the proposal still waits
    proposal.refresh_from_db()
    assert proposal.status == MemoryStatus.PROPOSED


def test_accepting_a_proposal_keeps_the_value_it_displaced_from_coming_back(customer):
    # Given a supervisor's note that the customer wants 徐汇区, and then a question about 浦东
    memory_item_add(customer=customer, content="徐汇区", key="profile:district", actor="主管", reason="人工补充")
    say_now(customer, "浦东新区那边有房子吗？")
    proposal = MemoryItem.objects.get(customer=customer, key="profile:district", status=MemoryStatus.PROPOSED)
    # When the supervisor accepts the proposal as read (the key now holds 浦东, 徐汇区 leaves)
    memory_proposal_accept(item=proposal, actor="主管", reason="电话确认")
    # And the customer later names 徐汇区 again
    say_now(customer, "想在徐汇附近找房")
    # Then the supervisor's choice stands, as after an edit: 徐汇区 does not come back by itself
    active = MemoryItem.objects.get(customer=customer, key="profile:district", status=MemoryStatus.ACTIVE)
    assert "浦东" in active.content and active.created_by == MemoryCreatedBy.HUMAN
    assert CustomerProfile.objects.get(customer=customer).district.startswith("浦东")
    assert MemoryDecision.objects.filter(customer=customer, kind=DecisionKind.REPLACED).exists()
