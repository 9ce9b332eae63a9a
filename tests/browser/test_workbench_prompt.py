"""A draft's exact prompt in the Workbench (issue 12, item 6), in a real browser: 查看提示词 on a draft
made by the reply pipeline opens the prompt as the model received it, split into its sections with
their characters, budgets and what was trimmed, and links to each memory item and message in it;
and the core-memory snapshot beside it reads as headings and lists, never as HTML (item 8)."""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode

import pytest
from django.utils import timezone

from conversations.business import task_create
from conversations.models import Customer, Draft, MessageDirection
from conversations.selectors import draft_prompt_view
from memory.governance.services import memory_item_add
from memory.models import MemoryType
from sessions_epoch.clients import OfflineClient
from sessions_epoch.pipeline import draft_generate
from tests.browser.conftest import login
from tests.factories import CustomerFactory, DraftFactory, MessageFactory


def admin_link(page: str, account_id: str = "acme") -> str:
    """A Workbench admin link opens the row through the admin's account chooser (ids are per account)."""
    return f"/admin/account/open/?{urlencode({'account_id': account_id, 'next': page})}"


pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ONLINE = {"online": True, "logged_in": True, "subscription": "local", "checked_at": None, "stale": False}


def _conversation(conversation_id: str, name: str, lines: list[tuple[str, str]]) -> Customer:
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
def wang(account, staff_user) -> Customer:
    """王先生 wants a two-bedroom near line 2 for at most 6000 a month, never on the top floor; a
    viewing is planned."""
    customer = _conversation(
        "wm_wang_001",
        "王先生",
        [
            (MessageDirection.INBOUND, "你好，我想租地铁2号线附近的两居室"),
            (MessageDirection.OUTBOUND, "王先生您好，请问预算大概多少？"),
            (MessageDirection.INBOUND, "六千以内，不考虑顶楼，周六上午可以看房吗？"),
        ],
    )
    memory_item_add(customer=customer, content="预算月租六千以内", actor=staff_user, reason="客户在对话中说明")
    memory_item_add(
        customer=customer,
        content="不考虑顶楼",
        type=MemoryType.CONSTRAINT,
        key="constraint:top_floor",
        actor=staff_user,
        reason="客户在对话中说明",
    )
    task_create(customer=customer, title="周六上午带看2号线两居室", actor=staff_user)
    return customer


def _open(page: Any, browser_context: Any, live_server: Any, user: Any, name: str) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    login(browser_context, live_server, user)
    page.route("**/api/status*", lambda route: route.fulfill(json=ONLINE))
    from playwright.sync_api import expect

    page.goto(live_server.url + "/")
    expect(page.locator("#wb-customer-name")).to_have_text(name)
    return errors


def _budget_text(section: Any) -> str:
    return "不设上限" if section.budget is None else f"预算 {section.budget} 字"


def test_workbench_prompt_view_shows_sections_of_a_draft_generated_from_the_page(
    page, browser_context, live_server, staff_user, wang
):
    # given the agent has 王先生 open and asks the pipeline for a draft (offline client, through the API)
    errors = _open(page, browser_context, live_server, staff_user, "王先生")
    from playwright.sync_api import expect

    page.locator("#wb-generate-draft").click()
    draft_item = page.locator("#wb-drafts li[data-draft]").first
    expect(draft_item).to_contain_text("您的需求我们已经收到")
    draft = Draft.objects.get(customer=wang)
    view = draft_prompt_view(draft)
    assert view.available and len(view.sections) >= 4

    # when they open its prompt
    draft_item.get_by_role("button", name="查看提示词").click()
    dialog = page.get_by_role("dialog", name=f"模型收到的提示词 · 草稿 #{draft.pk}")
    expect(dialog).to_be_visible()
    # then every section is listed with its characters, its budget and whether it was trimmed
    rows = dialog.locator(".wb-prompt-table tbody tr")
    expect(rows).to_have_count(len(view.sections))
    for section in view.sections:
        row = dialog.locator(f".wb-prompt-table tr[data-section='{section.key}']")
        expect(row.locator("th")).to_have_text(section.title)
        expect(row.locator("[data-cell=chars]")).to_have_text(str(section.chars))
        expect(row.locator("[data-cell=budget]")).to_contain_text(_budget_text(section))
        expect(row.locator("[data-cell=trimmed]")).to_contain_text("已截断" if section.trimmed else "未截断")
    # and each section is headed by its Chinese title alone, never by its code (issue 39, item 4)
    for section in view.sections:
        heading = dialog.locator(f"h3.wb-prompt-section-title[data-section='{section.key}']")
        expect(heading).to_have_text(section.title)
    assert "core_memory" not in dialog.inner_text() and "recent_conversation" not in dialog.inner_text()
    # and each section's text is exactly its part of the prompt the model received
    for section, text in view.section_texts():
        if text:
            assert dialog.locator(f"section[data-section='{section.key}'] pre").text_content() == text
    core = dialog.locator("section[data-section='core_memory']")
    expect(core.locator("pre")).to_contain_text("不考虑顶楼")
    expect(dialog.locator("[data-prompt-chars]")).to_have_text(f"共 {view.prompt_chars} 字")
    # and the shared conversation budget says it is shared
    recent = dialog.locator(".wb-prompt-table tr[data-section='recent_conversation'] [data-cell=budget]")
    expect(recent).to_contain_text("三段共用")
    assert errors == []


def test_workbench_prompt_view_links_memory_items_and_messages(page, browser_context, live_server, staff_user, wang):
    # given a draft the pipeline made for 王先生
    draft = draft_generate(customer=wang, actor="pipeline", client=OfflineClient())
    view = draft_prompt_view(draft)
    errors = _open(page, browser_context, live_server, staff_user, "王先生")
    from playwright.sync_api import expect

    # when the supervisor opens its prompt
    page.locator(f"#wb-drafts li[data-draft='{draft.pk}']").get_by_role("button", name="查看提示词").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.locator(".wb-prompt-table")).to_be_visible()
    # then each memory item in it links to its admin page
    assert view.memory_items
    for item in view.memory_items:
        link = dialog.locator(
            f"section[data-section='{item.section}'] a[data-admin=memory_item]", has_text=f"#{item.id}"
        )
        expect(link).to_have_attribute("href", admin_link(f"/admin/memory/memoryitem/{item.id}/change/"))
    # and the business row it quotes points at the task on the page
    assert [ref.kind for ref in view.business] == ["task"]
    expect(dialog.locator("section[data-section='business_state'] button[data-ref=task]")).to_be_visible()
    # and each message in it can be shown in the thread
    assert view.messages
    message = view.messages[0]
    ref = dialog.locator(f"section[data-section='{message.section}'] button[data-ref=message][data-id='{message.id}']")
    expect(ref).to_be_visible()
    # when they follow a message
    ref.click()
    # then the dialog closes and the message is highlighted in the thread
    expect(dialog).to_be_hidden()
    shown = page.locator(f"#wb-messages li[data-message='{message.id}']")
    expect(shown).to_have_class("wb-message wb-message--" + shown.get_attribute("data-direction") + " wb-highlight")
    expect(shown).to_be_focused()
    assert errors == []


def test_workbench_prompt_view_shows_what_the_budget_trimmed(
    page, browser_context, live_server, staff_user, wang, settings
):
    # given a core-memory budget too small for all that is known about 王先生
    for index, fact in enumerate(
        ["在张江上班，开车通勤", "有一只猫，需要可以养宠物", "希望南北通透，采光要好", "最好有电梯"]
    ):
        memory_item_add(customer=wang, content=fact, key=f"fact:extra_{index}", actor=staff_user, reason="电话中得知")
    settings.QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT = 160
    draft = draft_generate(customer=wang, actor="pipeline", client=OfflineClient())
    core = next(section for section in draft_prompt_view(draft).sections if section.key == "core_memory")
    assert core.trimmed and core.trimmed_ids
    _open(page, browser_context, live_server, staff_user, "王先生")
    from playwright.sync_api import expect

    # when the prompt of the draft is opened
    page.locator(f"#wb-drafts li[data-draft='{draft.pk}']").get_by_role("button", name="查看提示词").click()
    dialog = page.get_by_role("dialog")
    # then the core memory section says it was trimmed, within which budget, and which items it lost
    row = dialog.locator(".wb-prompt-table tr[data-section='core_memory']")
    expect(row.locator("[data-cell=trimmed]")).to_have_text(f"已截断（删去 {len(core.trimmed_ids)} 项）")
    expect(row.locator("[data-cell=budget]")).to_have_text("预算 160 字")
    section = dialog.locator("section[data-section='core_memory']")
    expect(section.locator("[data-stat=trimmed]")).to_have_text("已截断")
    dropped = section.locator(".wb-prompt-refs", has_text="因预算删去")
    for item_id in core.trimmed_ids:
        expect(dropped.locator("a[data-admin=memory_item]", has_text=f"#{item_id}")).to_have_attribute(
            "href", admin_link(f"/admin/memory/memoryitem/{item_id}/change/")
        )


def test_workbench_prompt_view_shows_quoted_html_as_text(page, browser_context, live_server, staff_user, account):
    # given a customer whose message looks like HTML, and a draft the pipeline made for it
    customer = _conversation(
        "wm_zhao_002",
        "赵女士",
        [(MessageDirection.INBOUND, '<img src=x onerror="window.__xss=1">想看静安寺附近的一居室')],
    )
    draft = draft_generate(customer=customer, actor="pipeline", client=OfflineClient())
    _open(page, browser_context, live_server, staff_user, "赵女士")
    from playwright.sync_api import expect

    # when its prompt is opened
    page.locator(f"#wb-drafts li[data-draft='{draft.pk}']").get_by_role("button", name="查看提示词").click()
    dialog = page.get_by_role("dialog")
    # then the customer's words are in it as text, and nothing ran
    expect(dialog.locator("section[data-section='latest_message'] pre")).to_contain_text("想看静安寺附近的一居室")
    assert dialog.locator("img, script").count() == 0
    assert page.evaluate("window.__xss === undefined") is True


def test_workbench_old_draft_says_its_prompt_was_not_kept(page, browser_context, live_server, staff_user, wang):
    # given a draft made before prompts were kept
    old = DraftFactory(customer=wang, reply="王先生您好，周六上午十点见。")
    _open(page, browser_context, live_server, staff_user, "王先生")
    from playwright.sync_api import expect

    # when the page shows it
    item = page.locator(f"#wb-drafts li[data-draft='{old.pk}']")
    # then it says so instead of offering a prompt view
    expect(item).to_contain_text("未保存提示词")
    expect(item.get_by_role("button", name="查看提示词")).to_have_count(0)


def test_workbench_prompt_dialog_closes_and_gives_the_focus_back(page, browser_context, live_server, staff_user, wang):
    # given the agent opened a draft's prompt
    draft = draft_generate(customer=wang, actor="pipeline", client=OfflineClient())
    _open(page, browser_context, live_server, staff_user, "王先生")
    from playwright.sync_api import expect

    button = page.locator(f"#wb-drafts li[data-draft='{draft.pk}']").get_by_role("button", name="查看提示词")
    button.click()
    dialog = page.get_by_role("dialog")
    expect(dialog.locator(".wb-prompt-table")).to_be_visible()
    # when they press Escape
    page.keyboard.press("Escape")
    # then the dialog is gone and the focus is back on the button that opened it
    expect(dialog).to_be_hidden()
    expect(button).to_be_focused()
    # and the close button works as well
    button.click()
    dialog.get_by_role("button", name="关闭").click()
    expect(dialog).to_be_hidden()


def test_workbench_snapshot_reads_as_headings_and_lists(page, browser_context, live_server, staff_user, wang):
    # given 王先生's core memory has a fact, a constraint and one that looks like HTML
    memory_item_add(customer=wang, content="<b>养猫</b>，需要可养宠物的房子", actor=staff_user, reason="电话中得知")
    errors = _open(page, browser_context, live_server, staff_user, "王先生")
    from playwright.sync_api import expect

    # when the page shows the snapshot
    snapshot = page.locator("#wb-snapshot")
    # then its "##" sections are headings and its "-" lines are list items, with no Markdown marks left
    expect(snapshot.locator(".wb-md-heading")).to_have_text(["已确认事实", "约束（排除项）"])
    facts = snapshot.locator("ul").first.locator("li")
    expect(facts).to_contain_text(["预算月租六千以内"])
    expect(snapshot.locator("ul").nth(1).locator("li")).to_have_text(["不考虑顶楼"])
    assert "## " not in snapshot.inner_text()
    assert "- 不考虑顶楼" not in snapshot.inner_text()
    # and the item that looks like HTML is text
    expect(snapshot).to_contain_text("<b>养猫</b>，需要可养宠物的房子")
    assert snapshot.locator("b").count() == 0
    assert errors == []


def test_workbench_prompt_view_for_an_agent_names_items_without_admin_links(
    page, browser_context, live_server, agent_user, wang
):
    # given an agent who is not staff (no admin), and a draft the pipeline made
    draft = draft_generate(customer=wang, actor="pipeline", client=OfflineClient())
    view = draft_prompt_view(draft)
    _open(page, browser_context, live_server, agent_user, "王先生")
    from playwright.sync_api import expect

    # when they open its prompt
    page.locator(f"#wb-drafts li[data-draft='{draft.pk}']").get_by_role("button", name="查看提示词").click()
    dialog = page.get_by_role("dialog")
    core = dialog.locator("section[data-section='core_memory']")
    # then each memory item is named by its id and type, with no link into the admin
    for item in view.memory_items:
        expect(core.locator(f"[data-ref=memory_item][data-id='{item.id}']")).to_contain_text(f"记忆条目 #{item.id}")
    assert dialog.locator("a[data-admin]").count() == 0
    # and the messages on the page can still be shown in the thread
    message = view.messages[-1]
    expect(dialog.locator(f"button[data-ref=message][data-id='{message.id}']")).to_be_visible()
