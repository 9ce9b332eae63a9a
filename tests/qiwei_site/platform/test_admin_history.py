"""Admin history pages of history-tracked models: rows live in the account database, users in `default`."""

from __future__ import annotations

import pytest
from django.urls import reverse

from conversations.models import CustomerProfile

TRACKED = {
    "memory item": ("item", "memory_memoryitem"),
    "customer": ("customer", "conversations_customer"),
    "draft": ("draft", "conversations_draft"),
    "epoch": ("epoch", "sessions_epoch_sessionepoch"),
}


def _tracked(rows, page):
    attribute, url_name = TRACKED[page]
    return getattr(rows, attribute), url_name


def _history_pages(rows):
    return {
        page: reverse(f"admin:{_tracked(rows, page)[1]}_history", args=[_tracked(rows, page)[0].pk]) for page in TRACKED
    }


@pytest.mark.parametrize("page", ["memory item", "customer", "draft", "epoch"])
def test_admin_history_page_renders_for_supervisor(admin_client, account_rows, page):
    # given a history-tracked row of the chosen account
    url = _history_pages(account_rows)[page]
    # when the supervisor opens its history page
    response = admin_client.get(url)
    # then it renders in Chinese
    assert response.status_code == 200, response.content[:500]
    assert "查看历史记录" in response.content.decode()


def test_admin_memory_item_history_names_the_supervisor_and_reason(admin_client, account_rows, staff_user):
    # given an item added and then edited by a supervisor
    # when its history page is opened
    body = admin_client.get(_history_pages(account_rows)["memory item"]).content.decode()
    # then each version shows who changed it (read from `default`), why and what, in Chinese
    assert staff_user.get_username() in body
    assert "电话确认" in body and "客户补充" in body
    assert "不考虑顶楼&nbsp;&rarr;&nbsp;&nbsp;不考虑顶楼和一楼" in body
    assert "变更内容" in body and "Changes" not in body


def test_admin_epoch_history_names_a_system_actor(admin_client, account_rows):
    # given an epoch opened by the turn pipeline (no user)
    url = reverse("admin:sessions_epoch_sessionepoch_history", args=[account_rows.epoch.pk])
    # when its history page is opened
    body = admin_client.get(url).content.decode()
    # then the author reads as the system, not as "None"
    assert "系统（自动流程）" in body and "None" not in body


@pytest.mark.parametrize("page", list(TRACKED))
def test_admin_history_version_is_read_only(admin_client, account_rows, page):
    # given the oldest version of a history-tracked row
    obj, url_name = _tracked(account_rows, page)
    versions = type(obj).history.filter(pk=obj.pk)
    before = versions.count()
    url = reverse(f"admin:{url_name}_simple_history", args=[obj.pk, versions.earliest("history_date").history_id])
    # when the supervisor opens it and tries to restore it
    shown = admin_client.get(url)
    restore = admin_client.post(url, {"content": "不考虑顶楼", "display_name": "旧名字"})
    # then the version is shown without a save button, and a restore is refused: it would bypass the services
    assert shown.status_code == 200
    assert 'type="submit"' not in shown.content.decode().split('id="content"')[1]
    assert restore.status_code == 403
    assert type(obj).history.filter(pk=obj.pk).count() == before


def test_admin_customer_history_includes_profile_edit_reason(admin_client, account_rows):
    # given a profile edited through the service
    profile = CustomerProfile.objects.get(customer=account_rows.customer)
    assert profile.history.first().history_change_reason == "初次沟通"
    # when the customer's history page is opened
    response = admin_client.get(_history_pages(account_rows)["customer"])
    # then it renders
    assert response.status_code == 200


def test_admin_draft_history_shows_status_labels(admin_client, account_rows):
    # given a draft approved by a supervisor
    url = reverse("admin:conversations_draft_history", args=[account_rows.draft.pk])
    # when its history page is opened
    body = admin_client.get(url).content.decode()
    # then the status change reads in Chinese, not as codes
    assert "待审核&nbsp;&rarr;&nbsp;&nbsp;已批准" in body
    assert "pending" not in body
