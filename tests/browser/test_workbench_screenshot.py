"""A screenshot of the Workbench with demo-like data (docs/workbench.png).

Writes to test-artifacts/ on every run; set QIWEI_WRITE_DOCS_SCREENSHOT=1 to refresh the
committed docs/workbench.png.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from conversations.models import Alert, Customer, DraftStatus, Message, Task
from memory.items import memory_item_put
from memory.models import MemoryType
from qiwei_site.operations.demo_data import DEMO_CUSTOMERS
from qiwei_site.platform.audit import audit_record
from tests.browser.conftest import ARTIFACTS, login
from tests.factories import CustomerFactory, DraftFactory, MessageFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# What capture would find in 王先生's own words (demo conversation), keyed as capture keys them.
WANG_MEMORY = [
    (MemoryType.PREFERENCE, "preference:地铁", "更喜欢地铁附近，上班方便", 3),
    (MemoryType.CONSTRAINT, "constraint:顶楼", "不考虑顶楼（夏天太热）", 7),
    (MemoryType.FACT, "profile:preferred_name", "称呼：老王", 6),
    (MemoryType.FACT, "profile:budget", "预算：月租 5000 以内", 2),
    (MemoryType.FACT, "profile:layout", "户型：两居室", 2),
    (MemoryType.PREFERENCE, "preference:南北通透", "最好是南北通透的", 8),
    (MemoryType.EVENT, "event:入住", "下个月15号之前要入住", 9),
]


def _seed_demo() -> Customer:
    now = timezone.now().replace(second=0, microsecond=0)
    wang: Customer | None = None
    for c_index, spec in enumerate(DEMO_CUSTOMERS):
        count = len(spec["messages"])
        last = now - dt.timedelta(minutes=37 * c_index)
        customer = CustomerFactory(
            conversation_id=spec["conversation_id"],
            display_name=spec["display_name"],
            session_mode=spec["session_mode"],
            last_message_at=last,
        )
        for index, (direction, sender, text) in enumerate(spec["messages"]):
            MessageFactory(
                customer=customer,
                external_id=f"{spec['conversation_id']}-{index:03d}",
                direction=direction,
                sender=sender,
                text=text,
                sent_at=last - dt.timedelta(minutes=4 * (count - 1 - index)),
            )
        for title in spec["tasks"]:
            Task.objects.create(customer=customer, title=title, due_at=now + dt.timedelta(days=2))
        for level, text in spec["alerts"]:
            Alert.objects.create(customer=customer, level=level, text=text)
        if c_index == 0:
            wang = customer
    assert wang is not None
    for memory_type, key, content, message_index in WANG_MEMORY:
        source = Message.objects.get(external_id=f"wm_demo_wang-{message_index:03d}")
        memory_item_put(
            customer=wang,
            type=memory_type,
            key=key,
            content=content,
            source_message_ids=[source.pk],
            actor="capture",
            reason="从客户原话提取",
        )
    profile = wang.profile
    profile.preferred_name, profile.budget, profile.layout = "老王", "月租 5000 以内", "两居室"
    profile.district, profile.city, profile.move_in_date = "浦东（张江/金桥）", "上海", "下月15日前"
    profile.save()
    DraftFactory(
        customer=wang,
        reply="老王您好！张江那套离2号线张江高科站步行约8分钟，南北通透、中间楼层，月租4800元。周六上午10点我在小区门口等您？",
        confidence=0.82,
        requires_human=True,
        reasons=["客户询问具体距离，需确认房源信息", "涉及看房时间安排"],
        status=DraftStatus.PENDING,
    )
    audit_record(action="draft_generated", conversation_id=wang.conversation_id, actor="turn", reason="客户新消息")
    return wang


def test_workbench_screenshot_with_demo_data(page, browser_context, live_server, staff_user):
    # given a demo-like account with four customers, memory, tasks, alerts and a draft
    _seed_demo()
    login(browser_context, live_server, staff_user)
    page.route(
        "**/api/status*",
        lambda route: route.fulfill(
            json={"online": True, "logged_in": True, "subscription": "专业版", "checked_at": None, "stale": False}
        ),
    )
    from playwright.sync_api import expect

    # when the supervisor opens the page
    page.goto(live_server.url + "/")
    expect(page.locator("#wb-customer-name")).to_have_text("王先生")
    expect(page.locator("#wb-snapshot")).to_contain_text("不考虑顶楼")
    expect(page.locator("#wb-status-banner")).to_have_attribute("data-state", "online")
    expect(page.locator("#wb-drafts")).to_contain_text("张江高科站")

    # then the screenshot is taken, and every customer is listed
    assert page.locator(".wb-conversation").count() == len(DEMO_CUSTOMERS)
    ARTIFACTS.mkdir(exist_ok=True)
    target = ARTIFACTS / "workbench.png"
    page.screenshot(path=str(target))
    assert target.stat().st_size > 20_000
    if os.environ.get("QIWEI_WRITE_DOCS_SCREENSHOT") == "1":
        shutil.copyfile(target, Path(settings.BASE_DIR) / "docs" / "workbench.png")
