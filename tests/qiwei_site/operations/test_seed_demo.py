"""`manage.py seed_demo` creates the Chinese demo once, through the services a real day uses: the
start page and the review queue have something to show."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from conversations.models import Alert, AlertKind, AuditEvent, Customer, Message, Recommendation, SessionMode, Task
from memory.attention import attention_counts, review_queue
from memory.models import MemoryCreatedBy, MemoryItem, MemoryStatus, MemoryType
from qiwei_site.operations.demo_data import DEMO_ACCOUNT_ID, DEMO_CUSTOMERS
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.tenancy import use_account
from tests.qiwei_site.operations.test_demo_data import ENGLISH_RUN

pytestmark = pytest.mark.django_db


def seed() -> str:
    out = StringIO()
    call_command("seed_demo", username="demo_admin", stdout=out)
    return out.getvalue()


def test_seed_demo_creates_the_chinese_demo_with_its_memory_and_alerts():
    # when the demo is seeded on an empty install
    output = seed()
    # then the account, its admin and every customer exist
    assert "已创建演示账号 demo" in output
    assert WeComAccount.objects.filter(id=DEMO_ACCOUNT_ID).exists()
    assert get_user_model().objects.get(username="demo_admin").is_superuser
    with use_account(DEMO_ACCOUNT_ID):
        assert Customer.objects.count() == len(DEMO_CUSTOMERS)
        # and no stored message is English
        assert not [m.text for m in Message.objects.all() if ENGLISH_RUN.search(m.text)]
        # and tasks and recommendations were written through their services, with audit
        assert Task.objects.count() == sum(len(spec["tasks"]) for spec in DEMO_CUSTOMERS)
        assert Recommendation.objects.count() == sum(len(spec["recommendations"]) for spec in DEMO_CUSTOMERS)
        assert AuditEvent.objects.filter(action="task_created").count() == Task.objects.count()
        # and capture ran: 李女士's injection and 陈小姐's password were blocked, each with its alert
        blocked = AuditEvent.objects.filter(action="memory_capture_blocked")
        assert set(blocked.values_list("conversation_id", flat=True)) == {"wm_demo_li", "wm_demo_chen"}
        assert Alert.objects.filter(kind=AlertKind.MESSAGE_BLOCKED).count() == 2
        # and the model-style hypotheses wait in the review queue, resting on the customers' words
        queued = list(review_queue().filter(type=MemoryType.HYPOTHESIS))
        assert {item.key for item in queued} == {
            "hypothesis:commute_zhangjiang",
            "hypothesis:has_cat",
            "hypothesis:relocating_alone",
        }
        assert all(item.source_message_ids for item in queued)
        counts = attention_counts()
        assert counts.to_confirm >= 3 and counts.blocked_today == 2 and counts.alerts_open == 3


def test_seed_demo_auto_send_customers_have_no_open_alert():
    # when the demo is seeded
    seed()
    with use_account(DEMO_ACCOUNT_ID):
        auto = Customer.objects.filter(session_mode=SessionMode.AUTO, auto_send_whitelisted=True)
        # then it still shows an auto-send customer, and none of them has an open alert
        # (auto-send waits while one is open, so such a customer would never show auto-send)
        assert auto.exists()
        assert not Alert.objects.filter(customer__in=auto, resolved=False).exists()


def test_seed_demo_runs_once():
    seed()
    # when it is run again, then it leaves the existing account alone
    assert "跳过演示数据" in seed()
    with use_account(DEMO_ACCOUNT_ID):
        assert Customer.objects.count() == len(DEMO_CUSTOMERS)


# Every item the demo's capture writes by itself, per customer, read by hand against the messages in
# `demo_data` (issue 35: the demo writes no wrong memory). A change to the reader that adds, drops or
# rewords one shows here first.
DEMO_AUTOMATIC_ITEMS = {
    "王先生": {
        "意向区域：浦东（浦东新区）",  # 我想在浦东租一套房子
        "预算：5000以内",  # 我预算5000以内，想要两居室
        "户型：两居室",
        "偏好：地铁附近",  # 我更喜欢地铁附近的，上班方便一点
        "不考虑：顶楼",  # 不考虑顶楼，夏天太热了 (the reason is no want)
        "称呼：老王",  # 叫我老王就行
        "偏好：南北通透",  # 最好是南北通透的
        "入住时间：下个月15号",  # 下个月15号之前要入住 (its day, in brackets, follows the clock: `_undated`)
    },
    "李女士": {
        "户型：一居室",  # 我在徐汇上班，想找个一居室 (where she works is no area she asked for)
        "预算：3500左右",  # 预算3500左右，希望能养猫
        "偏好：养猫",
        "不考虑：一楼",  # 不要一楼，比较潮
        "偏好：安静",  # 我比较喜欢安静的小区
    },
    "陈小姐": {
        "家庭情况：一家三口",  # 一家三口，预算12000，希望有学区
        "预算：12000",
        "偏好：学区",
        "不考虑：合租",  # 不能接受合租
        "称呼：陈老师",  # 称呼我陈老师吧
    },
    "张先生": {
        "城市：上海",  # 我下个月调到上海工作，想先租一套房子
        "偏好：2号线附近",  # 我更喜欢2号线附近的，预算8000左右
        "预算：8000左右",
        "不考虑：一楼",  # 不要一楼的房子
        "称呼：小张",  # 叫我小张就行
    },
}


def _undated(content: str) -> str:
    """The content without the day a relative date resolved to (the demo is seeded on any day)."""
    return re.sub(r"（\d{4}-\d{2}-\d{2}）", "", content)


def test_seed_demo_writes_no_wrong_memory():
    # Given the demo seeded as a newcomer meets it
    seed()
    with use_account(DEMO_ACCOUNT_ID):
        # When every item capture wrote by itself is read, customer by customer
        automatic = MemoryItem.objects.filter(created_by=MemoryCreatedBy.AUTO, status=MemoryStatus.ACTIVE).exclude(
            type=MemoryType.HYPOTHESIS
        )
        written: dict[str, set[str]] = {}
        for item in automatic.select_related("customer"):
            written.setdefault(item.customer.display_name, set()).add(_undated(item.content))
        # Then each is one of the items read by hand from the customers' words, and none is missing
        assert written == DEMO_AUTOMATIC_ITEMS
        # And what 陈小姐 only asked after (静安寺附近有没有整租的三居室？) waits as proposals, never memory
        asked = MemoryItem.objects.filter(customer__display_name="陈小姐", status=MemoryStatus.PROPOSED)
        assert {item.content for item in asked} >= {"户型：三居室", "意向区域：静安寺"}
        assert {item.held_back for item in asked} == {"question"}
