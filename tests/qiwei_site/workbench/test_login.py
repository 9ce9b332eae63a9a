"""Workbench sign-in at /login/: any active user, staff or not; sign-out by POST."""

from __future__ import annotations

from django.test import Client

from tests.factories import UserFactory

PASSWORD = "pass-1234"  # tests.factories.UserFactory's password


def test_login_page_renders_in_chinese(db):
    # when an anonymous visitor opens the sign-in page coming from the Workbench
    response = Client().get("/login/?next=/")
    # then the Chinese form in the Workbench look is shown and remembers where to go back to
    body = response.content.decode()
    assert response.status_code == 200
    assert "<title>登录 · 智能会话" in body
    assert "/static/workbench/workbench.css" in body
    assert 'name="next" value="/"' in body
    assert "https://" not in body and "http://" not in body


def test_login_non_staff_agent_with_membership_sees_the_workbench(agent_user, account):
    # given a customer-service agent who is not staff (the admin login refuses them)
    assert not agent_user.is_staff
    client = Client()
    # when they sign in on the Workbench login coming from the page
    response = client.post("/login/", {"username": agent_user.username, "password": PASSWORD, "next": "/"})
    # then they are sent back to the page, which now shows their account
    assert response.status_code == 302 and response["Location"] == "/"
    page = client.get("/")
    assert page.status_code == 200
    assert '"id": "acme"' in page.content.decode()


def test_login_without_next_goes_to_the_workbench(agent_user):
    # given an agent who opened /login/ directly
    # when they sign in
    response = Client().post("/login/", {"username": agent_user.username, "password": PASSWORD})
    # then they land on the Workbench, not on Django's /accounts/profile/
    assert response.status_code == 302 and response["Location"] == "/"


def test_login_wrong_password_shows_an_error(agent_user):
    # when an agent mistypes their password
    client = Client()
    response = client.post("/login/", {"username": agent_user.username, "password": "wrong-pass", "next": "/"})
    # then the form comes back with a Chinese error and they are not signed in
    body = response.content.decode()
    assert response.status_code == 200
    assert 'role="alert"' in body and "密码" in body
    assert "Please enter" not in body
    assert client.get("/")["Location"] == "/login/?next=/"


def test_login_refuses_an_inactive_user(db):
    # given a deactivated agent
    former = UserFactory(username="former_agent", is_active=False)
    # when they try to sign in with the right password
    response = Client().post("/login/", {"username": former.username, "password": PASSWORD})
    # then they stay on the sign-in page with an error
    assert response.status_code == 200 and 'role="alert"' in response.content.decode()


def test_login_rejects_an_outside_next_url(agent_user):
    # when a crafted link tries to send the agent elsewhere after sign-in
    response = Client().post(
        "/login/", {"username": agent_user.username, "password": PASSWORD, "next": "http://example.invalid/"}
    )
    # then they land on the Workbench instead
    assert response["Location"] == "/"


def test_login_page_sends_a_signed_in_user_to_the_workbench(agent_user):
    # given a signed-in agent
    client = Client()
    client.force_login(agent_user)
    # when they open the sign-in page again
    response = client.get("/login/")
    # then they go straight to the page
    assert response.status_code == 302 and response["Location"] == "/"


def test_logout_by_post_signs_out(agent_user):
    # given a signed-in agent
    client = Client()
    client.force_login(agent_user)
    # when they sign out (GET is refused: sign-out must not be a link a page can trigger)
    assert client.get("/logout/").status_code == 405
    response = client.post("/logout/")
    # then they are back on the sign-in page and the Workbench asks them to sign in again
    assert response.status_code == 302 and response["Location"] == "/login/"
    assert client.get("/")["Location"] == "/login/?next=/"
