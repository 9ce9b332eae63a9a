"""Forgetting a message from Django admin (issue 25, item 4): the page asks why and says what goes;
posting forgets the message and the automatic items it alone supported, through the service."""

from __future__ import annotations

from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from conversations.models import AuditEvent, Message
from memory.capture.services import capture_message
from memory.models import MemoryItem
from qiwei_site.platform.middleware import SESSION_KEY
from qiwei_site.platform.services import membership_grant
from tests.factories import CustomerFactory, MessageFactory, StaffUserFactory


def _setup():
    customer = CustomerFactory(conversation_id="wm_admin_forget", display_name="钱先生")
    message = MessageFactory(customer=customer, text="预算五千以内")
    capture_message(message=message)
    return message, MemoryItem.objects.get(customer=customer, key="profile:budget")


def test_message_admin_forget_page_asks_for_a_reason(admin_client, account):
    message, _item = _setup()
    url = reverse("admin:conversations_message_forget", args=[message.pk])
    # When a supervisor opens the message, the forget page is offered; the page asks why
    change = admin_client.get(reverse("admin:conversations_message_change", args=[message.pk])).content.decode()
    assert url in change and "遗忘这条消息（记入审计）" in change
    page = admin_client.get(url)
    assert page.status_code == 200 and "仅以它为证据的自动记忆会一并遗忘" in page.content.decode()
    # And posting without a reason forgets nothing
    assert admin_client.post(url, {"reason": ""}).status_code == 200
    assert Message.objects.filter(pk=message.pk).exists()


def test_message_admin_forget_cascades_through_the_service(admin_client, account):
    message, item = _setup()
    # When a supervisor forgets the message with a reason
    response = admin_client.post(
        reverse("admin:conversations_message_forget", args=[message.pk]), {"reason": "客户要求删除"}
    )
    # Then the message and the budget it alone supported are gone, each audited
    assert response.status_code == 302
    assert not Message.objects.filter(pk=message.pk).exists()
    assert not MemoryItem.objects.filter(pk=item.pk).exists()
    assert AuditEvent.objects.filter(action="message_forgotten").count() == 1
    assert AuditEvent.objects.filter(action="memory_item_forgotten").count() == 1


def test_message_admin_forget_unknown_message_is_404(admin_client, account):
    assert admin_client.get(reverse("admin:conversations_message_forget", args=[999999])).status_code == 404


def test_message_admin_forget_needs_the_delete_permission(account):
    # Given a staff member who may only view messages
    viewer = StaffUserFactory()
    viewer.user_permissions.set([Permission.objects.get(codename="view_message")])
    membership_grant(user=viewer, account=account)
    client = Client()
    client.force_login(viewer)
    session = client.session
    session[SESSION_KEY] = account.id
    session.save()
    message, item = _setup()
    # When they post the forget page
    response = client.post(reverse("admin:conversations_message_forget", args=[message.pk]), {"reason": "试试"})
    # Then it is refused and nothing is forgotten
    assert response.status_code == 403
    assert Message.objects.filter(pk=message.pk).exists() and MemoryItem.objects.filter(pk=item.pk).exists()
