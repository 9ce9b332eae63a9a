"""The audit reads in Chinese (issue 39, item 4): every action, with the payload its service writes,
shown in the journal's list and on its page with no English key or code outside a short allow-list;
the customer by name, linked; a user by name; a memory key, a field list and a count by their
Chinese names. The registry's journal too."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from conversations.admin.audit import audit_payload_html, memory_key_label
from conversations.models import AuditAction, AuditEvent
from qiwei_site.platform.admin import registry_payload_html
from qiwei_site.platform.audit import audit_record, registry_audit_record
from tests.factories import CustomerFactory, UserFactory

CONVERSATION = "wm_wang_audit"

# What each action's service writes (read from the services; ids are made up, words are not).
PAYLOADS: dict[str, dict] = {
    AuditAction.ACCOUNT_CREATED: {"account_id": "acme", "name": "链家浦东店"},
    AuditAction.ACCOUNT_UPDATED: {"name": "链家浦东二店", "is_active": False},
    AuditAction.ACCOUNT_DELETED: {"registry_rows": 3},
    AuditAction.MEMBERSHIP_GRANTED: {"user_id": None},  # filled with a real user below
    AuditAction.MEMBERSHIP_REVOKED: {"user_id": None},
    AuditAction.CUSTOMER_UPDATED: {"fields": ["display_name", "auto_send_whitelisted"], "auto_send_whitelisted": True},
    AuditAction.CUSTOMER_PROFILE_UPDATED: {
        "fields": ["budget", "district"],
        "grounded": True,
        "source_message_ids": [3],
    },
    AuditAction.CUSTOMER_ERASED: {"counts": {"conversations.Message": 12, "memory.MemoryItem": 4, "history_rows": 30}},
    AuditAction.MESSAGES_INGESTED: {"message_ids": [3, 4], "duplicates": 1, "capture_job_ids": [7]},
    AuditAction.MESSAGE_REVEALED: {"message_id": 3, "direction": "inbound"},
    AuditAction.MESSAGE_FORGOTTEN: {
        "message_id": 3,
        "items_forgotten": [5],
        "items_evidence_removed": [6],
        "drafts_scrubbed": [2],
        "capture_jobs_cancelled": 1,
        "sealed_original_deleted": True,
    },
    AuditAction.MESSAGES_SEALED: {"message_ids": [3], "categories": ["credential"], "draft_ids": [2]},
    AuditAction.STORAGE_SCRUB_PENDING: {"scrub_id": 1, "cause": "forget", "attempts": 2},
    AuditAction.AUDIT_WORDS_SCRUBBED: {"row_ids": [10, 11]},
    AuditAction.STORAGE_SCRUBBED: {"scrub_id": 1, "cause": "erase"},
    AuditAction.MEMORY_ITEM_CAPTURED: {
        "item_id": 5,
        "type": "preference",
        "outcome": "created",
        "source_message_ids": [3],
        "key": "preference:地铁附近",
    },
    AuditAction.MEMORY_ITEM_PROPOSED: {
        "item_id": 6,
        "type": "preference",
        "held_back": "question",
        "key": "profile:layout",
    },
    AuditAction.MEMORY_PROPOSAL_ACCEPTED: {"item_id": 6, "type": "fact", "edited": True, "held_back": "question"},
    AuditAction.MEMORY_PROPOSAL_EXPIRED: {"item_id": 6, "type": "preference", "held_back": "bargaining"},
    AuditAction.MEMORY_ITEM_BACKFILLED: {
        "item_id": 7,
        "type": "fact",
        "outcome": "evidence_added",
        "source_message_ids": [3],
    },
    AuditAction.MEMORY_ITEM_ADDED: {
        "item_id": 8,
        "type": "preference",
        "outcome": "created",
        "key": "human:preference:3fa2c1d0e9b8",
        "source_message_ids": [],
    },
    AuditAction.MEMORY_ITEM_EDITED: {"item_id": 8, "type": "fact", "fields": ["content", "importance"]},
    AuditAction.MEMORY_ITEM_CONFIRMED: {
        "item_id": 9,
        "type": "fact",
        "previous_type": "hypothesis",
        "hypothesis_content": "可能在陆家嘴上班",
        "content": "在陆家嘴上班",
        "wording_edited": False,
    },
    AuditAction.MEMORY_ITEM_REJECTED: {
        "item_id": 9,
        "type": "hypothesis",
        "profile_field_cleared": False,
        "proposal": True,
    },
    AuditAction.MEMORY_ITEM_EXPIRED: {"item_id": 9, "type": "event", "automatic": True, "profile_field_cleared": True},
    AuditAction.MEMORY_ITEM_FORGOTTEN: {
        "item_id": 9,
        "type": "fact",
        "history_rows_deleted": 3,
        "snapshots_redacted": 2,
        "profile_field_cleared": False,
        "sealed_originals_deleted": 1,
    },
    AuditAction.MEMORY_ITEM_SUPERSEDED: {"item_id": 5, "type": "preference", "superseded_ids": [4]},
    AuditAction.MEMORY_CAPTURE_BLOCKED: {"message_id": 3, "categories": ["prompt_injection", "credential"]},
    AuditAction.MEMORY_CAPTURE_FAILED: {"message_id": 3, "job_id": 7, "attempt": 3, "final": True, "error": "数据库忙"},
    AuditAction.MEMORY_RECALL_FAILED: {"stage": "grounding", "error": "超时"},
    AuditAction.SESSION_EPOCH_OPENED: {"session_id": 1, "memory_version": 3},
    AuditAction.SESSION_EPOCH_ROTATED: {"old_session_id": 1, "new_session_id": 2, "old_turns": 20, "pruned_epochs": 0},
    AuditAction.DRAFT_GENERATED: {"draft_id": 2, "regenerate": False, "replaces": None, "grounded_fields": ["budget"]},
    AuditAction.DRAFT_APPROVED: {"draft_id": 2, "edited": True},
    AuditAction.DRAFT_REJECTED: {"draft_id": 2},
    AuditAction.DRAFT_SENT: {"draft_id": 2, "delivery_id": 1, "auto": False},
    AuditAction.DRAFT_AUTO_SENT: {"draft_id": 2, "delivery_id": 1, "auto": True},
    AuditAction.DRAFT_SEND_FAILED: {"draft_id": 2, "error": "网关超时"},
    AuditAction.WORKER_PING: {"marker": "心跳"},
    AuditAction.ALERT_RAISED: {"alert_id": 1, "kind": "credential", "level": "critical", "cause": "message:3"},
    AuditAction.ALERT_RESOLVED: {"alert_id": 1, "kind": "credential"},
    AuditAction.ALERT_CREATED: {"alert_id": 2, "kind": "manual", "level": "warning"},
    AuditAction.ALERT_UPDATED: {"alert_id": 2, "fields": ["title", "level"], "level": "critical"},
    AuditAction.TASK_CREATED: {"task_id": 1, "due_at": "2026-12-08T02:00:00+00:00"},
    AuditAction.TASK_UPDATED: {"task_id": 1, "fields": ["title", "due_at"]},
    AuditAction.TASK_RESOLVED: {"task_id": 1},
    AuditAction.RECOMMENDATION_CREATED: {"recommendation_id": 1},
    AuditAction.RECOMMENDATION_UPDATED: {"recommendation_id": 1, "fields": ["title"]},
    AuditAction.RECOMMENDATION_RESOLVED: {"recommendation_id": 1},
    AuditAction.RECOMMENDATION_FEEDBACK_RECORDED: {"recommendation_id": 1, "feedback_id": 3, "source": "customer"},
    AuditAction.WECOM_CONNECTED: {
        "corp_id": "ww5f3a9c1e7b2d4068",
        "open_kfids": ["wk7a3c01"],
        "upstream": "wecom",
        "fields": ["corp_id", "secret", "token", "aes_key", "open_kfids"],
    },
    AuditAction.WECOM_DISCONNECTED: {},
    AuditAction.CUSTOMER_UPSTREAM_PROFILE: {"fields": ["display_name", "avatar_url"]},
}

# English a supervisor may meet: names, not codes — an account's id, a user's name — and the
# conversation ids beside customers' names (wm_…).
ALLOWED = {"ID", "API", "acme", "zhang_supervisor"}
ENGLISH = re.compile(r"[A-Za-z_][A-Za-z_.]{2,}")


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


def _english(text: str, *names: str) -> set[str]:
    allowed = ALLOWED | {word for name in names for word in ENGLISH.findall(name)}
    return {word for word in ENGLISH.findall(text) if word not in allowed and not word.startswith("wm_")}


def test_every_audit_action_has_a_realistic_payload_here():
    # the table above covers every action there is (a new action needs its row)
    assert set(PAYLOADS) == set(AuditAction.values)


@pytest.mark.parametrize("action", sorted(AuditAction.values))
def test_audit_payload_of_every_action_reads_in_chinese(account, action):
    # given the payload the action's service writes
    user = UserFactory(username="zhang_supervisor")
    payload = {k: (user.pk if k == "user_id" else v) for k, v in PAYLOADS[action].items()}
    # when it is shown
    text = _text(str(audit_payload_html(payload)))
    # then no key or code is left in English
    assert _english(text) == set(), text


def test_audit_journal_pages_read_in_chinese_with_the_customer_by_name(admin_client, account, staff_user):
    # given one row of every action about 王先生, by a supervisor and by the system
    customer = CustomerFactory(conversation_id=CONVERSATION, display_name="王先生")
    for action, payload in PAYLOADS.items():
        payload = {k: (staff_user.pk if k == "user_id" else v) for k, v in payload.items()}
        actor = staff_user if "memory_item_" in action else "capture"
        audit_record(action=action, conversation_id=CONVERSATION, actor=actor, reason="客户电话里说明", payload=payload)
    # when the supervisor walks the list, page by page, and every row's page
    listing = reverse("admin:conversations_auditevent_changelist")
    pages = [admin_client.get(listing, {"p": n}).content.decode() for n in range(1, 3)]
    rows = [
        admin_client.get(reverse("admin:conversations_auditevent_change", args=[e.pk]))
        for e in AuditEvent.objects.all()
    ]
    # then the rows' cells read in Chinese: the customer by name, linked to their page
    customer_url = reverse("admin:conversations_customer_change", args=[customer.pk])
    for body in pages:
        table = body.split("<tbody>", 1)[-1].split("</tbody>", 1)[0]
        assert _english(_text(table), staff_user.username) == set()
        assert f'<a href="{customer_url}">王先生</a>' in table
    for response in rows:
        assert response.status_code == 200
        content = response.content.decode().split('id="content-main"', 1)[-1].split('<div class="submit-row"', 1)[0]
        fieldsets = content.split("<fieldset", 1)[-1].split(">", 1)[-1].split("</fieldset>", 1)[0]
        english = _english(_text(fieldsets), staff_user.username)
        assert english == set(), (response.context["original"].action, english)
        if response.context["original"].conversation_id == CONVERSATION:
            assert "王先生" in fieldsets


def test_memory_key_label_names_the_kind_never_the_digest():
    assert memory_key_label("human:preference:3fa2c1d0e9b8") == "人工添加的偏好"
    assert memory_key_label("profile:budget") == "画像·预算"
    assert memory_key_label("preference:地铁附近") == "偏好：地铁附近"
    assert memory_key_label("hypothesis:commute_first") == "待确认推断"


def test_registry_journal_reads_a_user_by_name(admin_client, account, staff_user):
    # given a grant recorded in the registry's journal
    agent = UserFactory(username="li_agent")
    registry_audit_record(
        action=AuditAction.MEMBERSHIP_GRANTED,
        account_id="acme",
        actor=staff_user,
        reason="新同事",
        payload={"user_id": agent.pk},
    )
    # when the supervisor opens the registry's journal
    body = admin_client.get(reverse("admin:conversations_registryauditevent_changelist")).content.decode()
    # then the grant names the agent, linked to their page, not {"user_id": …}
    assert f'<a href="{reverse("admin:auth_user_change", args=[agent.pk])}">li_agent</a>' in body
    assert "user_id" not in body.split("<tbody>", 1)[-1]
    assert "用户：" in str(registry_payload_html({"user_id": agent.pk}))
