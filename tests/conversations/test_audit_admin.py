"""The audit as a supervisor reads it in admin: Chinese action labels, Chinese names for payload
keys, ids as links to the rows they name, every value escaped."""

from __future__ import annotations

from django.urls import reverse

from conversations.admin import audit_payload_html
from conversations.models import AuditEvent
from memory.governance.services import memory_item_add
from memory.models import MemoryType
from qiwei_site.platform.audit import audit_record
from tests.factories import CustomerFactory, MessageFactory


def test_audit_payload_html_names_keys_in_chinese_and_links_ids(account):
    # Given a payload with an item id, message ids and categories
    payload = {"item_id": 12, "message_ids": [3, 4], "categories": ["prompt_injection"], "forced": True}
    # When it is rendered for the admin
    html = str(audit_payload_html(payload))
    # Then keys and category codes read in Chinese, ids open their admin pages, flags read 是/否
    assert "记忆条目：" in html and '<a href="/admin/memory/memoryitem/12/change/">#12</a>' in html
    assert '<a href="/admin/conversations/message/3/change/">#3</a>' in html
    assert "类别：提示注入" in html and "强制：是" in html


def test_audit_payload_html_names_every_key_services_write_in_chinese(account):
    # Given the keys a forget and a message forget write (issue 24, item 2)
    payload = {"history_rows_deleted": 2, "profile_field_cleared": True, "items_forgotten": [5], "type": "fact"}
    html = str(audit_payload_html(payload))
    # Then none shows as a code
    assert "删除的历史记录：2" in html and "已清空画像字段：是" in html and "类型：事实" in html
    assert "history_rows_deleted" not in html and "profile_field_cleared" not in html


def test_audit_admin_lists_system_actors_by_name(admin_client, account):
    # Given an audit row written by automatic capture
    audit_record(action="memory_item_captured", conversation_id="wm_x", actor="capture", reason="客户原话")
    # Then the journal names the actor in Chinese
    body = admin_client.get(reverse("admin:conversations_auditevent_changelist")).content.decode()
    assert "自动提取" in body


def test_audit_payload_html_escapes_values_and_shortens_long_payloads(account):
    # Given a payload value that looks like markup, and a long payload
    html = str(audit_payload_html({"stage": "<script>alert(1)</script>"}))
    # Then it shows literally
    assert "<script>" not in html and "&lt;script&gt;" in html
    long = {f"k{i}": i for i in range(9)}
    assert "另 3 项" in str(audit_payload_html(long, limit=6))
    assert str(audit_payload_html({})) == "无"


def test_audit_admin_list_shows_chinese_action_and_linked_item(admin_client, account, staff_user):
    # Given a supervisor's addition, audited with the item's id
    customer = CustomerFactory(conversation_id="wm_audit_wang", display_name="王先生")
    message = MessageFactory(customer=customer, text="预算六千以内")
    item = memory_item_add(
        customer=customer,
        type=MemoryType.FACT,
        content="预算：月租六千以内",
        source_message_ids=[message.pk],
        actor=staff_user,
        reason="电话确认",
    )
    audit_record(action="memory_capture_blocked", conversation_id=customer.conversation_id, actor="capture")
    # When the audit list and the addition's page are opened
    page = admin_client.get("/admin/conversations/auditevent/").content.decode()
    event = AuditEvent.objects.filter(action="memory_item_added").latest("id")
    detail = admin_client.get(f"/admin/conversations/auditevent/{event.pk}/change/").content.decode()
    # Then actions read in Chinese, not as codes, and the item id is a link
    assert "memory_item_added" not in page.split("<tbody>", 1)[-1].split("</tbody>", 1)[0]
    assert f'href="/admin/memory/memoryitem/{item.pk}/change/"' in detail


def test_audit_payload_html_reads_an_alerts_cause_as_the_message_that_raised_it(account):
    # Given an automatic alert's payload naming its cause by the message's id
    html = str(audit_payload_html({"cause": "message:25", "kind": "credential"}))
    # Then the supervisor reads 消息 #25, not the code
    assert "消息" in html and "#25" in html
    assert "message:" not in html
