"""A supervisor walks the whole admin: every registered model's pages render, in Chinese."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse

from memory.governance.services import memory_item_add
from memory.snapshots import snapshot_current
from tests.qiwei_site.platform.conftest import login_with_account

# Django's own English admin strings that would show if the UI fell back to English.
ENGLISH_CHROME = ("Django administration", "Select ", " to change", "Save and continue", "Change history")


def _registered():
    return sorted(admin.site._registry.items(), key=lambda pair: pair[0]._meta.label)


def test_admin_every_registered_model_changelist_and_change_page_render(admin_client, account_rows):
    # given an account with one row of every registered model, chosen in the switcher
    rendered = []
    for model, model_admin in _registered():
        info = (model._meta.app_label, model._meta.model_name)
        # when the supervisor opens the list
        changelist = admin_client.get(reverse("admin:{}_{}_changelist".format(*info)))
        # then it renders, in Chinese
        assert changelist.status_code == 200, model._meta.label
        body = changelist.content.decode()
        assert not [s for s in ENGLISH_CHROME if s in body], (model._meta.label, body[:2000])
        # and so does the change page of its first row
        obj = model_admin.get_queryset(changelist.wsgi_request).first()
        assert obj is not None, f"no row for {model._meta.label}"
        change = admin_client.get(reverse("admin:{}_{}_change".format(*info), args=[obj.pk]))
        assert change.status_code == 200, model._meta.label
        rendered.append(model._meta.label)
    assert "memory.MemoryItem" in rendered and "sessions_epoch.SessionEpoch" in rendered


def test_admin_index_lists_account_apps_in_chinese(admin_client, account_rows):
    # when the supervisor opens the admin index with an account chosen
    body = admin_client.get(reverse("admin:index")).content.decode()
    # then the customer-data models are listed with their Chinese names
    for label in ("记忆条目", "核心记忆快照", "客户", "草稿"):
        assert label in body, label
    assert "Django administration" not in body


def test_admin_add_pages_render_where_adding_is_allowed(admin_client, account_rows):
    # given every registered model
    for model, model_admin in _registered():
        request = admin_client.get(reverse("admin:index")).wsgi_request
        if not model_admin.has_add_permission(request):
            continue
        # when the supervisor opens its add form
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_add")
        response = admin_client.get(url)
        # then it renders
        assert response.status_code == 200, model._meta.label


def test_admin_account_models_are_forbidden_until_an_account_is_chosen(staff_user, account_rows):
    # given a supervisor who has not chosen an account
    client = login_with_account(staff_user, None)
    # when they open customer-data pages
    statuses = {
        path: client.get(path).status_code
        for path in ("/admin/memory/memoryitem/", "/admin/conversations/customer/", "/admin/conversations/draft/")
    }
    # then they are refused, and the index asks them to choose an account
    assert set(statuses.values()) == {403}
    assert "请先选择账号" in client.get(reverse("admin:index")).content.decode()


def test_admin_snapshot_diff_view_renders(admin_client, account_rows, staff_user):
    # given a second snapshot version after a new memory
    memory_item_add(customer=account_rows.customer, content="预算月租 6000 以内", actor=staff_user, reason="电话确认")
    newer = snapshot_current(account_rows.customer)
    assert newer is not None and newer.version == account_rows.snapshot.version + 1
    # when the supervisor opens its diff
    response = admin_client.get(reverse("admin:memory_memorysnapshot_diff", args=[newer.pk]))
    # then the added item is shown by its text
    assert response.status_code == 200
    assert [(c.label, c.text) for c in response.context["diff"].changes] == [("新增", "预算月租 6000 以内")]
