"""Admin writes on customers go through history, audit and the erasure service; nothing lands in LogEntry."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.models import LogEntry
from django.urls import reverse

from conversations.models import AuditEvent, Customer, CustomerProfile, Message, SessionMode
from memory.models import MemoryItem


def change_form_data(response: Any, **overrides: Any) -> dict[str, Any]:
    """The POST a browser would send back for an admin change page, with some fields changed."""
    data: dict[str, Any] = {}

    def put(prefix: str, form: Any) -> None:
        for name in form.fields:
            key = f"{prefix}{name}"
            value = form[name].value()
            if value is True:
                data[key] = "on"
            elif value not in (None, False):
                data[key] = value

    put("", response.context["adminform"].form)
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        put(f"{formset.prefix}-", formset.management_form)
        for index, form in enumerate(formset.forms):
            put(f"{formset.prefix}-{index}-", form)
    data.update(overrides)
    return data


def _change_url(customer: Customer) -> str:
    return reverse("admin:conversations_customer_change", args=[customer.pk])


def test_admin_customer_settings_edit_writes_history_and_audit(admin_client, account_rows, staff_user):
    # given 王先生 in assisted mode
    customer = account_rows.customer
    url = _change_url(customer)
    form = change_form_data(
        admin_client.get(url), session_mode=SessionMode.AUTO, auto_send_whitelisted="on", reason="客户同意自动回复"
    )
    # when a supervisor whitelists him for auto-send
    response = admin_client.post(url, form)
    # then the setting is saved with history by the supervisor and an audit row without the name
    assert response.status_code == 302, response.content.decode()[:3000]
    customer.refresh_from_db()
    assert (customer.session_mode, customer.auto_send_whitelisted) == (SessionMode.AUTO, True)
    latest = customer.history.order_by("-history_id").first()
    assert (latest.history_user_id, latest.history_change_reason) == (staff_user.pk, "客户同意自动回复")
    audit = AuditEvent.objects.get(action="customer_updated")
    assert audit.actor_id == staff_user.pk and audit.reason == "客户同意自动回复"
    assert audit.payload == {
        "fields": ["session_mode", "auto_send_whitelisted"],
        "session_mode": "auto",
        "auto_send_whitelisted": True,
    }
    assert not LogEntry.objects.exists()


def test_admin_customer_unchanged_save_writes_nothing(admin_client, account_rows):
    # given the change page of a customer
    customer = account_rows.customer
    url = _change_url(customer)
    versions = customer.history.count()
    profile_versions = CustomerProfile.history.count()
    audit_rows = AuditEvent.objects.count()
    # when the supervisor saves without changing anything
    response = admin_client.post(url, change_form_data(admin_client.get(url)))
    # then no history, no audit and no admin log is written
    assert response.status_code == 302
    assert customer.history.count() == versions
    assert CustomerProfile.history.count() == profile_versions
    assert AuditEvent.objects.count() == audit_rows
    assert not LogEntry.objects.exists()


def test_admin_customer_profile_edit_goes_through_the_profile_service(admin_client, account_rows, staff_user):
    # given a customer whose budget is 月租 6000 以内
    customer = account_rows.customer
    url = _change_url(customer)
    form = change_form_data(admin_client.get(url), reason="客户提高预算")
    budget_key = next(key for key in form if key.endswith("-budget"))
    form[budget_key] = "月租 8000 以内"
    # when the supervisor edits the budget in the profile inline
    response = admin_client.post(url, form)
    # then the profile and its profile:budget memory change together, with history and audit
    assert response.status_code == 302
    assert CustomerProfile.objects.get(customer=customer).budget == "月租 8000 以内"
    item = MemoryItem.objects.get(customer=customer, key="profile:budget", status="active")
    assert item.content.endswith("月租 8000 以内")
    profile_version = CustomerProfile.history.order_by("-history_id").first()
    assert (profile_version.history_user_id, profile_version.history_change_reason) == (staff_user.pk, "客户提高预算")
    assert AuditEvent.objects.filter(action="memory_item_added", reason="客户提高预算").exists()
    # and the customer row itself is untouched (no empty history version)
    assert not customer.history.filter(history_change_reason="客户提高预算").exists()


def test_admin_customer_delete_is_erasure(admin_client, account_rows, staff_user):
    # given 王先生 with messages, memory, drafts and history
    customer = account_rows.customer
    url = reverse("admin:conversations_customer_delete", args=[customer.pk])
    # when a supervisor opens the delete page
    page = admin_client.get(url)
    # then it explains erasure and asks for a reason (messages and memory are listed, not forbidden)
    body = page.content.decode()
    assert page.status_code == 200
    assert "擦除" in body and 'name="reason"' in body and "没有删除" not in body
    # when they confirm with a reason
    response = admin_client.post(url, {"post": "yes", "reason": "客户要求删除个人信息"})
    # then everything about the customer is gone, history included, and one audit row remains
    assert response.status_code == 302
    assert not Customer.objects.filter(pk=customer.pk).exists()
    assert not Message.objects.exists() and not MemoryItem.objects.exists()
    assert not Customer.history.filter(id=customer.pk).exists()
    assert not MemoryItem.history.exists()
    erased = AuditEvent.objects.get(action="customer_erased")
    assert (erased.actor_id, erased.reason) == (staff_user.pk, "客户要求删除个人信息")
    # and the admin log in `default` keeps no copy of the customer's name
    assert not LogEntry.objects.filter(object_repr__contains="王先生").exists()


def test_admin_customer_bulk_delete_is_not_offered(admin_client, account_rows):
    # when the supervisor opens the customer list
    body = admin_client.get(reverse("admin:conversations_customer_changelist")).content.decode()
    # then erasure is not a bulk action
    assert 'value="delete_selected"' not in body


def test_admin_account_cannot_be_deleted(admin_client, account_rows, account):
    # when a supervisor tries to delete the account registry row
    response = admin_client.get(reverse("admin:platform_wecomaccount_delete", args=[account.pk]))
    # then it is refused: the account's database would be orphaned
    assert response.status_code == 403
