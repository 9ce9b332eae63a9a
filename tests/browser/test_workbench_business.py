"""The Workbench's 业务 panel in a real browser (issue 12, item 4): an agent sees the open
customer's open tasks, alerts and recommendations, resolves each with a reason, records feedback
on a recommendation and adds a task, all through the account API and its audit; a refused write
shows the API's Chinese reason, and a live refresh never disturbs a form being filled in."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from conversations.business import alert_create, recommendation_create, task_create, task_resolve
from conversations.models import (
    Alert,
    AlertKind,
    AlertLevel,
    AuditAction,
    AuditEvent,
    Customer,
    MessageDirection,
    Recommendation,
    RecommendationFeedback,
    Task,
    TaskStatus,
)
from conversations.services import alert_raise
from tests.browser.conftest import login
from tests.conftest import client_for
from tests.factories import CustomerFactory, MessageFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ONLINE = {"online": True, "logged_in": True, "subscription": "local", "checked_at": None, "stale": False}
LIVE_WITHIN_MS = 3000
# 10:00 on 5 December, Beijing time.
VIEWING_AT = dt.datetime(2026, 12, 5, 2, 0, tzinfo=dt.UTC)


@pytest.fixture
def wang(account, staff_user) -> Customer:
    """王先生 wants a two-bedroom in 浦东; a viewing is planned, a flat was proposed, and the
    deposit question is flagged."""
    now = timezone.now()
    customer = CustomerFactory(conversation_id="wm_wang_001", display_name="王先生", last_message_at=now)
    for index, (direction, text) in enumerate(
        [
            (MessageDirection.INBOUND, "周六可以去看房吗？想看浦东的两居室"),
            (MessageDirection.OUTBOUND, "可以的王先生，周六上午十点在张江地铁站见。"),
            (MessageDirection.INBOUND, "押金能退吗？上次租房押金一直没退"),
        ]
    ):
        MessageFactory(
            customer=customer,
            external_id=f"wm_wang_001-{index}",
            direction=direction,
            sender="王先生" if direction == MessageDirection.INBOUND else "顾问小李",
            text=text,
            sent_at=now - dt.timedelta(minutes=3 - index),
        )
    return customer


@pytest.fixture
def business(wang, staff_user) -> dict[str, Any]:
    """One open task, one done task, one manual alert and one open recommendation for 王先生."""
    task = task_create(
        customer=wang, title="周六上午带看张江两居室", note="客户希望南北通透", due_at=VIEWING_AT, actor=staff_user
    )
    done = task_create(customer=wang, title="发送房源资料", actor=staff_user)
    task_resolve(task=done, actor=staff_user, reason="资料已通过企微发送")
    alert = alert_create(
        customer=wang, text="客户两次询问押金退还，注意跟进", level=AlertLevel.WARNING, actor=staff_user
    )
    recommendation = recommendation_create(customer=wang, text="推荐张江汤臣豪园两居室，月租6500", actor=staff_user)
    return {"task": task, "done": done, "alert": alert, "recommendation": recommendation}


def _open(page: Any, browser_context: Any, live_server: Any, user: Any) -> list[str]:
    """The Workbench open on 王先生; returns the page's script errors, to assert there are none."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    login(browser_context, live_server, user)
    page.route("**/api/status*", lambda route: route.fulfill(json=ONLINE))
    from playwright.sync_api import expect

    page.goto(live_server.url + "/")
    expect(page.locator("#wb-customer-name")).to_have_text("王先生")
    page.evaluate("window.__sameDocument = true")
    return errors


def test_workbench_business_panel_lists_open_items_with_labels_and_shanghai_times(
    page, browser_context, live_server, staff_user, business
):
    # given 王先生 has an open and a done task, an alert and a recommendation, made by the services
    # when the agent opens his conversation
    errors = _open(page, browser_context, live_server, staff_user)
    from playwright.sync_api import expect

    panel = page.locator("#wb-business")
    # then the open task is listed with its note and its due time in Beijing time, the done one is not
    task = panel.locator(f"li[data-task='{business['task'].pk}']")
    expect(task).to_contain_text("周六上午带看张江两居室")
    expect(task).to_contain_text("客户希望南北通透")
    expect(task.locator("time").first).to_have_text("2026-12-05 10:00")
    expect(panel.locator(f"li[data-task='{business['done'].pk}']")).to_have_count(0)
    expect(panel.locator("[data-count=tasks]")).to_have_text("1")
    # and the alert shows its level and where it came from in Chinese
    alert = panel.locator(f"li[data-alert='{business['alert'].pk}']")
    expect(alert).to_contain_text("警告")
    expect(alert).to_contain_text("人工")
    expect(alert).to_contain_text("客户两次询问押金退还")
    # and the recommendation says it has no feedback yet
    recommendation = panel.locator(f"li[data-recommendation='{business['recommendation'].pk}']")
    expect(recommendation).to_contain_text("推荐张江汤臣豪园两居室，月租6500")
    expect(recommendation).to_contain_text("尚无反馈")
    assert errors == []


def test_workbench_resolving_a_task_with_a_reason_removes_it_and_audits_it(
    page, browser_context, live_server, staff_user, business
):
    # given the agent has 王先生 open
    errors = _open(page, browser_context, live_server, staff_user)
    from playwright.sync_api import expect

    task_id = business["task"].pk
    item = page.locator(f"#wb-business li[data-task='{task_id}']")
    # when they mark the viewing done, saying why
    item.get_by_role("button", name="完成").click()
    reason = item.get_by_label("完成原因")
    expect(reason).to_be_focused()
    reason.fill("已带看，客户比较满意")
    item.get_by_role("button", name="确认完成").click()
    # then the task leaves the panel
    expect(page.locator(f"#wb-business li[data-task='{task_id}']")).to_have_count(0)
    expect(page.locator("#wb-tasks")).to_contain_text("暂无待办")
    # and the API and the audit say it was resolved by them, with their reason
    answer = client_for(staff_user).get(f"/api/accounts/acme/tasks/{task_id}/").json()
    assert answer["status"] == TaskStatus.DONE
    assert answer["resolution_reason"] == "已带看，客户比较满意"
    assert answer["resolved_by_name"] == staff_user.get_username()
    event = AuditEvent.objects.filter(action=AuditAction.TASK_RESOLVED, payload__task_id=task_id).get()
    assert event.reason == "已带看，客户比较满意"
    assert event.actor_id == staff_user.pk
    # and the page's audit list shows it, without a reload
    expect(page.locator("#wb-audit")).to_contain_text("完成待办", timeout=LIVE_WITHIN_MS)
    assert page.evaluate("window.__sameDocument") is True
    assert errors == []


def test_workbench_resolving_without_a_reason_shows_the_chinese_error(
    page, browser_context, live_server, staff_user, business
):
    # given the agent has 王先生 open
    errors = _open(page, browser_context, live_server, staff_user)
    from playwright.sync_api import expect

    alert_id = business["alert"].pk
    item = page.locator(f"#wb-business li[data-alert='{alert_id}']")
    # when they try to close the alert without saying why
    item.get_by_role("button", name="处理").click()
    item.get_by_role("button", name="确认处理").click()
    # then the API's reason is shown in Chinese next to the field, which keeps the focus
    error = item.get_by_role("alert")
    expect(error).to_have_text("原因：该字段不能为空。")
    expect(item.get_by_label("处理原因")).to_be_focused()
    # and the alert stays open
    assert Alert.objects.get(pk=alert_id).resolved is False
    assert not AuditEvent.objects.filter(action=AuditAction.ALERT_RESOLVED).exists()
    # when they give a reason and try again
    item.get_by_label("处理原因").fill("已电话说明押金退还流程")
    item.get_by_role("button", name="确认处理").click()
    # then it is resolved with that reason
    expect(page.locator(f"#wb-business li[data-alert='{alert_id}']")).to_have_count(0)
    alert = Alert.objects.get(pk=alert_id)
    assert alert.resolved is True
    assert alert.resolution_reason == "已电话说明押金退还流程"
    assert errors == []


def test_workbench_automatic_alert_is_resolved_like_any_other(page, browser_context, live_server, staff_user, wang):
    # given the gate raised an automatic alert for 王先生
    alert = alert_raise(
        customer=wang,
        kind=AlertKind.PERSONAL_NUMBER,
        level=AlertLevel.WARNING,
        text="客户消息中含个人号码，已遮盖",
        actor="capture",
        cause="message:1",
    )
    assert alert is not None
    errors = _open(page, browser_context, live_server, staff_user)
    from playwright.sync_api import expect

    item = page.locator(f"#wb-business li[data-alert='{alert.pk}']")
    expect(item).to_contain_text("消息含个人号码")
    # when the agent resolves it with a reason
    item.get_by_role("button", name="处理").click()
    item.get_by_label("处理原因").fill("已提醒客户不要在聊天中发送证件号")
    item.get_by_label("处理原因").press("Enter")
    # then it is gone from the panel and resolved
    expect(page.locator(f"#wb-business li[data-alert='{alert.pk}']")).to_have_count(0)
    assert Alert.objects.get(pk=alert.pk).resolved is True
    assert errors == []


def test_workbench_feedback_recorded_shows_as_the_latest_feedback(
    page, browser_context, live_server, staff_user, business
):
    # given the agent has 王先生 open and the recommendation has no feedback yet
    errors = _open(page, browser_context, live_server, staff_user)
    from playwright.sync_api import expect

    recommendation_id = business["recommendation"].pk
    item = page.locator(f"#wb-business li[data-recommendation='{recommendation_id}']")
    # when they record what the customer said about it
    item.get_by_role("button", name="记录反馈").click()
    item.get_by_label("反馈方").select_option(label="客户")
    item.get_by_label("反馈结论").select_option(label="不接受")
    item.get_by_label("反馈内容（可选）").fill("觉得租金偏高，想看六千以内的")
    item.get_by_role("button", name="记录").click()
    # then the panel shows it as the latest feedback, with who recorded it
    latest = item.locator(".wb-biz-feedback")
    expect(latest).to_contain_text("客户·不接受")
    expect(latest).to_contain_text("觉得租金偏高，想看六千以内的")
    expect(latest).to_contain_text(staff_user.get_username())
    # and it is stored as the recommendation's feedback, which stays open
    feedback = RecommendationFeedback.objects.get(recommendation_id=recommendation_id)
    assert (feedback.source, feedback.verdict) == ("customer", "declined")
    assert feedback.comment == "觉得租金偏高，想看六千以内的"
    assert Recommendation.objects.get(pk=recommendation_id).status == "open"
    assert AuditEvent.objects.filter(action=AuditAction.RECOMMENDATION_FEEDBACK_RECORDED).count() == 1

    # when the agent then records their own view
    item.get_by_role("button", name="记录反馈").click()
    item.get_by_label("反馈方").select_option(label="客服")
    item.get_by_label("反馈结论").select_option(label="感兴趣")
    item.get_by_role("button", name="记录").click()
    # then that one is the latest, and the history keeps both
    expect(latest).to_contain_text("客服·感兴趣")
    expect(item.locator(".wb-biz-history summary")).to_have_text("反馈记录（2 条）")
    assert errors == []


def test_workbench_feedback_without_a_verdict_is_not_sent(page, browser_context, live_server, staff_user, business):
    # given the agent opened the feedback form
    _open(page, browser_context, live_server, staff_user)
    from playwright.sync_api import expect

    item = page.locator(f"#wb-business li[data-recommendation='{business['recommendation'].pk}']")
    item.get_by_role("button", name="记录反馈").click()
    # when they submit it without choosing a verdict
    item.get_by_role("button", name="记录").click()
    # then it says what is missing, and nothing was recorded
    expect(item.get_by_role("alert")).to_have_text("请选择反馈结论")
    expect(item.get_by_label("反馈结论")).to_be_focused()
    assert not RecommendationFeedback.objects.exists()


def test_workbench_adds_a_task_due_in_beijing_time(page, browser_context, live_server, staff_user, wang):
    # given 王先生 has no open task
    errors = _open(page, browser_context, live_server, staff_user)
    from playwright.sync_api import expect

    panel = page.locator("#wb-business")
    expect(page.locator("#wb-tasks")).to_contain_text("暂无待办")
    # when the agent adds a call-back for Sunday 15:30
    panel.get_by_role("button", name="新建待办").click()
    form = panel.get_by_role("form", name="新建待办")
    form.get_by_label("待办标题").fill("周日下午回电确认看房时间")
    form.get_by_label("说明（可选）").fill("客户周六可能加班")
    form.get_by_label("截止时间（可选，北京时间）").fill("2026-12-06T15:30")
    form.get_by_role("button", name="添加").click()
    # then it is listed, due at that Beijing time
    item = panel.locator("#wb-tasks li[data-task]")
    expect(item).to_contain_text("周日下午回电确认看房时间")
    expect(item.locator("time").first).to_have_text("2026-12-06 15:30")
    task = Task.objects.get(customer=wang)
    assert item.get_attribute("data-task") == str(task.pk)
    # and it was stored at 07:30 UTC, by the agent, with an audit row
    assert task.due_at == dt.datetime(2026, 12, 6, 7, 30, tzinfo=dt.UTC)
    assert task.note == "客户周六可能加班"
    assert AuditEvent.objects.filter(action=AuditAction.TASK_CREATED, actor_id=staff_user.pk).count() == 1
    assert errors == []


def test_workbench_add_task_without_title_shows_the_chinese_error(page, browser_context, live_server, staff_user, wang):
    # given the agent opened the new-task form
    _open(page, browser_context, live_server, staff_user)
    from playwright.sync_api import expect

    panel = page.locator("#wb-business")
    panel.get_by_role("button", name="新建待办").click()
    form = panel.get_by_role("form", name="新建待办")
    # when they add it with only a note
    form.get_by_label("说明（可选）").fill("记得带合同模板")
    form.get_by_role("button", name="添加").click()
    # then the API's reason is shown in Chinese, and what they typed is still there
    expect(form.get_by_role("alert")).to_have_text("待办标题：该字段不能为空。")
    expect(form.get_by_label("说明（可选）")).to_have_value("记得带合同模板")
    assert not Task.objects.exists()


def test_workbench_live_refresh_waits_while_a_reason_is_typed(
    page, browser_context, live_server, staff_user, wang, business
):
    # given the agent is typing the reason for closing the alert
    errors = _open(page, browser_context, live_server, staff_user)
    from playwright.sync_api import expect

    item = page.locator(f"#wb-business li[data-alert='{business['alert'].pk}']")
    item.get_by_role("button", name="处理").click()
    reason = item.get_by_label("处理原因")
    reason.press_sequentially("已向客户说明")
    # when a colleague adds a task for 王先生 meanwhile, and the page learns of it
    new_task = task_create(customer=wang, title="周一前准备租赁合同", actor=staff_user)
    page.wait_for_function("() => window.QiweiWorkbench.business.pending()", timeout=LIVE_WITHIN_MS)
    # then the form is left as it is: the text, the caret and the focus
    expect(reason).to_have_value("已向客户说明")
    expect(reason).to_be_focused()
    reason.press_sequentially("押金退还流程")
    expect(reason).to_have_value("已向客户说明押金退还流程")
    # when the agent leaves the form
    page.locator("#wb-customer-name").click()
    # then the new task appears, and the reason typed so far is kept
    expect(page.locator(f"#wb-business li[data-task='{new_task.pk}']")).to_contain_text("周一前准备租赁合同")
    expect(item.get_by_label("处理原因")).to_have_value("已向客户说明押金退还流程")
    assert page.evaluate("window.__sameDocument") is True
    assert errors == []


def test_workbench_business_text_is_shown_as_text(page, browser_context, live_server, staff_user, wang):
    # given a task and a recommendation whose text looks like HTML
    task_create(customer=wang, title='<img src=x onerror="window.__xss=1">带看', actor=staff_user)
    recommendation_create(customer=wang, text="<script>window.__xss=2</script>推荐两居室", actor=staff_user)
    # when the page shows them
    _open(page, browser_context, live_server, staff_user)
    from playwright.sync_api import expect

    # then they read literally, and nothing ran
    expect(page.locator("#wb-tasks")).to_contain_text('<img src=x onerror="window.__xss=1">带看')
    expect(page.locator("#wb-recommendations")).to_contain_text("<script>window.__xss=2</script>推荐两居室")
    assert page.locator("#wb-business img, #wb-business script").count() == 0
    assert page.evaluate("window.__xss === undefined") is True
