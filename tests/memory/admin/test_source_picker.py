"""The add form's source-message picker (memory.admin.items): the chosen customer's latest messages
by their masked words, refilled as JSON when the customer changes, a message of another customer
refused; and a hand-added item's default importance and type are the API's."""

from __future__ import annotations

import pytest
from django.utils import timezone

from memory.admin.items import HAND_ADDED_IMPORTANCE, HAND_ADDED_TYPE, MemoryItemAdminForm
from memory.admin.selectors import source_message_choices, source_message_label
from memory.governance.apis import MemoryItemListApi
from tests.factories import CustomerFactory, MessageFactory

SOURCES = "/admin/memory/memoryitem/source-messages/"


def test_source_picker_lists_only_the_customers_messages_masked(admin_client, customer, messages):
    # given another customer's message in the same account, and a number in one of 王先生's
    other = MessageFactory(customer=CustomerFactory(conversation_id="wm_li_002"), text="我是李女士")
    phone = MessageFactory(customer=customer, text="我电话13812345678，随时联系")
    # when the picker asks for 王先生's messages
    response = admin_client.get(SOURCES, {"customer": customer.pk})
    # then it lists his, newest first, each by time, side and masked words
    listed = response.json()["messages"]
    assert listed[0]["id"] == phone.pk
    assert {m["id"] for m in listed} == {phone.pk, *(m.pk for m in messages)} and other.pk not in {
        m["id"] for m in listed
    }
    assert "13812345678" not in listed[0]["label"] and "客户" in listed[0]["label"]


def test_source_picker_without_a_customer_answers_a_clear_400(admin_client):
    # when the picker is asked with no customer chosen
    response = admin_client.get(SOURCES, {"customer": "王先生"})
    # then it says what to do
    assert response.status_code == 400 and response.json()["code"] == "invalid_customer"


@pytest.mark.parametrize("odd", ["²", "99999999999999999999", "-1", " 1"])
def test_source_picker_and_add_form_read_an_odd_customer_id_as_none(admin_client, account, odd):
    # when the picker or the add form is given digits that are no row id (found in review: a 500)
    response = admin_client.get(SOURCES, {"customer": odd})
    page = admin_client.get("/admin/memory/memoryitem/add/", {"customer": odd})
    # then the picker says what to do, and the form opens without sources
    assert response.status_code == 400 and response.json()["code"] == "invalid_customer"
    assert page.status_code == 200


def test_add_form_refuses_a_message_of_another_customer(customer, messages):
    # given 李女士's message ticked on 王先生's form
    other = MessageFactory(customer=CustomerFactory(conversation_id="wm_li_003"), text="我想找一居室")
    data = {"customer": customer.pk, "type": "fact", "content": "预算4500", "importance": 5, "confidence": 1}
    form = MemoryItemAdminForm(data={**data, "source_message_ids": [other.pk], "reason": "电话"})
    # then the form refuses it; his own message is accepted, as an id
    assert not form.is_valid() and "source_message_ids" in form.errors
    form = MemoryItemAdminForm(data={**data, "source_message_ids": [messages[0].pk], "reason": "电话"})
    assert form.is_valid(), form.errors
    assert form.cleaned_data["source_message_ids"] == [messages[0].pk]


def test_add_form_defaults_are_the_apis(customer):
    # when the add form is opened
    form = MemoryItemAdminForm(initial={"customer": customer.pk})
    api_fields = MemoryItemListApi.MemoryItemAddInput().fields
    # then its importance and type start where the API's do
    assert form["importance"].value() == HAND_ADDED_IMPORTANCE == api_fields["importance"].default
    assert form["type"].value() == HAND_ADDED_TYPE == api_fields["type"].default
    assert source_message_choices(customer_id=None).count() == 0


def test_source_message_label_reads_time_side_and_words(customer):
    # given a message of 王先生's
    message = MessageFactory(customer=customer, sender="王先生", text="不考虑顶楼，夏天太热")
    local = timezone.localtime(message.sent_at)
    # then the picker shows it as Beijing time, side, sender and words
    expected = f"{local:%Y-%m-%d %H:%M} · {message.get_direction_display()} 王先生：不考虑顶楼，夏天太热"
    assert source_message_label(message) == expected
