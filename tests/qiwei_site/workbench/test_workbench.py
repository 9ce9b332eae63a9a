"""The Workbench page and its local read endpoints (spec §9)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.db import connections
from django.test import Client

from qiwei_site.platform import tenancy
from qiwei_site.platform.services import membership_grant
from tests.conftest import client_for
from tests.factories import CustomerFactory, MessageFactory, UserFactory

OVERVIEW = "/workbench/api/accounts/{account}/conversations/{cid}/overview/"


def test_workbench_page_redirects_anonymous_to_workbench_login(db):
    # given no session
    # when the page is requested
    response = Client().get("/")
    # then the user is sent to the Workbench sign-in (not the staff-only admin one) and comes back
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/"


def test_workbench_page_renders_for_member(agent_user, account):
    # given a logged-in customer-service agent of the account
    client = Client()
    client.force_login(agent_user)
    # when the page is requested
    response = client.get("/")
    # then the Chinese page shell renders with its own static files and the account list
    body = response.content.decode()
    assert response.status_code == 200
    assert "<title>智能会话" in body
    assert "/static/workbench/workbench.js" in body
    assert "/static/workbench/workbench.css" in body
    assert '"id": "acme"' in body
    assert "csrftoken" in response.cookies
    assert 'id="wb-generate-draft"' in body


@pytest.mark.parametrize(
    "path",
    [
        "workbench/workbench.js",
        "workbench/live.js",
        "workbench/time.js",
        "workbench/markdown.js",
        "workbench/business.js",
        "workbench/prompt.js",
        "workbench/workbench.css",
    ],
)
def test_workbench_static_files_are_local(path):
    # given the page's script and stylesheet are app static files (collected for whitenoise)
    # when the staticfiles finders look for them
    found = finders.find(path)
    # then they exist and load nothing from the internet (no CDN, no web fonts)
    assert found is not None
    text = Path(found).read_text(encoding="utf-8")
    assert "http://" not in text
    assert "https://" not in text
    assert "@import" not in text


def test_workbench_page_tells_the_script_the_time_zone(agent_user, account):
    # given a logged-in agent
    client = Client()
    client.force_login(agent_user)
    # when the page is rendered
    body = client.get("/").content.decode()
    # then the script learns settings.TIME_ZONE and its offset, loads its modules first, and says which zone
    assert '"time_zone": "Asia/Shanghai"' in body
    assert '"utc_offset_minutes": 480' in body
    assert body.index("workbench/time.js") < body.index("workbench/live.js") < body.index("workbench/workbench.js")
    assert "北京时间" in body
    assert 'id="wb-live-banner"' in body


def test_workbench_page_loads_nothing_from_the_internet(agent_user, account):
    # given a logged-in agent
    client = Client()
    client.force_login(agent_user)
    # when the page is rendered
    body = client.get("/").content.decode()
    # then every script and stylesheet is served by the project
    assert "https://" not in body
    assert "http://" not in body


def test_overview_returns_local_customer_data(agent_client, renting_customer):
    # given a customer with 35 messages, tasks, alerts, memory, drafts and audit
    # when the overview is read
    response = agent_client.get(OVERVIEW.format(account="acme", cid="wm_wang_001"))
    # then it holds the newest 30 messages in time order and only what is open
    assert response.status_code == 200
    data = response.json()
    assert data["customer"]["display_name"] == "王先生"
    messages = data["messages"]
    assert len(messages) == 30
    assert messages[0]["external_id"] == "wang_005"
    assert messages[-1]["external_id"] == "wang_034"
    assert [m["sent_at"] for m in messages] == sorted(m["sent_at"] for m in messages)
    assert {m["direction"] for m in messages} == {"inbound", "outbound"}
    profile = {field["name"]: field["value"] for field in data["profile"]}
    assert profile["budget"] == "月租 6000 以内"
    assert profile["layout"] == "两居室"
    assert [task["title"] for task in data["tasks"]] == ["周六上午带看两居室"]
    assert [alert["text"] for alert in data["alerts"]] == ["客户两次询问押金退还，注意跟进"]
    assert data["snapshot"]["version"] == 1
    assert "地铁" in data["snapshot"]["content"]
    assert "不考虑顶楼" in data["snapshot"]["content"]
    statuses = [draft["status"] for draft in data["drafts"]]
    assert statuses == ["pending", "sent"]
    assert data["drafts"][1]["delivery"]["status"] == "sent"
    assert [event["action"] for event in data["audit"]] == ["memory_item_added"]
    assert data["memory_admin_url"] == ""  # an agent cannot open memory in admin: no link to it


def test_workbench_links_memory_admin_only_for_those_who_can_open_it(agent_user, staff_user, renting_customer):
    # Given an agent (a member, not staff) and a supervisor (staff, with the memory permissions)
    agent, supervisor = Client(), Client()
    agent.force_login(agent_user)
    supervisor.force_login(staff_user)
    # When each opens the page and a customer's overview
    agent_page, supervisor_page = agent.get("/").content.decode(), supervisor.get("/").content.decode()
    agent_url = client_for(agent_user).get(OVERVIEW.format(account="acme", cid="wm_wang_001")).json()
    supervisor_url = client_for(staff_user).get(OVERVIEW.format(account="acme", cid="wm_wang_001")).json()
    # Then only the supervisor is offered the 记忆条目管理 link; the agent is told whom to ask
    assert 'id="wb-memory-admin"' not in agent_page and "请联系主管" in agent_page
    assert 'id="wb-memory-admin"' in supervisor_page
    assert agent_url["memory_admin_url"] == ""
    assert supervisor_url["memory_admin_url"].startswith("/admin/")


def test_overview_of_customer_without_snapshot_has_null_snapshot(agent_client, account):
    # given a brand-new customer with one message and no memory
    customer = CustomerFactory(conversation_id="wm_new_002", display_name="李女士")
    MessageFactory(customer=customer, text="你好，想看看浦东的一居室")
    # when the overview is read
    response = agent_client.get(OVERVIEW.format(account="acme", cid="wm_new_002"))
    # then it still answers, with no snapshot and no drafts
    assert response.status_code == 200
    assert response.json()["snapshot"] is None
    assert response.json()["drafts"] == []


def test_overview_unknown_conversation_is_404_with_code(agent_client, account):
    # when an unknown conversation is read
    response = agent_client.get(OVERVIEW.format(account="acme", cid="wm_nobody"))
    # then it is a 404 with a stable code
    assert response.status_code == 404
    assert response.json()["code"] == "conversation_not_found"


def test_overview_of_other_account_is_404(agent_client, renting_customer, other_account):
    # given globex has a customer with the same conversation id
    with tenancy.use_account(other_account.id):
        CustomerFactory(conversation_id="wm_wang_001", display_name="globex 的客户")
    # when an acme member reads it through globex
    response = agent_client.get(OVERVIEW.format(account="globex", cid="wm_wang_001"))
    # then the account does not exist for them
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_overview_of_own_account_never_shows_other_account_data(db, renting_customer, other_account):
    # given a globex member and a globex customer with the same conversation id
    globex_user = UserFactory()
    membership_grant(user=globex_user, account=other_account)
    with tenancy.use_account(other_account.id):
        CustomerFactory(conversation_id="wm_wang_001", display_name="赵先生")
    client = client_for(globex_user)
    # when they read their own account, then acme's
    own = client.get(OVERVIEW.format(account="globex", cid="wm_wang_001"))
    foreign = client.get(OVERVIEW.format(account="acme", cid="wm_wang_001"))
    # then they see only their customer, and acme is a 404
    assert own.status_code == 200
    assert own.json()["customer"]["display_name"] == "赵先生"
    assert own.json()["messages"] == []
    assert foreign.status_code == 404


def test_overview_requires_authentication(renting_customer):
    # when an anonymous client asks
    response = Client().get(OVERVIEW.format(account="acme", cid="wm_wang_001"))
    # then it is refused with the error format
    assert response.status_code in (401, 403)
    assert response.json()["code"] in ("not_authenticated", "permission_denied")


def test_overview_query_count_is_bounded(agent_client, renting_customer, django_assert_max_num_queries):
    # given a customer with many messages
    # when the overview is read, then the query count does not grow with the data
    # (counted on the account's own connection, where the customer's rows are: pytest-django's
    # counter watches `default` unless told otherwise — found by the mutation review of issue 40)
    with django_assert_max_num_queries(20, connection=connections["acct_acme"]) as counted:
        response = agent_client.get(OVERVIEW.format(account="acme", cid="wm_wang_001"))
    assert response.status_code == 200
    assert len(counted) > 0


def test_account_list_shows_only_member_accounts(agent_client, other_account):
    # given an agent of acme only
    # when they list accounts
    response = agent_client.get("/workbench/api/accounts/")
    # then globex is not there
    assert response.status_code == 200
    assert [account["id"] for account in response.json()["results"]] == ["acme"]


def test_conversation_list_counts_what_needs_attention(agent_client, renting_customer):
    # given 王先生 and a quiet second customer
    CustomerFactory(conversation_id="wm_quiet_003", display_name="陈小姐")
    # when the list is read
    response = agent_client.get("/workbench/api/accounts/acme/conversations/")
    # then the active customer comes first with its counts and the last message preview
    assert response.status_code == 200
    first, second = response.json()["results"]
    assert first["conversation_id"] == "wm_wang_001"
    assert first["pending_drafts"] == 1
    assert first["open_tasks"] == 1
    assert first["unresolved_alerts"] == 1
    assert first["last_message_text"].startswith("第34条")
    assert second["conversation_id"] == "wm_quiet_003"
    assert second["last_message_text"] is None


@pytest.mark.parametrize("account_id", ["NOT-VALID", "globex"])
def test_conversation_list_of_invisible_account_is_404(agent_client, other_account, account_id):
    # when an agent lists an invalid or foreign account
    response = agent_client.get(f"/workbench/api/accounts/{account_id}/conversations/")
    # then it is a 404, never a 500
    assert response.status_code == 404


def test_workbench_page_for_user_without_accounts_renders_empty_list(db):
    # given a logged-in user who belongs to no account
    user = UserFactory()
    client = Client()
    client.force_login(user)
    # when the page is requested
    response = client.get("/")
    # then it renders with an empty account list (the page explains there is nothing to see)
    assert response.status_code == 200
    assert '<script id="wb-initial-accounts" type="application/json">[]</script>' in response.content.decode()


def test_overview_returns_markup_verbatim_as_data(agent_client, account):
    # given a customer message that looks like markup
    customer = CustomerFactory(conversation_id="wm_markup_004", display_name="<b>周先生</b>")
    MessageFactory(customer=customer, text="<script>alert('x')</script> 想看两居室")
    # when the overview is read
    data = agent_client.get(OVERVIEW.format(account="acme", cid="wm_markup_004")).json()
    # then the text is returned verbatim as JSON data (the page renders it with textContent)
    assert data["customer"]["display_name"] == "<b>周先生</b>"
    assert data["messages"][0]["text"].startswith("<script>")


def test_workbench_times_are_iso_8601_in_shanghai(agent_client, account):
    # given a message sent at 11:05 UTC
    customer = CustomerFactory(conversation_id="wm_time_001", display_name="孙先生")
    MessageFactory(
        customer=customer, text="晚上七点能视频看房吗？", sent_at=dt.datetime(2026, 12, 1, 11, 5, tzinfo=dt.UTC)
    )
    # when the overview is read
    message = agent_client.get(OVERVIEW.format(account="acme", cid="wm_time_001")).json()["messages"][0]
    # then the time is ISO 8601 with the +08:00 offset of Asia/Shanghai (settings.TIME_ZONE)
    assert message["sent_at"] == "2026-12-01T19:05:00+08:00"


def test_workbench_audit_events_carry_chinese_labels(agent_client, renting_customer):
    # given 王先生's audit trail
    # when the overview is read
    audit = agent_client.get(OVERVIEW.format(account="acme", cid="wm_wang_001")).json()["audit"]
    # then each event names its action and its system actor in Chinese beside the stable codes
    assert [(event["action"], event["action_label"]) for event in audit] == [("memory_item_added", "人工添加记忆")]
    assert (audit[0]["actor_name"], audit[0]["actor_label"]) == ("capture", "记忆提取")
