"""Governance forms refused keep what the supervisor entered (issue 39, item 3): the add-memory
form sent without a reason comes back with the customer, the words, the importance and the ticked
source messages (the picker's script refills only for another customer: the browser half is in
tests/browser/test_admin_confirm_wording.py); the review queue keeps the reason and the text."""

from __future__ import annotations

import re

from memory.models import MemoryItem

ADD = "/admin/memory/memoryitem/add/"
QUEUE = "/admin/memory/memoryitem/review/"


def _ticked(body: str) -> set[int]:
    boxes = re.findall(r'<input type="checkbox" name="source_message_ids" value="(\d+)"[^>]*>', body)
    checked = re.findall(r'<input type="checkbox" name="source_message_ids" value="(\d+)"[^>]*checked[^>]*>', body)
    assert boxes, "the picker lists the customer's messages"
    return {int(pk) for pk in checked}


def test_add_form_refused_for_a_missing_reason_keeps_everything_entered(admin_client, customer, messages):
    # given the supervisor ticked two of 王先生's messages and typed the item, but no reason
    data = {
        "customer": customer.pk,
        "type": "preference",
        "content": "希望地铁通勤，陆家嘴方向",
        "importance": 4,
        "source_message_ids": [messages[0].pk, messages[1].pk],
        "reason": "",
    }
    # when the form is sent
    response = admin_client.post(ADD, data)
    # then it comes back asking for the reason, with what they entered, the ticks included
    assert response.status_code == 200
    body = response.content.decode()
    assert "该字段是必填项" in body
    form = response.context["adminform"].form
    assert (form["customer"].value(), form["type"].value(), form["importance"].value()) == (
        str(customer.pk),
        "preference",
        "4",
    )
    assert "希望地铁通勤，陆家嘴方向" in body
    assert _ticked(body) == {messages[0].pk, messages[1].pk}
    assert not MemoryItem.objects.filter(customer=customer).exists()


def test_add_form_refused_by_the_service_keeps_the_ticked_sources(admin_client, customer, messages):
    # given a reason this time, but words the safety gate refuses
    data = {
        "customer": customer.pk,
        "type": "fact",
        "content": "门锁密码是 839201",
        "importance": 5,
        "source_message_ids": [messages[1].pk],
        "reason": "客户让记下",
    }
    # when the form is sent
    response = admin_client.post(ADD, data)
    # then the refusal is on the form, and the reason and ticks are still there
    body = response.content.decode()
    assert response.status_code == 200 and "安全检查" in body
    assert 'value="客户让记下"' in body
    assert _ticked(body) == {messages[1].pk}


def test_review_queue_edit_refused_keeps_the_reason_and_the_text(admin_client, review_items):
    # when an edit is sent with the reason but an empty text
    response = admin_client.post(
        QUEUE, {"item": review_items.hedged.pk, "decision": "edit", "reason": "客户补充说明", "content": "  "}
    )
    # then the row comes back with their reason
    body = response.content.decode()
    assert "编辑需要填写新的内容" in body and 'value="客户补充说明"' in body
