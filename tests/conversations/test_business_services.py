"""Business state people write (issue 12, item 4): tasks, manual alerts, recommendations and their
feedback, each through one service with validation, history and an audit row that quotes nothing."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.business import (
    alert_create,
    alert_update,
    recommendation_create,
    recommendation_feedback_record,
    recommendation_resolve,
    recommendation_update,
    task_create,
    task_resolve,
    task_update,
)
from conversations.models import (
    Alert,
    AlertKind,
    AlertLevel,
    AuditAction,
    AuditEvent,
    FeedbackSource,
    FeedbackVerdict,
    RecommendationFeedback,
    RecommendationStatus,
    Task,
    TaskStatus,
)
from conversations.selectors import recommendation_get, recommendation_latest_feedback
from conversations.services import alert_raise, alert_resolve
from qiwei_site.platform.errors import Conflict, ValidationFailed
from tests.factories import BASE_TIME, CustomerFactory

SATURDAY = BASE_TIME + dt.timedelta(days=5)


@pytest.fixture
def customer(account):
    return CustomerFactory(conversation_id="wm_zhou_001", display_name="周女士")


def test_task_create_stores_an_open_task_with_history_and_an_audit_without_its_title(customer, staff_user):
    # when an agent records a follow-up
    task = task_create(
        customer=customer, title="  周六上午带看  望京两居室 ", note="客户要求带钥匙", due_at=SATURDAY, actor=staff_user
    )
    # then it is open, its title folded to one line, with a history row by the agent
    task.refresh_from_db()
    assert (task.title, task.note, task.status, task.due_at) == (
        "周六上午带看 望京两居室",
        "客户要求带钥匙",
        "open",
        SATURDAY,
    )
    history = task.history.get()
    assert (history.history_user_id, history.history_change_reason) == (staff_user.pk, "新建待办")
    # and the audit names the task, never its words
    event = AuditEvent.objects.get(action=AuditAction.TASK_CREATED)
    assert event.payload["task_id"] == task.pk and event.conversation_id == "wm_zhou_001"
    assert "望京" not in str(event.payload)


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"title": "   "}, "title_required"),
        ({"title": "带看" * 101}, "title_too_long"),
        ({"title": "带看\u202e两居室"}, "invalid_title"),
        ({"title": 42}, "invalid_title"),
        ({"title": "回电", "due_at": dt.datetime(2026, 11, 7, 10, 0)}, "invalid_due_at"),  # noqa: DTZ001 - naive on purpose
        ({"title": "回电", "note": "说明" * 251}, "note_too_long"),
    ],
)
def test_task_create_refuses_bad_input_with_a_clear_code(customer, staff_user, fields, code):
    with pytest.raises(ValidationFailed) as refused:
        task_create(customer=customer, actor=staff_user, **fields)
    assert refused.value.code == code
    assert not Task.objects.exists() and not AuditEvent.objects.filter(action=AuditAction.TASK_CREATED).exists()


def test_task_note_keeps_line_breaks_and_full_width_spaces(customer, staff_user):
    # given a note typed in a browser textarea (CRLF) with a full-width space
    task = task_create(
        customer=customer, title="带看　望京两居室", note="钥匙在物业\r\n　周六九点前取", actor=staff_user
    )
    # then the title is one line and the note keeps its line and its space
    assert (task.title, task.note) == ("带看 望京两居室", "钥匙在物业\n　周六九点前取")


def test_task_update_changes_only_what_differs_and_refuses_other_fields(customer, staff_user):
    # given an open task
    task = task_create(customer=customer, title="发送望京两居室资料", actor=staff_user)
    # when the same title is saved again, then nothing is written
    task_update(task=task, changes={"title": "发送望京两居室资料"}, actor=staff_user)
    assert not AuditEvent.objects.filter(action=AuditAction.TASK_UPDATED).exists()
    # when the due time changes, then one audit row names the field
    task_update(task=task, changes={"due_at": SATURDAY}, actor=staff_user, reason="客户改到周六")
    event = AuditEvent.objects.get(action=AuditAction.TASK_UPDATED)
    assert (event.payload["fields"], event.reason) == (["due_at"], "客户改到周六")
    # and a field that is not editable is refused
    with pytest.raises(ValidationFailed) as refused:
        task_update(task=task, changes={"status": "done"}, actor=staff_user)
    assert refused.value.code == "field_not_editable"


def test_task_resolve_needs_a_reason_records_who_and_is_idempotent(customer, staff_user):
    task = task_create(customer=customer, title="周六上午带看望京两居室", actor=staff_user)
    # when resolved without a reason, then it is refused
    with pytest.raises(ValidationFailed) as refused:
        task_resolve(task=task, actor=staff_user, reason="  ")
    assert refused.value.code == "reason_required"
    # when resolved with one, twice
    task_resolve(task=task, actor=staff_user, reason="已带看，客户满意")
    again = task_resolve(task=task, actor=staff_user, reason="重复点击")
    # then it is done once, saying who and why
    assert (again.status, again.resolution_reason, again.resolved_by_name) == (
        TaskStatus.DONE,
        "已带看，客户满意",
        staff_user.username,
    )
    assert again.resolved_at is not None
    assert AuditEvent.objects.filter(action=AuditAction.TASK_RESOLVED).count() == 1
    # and a done task cannot be edited any more
    with pytest.raises(Conflict) as conflict:
        task_update(task=task, changes={"title": "改标题"}, actor=staff_user)
    assert conflict.value.code == "task_done"


def test_alert_create_is_manual_and_update_changes_level_and_text(customer, staff_user):
    # when a supervisor raises an alert by hand and then raises its level
    alert = alert_create(customer=customer, text="客户情绪激动，勿催促签约", actor=staff_user)
    alert_update(alert=alert, changes={"level": AlertLevel.CRITICAL}, actor=staff_user, reason="客户投诉升级")
    alert.refresh_from_db()
    # then it is a manual warning turned critical, both audited
    assert (alert.kind, alert.level) == (AlertKind.MANUAL, AlertLevel.CRITICAL)
    assert AuditEvent.objects.get(action=AuditAction.ALERT_CREATED).payload["level"] == AlertLevel.WARNING
    assert AuditEvent.objects.get(action=AuditAction.ALERT_UPDATED).payload["fields"] == ["level"]
    # and an unknown level is refused naming the choices
    with pytest.raises(ValidationFailed) as refused:
        alert_update(alert=alert, changes={"level": "urgent"}, actor=staff_user)
    assert refused.value.code == "invalid_level" and "严重" in refused.value.detail


def test_alert_update_keeps_an_automatic_alerts_text_and_refuses_resolved_alerts(customer, staff_user):
    # given an automatic alert
    alert = alert_raise(
        customer=customer,
        kind=AlertKind.MESSAGE_BLOCKED,
        level=AlertLevel.WARNING,
        text="客户消息 #7 被安全扫描拦截",
        actor="capture",
        cause="message:7",
    )
    assert alert is not None
    # when someone tries to rewrite its text, then it is refused; its level may change
    with pytest.raises(ValidationFailed) as refused:
        alert_update(alert=alert, changes={"text": "客户说了……"}, actor=staff_user)
    assert refused.value.code == "automatic_alert_text"
    alert_update(alert=alert, changes={"level": AlertLevel.INFO}, actor=staff_user)
    # when it is resolved, then it can no longer be edited
    alert_resolve(alert=alert, actor=staff_user, reason="已核实")
    with pytest.raises(Conflict):
        alert_update(alert=alert, changes={"level": AlertLevel.CRITICAL}, actor=staff_user)
    alert.refresh_from_db()
    assert (alert.level, alert.text, alert.resolution_reason) == (
        AlertLevel.INFO,
        "客户消息 #7 被安全扫描拦截",
        "已核实",
    )


def test_alert_resolve_needs_a_reason(customer, staff_user):
    alert = alert_create(customer=customer, text="客户要求只在工作日联系", actor=staff_user)
    with pytest.raises(ValidationFailed):
        alert_resolve(alert=alert, actor=staff_user, reason="")
    assert not Alert.objects.get(pk=alert.pk).resolved


def test_recommendation_feedback_keeps_a_history_whose_newest_is_the_latest(customer, staff_user, agent_user):
    # given a recommendation
    recommendation = recommendation_create(customer=customer, text="推荐望京两居室，月租6500", actor=staff_user)
    # when the customer's feedback is relayed, then the agent adds their own judgement
    recommendation_feedback_record(
        recommendation=recommendation,
        source=FeedbackSource.CUSTOMER,
        verdict=FeedbackVerdict.DECLINED,
        comment="太贵了，最多6000",
        actor=agent_user,
    )
    recommendation_feedback_record(
        recommendation=recommendation,
        source=FeedbackSource.AGENT,
        verdict=FeedbackVerdict.INTERESTED,
        comment="可以争取房东降到6000",
        actor=agent_user,
    )
    # then both are kept, newest first, and the latest is the agent’s
    history = list(RecommendationFeedback.objects.filter(recommendation=recommendation))
    assert [(f.source, f.verdict) for f in history] == [("agent", "interested"), ("customer", "declined")]
    latest = recommendation_latest_feedback(recommendation_get(recommendation.pk))
    assert latest is not None and latest.comment == "可以争取房东降到6000"
    assert latest.actor_name == agent_user.username and latest.customer_id == customer.pk
    # and the audit has ids and verdicts only
    events = AuditEvent.objects.filter(action=AuditAction.RECOMMENDATION_FEEDBACK_RECORDED)
    assert sorted(e.payload["verdict"] for e in events) == ["declined", "interested"]
    assert not any("6000" in str(e.payload) for e in events)


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"source": "boss", "verdict": "accepted"}, "invalid_source"),
        ({"source": "customer", "verdict": "maybe"}, "invalid_verdict"),
        ({"source": "customer", "verdict": "accepted", "comment": "好" * 301}, "comment_too_long"),
    ],
)
def test_recommendation_feedback_refuses_bad_input(customer, staff_user, fields, code):
    recommendation = recommendation_create(customer=customer, text="推荐朝阳公园一居室", actor=staff_user)
    with pytest.raises(ValidationFailed) as refused:
        recommendation_feedback_record(recommendation=recommendation, actor=staff_user, **fields)
    assert refused.value.code == code
    assert not RecommendationFeedback.objects.exists()


def test_recommendation_resolve_ends_it_and_refuses_later_edits_and_feedback(customer, staff_user):
    recommendation = recommendation_create(customer=customer, text="推荐望京两居室", actor=staff_user)
    recommendation_update(
        recommendation=recommendation, changes={"text": "推荐望京两居室（南北通透）"}, actor=staff_user
    )
    # when it is resolved
    resolved = recommendation_resolve(recommendation=recommendation, actor=staff_user, reason="客户已签约")
    # then it is ended with its reason, and neither edits nor feedback are accepted any more
    assert (resolved.status, resolved.text, resolved.resolution_reason) == (
        RecommendationStatus.RESOLVED,
        "推荐望京两居室（南北通透）",
        "客户已签约",
    )
    with pytest.raises(Conflict) as conflict:
        recommendation_feedback_record(
            recommendation=recommendation, source="customer", verdict="accepted", actor=staff_user
        )
    assert conflict.value.code == "recommendation_resolved"
    with pytest.raises(Conflict):
        recommendation_update(recommendation=recommendation, changes={"text": "改"}, actor=staff_user)
    actions = list(AuditEvent.objects.filter(action__startswith="recommendation_").values_list("action", flat=True))
    assert sorted(actions) == ["recommendation_created", "recommendation_resolved", "recommendation_updated"]


@pytest.mark.parametrize(
    "action",
    [
        AuditAction.TASK_CREATED,
        AuditAction.TASK_UPDATED,
        AuditAction.TASK_RESOLVED,
        AuditAction.ALERT_CREATED,
        AuditAction.ALERT_UPDATED,
        AuditAction.RECOMMENDATION_CREATED,
        AuditAction.RECOMMENDATION_UPDATED,
        AuditAction.RECOMMENDATION_RESOLVED,
        AuditAction.RECOMMENDATION_FEEDBACK_RECORDED,
    ],
)
def test_business_audit_actions_have_chinese_labels(action):
    assert any("\u4e00" <= ch <= "\u9fff" for ch in str(action.label))
