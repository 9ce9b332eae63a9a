"""The turn: context → client → validation → grounding → draft → capture → auto-send, and its failures."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.drafts import draft_approve, draft_auto_send_blockers, draft_reject
from conversations.gateway import LoopbackGateway
from conversations.models import AlertKind, AlertLevel, AuditEvent, Delivery, DraftStatus, MessageDirection, SessionMode
from conversations.services import alert_raise, alert_resolve
from memory.attention import drafts_awaiting_review
from qiwei_site.platform.errors import Conflict
from qiwei_site.reading.grounding import normalise
from sessions_epoch.clients import ClaudeCodeClient, ModelClient, ModelResult, OfflineClient
from sessions_epoch.models import CloseReason, SessionEpoch
from sessions_epoch.pipeline import draft_generate, ground_profile_updates, validate_output
from tests.factories import BASE_TIME, MessageFactory


class ScriptedClient(ModelClient):
    """Answers with the given model outputs in turn (or the last one forever)."""

    name = "scripted"

    def __init__(self, *outputs):
        self.outputs = list(outputs)
        self.prompts: list[str] = []
        self.sessions = []

    def generate(self, *, prompt, session, hints=None):
        self.prompts.append(prompt)
        self.sessions.append(session)
        output = self.outputs.pop(0) if len(self.outputs) > 1 else self.outputs[0]
        if isinstance(output, ModelResult):
            return output
        return ModelResult(client=self.name, output=output, raw_text=str(output), session_id=session.session_id)


def _answer(**overrides):
    answer = {
        "reply": "王先生您好，张江地铁站附近有两套两居室，月租4500左右，周六可以看房。",
        "confidence": 0.92,
        "requiresHuman": False,
        "profileUpdates": {},
        "reasons": ["客户预算和户型明确"],
    }
    answer.update(overrides)
    return answer


def test_draft_generate_saves_draft_with_trace_and_queues_grounded_updates(customer, provider):
    # given a model that proposes a budget the customer said and a district they never mentioned
    client = ScriptedClient(_answer(profileUpdates={"budget": "4500", "district": "陆家嘴", "layout": "两居室"}))

    # when a draft is generated
    draft = draft_generate(customer=customer, actor="pipeline", client=client)

    # then the prompt came from the provider, and the draft keeps the provider's trace and the session
    assert client.prompts == [provider.prompt]
    assert provider.prefetched[0].conversation_id == customer.conversation_id
    assert draft.status == DraftStatus.PENDING
    assert draft.context_trace["snapshot_version"] == 3
    assert draft.session_id == SessionEpoch.objects.get(customer=customer, closed_at__isnull=True).session_id
    assert draft.client == "scripted"
    # only the grounded values are kept ("陆家嘴" was said by our staff, not the customer)
    assert draft.profile_updates == {"budget": "4500", "layout": "两居室"}
    assert draft.dropped_updates == [{"field": "district", "value": "陆家嘴", "reason": "客户原话中找不到该值"}]
    # and capture got exactly the grounded values with the customer's message ids as evidence
    (turn,) = provider.captured
    assert turn.draft_id == draft.pk
    assert turn.profile_updates == {"budget": "4500", "layout": "两居室"}
    inbound_ids = set(customer.messages.filter(direction=MessageDirection.INBOUND).values_list("id", flat=True))
    assert turn.source_message_ids and set(turn.source_message_ids) <= inbound_ids
    assert draft.context_trace["grounding"]["evidence"]["budget"]
    event = AuditEvent.objects.get(action="draft_generated")
    assert event.payload["draft_id"] == draft.pk
    assert event.payload["dropped_fields"] == ["district"]


def test_grounding_normalises_width_separators_and_units(customer):
    # given the customer wrote "预算４，５００左右" and "两居室"
    updates = {"budget": "4500元/月", "layout": "两居室", "move_in_date": "下个月", "city": "上海"}

    # when the updates are grounded
    grounded, evidence, dropped, _proposed = ground_profile_updates(customer=customer, updates=updates)

    # then full-width digits and separators match, units are allowed, unsaid values are dropped
    assert grounded == {"budget": "4500元/月", "layout": "两居室"}
    assert set(evidence) == {"budget", "layout"}
    assert {item["field"] for item in dropped} == {"move_in_date", "city"}
    assert normalise("４，５００ 元") == "4500元"


def test_grounding_ignores_staff_and_model_words(customer):
    # given a value only our staff said ("张江") and one from a non-effective customer message
    MessageFactory(
        customer=customer, text="我在徐汇上班", is_effective=False, sent_at=BASE_TIME + dt.timedelta(hours=1)
    )

    # when grounded
    grounded, _evidence, dropped, _proposed = ground_profile_updates(
        customer=customer, updates={"district": "张江", "city": "徐汇"}
    )

    # then neither is applied
    assert grounded == {}
    assert len(dropped) == 2


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ({"reply": "", "confidence": 0.9, "requiresHuman": False}, "reply"),
        ({"reply": "您好", "confidence": 1.5, "requiresHuman": False}, "confidence"),
        ({"reply": "您好", "confidence": 0.9, "requiresHuman": "no"}, "requiresHuman"),
        ({"reply": "您好", "confidence": 0.9, "requiresHuman": False, "reasons": "因为"}, "reasons"),
        ({"reply": "您好", "confidence": 0.9, "requiresHuman": False, "profileUpdates": ["budget"]}, "profileUpdates"),
    ],
)
def test_invalid_model_output_gives_a_draft_for_a_human(customer, provider, output, message):
    # given a model that breaks the output contract
    client = ScriptedClient(output)

    # when a draft is generated
    draft = draft_generate(customer=customer, actor="pipeline", client=client)

    # then there is still a draft, flagged for a human, with the validation error; with no reply
    # at all it failed (never approvable, not awaiting review)
    assert draft.requires_human is True
    assert message in draft.error
    assert draft.status == (DraftStatus.FAILED if not output["reply"] else DraftStatus.PENDING)
    assert not Delivery.objects.exists()


def test_validate_output_drops_undeclared_fields_and_coerces_numbers():
    # given a profileUpdates with a number and an undeclared field
    result = validate_output(
        {"reply": "好的", "confidence": 1, "requiresHuman": False, "profileUpdates": {"budget": 4500, "salary": "2万"}}
    )

    # then the number is a string and the undeclared field is dropped, without an error
    assert result.error == ""
    assert result.profile_updates == {"budget": "4500"}
    assert result.dropped[0]["field"] == "salary"


def test_memory_failures_still_produce_a_draft_with_audits(customer, monkeypatch):
    # given a memory provider whose prefetch, grounding and capture all raise
    class BrokenProvider:
        def prefetch(self, request):
            raise RuntimeError("database is locked")

        def ground_profile_updates(self, *, customer, updates):
            raise RuntimeError("database is locked")

        def capture(self, turn):
            raise RuntimeError("disk full")

    monkeypatch.setattr("sessions_epoch.pipeline.get_provider", BrokenProvider)
    client = ScriptedClient(_answer(profileUpdates={"budget": "4500"}))

    # when a draft is generated
    draft = draft_generate(customer=customer, actor="pipeline", client=client)

    # then a draft exists, built from a minimal prompt holding the latest customer message and the contract
    assert draft.pk and draft.reply.startswith("王先生您好")
    assert "预算４，５００左右，最好离地铁近一点，不考虑顶楼" in client.prompts[0]
    assert '"requiresHuman"' in client.prompts[0]
    assert draft.context_trace["fallback"] is True
    # (assembled by the context builder, like every prompt)
    assert draft.context_trace["memory_recall_failed"] == {"stage": "prefetch", "error": "RuntimeError"}
    assert "===== 二、需要回复的最新客户消息（原话引用） =====" in client.prompts[0]
    # and grounding failed closed: the model's budget is not kept unchecked
    assert draft.profile_updates == {}
    assert draft.dropped_updates == [{"field": "budget", "value": "4500", "reason": "无法核对客户原话，未保留"}]
    # and every failure is audited without its messages
    recall = AuditEvent.objects.get(action="memory_recall_failed", payload__stage="prefetch")
    grounding = AuditEvent.objects.get(action="memory_recall_failed", payload__stage="grounding")
    capture = AuditEvent.objects.get(action="memory_capture_failed")
    assert recall.payload == {"stage": "prefetch", "error": "RuntimeError"}
    assert grounding.payload == {"stage": "grounding", "error": "RuntimeError"}
    assert capture.payload["draft_id"] == draft.pk
    assert AuditEvent.objects.filter(action="draft_generated").count() == 1


def test_memory_module_missing_still_produces_a_draft(customer, monkeypatch):
    # given the memory provider cannot even be loaded
    def broken():
        raise ImportError("memory.providers")

    monkeypatch.setattr("sessions_epoch.pipeline.get_provider", broken)

    # when a draft is generated with the offline client
    draft = draft_generate(customer=customer, actor="pipeline", client=OfflineClient())

    # then the holding reply is there, for a human
    assert draft.reply == "王先生您好，您的需求我们已经收到，稍后由顾问为您确认具体房源信息。"
    assert draft.requires_human is True
    assert AuditEvent.objects.filter(action__in=["memory_recall_failed", "memory_capture_failed"]).count() == 2


def _auto_customer(customer, *, whitelisted=True, mode=SessionMode.AUTO):
    customer.auto_send_whitelisted = whitelisted
    customer.session_mode = mode
    customer.save()
    return customer


def test_confident_draft_for_whitelisted_auto_customer_is_sent_automatically(customer, provider, settings):
    # given a whitelisted customer in auto mode and a confident draft that needs no human
    settings.QIWEI_AUTO_SEND_CONFIDENCE = 0.85
    _auto_customer(customer)

    # when a draft is generated
    draft = draft_generate(customer=customer, actor="pipeline", client=ScriptedClient(_answer(confidence=0.92)))

    # then it was sent once, automatically, through the loopback gateway
    assert draft.status == DraftStatus.SENT
    assert draft.delivery.auto is True
    assert [record["idempotency_key"] for record in LoopbackGateway.sent_records()] == [f"draft-{draft.pk}"]
    assert AuditEvent.objects.filter(action="draft_auto_sent").count() == 1


@pytest.mark.parametrize(
    ("answer", "whitelisted", "mode"),
    [
        (_answer(requiresHuman=True), True, SessionMode.AUTO),
        (_answer(confidence=0.6), True, SessionMode.AUTO),
        (_answer(), False, SessionMode.AUTO),
        (_answer(), True, SessionMode.ASSISTED),
        ({"reply": "您好", "confidence": 0.99}, True, SessionMode.AUTO),  # invalid: requiresHuman missing
    ],
    ids=["requires-human", "low-confidence", "not-whitelisted", "assisted-mode", "invalid-output"],
)
def test_draft_is_never_auto_sent_unless_every_condition_holds(customer, provider, answer, whitelisted, mode):
    # given one auto-send condition unmet
    _auto_customer(customer, whitelisted=whitelisted, mode=mode)

    # when a draft is generated
    draft = draft_generate(customer=customer, actor="pipeline", client=ScriptedClient(answer))

    # then it waits for review and nothing left the building
    assert draft.status == DraftStatus.PENDING
    assert not Delivery.objects.exists()
    assert LoopbackGateway.sent_records() == []
    assert not AuditEvent.objects.filter(action__in=["draft_auto_sent", "draft_sent"]).exists()


def test_auto_send_waits_while_the_customer_has_an_open_alert(customer, provider, staff_user, settings):
    # given a whitelisted auto-mode customer whose last message raised a personal-number alert
    settings.QIWEI_AUTO_SEND_CONFIDENCE = 0.85
    _auto_customer(customer)
    alert = alert_raise(
        customer=customer,
        kind=AlertKind.PERSONAL_NUMBER,
        level=AlertLevel.WARNING,
        text="客户消息中含个人手机号，已遮蔽",
        cause="message:1",
        actor="ingest",
    )

    # when a confident draft that needs no human is generated
    draft = draft_generate(customer=customer, actor="pipeline", client=ScriptedClient(_answer(confidence=0.92)))

    # then it waits for review, with the open alert listed as the reason, and nothing was sent
    assert draft.status == DraftStatus.PENDING
    assert draft_auto_send_blockers(draft) == ["客户有 1 条未处理的预警"]
    assert LoopbackGateway.sent_records() == []
    assert not AuditEvent.objects.filter(action__in=["draft_auto_sent", "draft_sent"]).exists()

    # when a supervisor resolves the alert, the next draft is sent automatically
    alert_resolve(alert=alert, actor=staff_user, reason="已核实是客户本人号码，无风险")
    following = draft_generate(customer=customer, actor="pipeline", client=ScriptedClient(_answer(confidence=0.92)))
    assert following.status == DraftStatus.SENT and following.delivery.auto is True
    assert [record["idempotency_key"] for record in LoopbackGateway.sent_records()] == [f"draft-{following.pk}"]


def test_auto_send_with_upstream_down_leaves_draft_pending(customer, provider, settings):
    # given an auto-eligible customer and an upstream that refuses connections
    settings.QIWEI_UPSTREAM_URL = "http://127.0.0.1:9"
    _auto_customer(customer)

    # when a draft is generated
    draft = draft_generate(customer=customer, actor="pipeline", client=ScriptedClient(_answer()))

    # then the draft is kept for review and the failed attempt is audited
    assert draft.status == DraftStatus.PENDING
    assert AuditEvent.objects.filter(action="draft_send_failed").count() == 1
    assert draft.delivery.status == "failed"


def test_pipeline_with_claude_code_resumes_then_rotates_on_missing_session(customer, provider, fake_claude):
    # given the Claude Code client and two turns in one epoch
    client = ClaudeCodeClient()
    first = draft_generate(customer=customer, actor="pipeline", client=client)
    second = draft_generate(customer=customer, actor="pipeline", client=client)
    assert first.session_id == second.session_id
    argvs = [call["argv"] for call in fake_claude.calls()]
    assert "--session-id" in argvs[0] and "--resume" in argvs[1]

    # when the CLI loses its sessions (e.g. its store was wiped) and a third turn runs
    fake_claude.forget_sessions()
    third = draft_generate(customer=customer, actor="pipeline", client=client)

    # then the epoch rotated for "invalid" and the turn was retried once in a new session
    argvs = [call["argv"] for call in fake_claude.calls()]
    assert len(argvs) == 4
    assert "--resume" in argvs[2] and "--session-id" in argvs[3]
    new_session = argvs[3][argvs[3].index("--session-id") + 1]
    assert third.session_id == new_session
    assert third.error == "" and third.reply.startswith("王先生您好")
    old = SessionEpoch.objects.get(session_id=first.session_id)
    assert old.close_reason == CloseReason.INVALID
    new = SessionEpoch.objects.get(session_id=new_session)
    assert new.parent_session_id == old.session_id and new.turns == 1
    assert third.context_trace["model"]["rotations"][0]["reason"] == "invalid"


def test_pipeline_with_claude_code_rotates_after_budget_overrun(customer, provider, fake_claude):
    # given a turn that exceeds its budget
    fake_claude.behave(mode="budget")

    # when a draft is generated
    draft = draft_generate(customer=customer, actor="pipeline", client=ClaudeCodeClient())

    # then the draft records the error for a human, and the epoch was rotated for the budget
    assert draft.requires_human and "预算" in draft.error
    spent = SessionEpoch.objects.get(session_id=draft.session_id)
    assert spent.close_reason == CloseReason.BUDGET_EXCEEDED
    assert SessionEpoch.objects.get(closed_at__isnull=True).parent_session_id == spent.session_id


def test_thirteenth_generation_runs_in_a_new_epoch(customer, provider):
    # given 12 generations in one epoch
    client = ScriptedClient(_answer(requiresHuman=True))
    drafts = [draft_generate(customer=customer, actor="pipeline", client=client) for _ in range(13)]

    # then the 13th ran in a new session whose parent is the first one
    assert len({draft.session_id for draft in drafts[:12]}) == 1
    assert drafts[12].session_id != drafts[0].session_id
    assert SessionEpoch.objects.get(session_id=drafts[12].session_id).parent_session_id == drafts[0].session_id
    assert [session.resume for session in client.sessions[:2]] == [False, True]
    assert client.sessions[12].resume is False


def test_grounding_does_not_match_inside_a_longer_number(customer):
    # given the customer said 14500 and 45000, never 4500 on its own, and mentioned metro line 2
    MessageFactory(customer=customer, text="之前看的那套月租14500，买的话总价45000一平", sent_at=BASE_TIME)
    MessageFactory(customer=customer, text="地铁2号线附近", sent_at=BASE_TIME)
    customer.messages.filter(text__startswith="预算").delete()

    # when the model proposes a budget of 4500, the area along metro line 2 and the two-bedroom he asked for
    grounded, _evidence, dropped, _proposed = ground_profile_updates(
        customer=customer, updates={"budget": "4500", "district": "2号线", "layout": "两居室"}
    )

    # then 4500 is not grounded; nor is "2号线" (the reader reads no district from a bare mention, and
    # a substring is no longer enough, issue 21); the layout he stated is
    assert grounded == {"layout": "两居室"}
    assert [item["field"] for item in dropped] == ["budget", "district"]


def test_failed_generation_is_a_failed_draft_never_approvable_nor_awaiting_review(customer, provider, staff_user):
    # Given a model client that cannot run (the CLI is not installed)
    class Missing(ModelClient):
        name = "claude_code"

        def generate(self, *, prompt, session, hints=None):
            return ModelResult(client=self.name, error="未找到 Claude Code 命令行工具，没有连接模型")

    # When a draft is generated
    draft = draft_generate(customer=customer, actor="pipeline", client=Missing())
    # Then it is a failed draft with the Chinese reason, not awaiting review, refused by approval
    assert draft.status == DraftStatus.FAILED and draft.get_status_display() == "生成失败"
    assert draft.error.startswith("未找到 Claude Code")
    assert not drafts_awaiting_review().filter(pk=draft.pk).exists()
    with pytest.raises(Conflict):
        draft_approve(draft=draft, actor=staff_user, reason="试试")
    # And it can be dismissed, and another generated for the same message
    assert draft_reject(draft=draft, actor=staff_user, reason="模型未连接").status == DraftStatus.REJECTED
    again = draft_generate(customer=customer, actor="pipeline", client=Missing())
    assert again.pk != draft.pk
