"""The agent's last reply in the prompt (issue 39, item 1), in a real browser: when the agent answered
the customer's latest message before a draft was made, the draft's prompt dialog shows that reply in
the recent conversation, the answered message still as the latest one with the note that it was
already replied to, and the draft itself says it will not be sent automatically."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from conversations.models import Customer, MessageDirection
from conversations.selectors import draft_prompt_view
from memory.context.builder import ALREADY_ANSWERED_NOTE
from sessions_epoch.clients import OfflineClient
from sessions_epoch.pipeline import ALREADY_ANSWERED_REASON, draft_generate
from tests.browser.conftest import login
from tests.factories import CustomerFactory, MessageFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ONLINE = {"online": True, "logged_in": True, "subscription": "local", "checked_at": None, "stale": False}
AGENT_REPLY = "好的小张，五千左右望京的一居室有三套，这周六上午可以带您看。"


@pytest.fixture
def zhang(account) -> Customer:
    """张先生 asked to be called 小张; the agent answered him from the WeCom app before any draft."""
    now = timezone.now()
    customer = CustomerFactory(conversation_id="wm_zhang_039", display_name="张先生", last_message_at=now)
    lines = [
        (MessageDirection.INBOUND, "你好，我想在望京租个一居室"),
        (MessageDirection.OUTBOUND, "张先生您好，请问预算大概多少？"),
        (MessageDirection.INBOUND, "叫我小张就行，预算五千左右"),
        (MessageDirection.OUTBOUND, AGENT_REPLY),
    ]
    for index, (direction, text) in enumerate(lines):
        MessageFactory(
            customer=customer,
            external_id=f"wm_zhang_039-{index}",
            direction=direction,
            sender="张先生" if direction == MessageDirection.INBOUND else "顾问小李",
            text=text,
            sent_at=now - dt.timedelta(minutes=len(lines) - index),
        )
    return customer


def _open(page: Any, browser_context: Any, live_server: Any, user: Any) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    login(browser_context, live_server, user)
    page.route("**/api/status*", lambda route: route.fulfill(json=ONLINE))
    from playwright.sync_api import expect

    page.goto(live_server.url + "/")
    expect(page.locator("#wb-customer-name")).to_have_text("张先生")
    return errors


def test_workbench_prompt_view_shows_the_agents_last_reply_in_the_prompt(
    page, browser_context, live_server, staff_user, zhang
):
    # given a draft made after the agent had already answered 张先生's latest message
    draft = draft_generate(customer=zhang, actor="pipeline", client=OfflineClient())
    reply_id = draft.context_trace["answered_by_message_ids"][0]
    view = draft_prompt_view(draft)
    errors = _open(page, browser_context, live_server, staff_user)
    from playwright.sync_api import expect

    # then the draft says it was already answered and will not be sent by itself
    item = page.locator(f"#wb-drafts li[data-draft='{draft.pk}']")
    expect(item).to_contain_text(ALREADY_ANSWERED_REASON)
    # when the agent opens its prompt
    item.get_by_role("button", name="查看提示词").click()
    dialog = page.get_by_role("dialog", name=f"模型收到的提示词 · 草稿 #{draft.pk}")
    expect(dialog).to_be_visible()
    # then the recent conversation ends with the agent's reply, after the earlier turns
    recent = dialog.locator("section[data-section='recent_conversation'] pre")
    expect(recent).to_contain_text(AGENT_REPLY)
    recent_text = recent.text_content() or ""
    assert recent_text.index("请问预算大概多少") < recent_text.index(AGENT_REPLY)
    assert "叫我小张就行" not in recent_text
    # and the reply can be shown in the thread from there
    expect(dialog.locator(f"button[data-ref=message][data-id='{reply_id}']")).to_be_visible()
    # and the latest customer message is still the one answered, with the note that it was replied to
    latest = dialog.locator("section[data-section='latest_message'] pre")
    expect(latest).to_contain_text("叫我小张就行，预算五千左右")
    expect(latest).to_contain_text(ALREADY_ANSWERED_NOTE)
    assert AGENT_REPLY not in (latest.text_content() or "")
    # and each section shown is exactly its part of the prompt the model received
    for section, text in view.section_texts():
        if text:
            assert dialog.locator(f"section[data-section='{section.key}'] pre").text_content() == text
    assert errors == []
