"""Review and sending: approve/reject, one delivery per draft whatever the retries, upstream failures."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections

from conversations import gateway as upstream
from conversations.business import alert_create
from conversations.drafts import draft_approve, draft_reject, draft_send
from conversations.gateway import LoopbackGateway, upstream_status_cached
from conversations.models import AuditEvent, Delivery, DeliveryStatus, Draft, DraftStatus, SessionMode
from qiwei_site.platform.errors import Conflict, UpstreamUnavailable, ValidationFailed
from qiwei_site.platform.tenancy import use_account
from tests.factories import DraftFactory


@pytest.fixture
def draft(customer):
    return DraftFactory(customer=customer, requires_human=True, confidence=0.7)


def test_draft_approve_with_edited_text_records_reviewer_history_and_audit(draft, staff_user):
    # given a pending draft
    # when a supervisor approves it with an edited text
    approved = draft_approve(
        draft=draft, actor=staff_user, reason="补充看房时间", text="王先生您好，周六上午10点可以看张江的两居室。"
    )

    # then the edit is the final text, the reviewer and reason are in history, and it is audited
    assert approved.status == DraftStatus.APPROVED
    assert approved.final_text == "王先生您好，周六上午10点可以看张江的两居室。"
    assert approved.reviewed_by_id == staff_user.pk and approved.reviewed_at is not None
    latest = approved.history.first()
    assert (latest.history_user_id, latest.history_change_reason) == (staff_user.pk, "补充看房时间")
    event = AuditEvent.objects.get(action="draft_approved")
    assert event.payload == {"draft_id": draft.pk, "edited": True}
    assert event.actor_id == staff_user.pk


def test_draft_approve_twice_writes_nothing_new(draft, staff_user):
    # given an approved draft
    draft_approve(draft=draft, actor=staff_user, reason="通过")
    history_rows = draft.history.count()

    # when it is approved again without changes
    draft_approve(draft=draft, actor=staff_user, reason="再次通过")

    # then nothing was written
    assert draft.history.count() == history_rows
    assert AuditEvent.objects.filter(action="draft_approved").count() == 1


def test_draft_approve_rejects_empty_text(draft, staff_user):
    # given a pending draft / when approved with a blank edit / then it is refused with a reason
    with pytest.raises(ValidationFailed, match="不能为空"):
        draft_approve(draft=draft, actor=staff_user, reason="通过", text="   ")


def test_rejected_or_pending_draft_cannot_be_sent(draft, customer, agent_user):
    # given a pending draft and a rejected one
    rejected = DraftFactory(customer=customer)
    draft_reject(draft=rejected, actor=agent_user, reason="报价不准确")

    # when someone tries to send them / then both are refused and nothing is sent
    with pytest.raises(Conflict, match="尚未审核"):
        draft_send(draft=draft, actor=agent_user, reason="发送")
    with pytest.raises(Conflict, match="已被拒绝"):
        draft_send(draft=rejected, actor=agent_user, reason="发送")
    assert not Delivery.objects.exists()
    assert LoopbackGateway.sent_records() == []
    assert AuditEvent.objects.get(action="draft_rejected").reason == "报价不准确"


def test_draft_send_is_idempotent(draft, agent_user):
    # given an approved draft
    draft_approve(draft=draft, actor=agent_user, reason="通过", text="王先生您好，周六见。")

    # when it is sent three times
    deliveries = [draft_send(draft=draft, actor=agent_user, reason="发送") for _ in range(3)]

    # then there is one delivery of the final text, one upstream send and one audit row
    assert {delivery.pk for delivery in deliveries} == {deliveries[0].pk}
    delivery = deliveries[0]
    assert delivery.status == DeliveryStatus.SENT
    assert delivery.idempotency_key == f"draft-{draft.pk}"
    assert delivery.text == "王先生您好，周六见。"
    assert delivery.upstream_id.startswith("loopback-")
    assert [record["text"] for record in LoopbackGateway.sent_records()] == ["王先生您好，周六见。"]
    assert AuditEvent.objects.filter(action="draft_sent").count() == 1
    draft.refresh_from_db()
    assert draft.status == DraftStatus.SENT


def test_draft_send_with_upstream_unreachable_sends_nothing_and_can_be_retried(draft, agent_user, settings):
    # given an approved draft and an upstream where nothing listens
    draft_approve(draft=draft, actor=agent_user, reason="通过")
    settings.QIWEI_UPSTREAM_URL = "http://127.0.0.1:9"

    # when it is sent
    with pytest.raises(UpstreamUnavailable) as raised:
        draft_send(draft=draft, actor=agent_user, reason="发送")

    # then the refusal says why (503), nothing was delivered, and the cached status turned offline
    assert raised.value.status_code == 503
    assert "企微上游不可用" in raised.value.detail
    delivery = Delivery.objects.get(draft=draft)
    assert delivery.status == DeliveryStatus.FAILED and delivery.last_error
    assert Draft.objects.get(pk=draft.pk).status == DraftStatus.APPROVED
    assert upstream_status_cached().online is False
    assert AuditEvent.objects.filter(action="draft_send_failed").count() == 1

    # when the upstream is back and the send is retried
    settings.QIWEI_UPSTREAM_URL = ""
    retried = draft_send(draft=draft, actor=agent_user, reason="重试发送")

    # then the same delivery row is sent, on its second attempt
    assert retried.pk == delivery.pk
    assert (retried.status, retried.attempts) == (DeliveryStatus.SENT, 2)
    assert len(LoopbackGateway.sent_records()) == 1


class CountingGateway(upstream.LoopbackGateway):
    """The loopback gateway, slowed down to widen any race, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def send(self, *, conversation_id: str, text: str, idempotency_key: str) -> str:
        with self.lock:
            self.calls += 1
        time.sleep(0.2)
        return super().send(conversation_id=conversation_id, text=text, idempotency_key=idempotency_key)


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_sends_make_one_delivery_and_one_upstream_call(draft, agent_user, monkeypatch):
    # given an approved draft and a slow upstream
    draft_approve(draft=draft, actor=agent_user, reason="通过")
    counting = CountingGateway()
    monkeypatch.setattr(upstream, "get_gateway", lambda: counting)
    barrier = threading.Barrier(20)
    results: list[int] = []
    errors: list[BaseException] = []

    def send() -> None:
        try:
            with use_account("acme"):
                barrier.wait()
                delivery = draft_send(draft=Draft(pk=draft.pk), actor=agent_user, reason="并发发送")
                results.append(delivery.pk)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    # when 20 threads send it at once
    threads = [threading.Thread(target=send) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # then every request got the same delivery, and the upstream was called exactly once
    assert errors == []
    assert len(results) == 20 and len(set(results)) == 1
    assert counting.calls == 1
    assert Delivery.objects.filter(draft_id=draft.pk).count() == 1
    assert len(LoopbackGateway.sent_records()) == 1
    assert Delivery.objects.get(draft_id=draft.pk).status == DeliveryStatus.SENT
    assert AuditEvent.objects.filter(action="draft_sent").count() == 1


def test_draft_rejected_while_a_send_is_under_way_is_never_sent(draft, agent_user, staff_user, monkeypatch):
    # Given an approved draft, and a second reviewer who rejects it just after the sender's first check
    from conversations import drafts

    draft_approve(draft=draft, actor=agent_user, reason="通过")
    original_claim = drafts._claim

    def claim_after_reject(*args, **kwargs):
        draft_reject(draft=draft, actor=staff_user, reason="内容不妥，撤回")
        return original_claim(*args, **kwargs)

    monkeypatch.setattr(drafts, "_claim", claim_after_reject)
    calls = []
    monkeypatch.setattr(LoopbackGateway, "send", lambda self, **kwargs: calls.append(kwargs) or "up-1")
    # When the send goes on, then it is refused, nothing reaches the customer, and the draft stays rejected
    with pytest.raises(Conflict) as refused:
        draft_send(draft=draft, actor=agent_user, reason="发送")
    assert refused.value.code == "draft_rejected"
    assert calls == [] and not Delivery.objects.filter(draft=draft).exists()
    assert Draft.objects.get(pk=draft.pk).status == DraftStatus.REJECTED


def test_draft_send_auto_is_refused_while_an_alert_is_open(customer, agent_user, settings):
    # Given a whitelisted auto-mode customer, a confident draft, and an open alert a person raised
    settings.QIWEI_AUTO_SEND_CONFIDENCE = 0.85
    customer.auto_send_whitelisted, customer.session_mode = True, SessionMode.AUTO
    customer.save()
    draft = DraftFactory(customer=customer, requires_human=False, confidence=0.95)
    alert_create(customer=customer, text="客户情绪激动，勿催促签约", actor=agent_user, reason="电话沟通后")
    # When the draft is sent automatically
    with pytest.raises(Conflict) as exc:
        draft_send(draft=draft, actor="pipeline", auto=True)
    # Then it is refused with the open alert named, and nothing left
    assert exc.value.code == "auto_send_not_allowed" and "客户有 1 条未处理的预警" in exc.value.detail
    assert not Delivery.objects.exists() and LoopbackGateway.sent_records() == []
