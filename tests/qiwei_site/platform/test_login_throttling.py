"""Sign-in is throttled on both sign-in pages and on token authentication (issue 11)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import StaffUserFactory, UserFactory

PASSWORD = "pass-1234"


@pytest.fixture(autouse=True)
def _small_limits(settings):
    settings.AXES_FAILURE_LIMIT = 3


@pytest.mark.parametrize("login_url", ["/login/", "/admin/login/"])
def test_sign_in_locks_after_repeated_wrong_passwords(db, login_url):
    # given a supervisor and someone guessing their password
    user = StaffUserFactory(username="wang_manager")
    client = Client()
    for _ in range(3):
        client.post(login_url, {"username": user.username, "password": "wrong"})
    # when the right password follows the guesses
    response = client.post(login_url, {"username": user.username, "password": PASSWORD})
    # then the pair is locked out: no session, a Chinese lockout page
    assert response.status_code == 429
    assert "登录已暂时锁定" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_sign_in_lockout_is_per_user_and_address(db):
    # given an agent locked out after guessing
    locked = UserFactory(username="xiaoli")
    other = UserFactory(username="xiaozhang")
    client = Client()
    for _ in range(3):
        client.post("/login/", {"username": locked.username, "password": "wrong"})
    # when a colleague signs in from the same address, then that still works
    response = client.post("/login/", {"username": other.username, "password": PASSWORD})
    assert response.status_code == 302


def test_lockouts_are_visible_to_staff_in_admin(db):
    # given a lockout
    victim = UserFactory(username="liu")
    for _ in range(3):
        Client().post("/login/", {"username": victim.username, "password": "wrong"})
    # when a superuser opens the access attempts in admin, then the locked username is listed
    boss = StaffUserFactory(username="boss", is_superuser=True)
    client = Client()
    client.force_login(boss)
    body = client.get(reverse("admin:axes_accessattempt_changelist")).content.decode()
    assert "liu" in body


def test_wrong_tokens_are_throttled_per_address(db, settings):
    # given an address that sends wrong tokens
    settings.QIWEI_TOKEN_FAILURES_PER_MINUTE = 3
    client = Client(REMOTE_ADDR="192.0.2.77")  # its own address: other tests' failures never count here
    codes = [
        client.get("/api/accounts/acme/conversations/", HTTP_AUTHORIZATION="Token wrong-token").status_code
        for _ in range(5)
    ]
    # then after the limit it gets 429 with Retry-After, as JSON
    assert codes[:3] == [401, 401, 401]
    assert codes[3:] == [429, 429]
    response = client.get("/api/accounts/acme/conversations/", HTTP_AUTHORIZATION="Token wrong-token")
    assert response["Retry-After"]
    assert response.json()["code"] == "throttled"
