"""History pages read as a supervisor would say them: 「无」 for nothing, Asia/Shanghai times,
Chinese labels; never `None → 2026-11-02 10:00:00+00:00`."""

from __future__ import annotations

import datetime as dt

from django.urls import reverse
from django.utils import timezone

from memory.governance.services import memory_item_expire
from qiwei_site.platform.admin_site import readable_value


def test_admin_expiry_history_shows_none_and_local_time(admin_client, account_rows, staff_user):
    # given an item without expiry that a supervisor expires now
    item = memory_item_expire(item=account_rows.item, actor=staff_user, reason="客户已租到房")
    local = timezone.localtime(item.expires_at)
    # when its history page is opened
    body = admin_client.get(reverse("admin:memory_memoryitem_history", args=[item.pk])).content.decode()
    # then the change reads 无 → the Beijing time, and the status by its label
    assert f"无&nbsp;&rarr;&nbsp;&nbsp;{local.year}年{local.month}月{local.day}日 {local:%H:%M}" in body
    assert "有效&nbsp;&rarr;&nbsp;&nbsp;已失效" in body
    assert "None" not in body and "+00:00" not in body


def test_readable_value_speaks_chinese():
    beijing = dt.timezone(dt.timedelta(hours=8))
    assert readable_value(None) == "无" and readable_value("") == "无"
    assert (readable_value(True), readable_value(False)) == ("是", "否")
    assert readable_value(dt.datetime(2026, 11, 2, 2, 30, tzinfo=dt.UTC)) == "2026年11月2日 10:30"
    assert readable_value(dt.datetime(2026, 11, 2, 10, 30, tzinfo=beijing)) == "2026年11月2日 10:30"
    assert readable_value(3) == 3
