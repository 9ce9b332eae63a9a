"""The customer page: a settings or profile edit needs a reason, and erasure needs one too."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from conversations.models import AuditEvent, Customer, CustomerProfile, SessionMode


def change_form_data(response: Any, **overrides: Any) -> dict[str, Any]:
    """The POST a browser sends back for the customer page (form and inlines), with some fields changed."""
    data: dict[str, Any] = {}

    def put(prefix: str, form: Any) -> None:
        for name in form.fields:
            value = form[name].value()
            if value is True:
                data[f"{prefix}{name}"] = "on"
            elif value not in (None, False):
                data[f"{prefix}{name}"] = value

    put("", response.context["adminform"].form)
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        put(f"{formset.prefix}-", formset.management_form)
        for index, form in enumerate(formset.forms):
            put(f"{formset.prefix}-{index}-", form)
    return data | overrides


def test_customer_settings_edit_without_reason_is_refused_and_keeps_what_was_typed(admin_client, customer):
    url = reverse("admin:conversations_customer_change", args=[customer.pk])
    # when the supervisor switches the mode to auto without a reason
    form = change_form_data(admin_client.get(url), session_mode=SessionMode.AUTO, display_name="王建国", reason="")
    response = admin_client.post(url, form)
    # then the form comes back with their values and the error, and nothing was written
    assert response.status_code == 200
    assert "修改客户设置需要原因" in response.content.decode()
    bound = response.context["adminform"].form
    assert (bound["display_name"].value(), bound["session_mode"].value()) == ("王建国", SessionMode.AUTO)
    customer.refresh_from_db()
    assert (customer.display_name, customer.session_mode) == ("王先生", SessionMode.ASSISTED)
    assert not AuditEvent.objects.filter(action="customer_updated").exists()


def test_customer_profile_edit_without_reason_is_refused(admin_client, customer):
    url = reverse("admin:conversations_customer_change", args=[customer.pk])
    form = change_form_data(admin_client.get(url), reason="")
    budget_key = next(key for key in form if key.endswith("-budget"))
    form[budget_key] = "月租 5000 以内"
    # when the supervisor sets the budget without a reason
    response = admin_client.post(url, form)
    # then the profile is unchanged and the page says a reason is needed
    assert response.status_code == 200 and "修改画像需要原因" in response.content.decode()
    assert CustomerProfile.objects.get(customer=customer).budget == ""


def test_customer_erase_without_reason_is_refused(admin_client, customer, messages):
    url = reverse("admin:conversations_customer_delete", args=[customer.pk])
    # when the erase page is posted without a reason
    response = admin_client.post(url, {"post": "yes", "reason": ""}, follow=True)
    # then the customer is still there and the supervisor is told why
    assert Customer.objects.filter(pk=customer.pk).exists()
    assert "未擦除" in response.content.decode()
