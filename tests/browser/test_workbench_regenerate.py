"""One card after regenerate (issue 39 item 2): 重新生成 replaces the failed draft's card instead of
adding one beside it, and a model server's error shows as a Chinese summary, never its JSON."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from conversations.models import Draft, DraftStatus, MessageDirection
from tests.browser.conftest import login
from tests.factories import CustomerFactory, MessageFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ONLINE = {"online": True, "logged_in": True, "subscription": "local", "checked_at": None, "stale": False}
RAW_500 = {"error": {"message": "CUDA out of memory", "type": "server_error", "code": 500}}
ANSWER = {
    "reply": "王先生您好，张江地铁站附近有两套南北通透的两居室，周六上午可以带您看房。",
    "confidence": 0.82,
    "requiresHuman": False,
    "profileUpdates": {},
    "reasons": ["客户预算五千以内，想要南北通透"],
}
SUMMARY = "模型服务返回错误（HTTP 500）：服务器内部错误"


@pytest.fixture
def wang(account):
    now = timezone.now()
    customer = CustomerFactory(conversation_id="wm_wang_001", display_name="王先生", last_message_at=now)
    for index, (direction, text) in enumerate(
        [
            (MessageDirection.INBOUND, "周六可以去看房吗？想看浦东的两居室"),
            (MessageDirection.OUTBOUND, "可以的王先生，周六上午十点在张江地铁站见。"),
            (MessageDirection.INBOUND, "好的，预算五千以内，最好南北通透"),
        ]
    ):
        MessageFactory(
            customer=customer,
            external_id=f"wang-{index}",
            direction=direction,
            sender="王先生" if direction == MessageDirection.INBOUND else "顾问小李",
            text=text,
            sent_at=now - dt.timedelta(minutes=3 - index),
        )
    return customer


@pytest.fixture
def model_server(json_server, settings):
    """An OpenAI-compatible model server that answers 500 until told otherwise."""
    settings.QIWEI_MODEL_CLIENT = "openai"
    settings.QIWEI_OPENAI_BASE_URL = f"{json_server.url}/v1"
    json_server.routes[("POST", "/v1/chat/completions")] = (500, RAW_500)
    return json_server


def _answers(server) -> None:
    content = json.dumps(ANSWER, ensure_ascii=False)
    server.routes[("POST", "/v1/chat/completions")] = (200, {"choices": [{"message": {"content": content}}]})


def _open(page, browser_context, live_server, user):
    login(browser_context, live_server, user)
    page.route("**/api/status*", lambda route: route.fulfill(json=ONLINE))
    page.goto(live_server.url + "/")


def test_workbench_one_card_after_regenerate(page, browser_context, live_server, staff_user, wang, model_server):
    from playwright.sync_api import expect

    # Given the model server answers 500, and the agent clicks 生成草稿 for 王先生
    _open(page, browser_context, live_server, staff_user)
    expect(page.locator("#wb-customer-name")).to_have_text("王先生")
    page.locator("#wb-generate-draft").click()
    failed = page.locator("#wb-drafts li[data-status='failed']")
    expect(failed).to_have_count(1)
    # Then the card says what failed in Chinese — the status and a reason — and no JSON
    expect(failed.locator(".wb-inline-error").first).to_have_text(SUMMARY)
    assert "{" not in page.locator("#wb-drafts").inner_text()
    assert "CUDA" not in page.locator("#wb-drafts").inner_text()

    # When the model server recovers and the agent clicks 重新生成
    _answers(model_server)
    failed.locator("button[data-action=regenerate]").click()

    # Then there is one card for the message: the new draft, ready for review
    cards = page.locator("#wb-drafts li[data-draft]")
    expect(page.locator("#wb-drafts li[data-status='pending']")).to_have_count(1)
    expect(cards).to_have_count(1)
    expect(cards.first).to_contain_text("张江地铁站附近有两套南北通透的两居室")
    expect(page.locator("#wb-drafts button[data-action=regenerate]")).to_have_count(0)
    # And the failed draft is kept, replaced by the new one, not deleted
    old = Draft.objects.get(customer=wang, status=DraftStatus.SUPERSEDED)
    new = Draft.objects.get(customer=wang, status=DraftStatus.PENDING)
    assert old.replaced_by_id == new.pk and old.error == SUMMARY
    assert "CUDA out of memory" in old.context_trace["model"]["error_detail"]

    # And after a reload it is still one card
    page.reload()
    expect(page.locator("#wb-drafts li[data-status='pending']")).to_have_count(1)
    expect(page.locator("#wb-drafts li[data-draft]")).to_have_count(1)


def test_workbench_regenerate_failing_again_keeps_one_card(
    page, browser_context, live_server, staff_user, wang, model_server
):
    from playwright.sync_api import expect

    # Given a failed draft (the model server answers 500)
    _open(page, browser_context, live_server, staff_user)
    page.locator("#wb-generate-draft").click()
    first = page.locator("#wb-drafts li[data-status='failed']")
    expect(first).to_have_count(1)
    first_id = first.get_attribute("data-draft")

    # When 重新生成 fails as well, twice
    for _ in range(2):
        previous = page.locator("#wb-drafts li[data-status='failed']").get_attribute("data-draft")
        page.locator("#wb-drafts button[data-action=regenerate]").click()
        expect(page.locator(f"#wb-drafts li[data-draft='{previous}']")).to_have_count(0)
        expect(page.locator("#wb-drafts li[data-status='failed']")).to_have_count(1)

    # Then one failed card, with one 重新生成, and the two earlier failures kept as replaced
    expect(page.locator("#wb-drafts li[data-draft]")).to_have_count(1)
    expect(page.locator("#wb-drafts button[data-action=regenerate]")).to_have_count(1)
    assert page.locator("#wb-drafts li[data-draft]").get_attribute("data-draft") != first_id
    assert Draft.objects.filter(customer=wang, status=DraftStatus.SUPERSEDED).count() == 2
    assert Draft.objects.filter(customer=wang).count() == 3
