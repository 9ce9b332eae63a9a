"""A generating draft after reload (issue 39 item 2): a draft the model is still working on is a card
with its elapsed time — after a reload too — and turns into the draft in place when the model ends."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from conversations.drafts import draft_generating, draft_generation_stale_after, draft_generation_start
from conversations.models import Draft, DraftStatus, MessageDirection
from sessions_epoch.pipeline import draft_generate
from tests.browser.conftest import login
from tests.factories import CustomerFactory, MessageFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ONLINE = {"online": True, "logged_in": True, "subscription": "local", "checked_at": None, "stale": False}


@pytest.fixture
def wang(account):
    now = timezone.now()
    customer = CustomerFactory(conversation_id="wm_wang_001", display_name="王先生", last_message_at=now)
    MessageFactory(
        customer=customer,
        external_id="wang-0",
        direction=MessageDirection.INBOUND,
        sender="王先生",
        text="张江那套两居室还在吗？周末想去看看",
        sent_at=now - dt.timedelta(minutes=1),
    )
    return customer


def _generating(customer, user, *, started_seconds_ago: float) -> Draft:
    """A draft the agent asked for `started_seconds_ago`, whose turn is still running."""
    draft = draft_generation_start(customer=customer, actor=user, reason="客服生成回复草稿")
    started = timezone.now() - dt.timedelta(seconds=started_seconds_ago)
    Draft.objects.filter(pk=draft.pk).update(created_at=started)
    return draft


def _elapsed_seconds(text: str) -> int:
    match = re.search(r"已用时 (?:(\d+) 分 )?(\d+) 秒", text)
    assert match, text
    return int(match.group(1) or 0) * 60 + int(match.group(2))


def test_workbench_a_generating_draft_after_reload(page, browser_context, live_server, staff_user, wang):
    from playwright.sync_api import expect

    # Given the agent asked for a draft 12 seconds ago and the model is still working
    draft = _generating(wang, staff_user, started_seconds_ago=12)
    login(browser_context, live_server, staff_user)
    page.route("**/api/status*", lambda route: route.fulfill(json=ONLINE))

    # When the page is (re)loaded
    page.goto(live_server.url + "/")
    page.reload()

    # Then the draft is there as 生成中, with its elapsed time counted from when it was asked for
    card = page.locator(f"#wb-drafts li[data-draft='{draft.pk}']")
    expect(card).to_have_attribute("data-status", "generating")
    expect(card.locator(".wb-badge--generating")).to_have_text("生成中")
    elapsed = card.locator(".wb-draft-elapsed")
    expect(elapsed).to_have_text(re.compile(r"已用时 1\d 秒"))
    first = _elapsed_seconds(elapsed.inner_text())
    assert first >= 12
    # and the time runs on while the page is open
    expect(elapsed).not_to_have_text(f"已用时 {first} 秒", timeout=3000)
    assert _elapsed_seconds(elapsed.inner_text()) > first
    # and 生成草稿 waits for it, with nothing to approve or send on the card
    expect(page.locator("#wb-generate-draft")).to_be_disabled()
    expect(page.locator("#wb-generate-draft")).to_have_text("生成中…")
    expect(card.locator("button[data-action=approve], button[data-action=send]")).to_have_count(0)

    # When the model answers (the worker's turn fills the draft)
    with draft_generating(draft=draft):
        draft_generate(customer=wang, actor=staff_user, reason="客服生成回复草稿")

    # Then the same card becomes the draft, without a reload, and 生成草稿 is back
    expect(card).to_have_attribute("data-status", "pending")
    expect(card).to_contain_text("稍后由顾问为您确认")
    expect(page.locator("#wb-drafts li[data-draft]")).to_have_count(1)
    expect(page.locator("#wb-generate-draft")).to_be_enabled()
    expect(page.locator("#wb-generate-draft")).to_have_text("生成草稿")


def test_workbench_an_interrupted_generation_offers_regenerate(page, browser_context, live_server, staff_user, wang):
    from playwright.sync_api import expect

    # Given a draft 生成中 for longer than any turn takes (its worker died)
    stale = draft_generation_stale_after().total_seconds() + 30
    draft = _generating(wang, staff_user, started_seconds_ago=stale)
    login(browser_context, live_server, staff_user)
    page.route("**/api/status*", lambda route: route.fulfill(json=ONLINE))

    # When the agent opens the page
    page.goto(live_server.url + "/")

    # Then the card says it seems interrupted, and offers 重新生成
    card = page.locator(f"#wb-drafts li[data-draft='{draft.pk}']")
    expect(card).to_have_attribute("data-stale", "1")
    expect(card).to_contain_text("生成似乎已中断")
    expect(page.locator("#wb-generate-draft")).to_be_enabled()

    # When the agent clicks it
    card.locator("button[data-action=regenerate]").click()

    # Then one card: the new draft (offline client in tests), the interrupted one replaced
    expect(page.locator("#wb-drafts li[data-status='pending']")).to_have_count(1)
    expect(page.locator("#wb-drafts li[data-draft]")).to_have_count(1)
    draft.refresh_from_db()
    assert draft.status == DraftStatus.SUPERSEDED
