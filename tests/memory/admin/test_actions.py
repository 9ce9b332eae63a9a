"""Bulk governance in the memory list: confirm, reject, expire and forget each need a reason; without
one, a page lists the selected items and asks for it. Delete (forget) needs one too."""

from __future__ import annotations

import pytest

from conversations.models import AuditEvent
from memory.models import MemoryItem, MemoryStatus, MemoryType

CHANGELIST = "/admin/memory/memoryitem/"


def run_action(client, action, items, **data):
    payload = {"action": action, "_selected_action": [item.pk for item in items], **data}
    return client.post(CHANGELIST, payload, follow=True)


def state(item) -> tuple[str, str] | None:
    fresh = MemoryItem.objects.filter(pk=item.pk).first()
    return (fresh.type, fresh.status) if fresh else None


ACTIONS = ["confirm_selected", "reject_selected", "expire_selected", "forget_selected"]


@pytest.mark.parametrize("action", ACTIONS)
def test_bulk_action_without_reason_asks_for_it_and_changes_nothing(admin_client, review_items, action):
    # given the hypothesis and the hedged preference selected, and no reason in the action bar
    selected = [review_items.hypothesis, review_items.hedged]
    before = [state(item) for item in selected]
    audit_rows = AuditEvent.objects.count()
    # when the supervisor runs the action
    response = run_action(admin_client, action, selected, reason="")
    # then a page lists the selected items and asks for the reason, and nothing changed
    body = response.content.decode()
    assert response.status_code == 200
    assert 'name="reason"' in body and "原因（必填" in body
    assert "可能在为孩子上学找学区房" in body and "可能更喜欢地铁附近" in body
    assert f'name="action" value="{action}"' in body
    assert [state(item) for item in selected] == before
    assert AuditEvent.objects.count() == audit_rows


@pytest.mark.parametrize("action", ACTIONS)
def test_bulk_action_confirmed_without_reason_is_refused(admin_client, review_items, action):
    # when the reason page is submitted empty (the browser's `required` bypassed)
    response = run_action(admin_client, action, [review_items.hypothesis], reason=" ", post="yes")
    # then the supervisor is told and the item is as it was
    assert "请填写原因" in response.content.decode()
    assert state(review_items.hypothesis) == (MemoryType.HYPOTHESIS, MemoryStatus.ACTIVE)


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("confirm_selected", (MemoryType.FACT, MemoryStatus.ACTIVE)),
        ("reject_selected", (MemoryType.HYPOTHESIS, MemoryStatus.REJECTED)),
        ("expire_selected", (MemoryType.HYPOTHESIS, MemoryStatus.SUPERSEDED)),
        ("forget_selected", None),
    ],
)
def test_bulk_action_with_the_reason_from_the_page_runs_through_the_service(
    admin_client, staff_user, review_items, action, expected
):
    # given the reason page was shown
    run_action(admin_client, action, [review_items.hypothesis], reason="")
    # when the supervisor fills it and confirms
    response = run_action(admin_client, action, [review_items.hypothesis], reason="客户电话中说明", post="yes")
    # then the service ran with their reason, which the audit keeps
    assert state(review_items.hypothesis) == expected
    assert "条记忆" in response.content.decode()
    audit = AuditEvent.objects.filter(actor_id=staff_user.pk, reason="客户电话中说明").get()
    assert audit.action.startswith("memory_item_")


def test_bulk_reject_with_the_reason_in_the_action_bar_runs_at_once(admin_client, review_items):
    # when the reason is typed next to the action
    response = run_action(admin_client, "reject_selected", [review_items.hedged], reason="客户说的是不要地铁附近")
    # then there is no extra page: the item is rejected
    assert "已拒绝 1 条记忆" in response.content.decode()
    assert state(review_items.hedged) == (MemoryType.PREFERENCE, MemoryStatus.REJECTED)


def test_forget_still_asks_for_confirmation_with_the_reason_kept(admin_client, review_items):
    response = run_action(admin_client, "forget_selected", [review_items.hedged], reason="客户要求删除")
    body = response.content.decode()
    assert "确认遗忘" in body and 'value="客户要求删除"' in body
    assert state(review_items.hedged) is not None


def test_delete_page_without_reason_does_not_forget(admin_client, review_items):
    url = f"{CHANGELIST}{review_items.hedged.pk}/delete/"
    # when the delete page is posted without a reason
    response = admin_client.post(url, {"post": "yes", "reason": ""}, follow=True)
    # then the item is still there and the supervisor is told why
    assert state(review_items.hedged) is not None
    assert "未遗忘" in response.content.decode()
    # and with a reason it is forgotten
    admin_client.post(url, {"post": "yes", "reason": "客户要求删除"})
    assert state(review_items.hedged) is None
