"""The business-state API (issue 12, item 4): tasks, alerts and recommendations of a conversation —
list with filters, create, update, resolve with a reason, feedback — for any member of the account
(agents included), audited, with JSON 4xx on bad input and nothing visible across accounts."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from conversations.business import alert_create, recommendation_create, task_create
from conversations.models import AlertKind, AlertLevel, AuditEvent, Recommendation, Task
from conversations.services import alert_raise
from qiwei_site.platform.tenancy import current_alias, use_account
from tests.factories import BASE_TIME, CustomerFactory

API = "/api/accounts/acme"


@pytest.fixture
def customer(account):
    return CustomerFactory(conversation_id="wm_sun_002", display_name="孙先生")


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["code"] and body["detail"]
    return body


# --- tasks ----------------------------------------------------------------------------------------


def test_task_api_creates_lists_updates_and_resolves_a_task_audited(customer, agent_client, agent_user):
    base = f"{API}/conversations/wm_sun_002/tasks/"
    # when an agent creates a task with a due time
    created = agent_client.post(
        base, {"title": "周日下午带看回龙观三居室", "due_at": "2026-11-08T14:00:00+08:00"}, format="json"
    )
    # then it answers 201 with the open task
    assert created.status_code == 201, created.content
    task = created.json()
    assert (task["status"], task["status_label"], task["conversation_id"]) == ("open", "未完成", "wm_sun_002")
    assert task["due_at"].startswith("2026-11-08T14:00:00") and task["resolved_at"] is None
    # when it is moved and then resolved with a reason
    moved = agent_client.patch(f"{API}/tasks/{task['id']}/", {"due_at": "2026-11-09T10:00:00+08:00"}, format="json")
    assert moved.status_code == 200 and moved.json()["due_at"].startswith("2026-11-09T10:00:00")
    done = agent_client.post(f"{API}/tasks/{task['id']}/resolve/", {"reason": "已带看，客户考虑中"}, format="json")
    # then it is done, with who and why, and leaves the default (open) list
    assert done.status_code == 200
    assert (done.json()["status"], done.json()["resolution_reason"]) == ("done", "已带看，客户考虑中")
    assert done.json()["resolved_by_name"] == agent_user.username
    assert agent_client.get(base).json()["results"] == []
    assert [t["id"] for t in agent_client.get(base, {"status": "done"}).json()["results"]] == [task["id"]]
    actions = set(AuditEvent.objects.filter(actor_id=agent_user.pk).values_list("action", flat=True))
    assert {"task_created", "task_updated", "task_resolved"} <= actions


def test_task_api_lists_soonest_due_first_with_undated_tasks_last(customer, agent_client, staff_user):
    # given three open tasks, one without a due time
    task_create(customer=customer, title="发送小区资料", actor=staff_user)
    task_create(customer=customer, title="周六带看", due_at=BASE_TIME + dt.timedelta(days=6), actor=staff_user)
    task_create(customer=customer, title="周五回电", due_at=BASE_TIME + dt.timedelta(days=5), actor=staff_user)
    # then the list puts the soonest first and the undated one last
    titles = [t["title"] for t in agent_client.get(f"{API}/conversations/wm_sun_002/tasks/").json()["results"]]
    assert titles == ["周五回电", "周六带看", "发送小区资料"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "title"),
        ({"title": ""}, "title"),
        ({"title": "回电", "due_at": "下周一"}, "due_at"),
        ({"title": "回电", "priority": "high"}, "priority"),
        ({"title": ["回电"]}, "title"),
    ],
)
def test_task_api_create_refuses_bad_input_with_json_400(customer, agent_client, body, field):
    response = agent_client.post(f"{API}/conversations/wm_sun_002/tasks/", body, format="json")
    assert field in _error(response, 400)["errors"]
    assert not Task.objects.exists()


def test_task_api_refusals_are_json_4xx(customer, agent_client, staff_user):
    task = task_create(customer=customer, title="周六带看", actor=staff_user)
    # a resolve without a reason, an unknown status filter, an unknown task, a non-editable field
    assert "reason" in _error(agent_client.post(f"{API}/tasks/{task.pk}/resolve/", {}, format="json"), 400)["errors"]
    assert _error(agent_client.get(f"{API}/conversations/wm_sun_002/tasks/", {"status": "late"}), 400)["code"] == (
        "invalid_status"
    )
    assert _error(agent_client.patch(f"{API}/tasks/999999/", {"title": "x"}, format="json"), 404)["code"] == (
        "task_not_found"
    )
    assert (
        "status"
        in _error(agent_client.patch(f"{API}/tasks/{task.pk}/", {"status": "done"}, format="json"), 400)["errors"]
    )
    assert _error(agent_client.get(f"{API}/conversations/wm_nobody/tasks/"), 404)["code"] == "conversation_not_found"
    # and a done task answers 409 to an edit
    agent_client.post(f"{API}/tasks/{task.pk}/resolve/", {"reason": "已带看"}, format="json")
    assert _error(agent_client.patch(f"{API}/tasks/{task.pk}/", {"title": "改"}, format="json"), 409)["code"] == (
        "task_done"
    )


# --- alerts ---------------------------------------------------------------------------------------


def test_alert_api_creates_a_manual_alert_and_filters_by_kind_and_level(customer, agent_client, staff_user):
    # given an automatic alert
    alert_raise(
        customer=customer,
        kind=AlertKind.PERSONAL_NUMBER,
        level=AlertLevel.INFO,
        text="客户消息 #3 含身份证号，已遮蔽",
        actor="capture",
        cause="message:3",
    )
    base = f"{API}/conversations/wm_sun_002/alerts/"
    # when an agent raises one by hand
    created = agent_client.post(base, {"text": "客户对中介费很敏感，先谈房源", "level": "warning"}, format="json")
    assert created.status_code == 201, created.content
    assert (created.json()["kind"], created.json()["kind_label"]) == ("manual", "人工")
    # then the filters pick each
    assert [a["kind"] for a in agent_client.get(base, {"kind": "manual"}).json()["results"]] == ["manual"]
    assert [a["level"] for a in agent_client.get(base, {"level": "info"}).json()["results"]] == ["info"]
    assert len(agent_client.get(base, {"kind": "all", "level": "all"}).json()["results"]) == 2
    assert _error(agent_client.get(base, {"level": "panic"}), 400)["code"] == "invalid_level"
    assert _error(agent_client.post(base, {"text": "x", "level": "panic"}, format="json"), 400)["errors"]["level"]


def test_alert_api_updates_then_resolves_with_a_reason(customer, agent_client, staff_user):
    alert = alert_create(customer=customer, text="客户要求只在工作日联系", actor=staff_user)
    # when the level and text are changed, then the answer shows them
    changed = agent_client.patch(
        f"{API}/alerts/{alert.pk}/", {"level": "critical", "text": "客户要求只在工作日白天联系"}, format="json"
    )
    assert changed.status_code == 200
    assert (changed.json()["level"], changed.json()["level_label"]) == ("critical", "严重")
    # when resolved with a reason, then it is resolved and further edits are 409
    resolved = agent_client.post(f"{API}/alerts/{alert.pk}/resolve/", {"reason": "已和客户约定"}, format="json")
    assert resolved.json()["resolved"] is True and resolved.json()["resolution_reason"] == "已和客户约定"
    assert agent_client.get(f"{API}/alerts/{alert.pk}/").json()["resolved"] is True
    assert _error(agent_client.patch(f"{API}/alerts/{alert.pk}/", {"level": "info"}, format="json"), 409)["code"] == (
        "alert_resolved"
    )


def test_alert_api_refuses_rewriting_an_automatic_alert(customer, agent_client):
    alert = alert_raise(
        customer=customer,
        kind=AlertKind.MESSAGE_BLOCKED,
        level=AlertLevel.WARNING,
        text="客户消息 #9 被安全扫描拦截",
        actor="capture",
        cause="message:9",
    )
    response = agent_client.patch(f"{API}/alerts/{alert.pk}/", {"text": "改写"}, format="json")
    assert _error(response, 400)["code"] == "automatic_alert_text"


# --- recommendations -----------------------------------------------------------------------------


def test_recommendation_api_records_feedback_history_and_resolves(customer, agent_client):
    base = f"{API}/conversations/wm_sun_002/recommendations/"
    created = agent_client.post(base, {"text": "推荐回龙观三居室，月租7800"}, format="json")
    assert created.status_code == 201, created.content
    recommendation = created.json()
    assert recommendation["latest_feedback"] is None and recommendation["feedback"] == []
    url = f"{API}/recommendations/{recommendation['id']}/"
    # when the customer's answer and then the agent's judgement are recorded
    first = agent_client.post(
        f"{url}feedback/", {"source": "customer", "verdict": "declined", "comment": "离地铁太远"}, format="json"
    )
    second = agent_client.post(
        f"{url}feedback/",
        {"source": "agent", "verdict": "neutral", "comment": "可推荐同小区靠地铁的楼栋"},
        format="json",
    )
    # then each answers 201 with the recommendation, its history newest first
    assert first.status_code == second.status_code == 201
    body = second.json()
    assert [(f["source"], f["verdict_label"]) for f in body["feedback"]] == [
        ("agent", "未表态"),
        ("customer", "不接受"),
    ]
    assert body["latest_feedback"]["comment"] == "可推荐同小区靠地铁的楼栋"
    assert body["latest_feedback"]["source_label"] == "客服"
    # when its text is edited and it is resolved, then it leaves the open list
    assert agent_client.patch(url, {"text": "推荐回龙观三居室（近地铁楼栋）"}, format="json").status_code == 200
    resolved = agent_client.post(f"{url}resolve/", {"reason": "客户改看昌平线沿线"}, format="json")
    assert (resolved.json()["status"], resolved.json()["status_label"]) == ("resolved", "已结束")
    assert agent_client.get(base).json()["results"] == []
    assert len(agent_client.get(base, {"status": "all"}).json()["results"]) == 1
    # and feedback on it is now a 409
    late = agent_client.post(f"{url}feedback/", {"source": "customer", "verdict": "accepted"}, format="json")
    assert _error(late, 409)["code"] == "recommendation_resolved"


@pytest.mark.parametrize(
    "body",
    [
        {"verdict": "accepted"},
        {"source": "customer"},
        {"source": "landlord", "verdict": "accepted"},
        {"source": "customer", "verdict": "accepted", "score": 5},
        {"source": "customer", "verdict": "accepted", "comment": "好" * 301},
    ],
)
def test_recommendation_feedback_api_refuses_bad_input(customer, agent_client, staff_user, body):
    recommendation = recommendation_create(customer=customer, text="推荐望京两居室", actor=staff_user)
    response = agent_client.post(f"{API}/recommendations/{recommendation.pk}/feedback/", body, format="json")
    assert _error(response, 400)["errors"]
    assert not Recommendation.objects.get(pk=recommendation.pk).feedback.exists()


def test_recommendation_api_list_queries_do_not_grow_with_the_rows(customer, agent_client, staff_user):
    def add(count: int) -> None:
        for index in range(count):
            recommendation = recommendation_create(customer=customer, text=f"推荐房源{index + 1}号", actor=staff_user)
            agent_client.post(
                f"{API}/recommendations/{recommendation.pk}/feedback/",
                {"source": "customer", "verdict": "interested"},
                format="json",
            )

    def list_queries() -> tuple[int, list[dict]]:
        with CaptureQueriesContext(connections[current_alias()]) as captured:
            results = agent_client.get(f"{API}/conversations/wm_sun_002/recommendations/").json()["results"]
        return len(captured.captured_queries), results

    # given one recommendation with feedback, then three
    add(1)
    one, _results = list_queries()
    add(2)
    three, results = list_queries()
    # then listing three costs the account database no more queries than listing one
    assert len(results) == 3 and all(r["latest_feedback"]["verdict"] == "interested" for r in results)
    assert 0 < one == three


# --- across accounts ------------------------------------------------------------------------------


def test_business_state_of_another_account_is_invisible(customer, other_account, agent_client, staff_user):
    # given the same conversation id in another account, with a task
    with use_account(other_account.id):
        other = CustomerFactory(conversation_id="wm_sun_002", display_name="孙先生（另一个账号）")
        foreign = task_create(customer=other, title="另一账号的待办", actor=staff_user)
    # when acme's agent lists acme's tasks, then the other account's task is not there
    assert agent_client.get(f"{API}/conversations/wm_sun_002/tasks/").json()["results"] == []
    # and the other account's paths are a 404 for someone who is not its member
    for path in (
        "/api/accounts/globex/conversations/wm_sun_002/tasks/",
        f"/api/accounts/globex/tasks/{foreign.pk}/",
        "/api/accounts/globex/conversations/wm_sun_002/alerts/",
        "/api/accounts/globex/conversations/wm_sun_002/recommendations/",
    ):
        assert _error(agent_client.get(path), 404)["code"] == "not_found", path
    refused = agent_client.post(f"/api/accounts/globex/tasks/{foreign.pk}/resolve/", {"reason": "x"}, format="json")
    assert refused.status_code == 404
    with use_account(other_account.id):
        assert Task.objects.get(pk=foreign.pk).status == "open"


def test_business_state_api_needs_a_login(customer, client):
    response = client.get(f"{API}/conversations/wm_sun_002/tasks/")
    assert response.status_code in (401, 403) and response.json()["code"]
