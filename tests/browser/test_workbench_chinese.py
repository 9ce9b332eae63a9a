"""The Workbench names things in Chinese (issue 24, item 2): every label, button, banner, panel
heading, placeholder and tooltip an agent sees on a customer with messages, memory, drafts and
business state, with no English word outside the allowed terms and the customer's own data."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from conversations.models import AlertKind, AlertLevel, DraftStatus, MessageDirection
from conversations.services import alert_raise
from memory.models import MemoryType
from memory.snapshots import snapshot_refresh
from tests.browser.conftest import login
from tests.factories import CustomerFactory, DraftFactory, MemoryItemFactory, MessageFactory, TaskFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ONLINE = {"online": True, "logged_in": True, "subscription": "local", "checked_at": None, "stale": False}
# Proper names and formats an agent reads as they are, and what the model banner asks an operator
# to type into .env (a setting's name and its values).
ALLOWED = {"ID", "API", "JSON", "WeCom", "Claude", "Code", "OpenAI", "AI"}
ALLOWED |= {"env", "QIWEI_MODEL_CLIENT", "claude_code", "claude", "openai"}
WORD = re.compile(r"[A-Za-z][A-Za-z_]+")
VISIBLE = """() => {
  const texts = [document.title, document.body.innerText];
  for (const el of document.querySelectorAll('[placeholder], [title], [aria-label]')) {
    if (el.offsetParent === null && el.tagName !== 'BODY') continue;
    for (const name of ['placeholder', 'title', 'aria-label']) {
      if (el.getAttribute(name)) texts.push(el.getAttribute(name));
    }
  }
  return texts.join('\\n');
}"""


@pytest.fixture
def busy_customer(account, staff_user):
    """王先生: a conversation, memory, a snapshot, a pending and a failed draft, a task and an alert."""
    now = timezone.now()
    customer = CustomerFactory(conversation_id="wm_wang_cn", display_name="王先生", last_message_at=now)
    lines = [
        (MessageDirection.INBOUND, "周六可以去看房吗？想看浦东的两居室"),
        (MessageDirection.OUTBOUND, "可以的王先生，周六上午十点在张江地铁站见。"),
        (MessageDirection.INBOUND, "好的，预算五千以内，最好南北通透"),
    ]
    for index, (direction, text) in enumerate(lines):
        MessageFactory(
            customer=customer,
            external_id=f"wm_wang_cn-{index}",
            direction=direction,
            sender="王先生" if direction == MessageDirection.INBOUND else "顾问小李",
            text=text,
            sent_at=now - dt.timedelta(minutes=len(lines) - index),
        )
    MemoryItemFactory(
        customer=customer, type=MemoryType.PREFERENCE, key="preference:南北通透", content="偏好：南北通透"
    )
    MemoryItemFactory(customer=customer, type=MemoryType.HYPOTHESIS, key="hypothesis:张江", content="可能在张江上班")
    snapshot_refresh(customer=customer, reason="浏览器测试")
    DraftFactory(customer=customer, reply="王先生您好，浦东有两套南北通透的两居室。", status=DraftStatus.PENDING)
    DraftFactory(customer=customer, reply="", status=DraftStatus.FAILED, error="模型调用失败：连接被拒绝")
    TaskFactory(customer=customer, title="周六带看浦东两居室")
    alert_raise(
        customer=customer,
        kind=AlertKind.MESSAGE_BLOCKED,
        level=AlertLevel.WARNING,
        text="客户消息被安全扫描拦截（提示注入），未写入记忆，请人工查看",
        actor=staff_user,
        reason="浏览器测试",
    )
    return customer


def test_workbench_names_everything_in_chinese(page, browser_context, live_server, staff_user, busy_customer):
    # given an agent opening the Workbench on a customer with everything an agent sees
    login(browser_context, live_server, staff_user)
    page.route("**/api/status*", lambda route: route.fulfill(json=ONLINE))
    from playwright.sync_api import expect

    page.goto(live_server.url + "/")
    expect(page.locator("#wb-customer-name")).to_have_text("王先生")
    expect(page.locator("#wb-drafts")).to_contain_text("两套南北通透")
    page.wait_for_load_state("networkidle")
    # when every visible text, placeholder and tooltip is read
    text = page.evaluate(VISIBLE)
    # then no English word is left outside the allowed terms and the data (user name, conversation id)
    data_words = set(WORD.findall(f"{staff_user.username} {busy_customer.conversation_id} acme"))
    english = sorted({word for word in WORD.findall(text)} - ALLOWED - data_words)
    assert english == [], (english, [line for line in text.splitlines() if any(w in line for w in english)])
    assert "生成草稿" in text and "王先生" in text
