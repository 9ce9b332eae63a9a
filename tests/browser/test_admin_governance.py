"""A supervisor curates memory in Django admin with a real browser (DESIGN §7): switch account,
confirm a hypothesis, reject an item, forget one, then read the history and the new snapshot."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from conversations.models import AuditEvent, MessageDirection
from memory.models import MemoryItem, MemorySnapshot, MemoryStatus, MemoryType
from memory.snapshots import snapshot_current, snapshot_refresh
from qiwei_site.platform.services import membership_grant
from tests.browser.conftest import login
from tests.factories import CustomerFactory, MemoryItemFactory, MessageFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHANGELIST = "/admin/memory/memoryitem/"


@pytest.fixture
def curated_customer(account, other_account, staff_user):
    """王先生 in acme with a hypothesis, a wrong preference and a phone number to forget."""
    membership_grant(user=staff_user, account=other_account)
    customer = CustomerFactory(conversation_id="wm_wang_admin", display_name="王先生")
    message = MessageFactory(
        customer=customer,
        direction=MessageDirection.INBOUND,
        text="孩子明年上小学，想找学区附近的两居室，我电话是13812345678",
    )
    hypothesis = MemoryItemFactory(
        customer=customer,
        type=MemoryType.HYPOTHESIS,
        key="hypothesis:学区",
        content="可能在为孩子上学找学区房",
        confidence=0.6,
        source_message_ids=[message.pk],
    )
    wrong = MemoryItemFactory(
        customer=customer, type=MemoryType.PREFERENCE, key="preference:顶楼", content="喜欢顶楼", confidence=0.7
    )
    secret = MemoryItemFactory(
        customer=customer, type=MemoryType.FACT, key="fact:电话", content="手机号 13812345678", confidence=0.9
    )
    snapshot_refresh(customer=customer, reason="浏览器测试初始化")
    return customer, hypothesis, wrong, secret


def _run_action(page, item_pk: int, action: str, reason: str) -> None:
    page.goto(page.url.split("/admin/")[0] + CHANGELIST)
    page.locator(f"input.action-select[value='{item_pk}']").check()
    page.select_option("select[name=action]", action)
    reason_field = page.locator("#changelist-form input[name=reason], #changelist-form textarea[name=reason]")
    if reason_field.count():
        reason_field.first.fill(reason)
    page.locator("#changelist-form button[name=index]").click()


def test_admin_supervisor_confirms_rejects_and_forgets(
    page, browser_context, live_server, staff_user, curated_customer
):
    customer, hypothesis, wrong, secret = curated_customer
    first_version = snapshot_current(customer).version
    login(browser_context, live_server, staff_user)
    from playwright.sync_api import expect

    # given the supervisor is on globex, then switches to acme with the header switcher
    page.goto(live_server.url + "/admin/")
    page.select_option("#qiwei-account-select", "globex")
    expect(page.locator("#qiwei-account-select")).to_have_value("globex")
    page.select_option("#qiwei-account-select", "acme")
    expect(page.locator("#qiwei-account-select")).to_have_value("acme")
    expect(page.locator("body")).to_contain_text("已切换到账号 acme")

    # when they confirm the hypothesis, on the page that asks for the fact's wording (issue 39, item 3),
    # pre-filled without the guess's hedge
    _run_action(page, hypothesis.pk, "confirm_selected", "客户电话里确认了学区需求")
    wording = page.locator("textarea.qiwei-wording")
    expect(wording).to_have_value("在为孩子上学找学区房")
    if not page.locator("#id_reason").input_value():
        page.locator("#id_reason").fill("客户电话里确认了学区需求")
    page.locator("form input[type=submit]").first.click()
    expect(page.locator("ul.messagelist")).to_be_visible()
    # and reject the wrong preference
    _run_action(page, wrong.pk, "reject_selected", "客户说的是不要顶楼，提取错了")
    expect(page.locator("ul.messagelist")).to_be_visible()
    # and forget the phone number, through the confirmation page
    _run_action(page, secret.pk, "forget_selected", "客户要求删除手机号")
    confirm = page.locator("form input[type=submit], form button[type=submit]").filter(
        has_text=re.compile("确定|确认|是的")
    )
    confirm.first.click()
    expect(page.locator("ul.messagelist")).to_be_visible()

    # then the database holds the curated state
    hypothesis.refresh_from_db()
    wrong.refresh_from_db()
    assert hypothesis.type == MemoryType.FACT
    assert hypothesis.confidence == 1.0
    assert hypothesis.content == "在为孩子上学找学区房"
    assert wrong.status == MemoryStatus.REJECTED
    assert not MemoryItem.objects.filter(pk=secret.pk).exists()

    # and each item's history names the supervisor; the forgotten one has no history left
    for item in (hypothesis, wrong):
        page.goto(f"{live_server.url}{CHANGELIST}{item.pk}/history/")
        expect(page.locator("#content")).to_contain_text(staff_user.username)
    assert not MemoryItem.history.filter(id=secret.pk).exists()
    page.goto(live_server.url + reverse("admin:conversations_auditevent_changelist"))
    # the audit list shows the action by its Chinese label (AuditAction, issue 16)
    expect(page.locator("#result_list")).to_contain_text("遗忘记忆")
    assert AuditEvent.objects.filter(action="memory_item_forgotten", actor_id=staff_user.pk).exists()

    # and the snapshot moved on: the admin lists the new version, without the forgotten number
    latest = snapshot_current(customer)
    assert latest.version > first_version
    assert "13812345678" not in latest.content
    assert "学区" in latest.content
    page.goto(live_server.url + reverse("admin:memory_memorysnapshot_changelist"))
    versions = page.locator("#result_list td.field-version").all_inner_texts()
    assert str(latest.version) in [text.strip() for text in versions]
    assert not any("13812345678" in s.content for s in MemorySnapshot.objects.filter(customer=customer))
