"""Admin for tasks, alerts and recommendations (issue 12, item 4): Chinese pages whose add, change,
resolve and feedback all go through the business services; a refused save keeps what was typed."""

from __future__ import annotations

import pytest
from django.urls import reverse

from conversations.business import (
    alert_create,
    recommendation_create,
    recommendation_feedback_record,
    task_create,
    task_update,
)
from conversations.models import (
    Alert,
    AlertKind,
    AlertLevel,
    AuditEvent,
    Recommendation,
    RecommendationFeedback,
    Task,
    TaskStatus,
)
from conversations.services import alert_raise
from tests.factories import CustomerFactory


@pytest.fixture
def customer(account):
    return CustomerFactory(conversation_id="wm_wu_003", display_name="吴女士")


def test_task_admin_add_form_saves_through_the_service(admin_client, staff_user, customer):
    # when a supervisor adds a task with a due time
    response = admin_client.post(
        reverse("admin:conversations_task_add"),
        {
            "customer": customer.pk,
            "title": "周六上午带看亚运村两居室",
            "note": "客户带孩子一起看",
            "due_at_0": "2026-11-07",
            "due_at_1": "10:00:00",
            "reason": "电话约定",
            "_save": "保存",
        },
    )
    # then the service created it, with history and audit by the supervisor
    assert response.status_code == 302, response.content.decode()[:2000]
    task = Task.objects.get()
    assert (task.title, task.note, task.status) == ("周六上午带看亚运村两居室", "客户带孩子一起看", TaskStatus.OPEN)
    assert task.history.get().history_user_id == staff_user.pk
    event = AuditEvent.objects.get(action="task_created")
    assert (event.actor_id, event.reason) == (staff_user.pk, "电话约定")


def test_task_admin_refused_save_keeps_what_was_typed(admin_client, customer):
    # when the title holds a bidi control character the service refuses
    response = admin_client.post(
        reverse("admin:conversations_task_add"),
        {"customer": customer.pk, "title": "带看\u202e两居室", "note": "客户下午三点后有空", "reason": "补录"},
    )
    # then the form comes back with the refusal and the typed note, and nothing is saved
    body = response.content.decode()
    assert response.status_code == 200
    assert "不能包含控制字符" in body and "客户下午三点后有空" in body and 'value="补录"' in body
    assert not Task.objects.exists()


def test_task_admin_add_form_requires_a_reason(admin_client, customer):
    response = admin_client.post(
        reverse("admin:conversations_task_add"), {"customer": customer.pk, "title": "回电确认预算"}
    )
    assert response.status_code == 200 and "该字段是必填项" in response.content.decode()
    assert not Task.objects.exists()


def test_task_admin_change_form_edits_through_the_service_and_a_done_task_is_read_only(
    admin_client, staff_user, customer
):
    task = task_create(customer=customer, title="发送亚运村小区资料", actor=staff_user)
    url = reverse("admin:conversations_task_change", args=[task.pk])
    # when the title is edited with a reason
    response = admin_client.post(url, {"title": "发送亚运村和安贞小区资料", "note": "", "reason": "客户追加安贞"})
    # then the service saved it and audited the field
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.title == "发送亚运村和安贞小区资料"
    assert AuditEvent.objects.get(action="task_updated").payload["fields"] == ["title"]
    # when it is completed from the list with a reason typed in the action bar
    changelist = reverse("admin:conversations_task_changelist")
    done = admin_client.post(
        changelist, {"action": "resolve_selected", "_selected_action": [task.pk], "reason": "资料已发"}, follow=True
    )
    assert "已完成 1 条待办" in done.content.decode()
    task.refresh_from_db()
    assert (task.status, task.resolution_reason) == (TaskStatus.DONE, "资料已发")
    # then its page is read-only and the list filters by status
    page = admin_client.get(url).content.decode()
    assert 'name="title"' not in page and "资料已发" in page
    listed = admin_client.get(changelist, {"status__exact": "done"}).content.decode()
    assert "发送亚运村和安贞小区资料" in listed and "标记所选待办为已完成" in listed


def test_alert_admin_adds_a_manual_alert_and_keeps_automatic_text_read_only(admin_client, staff_user, customer):
    # when a supervisor adds a manual alert
    response = admin_client.post(
        reverse("admin:conversations_alert_add"),
        {"customer": customer.pk, "level": AlertLevel.CRITICAL, "text": "客户投诉上次带看迟到", "reason": "主管回访"},
    )
    assert response.status_code == 302
    manual = Alert.objects.get()
    assert (manual.kind, manual.level) == (AlertKind.MANUAL, AlertLevel.CRITICAL)
    assert AuditEvent.objects.get(action="alert_created").actor_id == staff_user.pk
    # given an automatic alert, its change page offers the level, not the text
    automatic = alert_raise(
        customer=customer,
        kind=AlertKind.MESSAGE_BLOCKED,
        level=AlertLevel.WARNING,
        text="客户消息 #5 被安全扫描拦截",
        actor="capture",
        cause="message:5",
    )
    assert automatic is not None
    page = admin_client.get(reverse("admin:conversations_alert_change", args=[automatic.pk])).content.decode()
    assert 'name="level"' in page and 'name="text"' not in page
    # and the list filters by kind, with Chinese labels
    listed = admin_client.get(reverse("admin:conversations_alert_changelist"), {"kind__exact": "manual"})
    body = listed.content.decode()
    assert "客户投诉上次带看迟到" in body and "客户消息 #5" not in body and "来源" in body


def test_alert_admin_change_refusal_is_shown_on_the_form(admin_client, staff_user, customer):
    alert = alert_create(customer=customer, text="客户只接受工作日联系", actor=staff_user)
    response = admin_client.post(
        reverse("admin:conversations_alert_change", args=[alert.pk]),
        {"level": AlertLevel.INFO, "text": "\u200b", "reason": "改级别"},
    )
    assert response.status_code == 200
    assert "不能" in response.content.decode()
    alert.refresh_from_db()
    assert (alert.level, alert.text) == (AlertLevel.WARNING, "客户只接受工作日联系")


def test_recommendation_admin_records_feedback_from_the_change_page(admin_client, staff_user, customer):
    recommendation = recommendation_create(customer=customer, text="推荐安贞两居室，月租7200", actor=staff_user)
    url = reverse("admin:conversations_recommendation_change", args=[recommendation.pk])
    # when a supervisor records the customer's feedback there
    response = admin_client.post(
        url,
        {
            "text": recommendation.text,
            "feedback_source": "customer",
            "feedback_verdict": "interested",
            "feedback_comment": "想周末去看看",
            "reason": "客户微信回复",
            "feedback-TOTAL_FORMS": "0",
            "feedback-INITIAL_FORMS": "0",
        },
    )
    # then it joins the history through the service, and the page and list show it
    assert response.status_code == 302, response.content.decode()[:3000]
    feedback = RecommendationFeedback.objects.get()
    assert (feedback.source, feedback.verdict, feedback.comment) == ("customer", "interested", "想周末去看看")
    assert AuditEvent.objects.get(action="recommendation_feedback_recorded").actor_id == staff_user.pk
    assert "想周末去看看" in admin_client.get(url).content.decode()
    listed = admin_client.get(reverse("admin:conversations_recommendation_changelist")).content.decode()
    assert "客户·感兴趣：想周末去看看" in listed


def test_recommendation_admin_feedback_needs_source_and_verdict(admin_client, staff_user, customer):
    recommendation = recommendation_create(customer=customer, text="推荐安贞两居室", actor=staff_user)
    response = admin_client.post(
        reverse("admin:conversations_recommendation_change", args=[recommendation.pk]),
        {
            "text": recommendation.text,
            "feedback_source": "customer",
            "feedback_comment": "太远",
            "reason": "补录",
            "feedback-TOTAL_FORMS": "0",
            "feedback-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 200 and "记录反馈需同时选择反馈方和结论" in response.content.decode()
    assert not RecommendationFeedback.objects.exists()


def test_recommendation_admin_resolve_asks_for_a_reason_then_ends_it(admin_client, staff_user, customer):
    recommendation = recommendation_create(customer=customer, text="推荐安贞两居室", actor=staff_user)
    changelist = reverse("admin:conversations_recommendation_changelist")
    asked = admin_client.post(changelist, {"action": "resolve_selected", "_selected_action": [recommendation.pk]})
    assert "确认结束" in asked.content.decode()
    admin_client.post(
        changelist,
        {"action": "resolve_selected", "_selected_action": [recommendation.pk], "post": "yes", "reason": "客户已签约"},
    )
    recommendation.refresh_from_db()
    assert (recommendation.status, recommendation.resolution_reason) == ("resolved", "客户已签约")


def test_feedback_admin_lists_feedback_with_filters(admin_client, staff_user, customer):
    recommendation = recommendation_create(customer=customer, text="推荐安贞两居室", actor=staff_user)
    recommendation_feedback_record(
        recommendation=recommendation, source="customer", verdict="declined", comment="楼层太低", actor=staff_user
    )
    response = admin_client.get(
        reverse("admin:conversations_recommendationfeedback_changelist"), {"verdict__exact": "declined"}
    )
    body = response.content.decode()
    assert response.status_code == 200 and "楼层太低" in body and "不接受" in body


@pytest.mark.parametrize("model", [Task, Alert, Recommendation, RecommendationFeedback])
def test_business_models_have_chinese_admin_labels(model):
    assert any("\u4e00" <= ch <= "\u9fff" for ch in str(model._meta.verbose_name))
    assert all(
        any("\u4e00" <= ch <= "\u9fff" for ch in str(field.verbose_name))
        for field in model._meta.concrete_fields
        if field.name != "id"
    )


def test_task_admin_history_page_shows_who_changed_it_and_why(admin_client, staff_user, customer):
    task = task_create(customer=customer, title="周日回电确认看房时间", actor=staff_user, reason="客户来电")
    task_update(task=task, changes={"title": "周日上午回电确认看房时间"}, actor=staff_user, reason="客户改时间")
    page = admin_client.get(reverse("admin:conversations_task_history", args=[task.pk]))
    body = page.content.decode()
    assert page.status_code == 200 and "客户改时间" in body and "客户来电" in body
