"""A save the service refuses re-renders the form with what the supervisor typed and the reason it
was refused, never a blank form; nothing is written."""

from __future__ import annotations

import datetime as dt

from django.urls import reverse
from django.utils import timezone

from conversations.models import AuditEvent
from memory.models import MemoryItem

ADD = "/admin/memory/memoryitem/add/"


def test_admin_refused_add_keeps_every_typed_field(admin_client, account_rows):
    # given an expiry already past, which the service refuses (the picker offers only this
    # customer's messages, so foreign evidence no longer reaches the service)
    items_before = MemoryItem.objects.count()
    typed = {
        "customer": account_rows.customer.pk,
        "type": "fact",
        "content": "女儿明年上小学，需要学区房",
        "importance": 4,
        "expires_at_0": "2020-01-01",
        "expires_at_1": "10:00:00",
        "source_message_ids": [str(account_rows.message.pk)],
        "reason": "电话沟通得知",
    }
    # when the supervisor saves
    response = admin_client.post(ADD, typed)
    # then the form comes back (not a redirect to a blank one) with the service's reason
    assert response.status_code == 200
    body = response.content.decode()
    assert "过期时间必须晚于现在" in body
    form = response.context["adminform"].form
    assert len(form.non_field_errors()) == 1
    # and every field holds what was typed
    assert form["content"].value() == "女儿明年上小学，需要学区房"
    assert str(form["customer"].value()) == str(account_rows.customer.pk)
    assert str(form["importance"].value()) == "4"
    assert form["reason"].value() == "电话沟通得知"
    assert "女儿明年上小学，需要学区房</textarea>" in body
    # and nothing was written
    assert MemoryItem.objects.count() == items_before
    assert not AuditEvent.objects.filter(action="memory_item_added", reason="电话沟通得知").exists()


def test_admin_refused_edit_keeps_the_new_text(admin_client, account_rows):
    # given the supervisor changes the text and sets an expiry in the past
    item = account_rows.item
    url = reverse("admin:memory_memoryitem_change", args=[item.pk])
    past = timezone.localtime(timezone.now() - dt.timedelta(days=1))
    response = admin_client.post(
        url,
        {
            "type": item.type,
            "content": "不考虑顶楼、一楼和地下室",
            "importance": item.importance,
            "confidence": item.confidence,
            "expires_at_0": past.strftime("%Y-%m-%d"),
            "expires_at_1": past.strftime("%H:%M:%S"),
            "reason": "客户补充",
        },
    )
    # then the page shows why and keeps the new text; the item is unchanged
    assert response.status_code == 200
    assert "过期时间必须晚于现在" in response.content.decode()
    assert response.context["adminform"].form["content"].value() == "不考虑顶楼、一楼和地下室"
    item.refresh_from_db()
    assert item.content == "不考虑顶楼和一楼" and item.expires_at is None


def test_admin_refused_save_then_corrected_save_goes_through(admin_client, account_rows):
    # given a refused add (the evidence cited is no message of this customer)
    typed = {
        "customer": account_rows.customer.pk,
        "type": "fact",
        "content": "在张江上班",
        "importance": 3,
        "source_message_ids": ["987654"],
        "reason": "电话",
    }
    refused = admin_client.post(ADD, typed)
    assert refused.status_code == 200
    assert not MemoryItem.objects.filter(content="在张江上班").exists()
    assert refused.context["adminform"].form["content"].value() == "在张江上班"
    # when the supervisor corrects the evidence and saves again
    accepted = admin_client.post(ADD, {key: value for key, value in typed.items() if key != "source_message_ids"})
    # then it is saved
    assert accepted.status_code == 302
    assert MemoryItem.objects.filter(content="在张江上班", type="fact").exists()


def test_admin_add_hypothesis_by_hand_waits_under_review(admin_client, account_rows):
    # given a supervisor recording something to ask the customer
    typed = {
        "customer": account_rows.customer.pk,
        "type": "hypothesis",
        "content": "可能在张江上班，下次确认通勤要求",
        "importance": 3,
        "reason": "电话里提到公司在张江",
    }
    # when it is saved
    response = admin_client.post(ADD, typed)
    # then it is an unconfirmed, expiring hypothesis of a person
    assert response.status_code == 302
    item = MemoryItem.objects.get(content="可能在张江上班，下次确认通勤要求")
    assert item.type == "hypothesis" and item.created_by == "human"
    assert item.confidence < 1 and item.expires_at is not None
