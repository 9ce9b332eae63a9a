"""A snapshot in admin reads as sections and lists, never as raw Markdown, and nothing in an item's
text can become markup or a link."""

from __future__ import annotations

from django.urls import reverse

from memory.admin.snapshots import render_snapshot_html
from memory.governance.services import memory_item_add
from memory.models import CaptureJob, CaptureJobStatus
from memory.snapshots import snapshot_current


def test_snapshot_page_renders_sections_and_items(admin_client, staff_user, customer, review_items):
    # given a snapshot with facts, constraints and hypotheses
    snapshot = snapshot_current(customer)
    # when the supervisor opens it
    body = admin_client.get(reverse("admin:memory_memorysnapshot_change", args=[snapshot.pk])).content.decode()
    # then the sections are headings and the items list entries
    assert "<h2>已确认事实</h2>" in body
    assert "<li>客户是中学教师，寒暑假方便看房</li>" in body
    assert "<h2>待确认（模型推断，仅可用于向客户确认，不是事实）</h2>" in body
    # and the raw text the model saw is still there, for reference
    assert "## 已确认事实" in body


def test_snapshot_rendering_escapes_markup_and_drops_links(admin_client, staff_user, customer):
    # given an item whose words look like HTML and a link
    memory_item_add(
        customer=customer,
        content='<script>alert("x")</script> 看 [房源](javascript:alert(1)) <img src=x onerror=alert(1)>',
        actor=staff_user,
        reason="客户原话",
    )
    snapshot = snapshot_current(customer)
    # when rendered for the supervisor
    html = str(render_snapshot_html(snapshot.content))
    body = admin_client.get(reverse("admin:memory_memorysnapshot_change", args=[snapshot.pk])).content.decode()
    # then nothing became markup: the script, the image and the link stay text
    assert "&lt;script&gt;" in html and "<script>" not in html
    assert "<img" not in html and "<a " not in html and "href" not in html
    assert '<script>alert("x")</script>' not in body and "onerror=alert(1)>" not in body


def test_snapshot_rendering_keeps_emphasis_and_lists():
    html = str(render_snapshot_html("## 偏好\n- 喜欢 **南北通透**\n- 不要 `一楼`"))
    assert html == (
        "<h2>偏好</h2>\n<ul>\n<li>喜欢 <strong>南北通透</strong></li>\n<li>不要 <code>一楼</code></li>\n</ul>\n"
    )


def test_failed_capture_jobs_list_shows_the_error_masked(admin_client, customer, phone_message):
    # given a job that gave up with an error quoting a phone number
    CaptureJob.objects.create(
        customer=customer,
        message=phone_message,
        status=CaptureJobStatus.FAILED,
        attempts=5,
        last_error="提取失败：13812345678 无法解析",
    )
    # when the supervisor opens the failed jobs
    body = admin_client.get(reverse("admin:memory_capturejob_changelist"), {"status__exact": "failed"}).content.decode()
    # then the error reads masked
    assert "138****5678" in body and "13812345678" not in body
