"""The auto-send gate, one condition at a time (issue 25, `scripts/mutation.sh autosend`): a draft goes
out unreviewed only when every condition agrees, each blocker is named in its own words, and the
confidence threshold itself passes."""

from __future__ import annotations

import pytest

from conversations.business import alert_create
from conversations.drafts import draft_auto_send_blockers
from conversations.models import Customer, DraftStatus, SessionMode
from conversations.services import alert_resolve
from tests.factories import CustomerFactory, DraftFactory

AGENT = "客服小李"


@pytest.fixture
def auto_customer(account, settings):
    """王先生, whitelisted and in auto mode; the threshold at 0.85."""
    settings.QIWEI_AUTO_SEND_CONFIDENCE = 0.85
    return CustomerFactory(
        conversation_id="wm_wang_auto", display_name="王先生", auto_send_whitelisted=True, session_mode=SessionMode.AUTO
    )


def _draft(customer, **fields):
    values = {"requires_human": False, "confidence": 0.9, "status": DraftStatus.PENDING, **fields}
    return DraftFactory(customer=customer, **values)


def test_auto_send_blockers_none_when_every_condition_agrees_at_the_threshold(auto_customer):
    # given a resolved alert and a pending draft exactly at the threshold
    alert = alert_create(customer=auto_customer, text="客户情绪激动，勿催促签约", actor=AGENT, reason="电话沟通后")
    alert_resolve(alert=alert, actor=AGENT, reason="客户已平复")
    draft = _draft(auto_customer, confidence=0.85)
    # when the gate is asked, then nothing blocks
    assert draft_auto_send_blockers(draft) == []


@pytest.mark.parametrize(
    ("change", "blocker"),
    [
        ({"auto_send_whitelisted": False}, "客户不在自动发送白名单"),
        ({"session_mode": SessionMode.ASSISTED}, "会话模式为「辅助」，不是自动"),
        ({"session_mode": SessionMode.MANUAL}, "会话模式为「人工」，不是自动"),
    ],
)
def test_auto_send_blockers_name_the_customers_setting(auto_customer, change, blocker):
    # given a customer with one setting against auto-send
    for name, value in change.items():
        setattr(auto_customer, name, value)
    auto_customer.save()
    draft = _draft(auto_customer)
    # when the gate is asked, then exactly that setting is named
    assert draft_auto_send_blockers(draft) == [blocker]


@pytest.mark.parametrize(
    ("fields", "blocker"),
    [
        ({"requires_human": True}, "模型要求人工处理 (requiresHuman)"),
        ({"confidence": 0.84}, "置信度 0.84 低于阈值 0.85"),
        ({"error": "模型超时"}, "草稿生成有错误"),
        ({"reply": "  \n "}, "草稿内容为空"),
        ({"status": DraftStatus.APPROVED}, "草稿状态为「已批准」"),
        ({"status": DraftStatus.FAILED}, "草稿状态为「生成失败」"),
    ],
)
def test_auto_send_blockers_name_the_drafts_fault(auto_customer, fields, blocker):
    # given a draft with one fault
    draft = _draft(auto_customer, **fields)
    # when the gate is asked, then exactly that fault is named
    assert draft_auto_send_blockers(draft) == [blocker]


def test_auto_send_blockers_count_only_this_customers_open_alerts(auto_customer):
    # given two open alerts on the customer, one resolved, and one open on another customer
    for text in ("客户情绪激动，勿催促签约", "客户发来了身份证号"):
        alert_create(customer=auto_customer, text=text, actor=AGENT, reason="人工预警")
    resolved = alert_create(customer=auto_customer, text="客户投诉物业", actor=AGENT, reason="人工预警")
    alert_resolve(alert=resolved, actor=AGENT, reason="已回访")
    alert_create(customer=CustomerFactory(), text="另一位客户的预警", actor=AGENT, reason="人工预警")
    draft = _draft(auto_customer)
    # when the gate is asked, then the two open ones are counted
    assert draft_auto_send_blockers(draft) == ["客户有 2 条未处理的预警"]


def test_auto_send_blockers_list_every_fault_in_order(auto_customer):
    # given a customer and a draft with everything against auto-send
    auto_customer.auto_send_whitelisted, auto_customer.session_mode = False, SessionMode.MANUAL
    auto_customer.save()
    alert_create(customer=auto_customer, text="客户情绪激动，勿催促签约", actor=AGENT, reason="人工预警")
    draft = _draft(
        auto_customer, requires_human=True, confidence=0.1, error="模型超时", reply="", status=DraftStatus.REJECTED
    )
    # when the gate is asked, then each is named, in the gate's order
    assert draft_auto_send_blockers(draft) == [
        "客户不在自动发送白名单",
        "会话模式为「人工」，不是自动",
        "客户有 1 条未处理的预警",
        "模型要求人工处理 (requiresHuman)",
        "置信度 0.10 低于阈值 0.85",
        "草稿生成有错误",
        "草稿内容为空",
        "草稿状态为「已拒绝」",
    ]


def test_auto_send_blockers_judge_the_customer_given(auto_customer):
    # given a draft whose customer, as the caller holds it now, has left the whitelist
    draft = _draft(auto_customer)
    held = Customer.objects.get(pk=auto_customer.pk)
    held.auto_send_whitelisted = False
    # when the gate is asked with that customer, then it judges that one; without, the draft's own
    assert draft_auto_send_blockers(draft, held) == ["客户不在自动发送白名单"]
    assert draft_auto_send_blockers(draft) == []
