"""The admin read at 1,400 px (issue 24, item 3): a confidence and a time each on one line, audit
columns wide enough to read, a snapshot diff after forget by item and by the audit's record, a
draft's context trace as a table, and the add form's source-message picker with the API's default
importance. Screenshots go to QIWEI_SHOTS_DIR (default test-artifacts/shots) for the notes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.conf import settings

from conversations.models import MessageDirection
from memory.admin.items import HAND_ADDED_IMPORTANCE
from memory.governance.apis import MemoryItemListApi
from memory.governance.services import memory_item_add, memory_item_edit, memory_item_forget
from memory.items import memory_item_put
from memory.models import MemoryType
from memory.snapshots import snapshot_current
from sessions_epoch.clients import OfflineClient
from sessions_epoch.pipeline import draft_generate
from tests.browser.conftest import login
from tests.factories import CustomerFactory, MessageFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path(os.environ.get("QIWEI_SHOTS_DIR") or Path(settings.BASE_DIR) / "test-artifacts" / "shots")
VIEWPORT = {"width": 1400, "height": 900}

# How many rendered lines a cell's text takes: its height over its line height.
LINES = """el => {
  const style = getComputedStyle(el);
  const range = document.createRange();
  range.selectNodeContents(el);
  const height = range.getBoundingClientRect().height;
  const line = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.2;
  return Math.round(height / line);
}"""


@pytest.fixture
def renting_customers(account, staff_user):
    """张先生 and 李女士 with captured items (confidences like 0.85), messages and a drafted reply."""
    zhang = CustomerFactory(conversation_id="wm_zhang_read", display_name="张先生")
    li = CustomerFactory(conversation_id="wm_li_read", display_name="李女士")
    said = [
        MessageFactory(customer=zhang, direction=MessageDirection.INBOUND, sender="张先生", text=text)
        for text in (
            "我更喜欢2号线附近的，预算8000左右",
            "不要一楼的房子，潮湿",
            "下个月15号之前要入住，我电话13812345678",
        )
    ]
    MessageFactory(customer=li, direction=MessageDirection.INBOUND, sender="李女士", text="想找静安寺附近的一居室")
    for key, type_, content, message, confidence in [
        ("preference:metro", MemoryType.PREFERENCE, "偏好：2号线附近", said[0], 0.85),
        ("fact:budget", MemoryType.FACT, "预算：8000左右", said[0], 0.9),
        ("constraint:floor", MemoryType.CONSTRAINT, "不考虑：一楼", said[1], 0.85),
        ("fact:movein", MemoryType.FACT, "入住时间：下个月15号之前", said[2], 0.8),
    ]:
        memory_item_put(
            customer=zhang,
            type=type_,
            key=key,
            content=content,
            source_message_ids=[message.pk],
            confidence=confidence,
            actor="capture",
            reason="客户原话",
        )
    return zhang, li, said


def _open(browser_context, live_server, staff_user):
    login(browser_context, live_server, staff_user)
    page = browser_context.new_page()
    page.set_viewport_size(VIEWPORT)
    from playwright.sync_api import expect

    page.goto(live_server.url + "/admin/")
    page.select_option("#qiwei-account-select", "acme")
    expect(page.locator("body")).to_contain_text("已切换到账号 acme")
    return page


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=True)


def test_admin_lists_keep_confidence_and_times_on_one_line_at_1400(
    browser_context, live_server, staff_user, renting_customers
):
    page = _open(browser_context, live_server, staff_user)
    # when the supervisor opens the memory list at 1,400 px
    page.goto(live_server.url + "/admin/memory/memoryitem/")
    _shot(page, "memory-items-1400.png")
    confidences = page.locator("#result_list td.field-confidence")
    times = page.locator("#result_list td.field-created_display")
    assert confidences.count() == 4 and times.count() == 4
    # then every confidence (0.85 included) and every time takes exactly one line, within its cell
    for cell in [*confidences.all(), *times.all()]:
        assert cell.evaluate(LINES) == 1, cell.inner_text()
        assert cell.evaluate("el => el.scrollWidth <= el.clientWidth"), cell.inner_text()
    assert "0.85" in [c.inner_text().strip() for c in confidences.all()]
    # and the audit's columns are wide enough to read a line of Chinese, its times on one line
    page.goto(live_server.url + "/admin/conversations/auditevent/")
    _shot(page, "audit-1400.png")
    widths = page.eval_on_selector_all(
        "#result_list thead th", "ths => Object.fromEntries(ths.map(t => [t.className, t.offsetWidth]))"
    )
    narrow = {name: width for name, width in widths.items() if width < 80}
    assert narrow == {}, widths
    for cell in page.locator("#result_list td.field-created_at").all():
        assert cell.evaluate(LINES) == 1, cell.inner_text()


def test_admin_snapshot_diff_after_forget_names_items_and_the_forget(
    browser_context, live_server, staff_user, renting_customers
):
    zhang, _li, _said = renting_customers
    # given a supervisor who adds an item, edits another, then forgets the phone-bearing one
    before = snapshot_current(zhang)
    added = memory_item_add(
        customer=zhang, content="养一只猫", type=MemoryType.FACT, source_message_ids=[], actor=staff_user, reason="电话"
    )
    budget = zhang.memory_items.get(key="fact:budget")
    memory_item_edit(item=budget, content="预算：8500以内", actor=staff_user, reason="客户改口")
    movein = zhang.memory_items.get(key="fact:movein")
    memory_item_forget(item=movein, actor=staff_user, reason="客户来电要求删掉这条")
    latest = snapshot_current(zhang)
    page = _open(browser_context, live_server, staff_user)

    # when the supervisor opens the diff of the forget's version against the one before
    page.goto(live_server.url + f"/admin/memory/memorysnapshot/{latest.pk}/diff/")
    _shot(page, "snapshot-diff-forget-1400.png")
    # then it does not say the versions are the same without a word: it names the forget
    summary = page.locator("#snapshot-diff-summary").inner_text()
    assert "遗忘 1 条" in summary
    forgotten = page.locator("#snapshot-diff-forgotten").inner_text()
    assert f"#{movein.pk}" in forgotten and "客户来电要求删掉这条" in forgotten
    assert "下个月15号" not in page.content()

    # when they compare the version before these changes with the latest
    page.goto(live_server.url + f"/admin/memory/memorysnapshot/{latest.pk}/diff/?against={before.version}")
    _shot(page, "snapshot-diff-items-1400.png")
    rows = page.locator("#snapshot-diff tbody tr").all_inner_texts()
    # then each change is an item by its text and what changed, not an id alone
    assert any("新增" in row and "养一只猫" in row and f"#{added.pk}" in row for row in rows), rows
    assert any("内容修改" in row and "预算：8000左右" in row and "预算：8500以内" in row for row in rows), rows
    # and the snapshot's page lists its items by their text
    page.goto(live_server.url + f"/admin/memory/memorysnapshot/{latest.pk}/change/")
    assert "养一只猫" in page.locator(".field-items_table").inner_text()


def test_admin_draft_trace_is_a_table_of_sections(browser_context, live_server, staff_user, renting_customers):
    zhang, _li, _said = renting_customers
    # given a draft generated for 张先生
    draft = draft_generate(customer=zhang, actor="pipeline", client=OfflineClient())
    page = _open(browser_context, live_server, staff_user)
    # when the supervisor opens it
    page.goto(live_server.url + f"/admin/conversations/draft/{draft.pk}/change/")
    _shot(page, "draft-trace-1400.png")
    table = page.locator("#draft-trace-table")
    # then the trace is a table: section, characters, budget, what was trimmed, what it quotes
    headers = table.locator("thead th").all_inner_texts()
    assert headers == ["段落", "字数", "预算", "删减", "引用的记忆条目和消息"]
    rows = table.locator("tbody tr").all_inner_texts()
    assert len(rows) >= 4
    assert any("客户核心记忆快照" in row and "记忆条目 #" in row for row in rows), rows
    assert any("需要回复的最新客户消息" in row and "客户消息 #" in row for row in rows), rows
    assert '"prompt_sections"' not in page.content()


def test_admin_add_item_picks_source_messages_and_defaults_importance_like_the_api(
    browser_context, live_server, staff_user, renting_customers
):
    zhang, _li, said = renting_customers
    page = _open(browser_context, live_server, staff_user)
    # when the supervisor opens the add form with 张先生 chosen
    page.goto(live_server.url + f"/admin/memory/memoryitem/add/?customer={zhang.pk}")
    # then importance starts at the API's default
    api_default = MemoryItemListApi.MemoryItemAddInput().fields["importance"].default
    assert api_default == HAND_ADDED_IMPORTANCE
    assert page.locator("#id_importance").input_value() == str(api_default)
    assert page.locator("#id_type").input_value() == MemoryItemListApi.MemoryItemAddInput().fields["type"].default
    # and the sources are his messages by their masked words, not a JSON box
    picker = page.locator("#id_source_message_ids")
    assert "我更喜欢2号线附近的" in picker.inner_text() and "13812345678" not in picker.inner_text()
    assert page.locator("textarea[name=source_message_ids]").count() == 0
    # each message on one line at 1,400 px (measured in one pass once the picker has settled: its
    # script may redraw the list when the customer box initialises)
    page.wait_for_load_state("networkidle")
    lines = page.eval_on_selector_all("#id_source_message_ids label", f"labels => labels.map({LINES})")
    assert lines and set(lines) == {1}, lines
    _shot(page, "memory-item-add-1400.png")
    # when they start again without a customer and pick 张先生 in the customer box
    page.goto(live_server.url + "/admin/memory/memoryitem/add/")
    assert page.locator("#id_source_message_ids input").count() == 0
    page.locator(".field-customer .select2-selection").click()
    page.locator(".select2-search__field").fill("张先生")
    page.locator(".select2-results__option", has_text="张先生").first.click()
    # then the picker fills with his messages
    from playwright.sync_api import expect

    expect(page.locator("#id_source_message_ids input")).to_have_count(3)
    # when they tick one message and save
    page.fill("#id_content", "喜欢朝南的房子")
    page.locator(f"#id_source_message_ids input[value='{said[0].pk}']").check()
    page.fill("#id_reason", "电话里客户说的")
    page.locator("input[name=_save]").click()
    # then the item cites that message
    item = zhang.memory_items.get(content="喜欢朝南的房子")
    assert item.source_message_ids == [said[0].pk] and item.importance == api_default
