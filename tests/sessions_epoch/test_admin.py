"""Admin for drafts, deliveries and epochs: read-only records, review actions through the services."""

from __future__ import annotations

from conversations.drafts import draft_approve, draft_send
from conversations.models import AuditEvent, DraftStatus
from sessions_epoch.services import epoch_for_turn
from tests.factories import DraftFactory

DRAFTS = "/admin/conversations/draft/"


def test_draft_admin_approves_through_the_service(admin_client, customer, staff_user):
    # given two pending drafts
    drafts = [DraftFactory(customer=customer), DraftFactory(customer=customer, reply="李女士您好，两居室还有房。")]

    # when a supervisor approves them with the admin action
    response = admin_client.post(
        DRAFTS, {"action": "approve_selected", "_selected_action": [d.pk for d in drafts]}, follow=True
    )

    # then both are approved by that supervisor, with audit rows, and the page says so
    assert response.status_code == 200
    assert "已批准 2 份草稿" in response.content.decode()
    for draft in drafts:
        draft.refresh_from_db()
        assert draft.status == DraftStatus.APPROVED and draft.reviewed_by_id == staff_user.pk
    assert AuditEvent.objects.filter(action="draft_approved", actor_id=staff_user.pk).count() == 2


def test_draft_admin_reject_of_a_sent_draft_shows_the_error(admin_client, customer, staff_user):
    # given a draft already sent
    draft = DraftFactory(customer=customer)
    draft_approve(draft=draft, actor=staff_user, reason="通过")
    draft_send(draft=draft, actor=staff_user, reason="发送")

    # when a supervisor tries to reject it in the admin
    response = admin_client.post(DRAFTS, {"action": "reject_selected", "_selected_action": [draft.pk]}, follow=True)

    # then the domain error is shown and the draft stays sent
    assert "不能拒绝" in response.content.decode()
    draft.refresh_from_db()
    assert draft.status == DraftStatus.SENT


def test_draft_change_page_shows_the_trace_read_only(admin_client, customer):
    # given a draft with a context trace
    draft = DraftFactory(customer=customer, context_trace={"snapshot_version": 7, "recalled_message_ids": [3, 9]})

    # when its page is opened
    body = admin_client.get(f"{DRAFTS}{draft.pk}/change/").content.decode()

    # then the trace reads as a table, not JSON, and nothing is editable
    assert "上下文追踪" in body and "记忆快照版本 7" in body and 'id="draft-trace-table"' in body
    assert "消息 #3" in body and "&quot;snapshot_version&quot;" not in body
    assert 'name="reply"' not in body


def test_draft_change_page_reads_reasons_and_updates_as_lists(admin_client, customer):
    # given a draft whose model gave reasons, one grounded update and one dropped (a secret in it)
    draft = DraftFactory(
        customer=customer,
        reasons=["客户说预算5000", "房源在地铁附近"],
        profile_updates={"budget": "5000元/月"},
        dropped_updates=[{"field": "district", "value": "密码 Abc123456", "reason": "无法核对客户原话，未保留"}],
    )

    # when its page is opened
    body = admin_client.get(f"{DRAFTS}{draft.pk}/change/").content.decode()

    # then each reads as a list in Chinese, field labels and not codes, the secret masked
    assert "<li>客户说预算5000</li>" in body and "<li>房源在地铁附近</li>" in body
    assert "<li>预算：5000元/月</li>" in body
    assert "意向区域：" in body and "（无法核对客户原话，未保留）" in body
    assert "Abc123456" not in body and "&quot;budget&quot;" not in body


def test_epoch_and_delivery_admins_are_read_only_lists(admin_client, customer):
    # given an epoch
    epoch = epoch_for_turn(customer=customer)

    # when the lists are opened / then they render, and adding is not offered
    epochs = admin_client.get("/admin/sessions_epoch/sessionepoch/")
    assert epochs.status_code == 200 and epoch.session_id in epochs.content.decode()
    assert admin_client.get("/admin/sessions_epoch/sessionepoch/add/").status_code == 403
    assert admin_client.get("/admin/conversations/delivery/").status_code == 200
    history = admin_client.get(f"/admin/sessions_epoch/sessionepoch/{epoch.pk}/history/")
    assert history.status_code == 200


def test_draft_history_page_shows_the_reviewer(admin_client, customer, staff_user):
    # given a draft approved by a supervisor
    draft = DraftFactory(customer=customer)
    draft_approve(draft=draft, actor=staff_user, reason="核对房源后通过")

    # when its history page is opened
    response = admin_client.get(f"{DRAFTS}{draft.pk}/history/")

    # then the reason is listed
    assert response.status_code == 200
    assert "核对房源后通过" in response.content.decode()
