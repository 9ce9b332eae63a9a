"""Admin pages that must not show what a supervisor should not read or cannot open (issue 39,
item 4): an API token whole only once, as it is made, then masked (list, page, admin log); and
no link to a page the user may not open (a staff member without memory permissions)."""

from __future__ import annotations

from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from qiwei_site.platform.middleware import SESSION_KEY
from qiwei_site.platform.services import membership_grant
from tests.factories import UserFactory


def test_token_is_shown_once_when_made_then_masked(admin_client, staff_user):
    # given an agent who needs an API token
    agent = UserFactory(username="li_agent")
    # when the supervisor makes one in admin
    made = admin_client.post(reverse("admin:authtoken_tokenproxy_add"), {"user": agent.pk}, follow=True)
    token = Token.objects.get(user=agent)
    # then the page that follows shows the whole key once, saying to copy it now
    assert token.key in made.content.decode() and "请现在复制保存" in made.content.decode()
    # and afterwards the list, the token's page and the admin log show its first characters only
    listing = admin_client.get(reverse("admin:authtoken_tokenproxy_changelist")).content.decode()
    page = admin_client.get(reverse("admin:authtoken_tokenproxy_change", args=[agent.pk])).content.decode()
    for body in (listing, page):
        assert token.key not in body and f"{token.key[:4]}…（已隐藏）" in body
    assert all(token.key not in entry.object_repr for entry in LogEntry.objects.all())
    assert token.key not in admin_client.get(reverse("admin:index")).content.decode()


def test_token_delete_page_names_it_masked(admin_client, staff_user):
    agent = UserFactory(username="li_agent")
    token = Token.objects.create(user=agent)
    page = admin_client.get(reverse("admin:authtoken_tokenproxy_delete", args=[agent.pk])).content.decode()
    assert token.key not in page and "确定删除" in page
    done = admin_client.post(
        reverse("admin:authtoken_tokenproxy_delete", args=[agent.pk]), {"post": "yes"}, follow=True
    )
    assert token.key not in done.content.decode() and not Token.objects.filter(user=agent).exists()


def test_token_history_and_its_users_delete_page_name_it_masked(admin_client, staff_user):
    # Given an agent with a token (found by the review: both pages named it by its whole key)
    agent = UserFactory(username="li_agent")
    token = Token.objects.create(user=agent)
    # When the supervisor opens the token's history and the agent's delete confirmation
    history = admin_client.get(reverse("admin:authtoken_tokenproxy_history", args=[agent.pk]))
    delete = admin_client.get(reverse("admin:auth_user_delete", args=[agent.pk]))
    # Then both name the token by its first characters only
    for response in (history, delete):
        body = response.content.decode()
        assert response.status_code == 200
        assert token.key not in body and f"{token.key[:4]}…（已隐藏）" in body


def test_admin_shows_no_memory_link_to_staff_without_memory_permissions(account):
    # given a staff member of the account who may only read the audit
    clerk = UserFactory(username="audit_clerk", is_staff=True)
    clerk.user_permissions.add(Permission.objects.get(codename="view_auditevent"))
    membership_grant(user=clerk, account=account)
    client = Client()
    client.force_login(clerk)
    session = client.session
    session[SESSION_KEY] = account.id
    session.save()
    # when they open the admin's start page
    body = client.get(reverse("admin:index")).content.decode()
    # then nothing links to the memory items they cannot open
    assert "/admin/memory/memoryitem/" not in body


def test_admin_refuses_an_agent_without_links_into_it(agent_user):
    # an agent (not staff) is sent to sign in, and the page links nowhere inside the admin
    client = Client()
    client.force_login(agent_user)
    response = client.get(reverse("admin:index"), follow=True)
    assert "/admin/memory/" not in response.content.decode()
