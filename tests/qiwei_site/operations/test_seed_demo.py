"""`manage.py seed_demo` creates the Chinese demo once, through the services a real day uses: the
start page and the review queue have something to show."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from conversations.models import Alert, AlertKind, AuditEvent, Customer, Message, Recommendation, SessionMode, Task
from memory.attention import attention_counts, review_queue
from memory.models import MemoryType
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
