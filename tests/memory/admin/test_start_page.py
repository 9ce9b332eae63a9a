"""The supervisor's start page (the admin index): for the chosen account, what needs attention,
each count linking to a list that shows exactly that many rows."""

from __future__ import annotations

import datetime as dt
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from conversations.drafts import draft_reject
from conversations.models import AuditEvent, Draft
from conversations.services import alert_raise, alert_resolve
from memory.attention import attention_counts, messages_blocked_today, review_queue, shanghai_day, waited
from memory.capture.services import capture_message
from memory.models import CaptureJob, CaptureJobStatus
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.middleware import SESSION_KEY
from qiwei_site.platform.services import membership_grant
from qiwei_site.platform.tenancy import use_account
from tests.factories import CustomerFactory, DraftFactory, MessageFactory, UserFactory

LABELS = ["待审核提议", "待确认", "提取失败的任务", "今日拦截", "待审核草稿", "未处理预警"]


def blocked(customer, message, *, at: dt.datetime) -> AuditEvent:
    # Written at `at` (the audit is append-only: its time cannot be changed afterwards).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timezone, "now", lambda: at)
        return audit_record(
            action="memory_capture_blocked",
            conversation_id=customer.conversation_id,
            actor="capture",
            reason="安全扫描拦截：提示注入或凭证，不写入记忆",
            payload={"message_id": message.pk, "categories": ["prompt_injection"]},
        )


def busy_account(customer, messages, review_items, staff_user):
    """Two failed jobs and one pending, two messages blocked today and one yesterday (Asia/Shanghai),
    three pending drafts and a rejected one, two open alerts and a resolved one, and two proposals
    (a question about stock: what it asks after waits for a supervisor)."""
    capture_message(message=MessageFactory(customer=customer, text="有没有带阳台的两居室？"))
    statuses = [CaptureJobStatus.FAILED, CaptureJobStatus.FAILED, CaptureJobStatus.PENDING]
    for message, status in zip(messages[:3], statuses, strict=True):
        CaptureJob.objects.create(customer=customer, message=message, status=status, attempts=5)
    today, _tomorrow = shanghai_day()
    now = timezone.now()
    blocked(customer, messages[0], at=max(today + dt.timedelta(minutes=1), now - dt.timedelta(hours=1)))
    blocked(customer, messages[1], at=now)
    blocked(customer, messages[2], at=today - dt.timedelta(minutes=1))
    for text in ("王先生您好，张江那套离2号线步行8分钟", "周六上午10点在张江地铁站见", "好的，学区的情况我帮您问问"):
        DraftFactory(customer=customer, reply=text)
    draft_reject(draft=DraftFactory(customer=customer), actor=staff_user, reason="语气不对")
    for text in ("客户消息含个人号码，展示时已遮蔽", "客户对看房时间有投诉，请主管回电"):
        alert_raise(customer=customer, kind="manual", level="warning", text=text, actor=staff_user)
    handled = alert_raise(customer=customer, kind="manual", level="info", text="已回电", actor=staff_user)
    alert_resolve(alert=handled, actor=staff_user, reason="已回电说明")


def start_counts(client) -> dict[str, tuple[int, str]]:
    response = client.get(reverse("admin:index"))
    assert response.status_code == 200
    return {count.label: (count.count, count.url) for count in response.context["qiwei_start_counts"]}


def rows_on(client, url: str) -> int:
    """How many rows the linked page lists (the admin changelist, or the review queue)."""
    response = client.get(url)
    assert response.status_code == 200, url
    if "cl" in response.context:
        return len(response.context["cl"].result_list)
    return len(response.context["rows"])


def test_start_page_counts_equal_the_rows_of_the_lists_they_link_to(
    admin_client, customer, messages, review_items, staff_user
):
    # given an account with something in every category
    busy_account(customer, messages, review_items, staff_user)
    # when the supervisor opens the admin index
    counts = start_counts(admin_client)
    # then every count is there, in order, with the numbers of this account
    assert list(counts) == LABELS
    assert {label: count for label, (count, _url) in counts.items()} == {
        "待审核提议": 2,
        "待确认": 3,
        "提取失败的任务": 2,
        "今日拦截": 2,
        "待审核草稿": 3,
        "未处理预警": 2,
    }
    # and each link opens a list with exactly that many rows
    for label, (count, url) in counts.items():
        assert rows_on(admin_client, url) == count, label


def test_start_page_links_use_the_lists_own_filters(admin_client, customer, messages, review_items, staff_user):
    busy_account(customer, messages, review_items, staff_user)
    counts = start_counts(admin_client)
    query = {label: parse_qs(urlsplit(url).query) for label, (_count, url) in counts.items()}
    assert query["提取失败的任务"] == {"status__exact": ["failed"]}
    assert query["待审核草稿"] == {"status__exact": ["pending"]}
    assert query["未处理预警"] == {"resolved__exact": ["0"]}
    assert query["今日拦截"]["action__exact"] == ["memory_capture_blocked"]
    # the day is Asia/Shanghai's: midnight at +08:00
    assert query["今日拦截"]["created_at__gte"][0].endswith("00:00:00+08:00")
    assert urlsplit(counts["待确认"][1]).path == reverse("admin:memory_memoryitem_review")


def test_start_page_count_follows_a_decision(admin_client, customer, messages, review_items, staff_user):
    # given three items to confirm
    assert start_counts(admin_client)["待确认"][0] == 3
    # when the supervisor rejects one in the queue
    admin_client.post(
        reverse("admin:memory_memoryitem_review"),
        {"item": review_items.hypothesis.pk, "decision": "reject", "reason": "客户否认"},
    )
    # then the start page says two
    assert start_counts(admin_client)["待确认"][0] == 2


def test_blocked_today_is_the_shanghai_day(customer, messages):
    # given messages blocked at 23:59 yesterday and 00:01 today, Beijing time (15:59 / 16:01 UTC)
    beijing = dt.timezone(dt.timedelta(hours=8))
    blocked(customer, messages[0], at=dt.datetime(2026, 11, 2, 23, 59, tzinfo=beijing))
    late = blocked(customer, messages[1], at=dt.datetime(2026, 11, 3, 0, 1, tzinfo=beijing))
    # when the count is taken at 08:30 on 3 November in Beijing (00:30 UTC)
    now = dt.datetime(2026, 11, 3, 0, 30, tzinfo=dt.UTC)
    # then only the message blocked after Beijing midnight counts as today's
    assert list(messages_blocked_today(now).values_list("pk", flat=True)) == [late.pk]
    assert attention_counts(now).blocked_today == 1


def test_start_page_shows_only_the_chosen_accounts_numbers(
    admin_client, customer, messages, review_items, staff_user, other_account
):
    # given pending drafts in globex too
    membership_grant(user=staff_user, account=other_account)
    with use_account(other_account.id):
        zhao = CustomerFactory(conversation_id="wm_zhao_003", display_name="赵女士")
        MessageFactory(customer=zhao, text="静安有没有三居室")
        for _ in range(4):
            DraftFactory(customer=zhao)
    DraftFactory(customer=customer)
    # when the supervisor looks at acme's start page, then globex's drafts are not counted
    assert start_counts(admin_client)["待审核草稿"][0] == 1
    with use_account(other_account.id):
        assert Draft.objects.count() == 4


def test_start_page_without_an_account_asks_to_choose_one(staff_user, review_items):
    client = Client()
    client.force_login(staff_user)
    response = client.get(reverse("admin:index"))
    assert response.status_code == 200
    assert response.context.get("qiwei_start_counts") is None
    assert "请先选择账号" in response.content.decode() and "待处理事项" not in response.content.decode()


def test_start_page_shows_only_counts_the_user_may_open(account, review_items):
    # given a staff member who may view memory items and capture jobs only
    viewer = UserFactory(username="viewer_wu", is_staff=True)
    viewer.user_permissions.set(Permission.objects.filter(codename__in=["view_memoryitem", "view_capturejob"]))
    membership_grant(user=viewer, account=account)
    client = Client()
    client.force_login(viewer)
    session = client.session
    session[SESSION_KEY] = account.id
    session.save()
    # when they open the index, then only those two counts show
    assert list(start_counts(client)) == ["待审核提议", "待确认", "提取失败的任务"]


def test_start_page_renders_each_count_as_a_link(admin_client, review_items):
    body = admin_client.get(reverse("admin:index")).content.decode()
    assert 'id="qiwei-start"' in body and "待处理事项" in body
    assert f'href="{reverse("admin:memory_memoryitem_review")}?kind=to_confirm" data-count="3"' in body


def test_start_page_says_how_long_the_oldest_review_item_has_waited(admin_client, review_items, settings):
    # Given review items, the oldest entered the queue two days ago
    oldest = review_queue().order_by("created_at").first()
    type(oldest).objects.filter(pk=oldest.pk).update(created_at=timezone.now() - dt.timedelta(days=2, hours=5))
    settings.QIWEI_REVIEW_STALE_DAYS = 3
    # When the supervisor opens the start page
    body = admin_client.get(reverse("admin:index")).content.decode()
    # Then the queue's line says how long, without a warning yet
    assert "最久已等待 2 天 5 小时" in body and 'role="alert"' not in body
    # And once the wait is longer than the setting, the line warns
    settings.QIWEI_REVIEW_STALE_DAYS = 1
    body = admin_client.get(reverse("admin:index")).content.decode()
    assert 'role="alert"' in body and "超过 1 天未处理，请尽快审核" in body


def test_waited_reads_in_days_and_hours():
    now = timezone.now()
    assert waited(now - dt.timedelta(minutes=20), now) == "不到 1 小时"
    assert waited(now - dt.timedelta(hours=5), now) == "5 小时"
    assert waited(now - dt.timedelta(days=3), now) == "3 天"
    assert waited(None) == ""
