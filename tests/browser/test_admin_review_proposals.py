"""A supervisor works the review queue's proposals with a real browser (issue 35): what a customer
only asked after waits there; accepted with an edited value it becomes memory, in the snapshot with
the customer's message as its evidence; rejected, it does not come back when the customer asks again."""

from __future__ import annotations

import pytest
from django.urls import reverse

from conversations.models import MessageDirection
from memory.capture.services import capture_message
from memory.models import MemoryItem, MemoryStatus
from memory.snapshots import snapshot_current
from qiwei_site.platform.services import membership_grant
from tests.browser.conftest import login
from tests.factories import CustomerFactory, MessageFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def asking_customer(account, other_account, staff_user):
    """王女士 in acme, who asked after stock: two proposals wait, nothing is memory yet."""
    membership_grant(user=staff_user, account=other_account)
    customer = CustomerFactory(conversation_id="wm_wang_proposals", display_name="王女士")
    asked = MessageFactory(customer=customer, direction=MessageDirection.INBOUND, text="请问徐汇区还有两居室吗？")
    capture_message(message=asked)
    proposals = {item.key: item for item in MemoryItem.objects.filter(customer=customer)}
    assert {item.status for item in proposals.values()} == {MemoryStatus.PROPOSED}
    assert set(proposals) == {"profile:layout", "profile:district"}
    return customer, asked, proposals


def test_admin_proposal_accepted_with_an_edited_value_and_another_rejected_for_good(
    page, browser_context, live_server, staff_user, asking_customer
):
    customer, asked, proposals = asking_customer
    layout, district = proposals["profile:layout"], proposals["profile:district"]
    login(browser_context, live_server, staff_user)
    from playwright.sync_api import expect

    # Given the supervisor in acme, on the review queue's proposals
    page.goto(live_server.url + "/admin/")
    page.select_option("#qiwei-account-select", "acme")
    expect(page.locator("#qiwei-account-select")).to_have_value("acme")
    page.goto(live_server.url + reverse("admin:memory_memoryitem_review") + "?kind=proposals")
    row = page.locator(f"#review-item-{layout.pk}")
    # each proposal shows why it was held back and the words it was read from
    expect(row).to_contain_text("户型：两居室")
    expect(row).to_contain_text("问句")
    expect(row).to_contain_text("请问徐汇区还有两居室吗")

    # When they accept the layout with the value corrected (the customer said two bedrooms, one hall)
    row.locator("summary").click()
    row.locator("textarea[name=content]").fill("户型：两室一厅")
    row.locator("input[name=reason]").fill("电话里确认是两室一厅")
    row.locator("button[value=edit]").click()
    expect(page.locator("ul.messagelist")).to_contain_text("已按修改后的内容采纳")
    # and reject the district
    district_row = page.locator(f"#review-item-{district.pk}")
    district_row.locator("input[name=reason]").fill("客户说是在帮同事问，不是自己要住")
    district_row.locator("button[value=reject]").click()
    expect(page.locator("ul.messagelist")).to_contain_text("已拒绝")

    # Then the edited value is memory: active, the supervisor's, in the profile and the snapshot,
    # and still resting on the customer's message
    layout.refresh_from_db()
    assert (layout.status, layout.content, layout.created_by) == (MemoryStatus.ACTIVE, "户型：两室一厅", "human")
    assert layout.source_message_ids == [asked.pk]
    customer.profile.refresh_from_db()
    assert customer.profile.layout == "两室一厅"
    snapshot = snapshot_current(customer)
    assert "户型：两室一厅" in snapshot.content and layout.pk in snapshot.item_ids
    # the item's page shows that evidence, quoted
    page.goto(live_server.url + reverse("admin:memory_memoryitem_change", args=[layout.pk]))
    expect(page.locator("#content")).to_contain_text("请问徐汇区还有两居室吗")
    # and the rejected district is nowhere in memory
    district.refresh_from_db()
    assert district.status == MemoryStatus.REJECTED
    assert "徐汇" not in snapshot.content

    # When the customer asks the same again
    capture_message(
        message=MessageFactory(customer=customer, direction=MessageDirection.INBOUND, text="徐汇区还有两居室吗？")
    )
    # Then the rejected district does not come back, not even as a proposal, and the corrected
    # layout stands (the words it corrected propose nothing over it)
    page.goto(live_server.url + reverse("admin:memory_memoryitem_review") + "?kind=proposals")
    expect(page.locator("#review-empty")).to_be_visible()
    assert not MemoryItem.objects.filter(customer=customer, status=MemoryStatus.PROPOSED).exists()
    assert not MemoryItem.objects.filter(customer=customer, key="profile:district", status=MemoryStatus.ACTIVE)
    layout.refresh_from_db()
    assert layout.status == MemoryStatus.ACTIVE and layout.content == "户型：两室一厅"
