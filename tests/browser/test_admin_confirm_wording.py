"""A supervisor confirms the model's guess with a real browser (issue 39, item 3): the review queue
offers the guess's words without 「可能」, the supervisor edits them, and the fact reads as they
wrote it — in memory, in the snapshot and in the audit beside the guess's own wording; the item's
page does the same through its 确认为事实 page."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from conversations.models import AuditEvent, MessageDirection
from memory.items import memory_item_put
from memory.models import MemoryItem, MemoryType
from memory.snapshots import snapshot_current
from qiwei_site.platform.services import membership_grant
from tests.browser.conftest import login
from tests.factories import CustomerFactory, MessageFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _guess(customer, key, content, evidence):
    return memory_item_put(
        customer=customer,
        type=MemoryType.HYPOTHESIS,
        key=key,
        content=content,
        source_message_ids=[evidence.pk],
        confidence=0.5,
        expires_at=timezone.now() + dt.timedelta(days=7),
        actor="pipeline",
        reason="模型推断",
    ).item


@pytest.fixture
def guesses(account, other_account, staff_user):
    """王先生 in acme, of whom the model guessed twice from one message."""
    membership_grant(user=staff_user, account=other_account)
    customer = CustomerFactory(conversation_id="wm_wang_confirm", display_name="王先生")
    said = MessageFactory(
        customer=customer,
        direction=MessageDirection.INBOUND,
        sender="王先生",
        text="孩子明年上小学，我每天去张江上班，最好地铁直达",
    )
    school = _guess(customer, "hypothesis:school", "客户可能在为孩子上学找学区房", said)
    commute = _guess(customer, "hypothesis:commute", "客户可能在张江上班", said)
    return customer, school, commute


def test_admin_confirm_with_edited_wording_in_the_queue_and_on_the_item_page(
    page, browser_context, live_server, staff_user, guesses
):
    from playwright.sync_api import expect

    customer, school, commute = guesses
    login(browser_context, live_server, staff_user)
    # Given the supervisor in acme, on the review queue
    page.goto(live_server.url + "/admin/")
    page.select_option("#qiwei-account-select", "acme")
    expect(page.locator("#qiwei-account-select")).to_have_value("acme")
    page.goto(live_server.url + reverse("admin:memory_memoryitem_review"))
    row = page.locator(f"#review-item-{school.pk}")
    # the guess is shown as it reads, its wording as a fact offered without 「可能」
    expect(row).to_contain_text("客户可能在为孩子上学找学区房")
    wording = row.locator("textarea[name=wording]")
    expect(wording).to_have_value("客户在为孩子上学找学区房")

    # When they edit the wording and confirm with a reason
    wording.fill("客户在为孩子明年上小学找学区房")
    row.locator("input[name=reason]").fill("电话里客户说孩子明年上小学")
    row.locator("button[value=confirm]").click()
    expect(page.locator("ul.messagelist")).to_contain_text("已确认为事实")

    # Then the fact reads as they wrote it, in memory and in the snapshot, not as the guess
    school.refresh_from_db()
    assert (school.type, school.content) == (MemoryType.FACT, "客户在为孩子明年上小学找学区房")
    facts = snapshot_current(customer).content.split("## 待确认")[0]
    assert "- 客户在为孩子明年上小学找学区房" in facts and "可能在为孩子上学" not in facts
    # and the audit keeps both wordings
    audit = AuditEvent.objects.get(action="memory_item_confirmed", payload__item_id=school.pk)
    assert audit.payload["hypothesis_content"] == "客户可能在为孩子上学找学区房"
    assert audit.payload["content"] == "客户在为孩子明年上小学找学区房"

    # When they open the other guess's page and choose 确认为事实
    page.goto(live_server.url + reverse("admin:memory_memoryitem_change", args=[commute.pk]))
    page.locator("a.qiwei-confirm-link").click()
    content = page.locator("textarea[name=content]")
    expect(content).to_have_value("客户在张江上班")
    expect(page.locator("#guess-wording")).to_contain_text("客户可能在张江上班")
    # and confirm without a reason first: the page asks for one and keeps their wording
    content.fill("客户在张江上班，地铁2号线通勤")
    page.locator("textarea[name=content]").evaluate("el => el.form.noValidate = true")
    page.locator("#confirm-wording input[type=submit]").click()
    expect(page.locator("#confirm-wording")).to_contain_text("请填写原因")
    expect(page.locator("textarea[name=content]")).to_have_value("客户在张江上班，地铁2号线通勤")
    # then with the reason
    page.locator("input[name=reason]").fill("客户微信语音里说的")
    page.locator("#confirm-wording input[type=submit]").click()
    expect(page.locator("ul.messagelist")).to_contain_text("已确认为事实")

    # Then that fact too says what the supervisor wrote
    commute.refresh_from_db()
    assert (commute.type, commute.content) == (MemoryType.FACT, "客户在张江上班，地铁2号线通勤")
    assert not MemoryItem.objects.filter(customer=customer, type=MemoryType.HYPOTHESIS).exists()


def test_admin_add_form_refused_for_a_missing_reason_keeps_the_ticked_messages(
    page, browser_context, live_server, staff_user, guesses
):
    """The same afternoon (issue 39): the add-memory form sent without a reason came back with the
    source messages unticked (the picker's script refilled them as select2 started)."""
    from playwright.sync_api import expect

    customer, _school, _commute = guesses
    said = customer.messages.get()
    other = MessageFactory(customer=customer, direction=MessageDirection.INBOUND, text="周末可以看房")
    login(browser_context, live_server, staff_user)
    page.goto(live_server.url + "/admin/")
    page.select_option("#qiwei-account-select", "acme")
    expect(page.locator("#qiwei-account-select")).to_have_value("acme")
    # Given the add form for 王先生, one of his messages ticked and the item typed
    page.goto(live_server.url + reverse("admin:memory_memoryitem_add") + f"?customer={customer.pk}")
    page.locator(f"input[name=source_message_ids][value='{said.pk}']").check()
    page.locator("textarea[name=content]").fill("客户在张江上班，需要地铁直达")
    # When it is sent without a reason (the browser's own check set aside)
    page.locator("#id_reason").evaluate("el => el.form.noValidate = true")
    page.locator("input[name=_save]").click()
    # Then the form asks for the reason and still has the tick and the words
    expect(page.locator(".field-reason .errorlist")).to_be_visible()
    page.wait_for_load_state("networkidle")
    expect(page.locator(f"input[name=source_message_ids][value='{said.pk}']")).to_be_checked()
    expect(page.locator(f"input[name=source_message_ids][value='{other.pk}']")).not_to_be_checked()
    expect(page.locator("textarea[name=content]")).to_have_value("客户在张江上班，需要地铁直达")
    # and with the reason it is saved with that message as its evidence
    page.locator("#id_reason").fill("客户电话里说的")
    page.locator("input[name=_save]").click()
    expect(page.locator("ul.messagelist")).to_be_visible()
    item = MemoryItem.objects.get(customer=customer, content="客户在张江上班，需要地铁直达")
    assert item.source_message_ids == [said.pk]
