"""What the Workbench's 业务 panel and prompt view read from the server (issue 12, items 4 and 6):
the overview carries the open tasks, alerts and recommendations as their own API shapes them, the
page's version moves when any of them is written, and the page learns the business choices and,
for staff, where the admin pages of what a prompt quotes are."""

from __future__ import annotations

import datetime as dt

from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext

from conversations.business import (
    recommendation_create,
    recommendation_feedback_record,
    recommendation_resolve,
    task_create,
    task_resolve,
)
from conversations.services import alert_resolve
from qiwei_site.workbench.views import ADMIN_ID_PLACEHOLDER, page_config
from tests.factories import CustomerFactory

OVERVIEW = "/workbench/api/accounts/acme/conversations/wm_wang_001/overview/"
VERSION = "/workbench/api/accounts/acme/conversations/wm_wang_001/version/"


def _overview(client) -> dict:
    response = client.get(OVERVIEW)
    assert response.status_code == 200
    return response.json()


def test_overview_business_state_is_shaped_like_its_api(agent_client, renting_customer, staff_user):
    # given 王先生 has an open task, an open alert and a recommendation the customer declined
    recommendation = recommendation_create(
        customer=renting_customer, text="推荐地铁站旁的低楼层两居室，月租5800", actor=staff_user
    )
    recommendation_feedback_record(
        recommendation=recommendation, source="customer", verdict="declined", comment="离公司太远", actor=staff_user
    )
    # when the Workbench reads the overview
    data = _overview(agent_client)
    # then each open row is exactly what the business API answers for it
    [task] = data["tasks"]
    assert task == agent_client.get(f"/api/accounts/acme/tasks/{task['id']}/").json()
    assert task["status_label"] == "未完成"
    [alert] = data["alerts"]
    assert alert == agent_client.get(f"/api/accounts/acme/alerts/{alert['id']}/").json()
    assert (alert["level_label"], alert["kind_label"]) == ("警告", "人工")
    [shown] = data["recommendations"]
    assert shown == agent_client.get(f"/api/accounts/acme/recommendations/{recommendation.pk}/").json()
    latest = shown["latest_feedback"]
    assert (latest["source_label"], latest["verdict_label"], latest["comment"]) == ("客户", "不接受", "离公司太远")


def test_overview_leaves_out_resolved_business_state(agent_client, renting_customer, staff_user):
    # given everything open for 王先生 is closed, with reasons
    data = _overview(agent_client)
    recommendation = recommendation_create(customer=renting_customer, text="推荐张江两居室", actor=staff_user)
    for task in renting_customer.tasks.filter(status="open"):
        task_resolve(task=task, actor=staff_user, reason="已带看")
    for alert in renting_customer.alerts.filter(resolved=False):
        alert_resolve(alert=alert, actor=staff_user, reason="已向客户说明押金规则")
    recommendation_resolve(recommendation=recommendation, actor=staff_user, reason="客户已签约其他房源")
    # when the overview is read again
    after = _overview(agent_client)
    # then the panel has nothing open to show
    assert data["tasks"] and data["alerts"]
    assert (after["tasks"], after["alerts"], after["recommendations"]) == ([], [], [])


def test_overview_tasks_come_soonest_due_first(agent_client, account, staff_user):
    # given three tasks for 李女士: one without a due time, one for Friday, one for Wednesday
    customer = CustomerFactory(conversation_id="wm_li_004", display_name="李女士")
    task_create(customer=customer, title="整理意向房源清单", actor=staff_user)
    task_create(
        customer=customer, title="周五带看", due_at=dt.datetime(2026, 12, 4, 2, tzinfo=dt.UTC), actor=staff_user
    )
    task_create(
        customer=customer, title="周三回电", due_at=dt.datetime(2026, 12, 2, 2, tzinfo=dt.UTC), actor=staff_user
    )
    # when the overview is read
    data = agent_client.get("/workbench/api/accounts/acme/conversations/wm_li_004/overview/").json()
    # then the soonest is first and the undated one last, with due times in Beijing time
    assert [task["title"] for task in data["tasks"]] == ["周三回电", "周五带看", "整理意向房源清单"]
    assert data["tasks"][0]["due_at"] == "2026-12-02T10:00:00+08:00"


def test_version_moves_when_feedback_is_recorded(agent_client, renting_customer, staff_user):
    # given the page holds 王先生's version, with an open recommendation
    recommendation = recommendation_create(customer=renting_customer, text="推荐低楼层两居室", actor=staff_user)
    before = agent_client.get(VERSION)["ETag"]
    # when an agent records the customer's feedback on it
    recommendation_feedback_record(
        recommendation=recommendation, source="customer", verdict="interested", actor=staff_user
    )
    # then the poll is answered with a new version, not a 304
    response = agent_client.get(VERSION, HTTP_IF_NONE_MATCH=before)
    assert response.status_code == 200
    assert response["ETag"] != before


def test_version_moves_when_a_task_is_added_or_resolved(agent_client, renting_customer, staff_user):
    # given the page holds 王先生's version
    first = agent_client.get(VERSION)["ETag"]
    # when a task is added, then resolved
    task = task_create(customer=renting_customer, title="周日回电确认", actor=staff_user)
    second = agent_client.get(VERSION)["ETag"]
    task_resolve(task=task, actor=staff_user, reason="已回电")
    third = agent_client.get(VERSION)["ETag"]
    # then each write gives a new version
    assert len({first, second, third}) == 3


def test_overview_query_count_does_not_grow_with_recommendations(agent_client, renting_customer, staff_user):
    # given 王先生 has one recommendation with feedback
    def queries() -> int:
        with CaptureQueriesContext(connections["acct_acme"]) as captured:
            assert agent_client.get(OVERVIEW).status_code == 200
        return len(captured.captured_queries)

    def recommend(text: str) -> None:
        recommendation = recommendation_create(customer=renting_customer, text=text, actor=staff_user)
        for verdict in ("interested", "neutral"):
            recommendation_feedback_record(
                recommendation=recommendation, source="agent", verdict=verdict, actor=staff_user
            )

    recommend("推荐地铁旁两居室")
    small = queries()
    # when five more recommendations, each with two pieces of feedback, are added
    for index in range(5):
        recommend(f"推荐第{index}套房源")
    # then the overview reads them with the same number of queries
    assert queries() == small


def test_page_config_gives_staff_the_admin_pages_of_what_a_prompt_quotes(staff_user, agent_user):
    # given a supervisor (staff) and an agent (not staff)
    # when the page's configuration is built for each
    staff = page_config(staff_user)
    agent = page_config(agent_user)
    # then staff learn each admin change page, with a placeholder for the id, and the agent none
    urls = staff["admin_urls"]
    assert urls["memory_item"] == f"/admin/memory/memoryitem/{ADMIN_ID_PLACEHOLDER}/change/"
    assert urls["message"] == f"/admin/conversations/message/{ADMIN_ID_PLACEHOLDER}/change/"
    assert set(urls) == {"memory_item", "message", "task", "alert", "recommendation"}
    assert (staff["is_staff"], agent["is_staff"], agent["admin_urls"]) == (True, False, {})


def test_page_config_labels_the_feedback_choices_in_chinese(agent_user):
    # given an agent
    # when the page's configuration is built
    choices = page_config(agent_user)["choices"]
    # then the feedback form's options are the models' values with their Chinese labels
    assert choices["feedback_source"] == [
        {"value": "customer", "label": "客户"},
        {"value": "agent", "label": "客服"},
    ]
    assert [option["label"] for option in choices["feedback_verdict"]] == ["接受", "感兴趣", "未表态", "不接受"]


def test_workbench_page_loads_the_business_and_prompt_scripts_after_the_workbench(agent_user, account):
    # given a logged-in agent
    client = Client()
    client.force_login(agent_user)
    # when the page is rendered
    body = client.get("/").content.decode()
    # then the panels' scripts come after workbench.js (they register with it) and the dialog is there
    workbench = body.index("workbench/workbench.js")
    assert body.index("workbench/markdown.js") < workbench
    assert workbench < body.index("workbench/business.js")
    assert workbench < body.index("workbench/prompt.js")
    assert 'id="wb-business"' in body
    assert 'id="wb-prompt-dialog"' in body
    assert '"feedback_verdict"' in body
