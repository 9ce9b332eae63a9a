"""Two accounts sharing a conversation id never see each other through the API or the admin."""

from __future__ import annotations

import pytest
from django.test import Client

from qiwei_site.platform.middleware import SESSION_KEY
from qiwei_site.platform.services import membership_grant
from qiwei_site.platform.tenancy import use_account
from tests.conftest import client_for
from tests.factories import CustomerFactory, StaffUserFactory, UserFactory


def test_customer_api_lists_only_the_accounts_customers(account, other_account, staff_client):
    CustomerFactory(conversation_id="wm_shared", display_name="王先生")
    with use_account(other_account.id):
        CustomerFactory(conversation_id="wm_shared", display_name="赵女士")
    response = staff_client.get("/api/accounts/acme/conversations/")
    assert response.status_code == 200
    assert [c["display_name"] for c in response.json()["results"]] == ["王先生"]


def test_customer_api_user_without_membership_gets_404(account, other_account, staff_client):
    with use_account(other_account.id):
        CustomerFactory(conversation_id="wm_shared")
    response = staff_client.get("/api/accounts/globex/conversations/wm_shared/")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_customer_api_unknown_account_is_404(account, staff_client):
    assert staff_client.get("/api/accounts/nobody/conversations/").status_code == 404
    assert staff_client.get("/api/accounts/BAD..id/conversations/").status_code == 404


def test_customer_api_anonymous_is_401(account, client):
    response = client.get("/api/accounts/acme/conversations/")
    assert response.status_code in (401, 403)


def test_customer_api_unknown_conversation_is_404_with_code(account, staff_client):
    response = staff_client.get("/api/accounts/acme/conversations/wm_nobody/")
    assert response.status_code == 404
    assert response.json()["code"] == "conversation_not_found"


def test_admin_shows_only_the_chosen_accounts_customers(account, other_account):
    # Given a supervisor who may see both accounts
    supervisor = StaffUserFactory()
    membership_grant(user=supervisor, account=account)
    membership_grant(user=supervisor, account=other_account)
    CustomerFactory(conversation_id="wm_shared", display_name="王先生")
    with use_account(other_account.id):
        CustomerFactory(conversation_id="wm_shared", display_name="赵女士")
    browser = Client()
    browser.force_login(supervisor)
    # When they switch to globex
    response = browser.post("/admin/account/switch/", {"account_id": "globex"})
    assert response.status_code == 302
    page = browser.get("/admin/conversations/customer/").content.decode()
    # Then only globex's customer is listed
    assert "赵女士" in page and "王先生" not in page


def test_admin_switch_to_account_without_membership_is_refused(account, other_account):
    supervisor = StaffUserFactory()
    membership_grant(user=supervisor, account=account)
    browser = Client()
    browser.force_login(supervisor)
    browser.post("/admin/account/switch/", {"account_id": "globex"})
    assert browser.session.get(SESSION_KEY) is None


def test_admin_without_account_hides_customer_data(account):
    supervisor = StaffUserFactory()
    membership_grant(user=supervisor, account=account)
    browser = Client()
    browser.force_login(supervisor)
    index = browser.get("/admin/").content.decode()
    assert "请先选择账号" in index
    assert browser.get("/admin/conversations/customer/").status_code == 403


def test_api_agent_of_one_account_cannot_read_another(account, other_account):
    agent = UserFactory()
    membership_grant(user=agent, account=other_account)
    api = client_for(agent)
    assert api.get("/api/accounts/acme/conversations/").status_code == 404
    assert api.get("/api/accounts/globex/conversations/").status_code == 200


def test_admin_open_in_account_asks_then_chooses_the_account_and_opens_the_row(account, other_account):
    # Given a supervisor of both accounts, looking at acme, and a customer of globex
    supervisor = StaffUserFactory()
    membership_grant(user=supervisor, account=account)
    membership_grant(user=supervisor, account=other_account)
    with use_account(other_account.id):
        customer = CustomerFactory(conversation_id="wm_globex_zhao", display_name="赵女士")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(supervisor)
    session = browser.session
    session[SESSION_KEY] = "acme"
    session.save()
    page = f"/admin/conversations/customer/{customer.pk}/change/"
    # When a Workbench link for globex is followed, the admin first asks (a GET switches nothing)
    asked = browser.get("/admin/account/open/", {"account_id": "globex", "next": page})
    assert asked.status_code == 200 and "切换并打开" in asked.content.decode()
    assert browser.session.get(SESSION_KEY) == "acme"
    # And a POST without the page's CSRF token switches nothing either
    assert browser.post("/admin/account/open/", {"account_id": "globex", "next": page}).status_code == 403
    assert browser.session.get(SESSION_KEY) == "acme"
    # When the supervisor confirms on that page
    token = asked.context["csrf_token"]
    response = browser.post(
        "/admin/account/open/", {"account_id": "globex", "next": page, "csrfmiddlewaretoken": str(token)}
    )
    # Then the admin now shows globex and lands on the row asked for
    assert response.status_code == 302 and response["Location"] == page
    assert browser.session.get(SESSION_KEY) == "globex"
    assert "赵女士" in browser.get(page).content.decode()
    # And a link into the account already chosen opens at once
    again = browser.get("/admin/account/open/", {"account_id": "globex", "next": page})
    assert again.status_code == 302 and again["Location"] == page


@pytest.mark.parametrize("target", ["https://evil.example/admin/", "/workbench/", "//evil.example/x"])
def test_admin_open_in_account_never_leaves_the_admin(account, target):
    supervisor = StaffUserFactory()
    membership_grant(user=supervisor, account=account)
    browser = Client()
    browser.force_login(supervisor)
    response = browser.post("/admin/account/open/", {"account_id": "acme", "next": target})
    assert response.status_code == 302 and response["Location"] == "/admin/"


def test_admin_open_in_account_without_membership_is_refused(account, other_account):
    supervisor = StaffUserFactory()
    membership_grant(user=supervisor, account=account)
    browser = Client()
    browser.force_login(supervisor)
    response = browser.get("/admin/account/open/", {"account_id": "globex", "next": "/admin/conversations/customer/"})
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert browser.session.get(SESSION_KEY) != "globex"
