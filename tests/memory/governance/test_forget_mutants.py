"""Forget, erase and their scrub at the edges the mutation run found untested (issue 40, module
`forget` of scripts/mutation.sh): an erased customer's words gone from every audit row that stays,
wherever we kept them (a message, a draft's JSON, a capture job), while the trail keeps what was
done; the erasure's counts; the recall cache; a message's standing as evidence reaching every item
and capture job that rests on it, audited with who and why; an item's words gone from every reason
and text kept about the customer; the quote rule at its edges."""

from __future__ import annotations

import pytest

from conversations.models import AuditEvent, Customer, CustomerProfile, Draft, Message, MessageDirection, MessageSecret
from conversations.received import stored_form
from memory.context import recall as recall_module
from memory.context.recall import RECALL_COLUMNS, decoded_cache_clear, recall_features_store, recall_from_rows
from memory.governance.erasure import customer_erase
from memory.governance.messages import CASCADE_REASON, message_forget
from memory.governance.scrub import FORGOTTEN_MARK, Quotes, column_rewrite, historical_models_with_customer
from memory.governance.services import memory_item_add, memory_item_forget
from memory.models import CaptureJob, CaptureJobStatus, MemorySnapshot
from memory.profile import customer_profile_update
from memory.snapshots import snapshot_refresh
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.errors import Conflict, ValidationFailed
from tests.factories import (
    CustomerFactory,
    DraftFactory,
    MemoryItemFactory,
    MessageFactory,
    SessionEpochFactory,
    TaskFactory,
)

ERASE_REASON = "客户要求删除全部数据"
FORGET_REASON = "客户要求删除这条消息"


def _audit_text(conversation_id: str) -> str:
    """Every word the audit rows of a conversation still hold (reasons and payloads)."""
    rows = AuditEvent.objects.filter(conversation_id=conversation_id).values_list("reason", "payload")
    return "\n".join(f"{reason} {payload}" for reason, payload in rows)


def _quoted(conversation_id: str, reason: str) -> None:
    """An earlier audit row whose reason quotes the customer (a supervisor's note, as typed)."""
    audit_record(action="customer_updated", conversation_id=conversation_id, actor="主管小赵", reason=reason)


# --- erase: no word kept about the customer left in the audit trail ----------------------------------


def test_customer_erase_scrubs_words_kept_anywhere_about_them_from_the_audit_that_stays(customer, staff_user):
    # Given words of the customer kept in a message, in a draft's reasons (a JSON list) and profile
    # updates (a JSON object), and in a model turn's capture job, each quoted by an earlier audit reason
    cid = customer.conversation_id
    MessageFactory(customer=customer, text="我女儿在张江读小学，想找学区房")
    DraftFactory(
        customer=customer,
        reasons=["客户提过预算五千二以内"],
        profile_updates={"district": "望京花园东区"},
    )
    CaptureJob.objects.create(customer=customer, payload={"profile_updates": {"move_in_date": "下个月十五号入住"}})
    for said in ("张江读小学", "预算五千二以内", "望京花园东区", "下个月十五号入住"):
        _quoted(cid, f"客服备注：客户说{said}")
    # When the customer is erased
    customer_erase(customer=customer, actor=staff_user, reason=ERASE_REASON)
    # Then no audit row that stays quotes any of it
    left = _audit_text(cid)
    for said in ("张江读小学", "五千二", "望京花园", "十五号入住"):
        assert said not in left
    # And the notes keep their own words around the removed quote
    assert AuditEvent.objects.filter(conversation_id=cid, reason__startswith="客服备注：客户说").count() == 4


def test_customer_erase_keeps_what_the_audit_trail_says_was_done(customer, staff_user):
    # Given a note a supervisor added: the trail names the item, its type and what came of it
    cid = customer.conversation_id
    MessageFactory(customer=customer, text="想租两居室，最好朝南")
    note = memory_item_add(customer=customer, content="周末才有空看房", actor=staff_user, reason="电话回访")
    added = AuditEvent.objects.get(conversation_id=cid, action="memory_item_added")
    said = dict(added.payload)
    assert (said["item_id"], said["type"]) == (note.pk, "fact")
    # When the customer is erased
    customer_erase(customer=customer, actor=staff_user, reason=ERASE_REASON)
    # Then the earlier row still says what was done to which item: states and types are not their words
    added.refresh_from_db()
    assert added.payload == said and added.reason == "电话回访"


# --- erase: what it reports ---------------------------------------------------------------------------


def _history_rows_about(customer_pk: int) -> int:
    """Past versions kept about the customer, and the one each live row will get when deleted."""
    total = 0
    for model in historical_models_with_customer():
        live = model.instance_type._default_manager.filter(customer_id=customer_pk).count()
        total += model._default_manager.filter(customer_id=customer_pk).count() + live
    return total + Customer.history.filter(id=customer_pk).count() + 1


def test_customer_erase_reports_every_past_version_removed_and_audits_the_same_counts(customer, staff_user):
    # Given a customer with past versions in several tables (profile, memory, draft, session, task)
    customer_profile_update(customer=customer, changes={"budget": "4800元"}, actor=staff_user, reason="电话")
    memory_item_add(customer=customer, content="女儿明年在张江上小学", actor=staff_user, reason="电话")
    DraftFactory(customer=customer)
    SessionEpochFactory(customer=customer)
    TaskFactory(customer=customer)
    expected = _history_rows_about(customer.pk)
    # When the customer is erased
    counts = customer_erase(customer=customer, actor=staff_user, reason=ERASE_REASON)
    # Then the count of history rows removed is all of them, and the audit records the very counts returned
    assert counts["history_rows"] == expected
    assert AuditEvent.objects.get(action="customer_erased").payload == {"counts": counts}


# --- erase and forget: the recall cache --------------------------------------------------------------


@pytest.fixture
def recalled(customer, messages):
    """The customer's messages ranked once by recall: their decoded features kept in this process."""
    decoded_cache_clear()
    recall_features_store(messages=messages)
    rows = Message.objects.filter(customer=customer).order_by("sent_at", "pk").values_list(*RECALL_COLUMNS)
    recall_from_rows("地铁附近的两居室有吗", list(rows), 3)
    yield messages
    decoded_cache_clear()


def _cached_message_ids() -> set[int]:
    return {key[1] for key in recall_module._DECODED._entries}


def test_customer_erase_drops_their_decoded_messages_from_this_process(recalled, customer, staff_user):
    # Given every message of the customer decoded and cached
    ids = {message.pk for message in recalled}
    assert ids <= _cached_message_ids()
    # When the customer is erased
    customer_erase(customer=customer, actor=staff_user, reason=ERASE_REASON)
    # Then none of their words wait in this process's memory for the cache to push them out
    assert not ids & _cached_message_ids()


# --- message forget: every capture job resting on the message -----------------------------------------


def test_message_forget_cancels_every_pending_turn_resting_on_it_and_strips_finished_ones(
    customer, messages, staff_user
):
    # Given the capture of a later message (queued first, resting on nothing forgotten), then a model
    # turn answering that later message, still pending, whose budget proposal rests on the customer's
    # first message (a bargaining clause, read only as a proposal), then a finished turn that proposed
    # the same value from the same message
    said, later = messages[0], messages[3]
    unrelated = CaptureJob.objects.create(customer=customer, message=later, payload={})
    pending = CaptureJob.objects.create(
        customer=customer,
        payload={
            "profile_updates": {},
            "source_message_ids": [later.pk],
            "profile_proposals": {"budget": {"value": "4500", "message_ids": [said.pk]}},
        },
    )
    finished = CaptureJob.objects.create(
        customer=customer,
        status=CaptureJobStatus.DONE,
        payload={"profile_proposals": {"budget": {"value": "4500", "message_ids": [said.pk]}}},
    )
    # And a pending turn whose only inference rests on it
    inferred = CaptureJob.objects.create(
        customer=customer,
        payload={
            "source_message_ids": [later.pk],
            "hypotheses": [
                {
                    "key": "hypothesis:family",
                    "text": "预算有限，可能刚工作",
                    "confidence": 0.5,
                    "message_ids": [said.pk],
                }
            ],
        },
    )
    # When that first message is forgotten
    message_forget(message=said, actor=staff_user, reason=FORGET_REASON)
    # Then the pending write is cancelled (it would propose the forgotten value again), the finished
    # one keeps no value, and the capture of the later message is untouched
    assert not CaptureJob.objects.filter(pk__in=[pending.pk, inferred.pk]).exists()
    cancelled = AuditEvent.objects.get(action="message_forgotten").payload["capture_jobs_cancelled"]
    assert cancelled == [pending.pk, inferred.pk]
    finished.refresh_from_db()
    assert finished.payload == {}
    unrelated.refresh_from_db()
    assert unrelated.status == CaptureJobStatus.PENDING


def test_message_forget_strips_a_finished_turns_proposal_resting_on_it(customer, messages, staff_user):
    # Given a finished model turn whose budget proposal rested on the first message
    said, later = messages[0], messages[3]
    job = CaptureJob.objects.create(
        customer=customer,
        status=CaptureJobStatus.DONE,
        payload={
            "source_message_ids": [later.pk],
            "draft_id": 7,
            "profile_proposals": {"budget": {"value": "4500左右", "message_ids": [said.pk]}},
        },
    )
    # When the message is forgotten
    message_forget(message=said, actor=staff_user, reason=FORGET_REASON)
    # Then the job stays as a record by ids, without the proposed value
    job.refresh_from_db()
    assert job.payload == {"source_message_ids": [later.pk], "draft_id": 7}


def test_message_forget_leaves_a_turn_resting_on_other_messages(customer, messages, staff_user):
    # Given a pending turn whose proposal rests on another message than the one forgotten
    said, other = messages[0], messages[3]
    job = CaptureJob.objects.create(
        customer=customer,
        payload={
            "source_message_ids": [other.pk],
            "profile_proposals": {"floor": {"value": "不要顶楼", "message_ids": [other.pk]}},
            "hypotheses": [{"text": "家里可能有老人", "message_ids": [other.pk]}],
        },
    )
    # When the first message is forgotten
    message_forget(message=said, actor=staff_user, reason=FORGET_REASON)
    # Then that turn still waits, whole
    job.refresh_from_db()
    assert job.status == CaptureJobStatus.PENDING and job.payload["profile_proposals"]["floor"]["value"] == "不要顶楼"


# --- message forget: who and why ---------------------------------------------------------------------


def test_message_forget_audits_who_forgot_it_and_why_without_its_words(customer, messages, staff_user):
    # Given a supervisor whose reason quotes the message being forgotten
    said = messages[1]
    # When the message is forgotten
    message_forget(message=said, actor=staff_user, reason=f"客户来电要求删除这句：{said.text}")
    # Then the audit names the supervisor and keeps the reason without the customer's words
    event = AuditEvent.objects.get(action="message_forgotten")
    assert event.actor_id == staff_user.pk
    assert event.reason == f"客户来电要求删除这句：{FORGOTTEN_MARK}"


@pytest.mark.parametrize("reason", ["", "   "])
def test_message_forget_refuses_a_blank_reason_and_keeps_the_message(customer, messages, staff_user, reason):
    # When a message is to be forgotten without a reason
    with pytest.raises(ValidationFailed) as refused:
        message_forget(message=messages[1], actor=staff_user, reason=reason)
    # Then it is refused with the stable code, and the message and the audit are as they were
    assert refused.value.code == "reason_required"
    assert Message.objects.filter(pk=messages[1].pk).exists()
    assert not AuditEvent.objects.filter(action="message_forgotten").exists()


# --- the quote rule at its edges -----------------------------------------------------------------------

M = FORGOTTEN_MARK


@pytest.mark.parametrize(
    ("contents", "text", "scrubbed"),
    [
        # a run of exactly 4 shared Chinese characters is a quote; 3 are not
        (["周末才方便看房"], "客户说方便看房", f"客户说{M}"),
        (["周末才方便看房"], "客户说看房", "客户说看房"),
        # a quote at the very start, and at the very end, of the text
        (["预算五千二以内"], "五千二以内就行", f"{M}就行"),
        (["预算五千二以内"], "最多五千二以内", f"最多{M}"),
        # digits count like Chinese: 4 of them are a quote
        (["房号1802室"], "楼上1802有人", f"楼上{M}有人"),
        # overlapping and adjacent runs become one mark; runs apart stay apart
        (["离婚后独自带孩子住"], "她独自带孩子住", f"她{M}"),
        (["张江读小学", "想找学区房"], "张江读小学，想找学区房", f"{M}，{M}"),
        # Latin letters, spaces and punctuation: 8 in a row are a quote, 7 are not
        (["prefers the metro line"], "(the met)", "(the met)"),
        (["prefers the metro line"], "note: e metro line", f"note: {M}"),
        # a short content goes wherever it appears whole, every time
        (["徐汇"], "徐汇还是徐汇", f"{M}还是{M}"),
        (["徐汇"], "徐汇、徐汇还是徐汇", f"{M}、{M}还是{M}"),
        (["room 5"], "room 5 or room 5", f"{M} or {M}"),
        # a 7-character Latin content is short: whole only
        (["Lujiazu"], "near Lujiazu", f"near {M}"),
        # a content typed with other spacing is found as it is normally written
        (["望京  花园\n东区"], "在望京 花园 东区看房", f"在{M}看房"),
        (["metro   line 2"], "take metro line 2 home", f"take {M} home"),
        # one character is not a quote; nothing to scrub leaves the text as it is
        (["好"], "好的，好吧", "好的，好吧"),
        ([" 好 "], "好的", "好的"),
        ([], "客户说方便看房", "客户说方便看房"),
        (["周末才方便看房"], "", ""),
    ],
)
def test_quotes_scrub_replaces_exactly_the_quoted_runs(contents, text, scrubbed):
    assert Quotes(contents).scrub(text) == scrubbed


def test_quotes_are_nothing_to_scrub_for_contents_too_short_to_be_told_apart():
    # Given contents of one character at most, and a real one
    # Then only the real one is something to scrub
    assert not Quotes([])
    assert not Quotes(["好", " ", ""])
    assert Quotes(["徐汇"]) and Quotes(["方便看房"]) and Quotes(["the metro line"])


def test_quotes_scrub_json_scrubs_every_string_and_keeps_keys_and_other_values():
    # Given a draft's kept JSON that quotes a forgotten note at every depth
    quotes = Quotes(["女儿明年在张江上小学"])
    value = {
        "reasons": ["客户说女儿明年在张江上小学", "预算明确"],
        "profile_updates": {"district": "张江上小学附近", "budget": 5200},
        "requires_human": False,
        "note": None,
    }
    # Then every string loses the quote, and keys, numbers, flags and nulls stay
    assert quotes.scrub_json(value) == {
        "reasons": [f"客户说{M}", "预算明确"],
        "profile_updates": {"district": f"{M}附近", "budget": 5200},
        "requires_human": False,
        "note": None,
    }


# --- message forget: what it takes with it -------------------------------------------------------------


def test_message_forget_cascades_with_the_reason_given(customer, messages, staff_user):
    # Given an automatic item resting on the message alone, and a proposal resting on it and another,
    # its clause quoting the message
    said, other = messages[1], messages[3]
    alone = MemoryItemFactory(customer=customer, key="preference:metro", source_message_ids=[said.pk])
    shared = MemoryItemFactory(
        customer=customer,
        key="preference:floor",
        content="不住顶楼，靠近地铁",
        source_message_ids=[said.pk, other.pk],
        clause=said.text,
    )
    # When the message is forgotten
    message_forget(message=said, actor=staff_user, reason=FORGET_REASON)
    # Then the first goes, audited as going with its only evidence and why; the second loses that evidence
    # and the clause, in every version, the latest saying who and why
    gone = AuditEvent.objects.get(action="memory_item_forgotten")
    assert gone.payload["item_id"] == alone.pk and gone.reason == f"{CASCADE_REASON}：{FORGET_REASON}"
    assert gone.actor_id == staff_user.pk
    shared.refresh_from_db()
    assert (shared.source_message_ids, shared.clause) == ([other.pk], "")
    latest = shared.history.latest()
    assert (latest.history_change_reason, latest.history_user) == (FORGET_REASON, staff_user)
    assert set(shared.history.values_list("clause", flat=True)) == {""}
    # And the audit of the forget lists both
    event = AuditEvent.objects.get(action="message_forgotten")
    assert (event.payload["items_forgotten"], event.payload["items_evidence_removed"]) == ([alone.pk], [shared.pk])


def test_message_forget_of_eight_characters_scrubs_its_quotes_from_earlier_reasons(customer, staff_user):
    # Given a message just long enough to be told apart, quoted by an earlier note
    said = MessageFactory(customer=customer, text="周六上午方便看房")
    _quoted(customer.conversation_id, "客服备注：客户说周六上午方便看房")
    # When it is forgotten
    message_forget(message=said, actor=staff_user, reason=FORGET_REASON)
    # Then the note no longer quotes it
    assert AuditEvent.objects.filter(reason=f"客服备注：客户说{FORGOTTEN_MARK}").exists()


def test_message_forget_deletes_a_message_whose_sealed_original_cannot_be_opened(customer, staff_user):
    # Given a masked message whose sealed original no configured key opens (a lost or altered key)
    stored, _sealed, categories = stored_form("门锁密码是Lx9qa2041，到了直接开门")
    message = MessageFactory(customer=customer, text=stored)
    MessageSecret.objects.create(message=message, sealed="gAAAAABbroken-seal", categories=list(categories))
    # When it is forgotten
    message_forget(message=message, actor=staff_user, reason=FORGET_REASON)
    # Then it goes all the same, with its sealed original
    assert not Message.objects.filter(pk=message.pk).exists() and not MessageSecret.objects.exists()


def test_message_forget_refuses_our_own_reply_saying_why(customer, staff_user):
    # Given one of our replies
    reply = MessageFactory(customer=customer, text="王先生您好，周六上午可以看房", direction=MessageDirection.OUTBOUND)
    # When it is to be forgotten as a customer message, the refusal tells the supervisor where it lives on
    with pytest.raises(Conflict) as refused:
        message_forget(message=reply, actor=staff_user, reason=FORGET_REASON)
    assert "只能遗忘客户发来的消息" in refused.value.detail


# --- item forget: every reason and text kept about the customer ------------------------------------------

NOTE = "离婚后独自带孩子住，周末才方便看房"
QUOTE = "独自带孩子住"


def test_memory_item_forget_scrubs_the_note_from_every_reason_and_text_kept_about_the_customer(customer, staff_user):
    # Given a supervisor's note, quoted since in an audit payload, a snapshot's reason, a profile
    # version's reason, a capture job's error and a draft (its reasons, reply, final text, error and the
    # model's raw error words, in the draft and in its history)
    cid = customer.conversation_id
    note = memory_item_add(customer=customer, content=NOTE, actor=staff_user, reason="主管回访")
    audit_record(action="customer_updated", conversation_id=cid, actor="主管小赵", payload={"note": f"客户说{QUOTE}"})
    customer_profile_update(customer=customer, changes={"layout": "两居室"}, actor=staff_user, reason=f"她{QUOTE}")
    snapshot_refresh(customer=customer, reason=f"回访后更新：{QUOTE}")
    CaptureJob.objects.create(customer=customer, last_error=f"模型超时：{QUOTE}")
    draft = DraftFactory(
        customer=customer,
        reasons=[f"客户{QUOTE}"],
        reply=f"王女士您好，考虑到您{QUOTE}的情况，安排在周日上午",
        final_text=f"您好，知道您{QUOTE}，周末看房可以",
        error=f"输出不合格：{QUOTE}",
        context_trace={"model": {"name": "scripted", "error_detail": f"raw: {QUOTE}"}},
    )
    # And another customer's draft saying the same words
    other = DraftFactory(customer=CustomerFactory(conversation_id="wm_other_009"), reply=f"您{QUOTE}，理解")
    # When the note is forgotten
    memory_item_forget(item=note, actor=staff_user, reason="客户要求删除该备注")
    # Then none of those rows quotes it any more
    kept = [
        _audit_text(cid),
        *MemorySnapshot.objects.filter(customer=customer).values_list("reason", flat=True),
        *CaptureJob.objects.filter(customer=customer).values_list("last_error", flat=True),
        *CustomerProfile.history.filter(customer=customer).values_list("history_change_reason", flat=True),
    ]
    for row in [*Draft.objects.filter(pk=draft.pk), *Draft.history.filter(id=draft.pk)]:
        kept += [str(row.reasons), row.reply, row.final_text, row.error, str(row.context_trace)]
    assert [text for text in kept if text and "带孩子" in text] == []
    # And the draft still says the rest, the trace still names its model
    draft.refresh_from_db()
    assert draft.reply == f"王女士您好，考虑到您{FORGOTTEN_MARK}的情况，安排在周日上午"
    assert draft.context_trace["model"] == {"name": "scripted", "error_detail": f"raw: {FORGOTTEN_MARK}"}
    # And the other customer's draft is theirs, untouched
    other.refresh_from_db()
    assert other.reply == f"您{QUOTE}，理解"


def test_column_rewrite_changes_and_counts_only_the_rows_it_rewrites(customer):
    # Given four drafts: one without a reply, two quoting the note, one with other words
    empty = DraftFactory(customer=customer, reply="")
    first = DraftFactory(customer=customer, reply=f"王女士您好，考虑到您{QUOTE}的情况")
    other = DraftFactory(customer=customer, reply="王女士您好，周六上午看房方便吗？")
    second = DraftFactory(customer=customer, reply=f"您{QUOTE}的话，周日也行")
    # When their replies are rewritten with the note's quotes
    changed = column_rewrite(Draft.objects.filter(customer=customer).order_by("pk"), "reply", Quotes([NOTE]).scrub)
    # Then the two quoting rows changed, and it says so; the others are as they were
    assert changed == 2
    replies = dict(Draft.objects.filter(customer=customer).values_list("pk", "reply"))
    assert replies == {
        empty.pk: "",
        first.pk: f"王女士您好，考虑到您{FORGOTTEN_MARK}的情况",
        other.pk: "王女士您好，周六上午看房方便吗？",
        second.pk: f"您{FORGOTTEN_MARK}的话，周日也行",
    }
