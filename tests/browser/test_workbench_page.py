"""The Workbench page in a real browser: offline-first start-up and the draft review flow (spec §9)."""

from __future__ import annotations

import datetime as dt
import json
import time

import pytest
from django.core.cache import cache
from django.utils import timezone

from conversations.models import Delivery, Draft, DraftStatus, MessageDirection
from memory.models import MemoryType
from memory.snapshots import snapshot_refresh
from qiwei_site.platform import tenancy
from qiwei_site.platform.services import membership_grant
from tests.browser.conftest import login
from tests.factories import CustomerFactory, DraftFactory, MemoryItemFactory, MessageFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ONLINE = {"online": True, "logged_in": True, "subscription": "local", "checked_at": None, "stale": False}


def _seed_customer(conversation_id: str, name: str, lines: list[tuple[str, str]]) -> object:
    now = timezone.now()
    customer = CustomerFactory(conversation_id=conversation_id, display_name=name, last_message_at=now)
    for index, (direction, text) in enumerate(lines):
        MessageFactory(
            customer=customer,
            external_id=f"{conversation_id}-{index}",
            direction=direction,
            sender=name if direction == MessageDirection.INBOUND else "顾问小李",
            text=text,
            sent_at=now - dt.timedelta(minutes=len(lines) - index),
        )
    return customer


@pytest.fixture
def globex_customer(staff_user, other_account):
    """The supervisor works for acme and globex; globex's 刘女士 wants a flat near the metro."""
    membership_grant(user=staff_user, account=other_account)
    with tenancy.use_account(other_account.id):
        customer = _seed_customer(
            "wm_liu_001",
            "刘女士",
            [
                (MessageDirection.INBOUND, "你好，我想租地铁2号线附近的两居室"),
                (MessageDirection.OUTBOUND, "刘女士您好，请问预算大概多少？"),
                (MessageDirection.INBOUND, "六千以内，不考虑顶楼"),
            ],
        )
        MemoryItemFactory(customer=customer, type=MemoryType.CONSTRAINT, key="constraint:顶楼", content="不考虑顶楼")
        snapshot_refresh(customer=customer, reason="浏览器测试")
        DraftFactory(customer=customer, reply="刘女士您好，2号线旁有两套低楼层两居室。", status=DraftStatus.APPROVED)
    return customer


@pytest.fixture
def acme_customer(account, staff_user):
    customer = _seed_customer(
        "wm_wang_001",
        "王先生",
        [
            (MessageDirection.INBOUND, "周六可以去看房吗？想看浦东的两居室"),
            (MessageDirection.OUTBOUND, "可以的王先生，周六上午十点在张江地铁站见。"),
            (MessageDirection.INBOUND, "好的，预算五千以内，最好南北通透"),
        ],
    )
    return customer


def test_workbench_shows_local_data_while_status_hangs(page, browser_context, live_server, staff_user, globex_customer):
    # given the origin's localStorage binds globex, and /api/status never answers
    login(browser_context, live_server, staff_user)
    browser_context.add_init_script("window.localStorage.setItem('qiwei.account', 'globex');")
    hanging: list = []
    page.route("**/api/status*", lambda route: hanging.append(route))  # never fulfilled
    from playwright.sync_api import expect

    # when the page opens
    started = time.perf_counter()
    page.goto(live_server.url + "/", wait_until="domcontentloaded")
    # then globex's customer, a message and the snapshot show within 1 s, before any status answer
    expect(page.locator("#wb-customer-name")).to_have_text("刘女士", timeout=1000)
    expect(page.locator("#wb-messages")).to_contain_text("不考虑顶楼", timeout=1000)
    expect(page.locator("#wb-snapshot")).to_contain_text("不考虑顶楼", timeout=1000)
    print(f"local data visible after {1000 * (time.perf_counter() - started):.0f} ms with /api/status hanging")
    assert page.locator("#wb-account-select").input_value() == "globex"
    assert hanging and "fast=true" in hanging[0].request.url
    assert page.locator("#wb-messages li[data-direction=inbound]").count() == 2
    assert page.locator("#wb-messages li[data-direction=outbound]").count() == 1

    # and sending stays disabled with a visible reason, also once the 2.5 s cap gives up
    send = page.locator("button[data-action=send]")
    expect(send).to_be_disabled()
    expect(page.locator("#wb-status-title")).to_contain_text("状态检查超时", timeout=6000)
    expect(send).to_be_disabled()
    assert "暂时无法发送" in (send.get_attribute("title") or "")
    reason = page.locator("#wb-send-reason")
    expect(reason).to_be_visible()
    expect(reason).to_contain_text("草稿、记忆和审计可正常使用")
    # local work is not blocked: the draft generator is available
    expect(page.locator("#wb-generate-draft")).to_be_enabled()
    for route in hanging:  # let the browser close cleanly
        route.abort()


def test_workbench_upstream_offline_disables_only_sending(
    page, browser_context, live_server, staff_user, globex_customer
):
    # given the upstream reports it is unreachable
    login(browser_context, live_server, staff_user)
    browser_context.add_init_script("window.localStorage.setItem('qiwei.account', 'globex');")
    offline = {**ONLINE, "online": False, "logged_in": None, "detail": "上游网关无响应"}
    page.route("**/api/status*", lambda route: route.fulfill(json=offline))
    from playwright.sync_api import expect

    # when the page opens
    page.goto(live_server.url + "/")
    # then the banner names the reason, send is disabled, and the local data is all there
    expect(page.locator("#wb-status-banner")).to_have_attribute("data-state", "offline")
    expect(page.locator("#wb-status-title")).to_contain_text("上游网关无响应")
    expect(page.locator("button[data-action=send]")).to_be_disabled()
    expect(page.locator("#wb-snapshot")).to_contain_text("不考虑顶楼")
    expect(page.locator("#wb-drafts")).to_contain_text("2号线旁")


def test_workbench_switching_account_is_remembered_per_origin(
    page, browser_context, live_server, staff_user, acme_customer, globex_customer
):
    # given the supervisor opens the page with no binding yet
    login(browser_context, live_server, staff_user)
    page.route("**/api/status*", lambda route: route.fulfill(json=ONLINE))
    from playwright.sync_api import expect

    page.goto(live_server.url + "/")
    expect(page.locator("#wb-customer-name")).to_have_text("王先生")
    # when they pick globex
    page.select_option("#wb-account-select", "globex")
    # then globex's conversation loads, and the binding survives a reload
    expect(page.locator("#wb-customer-name")).to_have_text("刘女士")
    assert page.evaluate("window.localStorage.getItem('qiwei.account')") == "globex"
    assert json.loads(page.evaluate("window.localStorage.getItem('qiwei.accounts')"))[0]["id"] == "acme"
    page.reload()
    expect(page.locator("#wb-customer-name")).to_have_text("刘女士")


def test_workbench_draft_is_approved_edited_and_sent_once(
    page, browser_context, live_server, staff_user, acme_customer
):
    # given two pending drafts for 王先生 and an online upstream
    first = DraftFactory(customer=acme_customer, reply="王先生您好，周六上午十点见。", status=DraftStatus.PENDING)
    second = DraftFactory(customer=acme_customer, reply="王先生您好，张江有一套两居室。", status=DraftStatus.PENDING)
    login(browser_context, live_server, staff_user)
    page.route("**/api/status*", lambda route: route.fulfill(json=ONLINE))
    from playwright.sync_api import expect

    page.goto(live_server.url + "/")
    expect(page.locator("#wb-status-banner")).to_have_attribute("data-state", "online")

    # when the first is approved as it is
    first_item = page.locator(f"li[data-draft='{first.pk}']")
    first_item.locator("button[data-action=approve]").click()
    expect(first_item).to_have_attribute("data-status", "approved")

    # and the second is edited, approved with the new text and sent
    edited = "王先生您好，张江地铁站旁有一套南北通透的两居室，月租4800元，周六可以看房。"
    second_item = page.locator(f"li[data-draft='{second.pk}']")
    second_item.locator("button[data-action=edit]").click()
    second_item.locator("textarea").fill(edited)
    second_item.locator("button[data-action=approve-edited]").click()
    expect(second_item).to_have_attribute("data-status", "approved")
    expect(second_item.locator(".wb-draft-text")).to_have_text(edited)
    send = second_item.locator("button[data-action=send]")
    expect(send).to_be_enabled()
    send.click()
    expect(second_item).to_have_attribute("data-status", "sent")

    # and the page sends it twice more, at once
    statuses = page.evaluate(
        """async (id) => {
            const token = document.cookie.match(/csrftoken=([^;]+)/)[1];
            const send = () => fetch(`/api/accounts/acme/drafts/${id}/send/`, {
                method: "POST", credentials: "same-origin",
                headers: {"X-CSRFToken": token, "Content-Type": "application/json"}, body: "{}"});
            const responses = await Promise.all([send(), send()]);
            return responses.map((r) => r.status);
        }""",
        second.pk,
    )

    # then there is exactly one delivery, with the edited text
    assert all(code < 300 for code in statuses), statuses
    deliveries = list(Delivery.objects.filter(draft_id=second.pk))
    assert len(deliveries) == 1
    assert deliveries[0].text == edited
    assert Draft.objects.get(pk=second.pk).status == DraftStatus.SENT
    assert Draft.objects.get(pk=first.pk).status == DraftStatus.APPROVED
    assert not Delivery.objects.filter(draft_id=first.pk).exists()


def test_workbench_shows_markup_in_messages_as_text(page, browser_context, live_server, staff_user, account):
    # given a customer whose name and message look like HTML
    _seed_customer(
        "wm_markup_001",
        "<img src=x onerror=window.pwned=1>",
        [(MessageDirection.INBOUND, "<b>加粗</b><script>window.pwned=2</script> 想看两居室")],
    )
    login(browser_context, live_server, staff_user)
    page.route("**/api/status*", lambda route: route.fulfill(json=ONLINE))
    from playwright.sync_api import expect

    # when the page shows the conversation
    page.goto(live_server.url + "/")
    expect(page.locator("#wb-messages")).to_contain_text("<b>加粗</b>")
    # then it is text, never markup
    expect(page.locator("#wb-customer-name")).to_have_text("<img src=x onerror=window.pwned=1>")
    assert page.locator("#wb-messages b, #wb-messages script, .wb-conversation img").count() == 0
    assert page.evaluate("window.pwned === undefined")


def test_workbench_failed_draft_offers_regenerate_not_approve(
    page, browser_context, live_server, staff_user, acme_customer
):
    # Given a draft whose generation failed (the model CLI was not installed)
    failed = DraftFactory(
        customer=acme_customer,
        reply="",
        status=DraftStatus.FAILED,
        error="未找到 Claude Code 命令行工具，没有连接模型",
        requires_human=True,
    )
    login(browser_context, live_server, staff_user)
    page.route("**/api/status*", lambda route: route.fulfill(json=ONLINE))
    from playwright.sync_api import expect

    page.goto(live_server.url + "/")
    item = page.locator(f"li[data-draft='{failed.pk}']")
    # Then it says it failed and why, offers 重新生成, and nothing to approve
    expect(item).to_have_attribute("data-status", "failed")
    expect(item.locator(".wb-badge--failed")).to_have_text("生成失败")
    expect(item.locator(".wb-inline-error").first).to_contain_text("未找到 Claude Code")
    expect(item.locator("button[data-action=approve]")).to_have_count(0)
    # When the agent regenerates
    item.locator("button[data-action=regenerate]").click()
    # Then a new draft is made for the same message (the offline client in tests)
    expect(page.locator("li[data-status='pending']")).to_have_count(1)
    assert Draft.objects.filter(customer=acme_customer, status=DraftStatus.PENDING).count() == 1


@pytest.mark.parametrize(
    ("client", "title"),
    [("offline", "未连接模型（离线模式）"), ("claude_code", "找不到 Claude Code 命令行工具")],
)
def test_workbench_model_banner_says_when_no_model_is_connected(
    page, browser_context, live_server, staff_user, acme_customer, settings, client, title
):
    # Given a model client that is not connected
    cache.delete("qiwei:model-health")
    settings.QIWEI_MODEL_CLIENT = client
    settings.CLAUDE_CODE_BIN = "/nonexistent/claude"
    login(browser_context, live_server, staff_user)
    page.route("**/api/status*", lambda route: route.fulfill(json=ONLINE))
    from playwright.sync_api import expect

    # When the agent opens the Workbench
    page.goto(live_server.url + "/")
    # Then a banner says no model is connected, and what to do
    banner = page.locator("#wb-model-banner")
    expect(banner).to_be_visible()
    expect(page.locator("#wb-model-title")).to_contain_text(title)
    expect(page.locator("#wb-model-action")).not_to_be_empty()


def test_workbench_model_banner_stays_hidden_when_a_model_answers(
    page, browser_context, live_server, staff_user, acme_customer, settings, json_server
):
    # Given an OpenAI-compatible server that answers its models
    cache.delete("qiwei:model-health")
    json_server.routes[("GET", "/v1/models")] = (200, {"data": [{"id": "qwen2.5-7b-instruct"}]})
    settings.QIWEI_MODEL_CLIENT = "openai"
    settings.QIWEI_OPENAI_BASE_URL = json_server.url + "/v1"
    login(browser_context, live_server, staff_user)
    page.route("**/api/status*", lambda route: route.fulfill(json=ONLINE))
    from playwright.sync_api import expect

    page.goto(live_server.url + "/")
    # Then the model is connected and no banner shows
    expect(page.locator("#wb-model-banner")).to_have_attribute("data-state", "ok")
    expect(page.locator("#wb-model-banner")).to_be_hidden()
