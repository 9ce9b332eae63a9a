"""Issue 39 item 2: a regenerated draft replaces the failed one (kept in history and the audit, no
longer a card), a draft being generated is a row from the start, and a model's raw error body is
kept only in the draft's trace."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from conversations.drafts import (
    MODEL_ERROR_DETAIL_MARK,
    draft_create,
    draft_generating,
    draft_generation_fail,
    draft_generation_stale_after,
    draft_generation_start,
    draft_send,
    model_error_split,
    model_error_text,
)
from conversations.models import AuditEvent, Draft, DraftStatus, Message
from qiwei_site.platform.errors import Conflict
from tests.factories import DraftFactory

RAW_500 = '{"error": {"message": "CUDA out of memory", "type": "server_error", "code": 500}}'


def _create(customer: Any, *, failed: bool = False, error: str = "", reply: str = "王先生您好，张江有两套两居室。"):
    latest = Message.objects.filter(customer=customer).order_by("-sent_at").first()
    return draft_create(
        customer=customer,
        reply_to=latest,
        session_id="s-1",
        client="openai",
        reply="" if failed else reply,
        confidence=0.0 if failed else 0.8,
        requires_human=True,
        reasons=[],
        profile_updates={},
        dropped_updates=[],
        error=error,
        context_trace={"model": {"client": "openai"}},
        actor="pipeline",
        reason="生成回复草稿",
        failed=failed,
    )


def _failed(customer: Any, **extra: Any) -> Draft:
    return DraftFactory(
        customer=customer,
        reply="",
        status=DraftStatus.FAILED,
        error="模型服务返回错误（HTTP 500）：服务器内部错误",
        requires_human=True,
        **extra,
    )


def test_draft_create_replaces_the_customers_failed_drafts_and_keeps_them_in_history(customer):
    # given two failed drafts for 王先生's latest message (the model server was down twice)
    first, second = _failed(customer), _failed(customer)

    # when the model answers at last
    draft = _create(customer)

    # then both failed drafts are superseded by the new one, each with a history row saying so
    for old in (first, second):
        old.refresh_from_db()
        assert (old.status, old.replaced_by_id) == (DraftStatus.SUPERSEDED, draft.pk)
        assert old.history.first().history_change_reason.startswith(f"已被草稿 #{draft.pk} 替换")
    assert set(draft.replaces.values_list("pk", flat=True)) == {first.pk, second.pk}
    # and the audit of the new draft names what it replaced
    event = AuditEvent.objects.filter(action="draft_generated").latest("pk")
    assert event.payload["draft_id"] == draft.pk and event.payload["replaces"] == [first.pk, second.pk]


def test_draft_create_leaves_pending_and_sent_drafts_alone(customer):
    # given a pending draft an agent may still want
    pending = DraftFactory(customer=customer, status=DraftStatus.PENDING)

    # when a new draft is generated
    _create(customer)

    # then the pending draft stays pending, and the audit lists nothing replaced
    pending.refresh_from_db()
    assert pending.status == DraftStatus.PENDING and pending.replaced_by_id is None
    assert "replaces" not in AuditEvent.objects.filter(action="draft_generated").latest("pk").payload


def test_draft_create_failing_again_leaves_one_failed_draft(customer):
    # given a failed draft
    old = _failed(customer)

    # when the regeneration fails as well
    new = _create(customer, failed=True, error="模型服务超时：60 秒内没有响应 (timed out).")

    # then only the new failure is a failed draft; the old one is replaced by it
    assert list(Draft.objects.filter(customer=customer, status=DraftStatus.FAILED)) == [new]
    old.refresh_from_db()
    assert old.replaced_by_id == new.pk


def test_draft_generation_start_saves_a_generating_draft_for_the_latest_message(customer, staff_user):
    # given a failed draft for 王先生's latest message
    old = _failed(customer)

    # when the agent asks again (重新生成)
    draft = draft_generation_start(customer=customer, actor=staff_user, reason="客服重新生成回复草稿", regenerate=True)

    # then a generating draft answers the latest message, and the failed one is replaced at once
    latest = Message.objects.filter(customer=customer).order_by("-sent_at").first()
    assert (draft.status, draft.reply_to_id, draft.reply) == (DraftStatus.GENERATING, latest.pk, "")
    old.refresh_from_db()
    assert (old.status, old.replaced_by_id) == (DraftStatus.SUPERSEDED, draft.pk)
    event = AuditEvent.objects.filter(action="draft_generated").latest("pk")
    assert event.actor_id == staff_user.pk
    assert event.payload == {"draft_id": draft.pk, "generating": True, "regenerate": True, "replaces": [old.pk]}


def test_draft_generation_start_refuses_while_another_draft_is_generating(customer, staff_user):
    # given a draft already being generated
    running = draft_generation_start(customer=customer, actor=staff_user, reason="生成回复草稿")

    # when the agent clicks 生成草稿 again
    with pytest.raises(Conflict) as refused:
        draft_generation_start(customer=customer, actor=staff_user, reason="生成回复草稿")

    # then it is refused with the running draft named, and nothing new is saved
    assert refused.value.code == "draft_generating" and refused.value.extra == {"draft_id": running.pk}
    assert Draft.objects.filter(customer=customer).count() == 1


def test_draft_generation_start_replaces_an_abandoned_generating_draft(customer, staff_user):
    # given a draft that said 生成中 for longer than any turn takes (its worker died)
    abandoned = draft_generation_start(customer=customer, actor=staff_user, reason="生成回复草稿")
    long_ago = timezone.now() - draft_generation_stale_after() - dt.timedelta(seconds=5)
    Draft.objects.filter(pk=abandoned.pk).update(created_at=long_ago)

    # when the agent regenerates
    fresh = draft_generation_start(customer=customer, actor=staff_user, reason="客服重新生成回复草稿", regenerate=True)

    # then the abandoned one is replaced by the fresh one
    abandoned.refresh_from_db()
    assert (abandoned.status, abandoned.replaced_by_id) == (DraftStatus.SUPERSEDED, fresh.pk)


def test_draft_generation_start_refuses_an_answered_message_unless_regenerate(customer, staff_user):
    # given 王先生's latest message was already answered by a sent draft
    latest = Message.objects.filter(customer=customer).order_by("-sent_at").first()
    sent = DraftFactory(customer=customer, reply_to=latest, status=DraftStatus.SENT)

    # when a draft is asked for without regenerate / with it
    with pytest.raises(Conflict) as refused:
        draft_generation_start(customer=customer, actor=staff_user, reason="生成回复草稿")
    again = draft_generation_start(customer=customer, actor=staff_user, reason="客服重新生成", regenerate=True)

    # then the first is refused as the turn refuses it, the second is generating
    assert refused.value.code == "already_answered" and refused.value.extra == {"draft_id": sent.pk}
    assert again.status == DraftStatus.GENERATING


def test_draft_create_fills_the_generating_draft_it_is_bound_to(customer, staff_user):
    # given a generating draft started 40 seconds ago
    generating = draft_generation_start(customer=customer, actor=staff_user, reason="客服生成回复草稿")
    started = timezone.now() - dt.timedelta(seconds=40)
    Draft.objects.filter(pk=generating.pk).update(created_at=started)

    # when the turn saves its draft inside draft_generating
    with draft_generating(draft=generating):
        filled = _create(customer)

    # then it is the same row, now pending, created when it was asked for
    assert filled.pk == generating.pk
    filled.refresh_from_db()
    assert (filled.status, filled.reply, filled.created_at) == (
        DraftStatus.PENDING,
        "王先生您好，张江有两套两居室。",
        started,
    )
    assert Draft.objects.filter(customer=customer).count() == 1
    # and its history tells both steps
    reasons = [row.history_change_reason for row in filled.history.order_by("history_id")]
    assert reasons == ["客服生成回复草稿", "生成回复草稿"]


def test_draft_generation_fail_fails_a_generating_draft_with_the_summary(customer, staff_user):
    # given a generating draft whose turn raised
    generating = draft_generation_start(customer=customer, actor=staff_user, reason="客服生成回复草稿")

    # when the turn's error is recorded
    failed = draft_generation_fail(
        draft=generating,
        error=model_error_text("模型服务返回错误（HTTP 500）：服务器内部错误", RAW_500),
        actor=staff_user,
        reason="客服生成回复草稿",
    )

    # then it failed with the summary, the raw body only in its trace
    assert failed.status == DraftStatus.FAILED
    assert failed.error == "模型服务返回错误（HTTP 500）：服务器内部错误"
    assert failed.context_trace["model"]["error_detail"] == RAW_500
    assert AuditEvent.objects.filter(action="draft_generated").latest("pk").payload == {
        "draft_id": failed.pk,
        "error": True,
    }


def test_draft_generation_fail_writes_nothing_once_the_draft_was_filled(customer, staff_user):
    # given a generating draft the turn already filled
    generating = draft_generation_start(customer=customer, actor=staff_user, reason="客服生成回复草稿")
    with draft_generating(draft=generating):
        _create(customer)
    rows = generating.history.count()

    # when a late error comes for it
    kept = draft_generation_fail(draft=generating, error="生成草稿时出错（RuntimeError）", actor="worker", reason="x")

    # then the draft stays as the turn left it
    assert kept.status == DraftStatus.PENDING and kept.error == ""
    assert generating.history.count() == rows


def test_draft_create_shows_the_summary_and_keeps_the_raw_body_in_the_trace(customer):
    # given a client error carrying the server's raw answer, with a key in it
    raw = RAW_500.replace("CUDA out of memory", "bad key sk-abcdefghijklmnopqrstuvwxyz123456")
    error = model_error_text("模型服务返回错误（HTTP 500）：服务器内部错误", raw)

    # when the failed draft is saved
    draft = _create(customer, failed=True, error=error)

    # then the error is the Chinese summary alone; the body is in the trace, masked
    assert draft.error == "模型服务返回错误（HTTP 500）：服务器内部错误"
    detail = draft.context_trace["model"]["error_detail"]
    assert '"server_error"' in detail and "sk-abcdefghijklmnopqrstuvwxyz123456" not in detail
    assert draft.context_trace["model"]["client"] == "openai"


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ("模型服务超时：60 秒内没有响应 (timed out).", ("模型服务超时：60 秒内没有响应 (timed out).", "")),
        (
            f"Claude Code 返回错误：模型调用失败{MODEL_ERROR_DETAIL_MARK}tool failed",
            ("Claude Code 返回错误：模型调用失败", "tool failed"),
        ),
        ("", ("", "")),
    ],
)
def test_model_error_split_reads_the_summary_and_the_raw_words(error, expected):
    # given a client's error / when it is split / then the summary and the raw words come apart
    assert model_error_split(error) == expected


@pytest.mark.parametrize(
    ("status", "code"), [(DraftStatus.GENERATING, "draft_generating"), (DraftStatus.SUPERSEDED, "draft_superseded")]
)
def test_draft_send_refuses_a_draft_without_a_reply_of_its_own(customer, staff_user, status, code):
    # given a draft still generating, or one a newer draft replaced
    draft = DraftFactory(customer=customer, status=status, reply="")

    # when someone tries to send it / then it is refused with a stable code
    with pytest.raises(Conflict) as refused:
        draft_send(draft=draft, actor=staff_user)
    assert refused.value.code == code


def test_draft_list_leaves_out_replaced_drafts_unless_asked_for(customer):
    # Given a failed draft that a regenerated one replaced
    from conversations.selectors import draft_list

    old = _failed(customer)
    fresh = DraftFactory(customer=customer, reply="王先生您好，张江有两套两居室。")
    Draft.objects.filter(pk=old.pk).update(status=DraftStatus.SUPERSEDED, replaced_by=fresh)
    # When the drafts are listed without a status, and then by the replaced status
    default = list(draft_list(customer=customer).values_list("pk", flat=True))
    replaced = list(draft_list(customer=customer, status=DraftStatus.SUPERSEDED).values_list("pk", flat=True))
    # Then only the replacement is a draft to act on; the replaced one is reached by its status
    assert default == [fresh.pk]
    assert replaced == [old.pk]


def test_draft_create_refuses_a_late_turn_whose_generating_draft_was_replaced(customer):
    # Given a turn that looked interrupted, and the agent's 重新生成 that replaced its generating draft
    from conversations.drafts import draft_generating, draft_generation_stale_after, draft_generation_start

    first = draft_generation_start(customer=customer, actor="张客服", reason="生成回复草稿")
    long_ago = timezone.now() - draft_generation_stale_after() - dt.timedelta(seconds=1)
    Draft.objects.filter(pk=first.pk).update(created_at=long_ago)
    second = draft_generation_start(customer=customer, actor="张客服", reason="重新生成", regenerate=True)
    first.refresh_from_db()
    assert first.status == DraftStatus.SUPERSEDED
    # When the first turn ends after all and saves its answer into the draft it was filling
    with pytest.raises(Conflict) as refused, draft_generating(draft=first):
        _create(customer)
    # Then nothing is saved: the message keeps one answer in the making, not a second draft
    assert refused.value.code == "draft_generation_abandoned"
    statuses = sorted(Draft.objects.filter(customer=customer).values_list("status", flat=True))
    assert statuses == sorted([DraftStatus.SUPERSEDED, DraftStatus.GENERATING]) and second.pk


def test_draft_api_answer_leaves_out_the_models_raw_error_words(customer):
    # Given a failed draft whose model server answered a raw body echoing the customer's words
    from conversations.serializers import DraftOutputSerializer

    raw = '{"error": {"message": "prompt was: 王先生想看张江两居室"}}'
    draft = _create(customer, failed=True, error=model_error_text("模型服务返回错误（HTTP 500）：服务器内部错误", raw))
    assert "王先生" in draft.context_trace["model"]["error_detail"]  # kept for staff, in the trace row
    # When the API (and the Workbench, through the same serializer) shows it
    data = DraftOutputSerializer(draft).data
    # Then the agent reads the summary only; the raw words are nowhere in the answer
    assert data["error"].startswith("模型服务返回错误（HTTP 500）")
    assert "王先生" not in str(data) and "error_detail" not in str(data["context_trace"])


def test_draft_create_outside_the_workbench_turn_is_refused_while_a_draft_is_generating(customer):
    # Given a draft 生成中 for the Workbench
    from conversations.drafts import draft_generation_start

    running = draft_generation_start(customer=customer, actor="张客服", reason="生成回复草稿")
    # When another path (the API's turn in the request) saves a draft for the same customer
    with pytest.raises(Conflict) as refused:
        _create(customer)
    # Then it is refused as the Workbench's second click is, and the generating draft stays the one
    assert refused.value.code == "draft_generating"
    assert list(Draft.objects.filter(customer=customer).values_list("pk", flat=True)) == [running.pk]
