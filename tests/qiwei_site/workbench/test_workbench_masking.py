"""The Workbench shows secrets and personal numbers masked (issue 14): the conversation list
preview and the thread; the page's script shows only what these answers give it."""

from __future__ import annotations

import datetime as dt

from conversations.models import Message, MessageDirection
from tests.factories import BASE_TIME, CustomerFactory, MessageFactory

CONVERSATIONS = "/workbench/api/accounts/acme/conversations/"
OVERVIEW = "/workbench/api/accounts/acme/conversations/wm_liu_003/overview/"
ID_NUMBER = "440305199003071236"


def _customer_with_numbers(account):
    customer = CustomerFactory(conversation_id="wm_liu_003", display_name="刘女士", last_message_at=BASE_TIME)
    MessageFactory(customer=customer, text="想租南山区的一居室，预算7500元", sent_at=BASE_TIME)
    MessageFactory(
        customer=customer,
        direction=MessageDirection.OUTBOUND,
        sender="客服小李",
        text="好的刘女士，签约需要您的身份证号",
        sent_at=BASE_TIME + dt.timedelta(minutes=1),
    )
    MessageFactory(
        customer=customer,
        text=f"身份证{ID_NUMBER}，手机13912345678，验证码482913",
        sent_at=BASE_TIME + dt.timedelta(minutes=2),
    )
    return customer


def test_workbench_conversation_list_preview_is_masked(agent_client, account):
    # given a customer whose last message carries an ID number, a mobile and a code
    _customer_with_numbers(account)
    # when the Workbench loads its conversation list
    [row] = agent_client.get(CONVERSATIONS).json()["results"]
    # then the preview quotes it masked
    assert row["last_message_text"] == "身份证4403**********1236，手机139****5678，验证码••••••"


def test_workbench_thread_is_masked_and_the_message_kept(agent_client, account):
    # given the same conversation
    _customer_with_numbers(account)
    # when the Workbench opens it
    messages = agent_client.get(OVERVIEW).json()["messages"]
    # then the thread quotes every message masked, ordinary ones unchanged
    assert [m["text"] for m in messages] == [
        "想租南山区的一居室，预算7500元",
        "好的刘女士，签约需要您的身份证号",
        "身份证4403**********1236，手机139****5678，验证码••••••",
    ]
    # and the stored message is untouched
    assert Message.objects.filter(text__contains=ID_NUMBER).count() == 1
