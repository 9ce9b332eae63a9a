"""WeCom 微信客服 as the account's upstream, walked in a real browser (issue 37): a customer writes on
WeCom, the stand-in posts its signed, encrypted callback to the live server, the pull stores the
message under the customer's WeCom nickname, and the agent sees it in the Workbench without a
reload; the agent's approved draft reaches WeCom once; 49 hours later the draft card says why WeCom
will not take a reply (its 48-hour window), and sending is refused with that reason on the page.
The status banner is the account's own WeCom connection, not the shared gateway's."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import caches
from django.utils import timezone

from conversations.gateway import upstream_status_cached
from conversations.models import Customer, Delivery, DeliveryStatus, Draft, DraftStatus, Message, MessageDirection
from conversations.tasks import upstream_status_refresh
from qiwei_site.platform.tenancy import use_account
from tests.browser.conftest import login
from tests.wecom.conftest import OPEN_KFID, connect_to, running_standin
from wecom.standin import WeComStandin

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CUSTOMER = "wmLiNvShi0001"
NICKNAME = "李女士"
FIRST_WORDS = "你好，我想租浦东的两居室，预算六千"
# The offline model client's holding reply, addressed by the customer's name.
OFFLINE_REPLY = "稍后由顾问为您确认具体房源信息"
# The polling Workbench shows what changed on the server within 3 s (test_workbench_live.py).
LIVE_WITHIN_MS = 5000
SCREENSHOT = Path("/tmp/wecom_workbench.png")


@pytest.fixture(autouse=True)
def _fresh_shared_cache() -> Iterator[None]:
    caches["shared"].clear()  # access tokens and statuses of another test's stand-in
    yield
    caches["shared"].clear()


@pytest.fixture
def standin(live_server: Any, account: Any) -> Iterator[WeComStandin]:
    """WeCom's kf API on 127.0.0.1, posting its callbacks to acme's callback URL on the live server."""
    server = running_standin(callback_url=f"{live_server.url}/wecom/{account.id}/callback/")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def connected(account: Any, standin: WeComStandin, settings: Any) -> WeComStandin:
    """acme connected to the stand-in's corp: its replies go through WeCom."""
    connect_to(account.id, standin, settings)
    return standin


def _beat_probes() -> None:
    """What the beat does every 30 s: probe the shared upstream and each WeCom-connected account's."""
    from wecom.tasks import wecom_status_refresh_all

    upstream_status_refresh()
    assert wecom_status_refresh_all() == 1


def _customer_answered_through_wecom(standin: WeComStandin, account: Any, staff_user: Any) -> Customer:
    """李女士 wrote on WeCom (callback → pull) and a draft answering her was sent through WeCom."""
    from conversations.drafts import draft_approve, draft_send
    from sessions_epoch.pipeline import draft_generate

    standin.customer_says(CUSTOMER, FIRST_WORDS, nickname=NICKNAME)
    customer = Customer.objects.get(conversation_id=CUSTOMER)
    draft = draft_generate(customer=customer, actor=staff_user)
    draft_send(draft=draft_approve(draft=draft, actor=staff_user), actor=staff_user)
    assert len(standin.sent) == 1
    return customer


def test_wecom_customer_message_reply_and_48_hour_refusal_in_the_workbench(
    page: Any, browser_context: Any, live_server: Any, staff_user: Any, account: Any, connected: WeComStandin
) -> None:
    from playwright.sync_api import expect

    standin = connected
    started = time.perf_counter()
    # Given the beat has probed the upstreams (what /api/status?fast=true reads): the shared one and
    # acme's WeCom; and the agent has the Workbench open, with no conversation yet
    _beat_probes()
    login(browser_context, live_server, staff_user)
    page.goto(live_server.url + "/")
    expect(page.locator("#wb-status-banner")).to_have_attribute("data-state", "online")
    expect(page.locator("#wb-status-detail")).to_have_text("订阅：企业微信客服")
    page.evaluate("window.__sameDocument = true")

    # When 李女士 writes to the kf account on WeCom (the stand-in posts WeCom's callback at once)
    standin.customer_says(CUSTOMER, FIRST_WORDS, nickname=NICKNAME)

    # Then the callback was taken, and her conversation shows up in the list under her WeCom nickname
    assert standin.callbacks == [(OPEN_KFID, 200, "")]
    entry = page.locator(f".wb-conversation[data-conversation='{CUSTOMER}']")
    expect(entry.locator(".wb-conversation-name")).to_have_text(NICKNAME, timeout=LIVE_WITHIN_MS)
    expect(entry.locator(".wb-conversation-preview")).to_have_text(FIRST_WORDS)
    # and opened, her words are in the thread as the customer's, under 李女士
    entry.click()
    expect(page.locator("#wb-customer-name")).to_have_text(NICKNAME)
    inbound = page.locator("#wb-messages li[data-direction=inbound]")
    expect(inbound).to_have_count(1)
    expect(inbound.locator(".wb-message-text")).to_have_text(FIRST_WORDS)
    expect(inbound.locator(".wb-message-who")).to_contain_text("客户")
    assert page.evaluate("window.__sameDocument") is True, "the page was reloaded"

    # When the agent generates a draft (the offline model client), approves it and sends it
    page.locator("#wb-generate-draft").click()
    card = page.locator("#wb-drafts li[data-status='pending']")
    expect(card).to_have_count(1)
    expect(card.locator(".wb-draft-text")).to_contain_text(OFFLINE_REPLY)
    # inside WeCom's window: nothing on the card says it cannot be sent
    expect(card.locator("[data-send-blocked]")).to_have_count(0)
    draft_id = card.get_attribute("data-draft")
    reply = card.locator(".wb-draft-text").inner_text()
    card.locator("button[data-action=approve]").click()
    sent_card = page.locator(f"#wb-drafts li[data-draft='{draft_id}']")
    expect(sent_card).to_have_attribute("data-status", "approved")
    sent_card.locator("button[data-action=send]").click()
    expect(sent_card).to_have_attribute("data-status", "sent")

    # Then WeCom got exactly that one reply, for her, from the kf account
    assert len(standin.sent) == 1, standin.sent
    delivered = standin.sent[0]
    assert delivered["touser"] == CUSTOMER
    assert delivered["open_kfid"] == OPEN_KFID
    assert delivered["text"] == reply
    # and the reply is in the thread, as the agent's
    outbound = page.locator("#wb-messages li[data-direction=outbound]")
    expect(outbound).to_have_count(1)
    expect(outbound.locator(".wb-message-text")).to_have_text(reply)

    # When 49 hours pass without a word from her (on our clock and on WeCom's)
    with use_account(account.id):
        customer = Customer.objects.get(conversation_id=CUSTOMER)
        long_ago = timezone.now() - dt.timedelta(hours=49)
        moved = Message.objects.filter(customer=customer).update(sent_at=long_ago)
        assert moved == 2  # her message and the reply
    standin.clock_offset = 49 * 3600
    # and the agent asks for a new draft for her: 生成草稿 says her message was answered already and
    # offers 重新生成 beside the message, which the agent clicks
    page.locator("#wb-generate-draft").click()
    expect(page.locator("#wb-error")).to_contain_text("重新生成")
    page.locator("#wb-error button[data-action=regenerate]").click()
    late = page.locator("#wb-drafts li[data-status='pending']")
    expect(late).to_have_count(1)
    late_id = late.get_attribute("data-draft")
    assert late_id != draft_id

    # Then the card says, in Chinese, why it cannot be sent: WeCom's 48-hour window
    blocked = late.locator(f"[data-send-blocked='{late_id}']")
    expect(blocked).to_be_visible()
    expect(blocked).to_contain_text("48 小时")
    expect(blocked).to_contain_text("企业微信不允许再回复")

    # When the agent approves it anyway and clicks 发送
    late.locator("button[data-action=approve]").click()
    late = page.locator(f"#wb-drafts li[data-draft='{late_id}']")
    expect(late).to_have_attribute("data-status", "approved")
    late.locator("button[data-action=send]").click()

    # Then sending is refused, with the reason shown to the agent on the card and in the error line
    error = late.locator(f"[data-draft-error='{late_id}']")
    expect(error).to_be_visible()
    expect(error).to_contain_text("48 小时")
    expect(page.locator("#wb-error")).to_contain_text("48 小时")
    expect(late).to_have_attribute("data-status", "approved")
    expect(late.locator(f"[data-send-blocked='{late_id}']")).to_contain_text("48 小时")
    # and nothing more reached WeCom, nothing was queued, the thread still has the one reply
    assert len(standin.sent) == 1, standin.sent
    with use_account(account.id):
        assert Draft.objects.get(pk=int(late_id)).status == DraftStatus.APPROVED
        assert not Delivery.objects.filter(draft_id=int(late_id)).exists()
        assert Delivery.objects.get(draft_id=int(draft_id)).status == DeliveryStatus.SENT
        assert Message.objects.filter(customer=customer, direction=MessageDirection.OUTBOUND).count() == 1
    expect(page.locator("#wb-messages li[data-direction=outbound]")).to_have_count(1)
    assert page.evaluate("window.__sameDocument") is True, "the page was reloaded"

    page.screenshot(path=str(SCREENSHOT), full_page=True)
    print(f"WeCom → Workbench → WeCom walked in {time.perf_counter() - started:.1f} s")


def test_wecom_workbench_offers_the_regenerate_its_refusal_names(
    page: Any, browser_context: Any, live_server: Any, staff_user: Any, account: Any, connected: WeComStandin
) -> None:
    from playwright.sync_api import expect

    # Given 李女士's message on WeCom was answered by a sent draft
    _customer_answered_through_wecom(connected, account, staff_user)
    _beat_probes()
    login(browser_context, live_server, staff_user)
    page.goto(live_server.url + "/")
    expect(page.locator("#wb-customer-name")).to_have_text(NICKNAME)
    expect(page.locator("#wb-drafts li[data-status='sent']")).to_have_count(1)

    # When the agent clicks 生成草稿 for a follow-up
    page.locator("#wb-generate-draft").click()

    # Then the refusal tells them to click 重新生成, and the page has one to click
    expect(page.locator("#wb-error")).to_contain_text("请点“重新生成”")
    expect(page.locator("#wb-error button[data-action=regenerate]")).to_have_count(1, timeout=2000)

    # And clicking it drafts a new reply for her, pending review
    page.locator("#wb-error button[data-action=regenerate]").click()
    expect(page.locator("#wb-drafts li[data-status='pending']")).to_have_count(1)
    expect(page.locator("#wb-error")).to_be_hidden()


def test_wecom_workbench_banner_shows_the_accounts_wecom_status(
    page: Any, browser_context: Any, live_server: Any, staff_user: Any, account: Any, connected: WeComStandin
) -> None:
    from playwright.sync_api import expect

    # Given acme's WeCom cannot be reached (the shared loopback upstream is fine), and the beat has
    # probed every upstream
    connected.stop()
    _beat_probes()
    wecom_status = upstream_status_cached(account.id)
    assert wecom_status is not None and wecom_status.online is False

    # When the agent opens the Workbench
    login(browser_context, live_server, staff_user)
    page.goto(live_server.url + "/")

    # Then the banner says acme's WeCom is down (not the shared gateway's 企微连接正常), and sending is off
    expect(page.locator("#wb-status-banner")).to_have_attribute("data-state", "offline")
    expect(page.locator("#wb-status-title")).to_contain_text("企业微信客服")
    expect(page.locator("#wb-send-reason")).to_be_visible()
    expect(page.locator("#wb-send-reason")).to_contain_text("暂时无法发送")
