"""Messages in Django admin are masked (issue 14); staff reveal one through an audited service."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from conversations.models import AuditAction, AuditEvent, MessageDirection
from conversations.services import message_reveal
from memory.models import MemoryType
from qiwei_site.platform.errors import PermissionDenied, ValidationFailed
from qiwei_site.platform.middleware import SESSION_KEY
from tests.factories import CustomerFactory, MemoryItemFactory, MessageFactory

ID_NUMBER = "310101198511204568"
RAW = f"签约资料：身份证{ID_NUMBER}，手机13912345678，门锁密码是 0825"
MASKED = "签约资料：身份证3101**********4568，手机139****5678，门锁密码是 ••••••"


@pytest.fixture
def sensitive_message(account):
    customer = CustomerFactory(conversation_id="wm_chen_004", display_name="陈先生")
    MessageFactory(customer=customer, text="想在徐汇区租两居室，预算8000")
    return MessageFactory(customer=customer, text=RAW, sender="陈先生")


def _reveal_url(message) -> str:
    return reverse("admin:conversations_message_reveal", args=[message.pk])


def _assert_masked(body: str) -> None:
    assert MASKED in body
    assert ID_NUMBER not in body and "13912345678" not in body and "0825" not in body


def test_message_admin_changelist_shows_masked_text(admin_client, sensitive_message):
    # when a supervisor opens the message list
    response = admin_client.get(reverse("admin:conversations_message_changelist"))
    # then the message is quoted masked
    assert response.status_code == 200
    _assert_masked(response.content.decode())


def test_message_admin_change_page_is_masked_with_a_reveal_link(admin_client, sensitive_message):
    # when a supervisor opens the message itself
    response = admin_client.get(reverse("admin:conversations_message_change", args=[sensitive_message.pk]))
    body = response.content.decode()
    # then the text (and the page title) are masked, and the audited reveal is offered
    assert response.status_code == 200
    _assert_masked(body)
    assert _reveal_url(sensitive_message) in body and "查看原文（记入审计）" in body


def test_customer_admin_message_inline_is_masked(admin_client, sensitive_message):
    # when a supervisor opens the customer page with its messages inline
    response = admin_client.get(reverse("admin:conversations_customer_change", args=[sensitive_message.customer_id]))
    # then the inline quotes the message masked
    assert response.status_code == 200
    _assert_masked(response.content.decode())


def test_memory_item_admin_quotes_its_source_message_masked(admin_client, sensitive_message):
    # given a memory item whose evidence is that message
    item = MemoryItemFactory(
        customer=sensitive_message.customer,
        type=MemoryType.PREFERENCE,
        key="preference:徐汇",
        content="偏好：徐汇区",
        source_message_ids=[sensitive_message.pk],
    )
    # when a supervisor reads the item's evidence
    response = admin_client.get(reverse("admin:memory_memoryitem_change", args=[item.pk]))
    # then the quoted source is masked
    assert response.status_code == 200
    _assert_masked(response.content.decode())


def test_message_admin_reveal_asks_why_before_showing_anything(admin_client, sensitive_message):
    # when a supervisor follows the reveal link
    response = admin_client.get(_reveal_url(sensitive_message))
    # then a form asks for the reason; nothing is shown or audited yet
    body = response.content.decode()
    assert response.status_code == 200 and "原因（写入审计）" in body
    _assert_masked(body)
    assert not AuditEvent.objects.filter(action=AuditAction.MESSAGE_REVEALED).exists()


def test_message_admin_reveal_shows_the_original_and_audits_without_text(admin_client, staff_user, sensitive_message):
    # when the supervisor gives a reason and confirms
    response = admin_client.post(_reveal_url(sensitive_message), {"reason": "客户要求核对签约身份证号"})
    # then the message is shown as received, uncached
    body = response.content.decode()
    assert response.status_code == 200
    assert RAW in body and "本次查看已记入审计" in body
    assert "no-store" in response["Cache-Control"] or "no-cache" in response["Cache-Control"]
    # and the audit records who, why and which message, never the text
    event = AuditEvent.objects.get(action=AuditAction.MESSAGE_REVEALED)
    assert (event.actor_id, event.conversation_id, event.reason) == (
        staff_user.pk,
        "wm_chen_004",
        "客户要求核对签约身份证号",
    )
    assert event.payload == {"message_id": sensitive_message.pk, "direction": MessageDirection.INBOUND}
    assert ID_NUMBER not in str(event.payload) and "0825" not in str(event.payload)


def test_message_admin_reveal_without_reason_shows_nothing(admin_client, sensitive_message):
    # when the supervisor confirms with an empty reason
    response = admin_client.post(_reveal_url(sensitive_message), {"reason": "  "})
    # then the original stays hidden and nothing is audited
    assert response.status_code == 200
    _assert_masked(response.content.decode())
    assert not AuditEvent.objects.filter(action=AuditAction.MESSAGE_REVEALED).exists()


def test_message_admin_reveal_refuses_non_staff(agent_user, account, sensitive_message):
    # given a customer-service agent (a member of the account, not staff) with a browser session
    client = Client()
    client.force_login(agent_user)
    session = client.session
    session[SESSION_KEY] = account.id
    session.save()
    # when they try the reveal page directly
    response = client.post(_reveal_url(sensitive_message), {"reason": "好奇"})
    # then admin sends them to its login and nothing is shown or audited
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert RAW not in response.content.decode()
    assert not AuditEvent.objects.filter(action=AuditAction.MESSAGE_REVEALED).exists()


def test_message_reveal_service_refuses_non_staff_actors(agent_user, sensitive_message):
    # when a non-staff user or an automatic actor asks the service directly
    for actor in (agent_user, "capture"):
        with pytest.raises(PermissionDenied):
            message_reveal(message=sensitive_message, actor=actor, reason="排查问题")
    # then nothing is audited
    assert not AuditEvent.objects.filter(action=AuditAction.MESSAGE_REVEALED).exists()


def test_message_reveal_service_needs_a_reason(staff_user, sensitive_message):
    with pytest.raises(ValidationFailed) as excinfo:
        message_reveal(message=sensitive_message, actor=staff_user, reason="")
    assert excinfo.value.code == "reason_required"
    assert not AuditEvent.objects.filter(action=AuditAction.MESSAGE_REVEALED).exists()


def test_message_reveal_service_returns_the_message_as_received(staff_user, sensitive_message):
    # when a supervisor reveals through the service
    text = message_reveal(message=sensitive_message, actor=staff_user, reason="核对客户提供的证件")
    # then they get the stored text, and one audit row says so
    assert text == RAW
    assert AuditEvent.objects.filter(action=AuditAction.MESSAGE_REVEALED, actor_id=staff_user.pk).count() == 1
