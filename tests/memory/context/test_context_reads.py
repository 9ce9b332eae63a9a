"""Every context that feeds a model or is read through the API leaves a record (issue 25, item 3):
snapshot version, memory item ids, recalled and recent message ids, the model session, who; purged
after QIWEI_CONTEXT_READ_RETENTION_DAYS by a beat task."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from conversations.models import AuditEvent, Draft, MessageDirection
from memory.governance.services import memory_item_add
from memory.snapshots import snapshot_refresh
from memory.tasks import context_reads_purge_all
from qiwei_site.platform.audit import context_read_record
from qiwei_site.platform.models import ContextRead, ContextReadPurpose
from sessions_epoch.clients import OfflineClient
from sessions_epoch.pipeline import draft_generate

IN, OUT = MessageDirection.INBOUND, MessageDirection.OUTBOUND
URL = "/api/accounts/acme/conversations/wm_wang/context/"


def remembered(customer, staff_user):
    item = memory_item_add(customer=customer, content="女儿明年在张江上小学", actor=staff_user, reason="电话沟通")
    snapshot, _ = snapshot_refresh(customer=customer, reason="测试")
    return item, snapshot


def test_context_read_through_the_api_is_recorded_with_its_reader(agent_client, agent_user, customer, chat, staff_user):
    # Given a customer with memory, and an older message the recall finds again
    item, snapshot = remembered(customer, staff_user)
    first, _reply, latest = chat(
        customer, [(IN, "张江的学区房还有吗"), (OUT, "有的，我整理一下"), (IN, "张江学区房月租多少")]
    )
    # When an agent reads the context through the API
    response = agent_client.get(URL)
    # Then one record says what it showed and to whom
    assert response.status_code == 200
    trace = response.json()["trace"]
    read = ContextRead.objects.get()
    assert read.purpose == ContextReadPurpose.API and read.conversation_id == "wm_wang"
    assert (read.actor_id, read.actor_name) == (agent_user.pk, agent_user.username)
    assert read.snapshot_version == snapshot.version == trace["snapshot_version"]
    assert read.item_ids == [item.pk] == trace["memory_item_ids"]
    assert read.recalled_message_ids == trace["recalled_message_ids"]
    assert read.recent_message_ids == trace["recent_message_ids"] and first.pk in read.recent_message_ids
    assert read.reply_to_id == latest.pk and read.draft_id is None and read.session_id == ""


def test_context_read_api_answer_from_the_cache_is_recorded_too(agent_client, customer, chat):
    # Given a context already built once
    chat(customer, [(IN, "想找地铁附近的两居室")])
    agent_client.get(URL)
    # When it is read again (served from the builder's cache)
    agent_client.get(URL)
    # Then both reads are recorded
    assert ContextRead.objects.filter(purpose=ContextReadPurpose.API).count() == 2


def test_context_fed_to_a_model_is_recorded_with_its_session_and_draft(customer, chat, staff_user):
    # Given a customer with memory and a message to answer
    item, snapshot = remembered(customer, staff_user)
    (latest,) = chat(customer, [(IN, "周六能看张江的房子吗")])
    # When the pipeline generates a draft
    draft = draft_generate(customer=customer, actor="pipeline", client=OfflineClient())
    # Then the context the model was shown is recorded with the session it ran in
    read = ContextRead.objects.get(purpose=ContextReadPurpose.DRAFT)
    assert read.draft_id == draft.pk and read.session_id == draft.session_id != ""
    assert read.snapshot_version == snapshot.version and read.item_ids == [item.pk]
    assert read.recent_message_ids == draft.context_trace["recent_message_ids"]
    assert read.reply_to_id == latest.pk and read.actor_name == "pipeline" and read.degraded is False


def test_context_read_that_cannot_be_recorded_never_costs_the_draft(customer, chat, staff_user, monkeypatch):
    # Given the record cannot be written (found in review: the error reached the caller after the
    # draft was saved, skipping capture)
    chat(customer, [(IN, "周六能看张江的房子吗")])

    def broken(**kwargs):
        raise DatabaseError("disk I/O error")

    monkeypatch.setattr("sessions_epoch.pipeline.context_read_record", broken)
    # When the pipeline generates a draft
    draft = draft_generate(customer=customer, actor="pipeline", client=OfflineClient())
    # Then the draft is there and the failure is audited with its stage
    assert Draft.objects.filter(pk=draft.pk).exists() and not ContextRead.objects.exists()
    failure = AuditEvent.objects.get(action="memory_recall_failed")
    assert failure.payload["stage"] == "context_read" and failure.payload["draft_id"] == draft.pk


def test_context_reads_past_their_retention_are_purged_by_the_beat_task(account, customer):
    # Given a read older than the retention and a recent one
    days = settings.QIWEI_CONTEXT_READ_RETENTION_DAYS
    old = context_read_record(conversation_id="wm_wang", purpose="api", trace={"memory_item_ids": [1]}, actor="审计员")
    ContextRead.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=days, minutes=1))
    recent = context_read_record(conversation_id="wm_wang", purpose="api", trace={}, actor="审计员")
    # When beat runs the purge (by name, one task per active account)
    assert context_reads_purge_all.delay().get() == 1
    # Then only the recent read stays
    assert list(ContextRead.objects.values_list("pk", flat=True)) == [recent.pk]
    assert "context-read-purge" in settings.CELERY_BEAT_SCHEDULE


def test_every_read_of_a_drafts_context_is_recorded(agent_client, agent_user, admin_client, customer, chat):
    # Given a draft the model was given a context for
    chat(customer, [(IN, "想找地铁附近的两居室，预算六千")])
    draft = draft_generate(customer=customer, actor="pipeline", client=OfflineClient())
    turn = ContextRead.objects.get(purpose=ContextReadPurpose.DRAFT)
    # When an agent opens its prompt through the API (the Workbench's 查看提示词 reads the same), and a
    # supervisor opens the draft's page (its trace) and its prompt page in admin
    assert agent_client.get(f"/api/accounts/acme/drafts/{draft.pk}/prompt/").status_code == 200
    assert admin_client.get(f"/admin/conversations/draft/{draft.pk}/change/").status_code == 200
    assert admin_client.get(f"/admin/conversations/draft/{draft.pk}/prompt/").status_code == 200
    # Then each read is on record, by ids, naming the draft and who read it (issue 36: these three
    # showed the whole prompt or what it quoted and wrote nothing)
    reads = list(ContextRead.objects.exclude(purpose=ContextReadPurpose.DRAFT).order_by("pk"))
    assert [read.purpose for read in reads] == [
        ContextReadPurpose.DRAFT_PROMPT,
        ContextReadPurpose.DRAFT_TRACE,
        ContextReadPurpose.DRAFT_PROMPT,
    ]
    assert {read.draft_id for read in reads} == {draft.pk}
    assert reads[0].actor_id == agent_user.pk and reads[1].actor_id == reads[2].actor_id != agent_user.pk
    assert all(read.recent_message_ids == turn.recent_message_ids for read in reads)
