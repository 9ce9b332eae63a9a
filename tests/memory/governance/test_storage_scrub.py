"""A forget whose WAL checkpoint a reader blocks (issue 21, item 6): the scrub is recorded as
pending (audited, on /readyz and the start page), retried in the background, and completes once
the reader lets go — then the WAL no longer holds the forgotten words."""

from __future__ import annotations

from django.db import connections
from django.urls import reverse

from conversations.models import AuditAction, AuditEvent
from memory.governance.scrub import STORAGE_SCRUB_MAX_ATTEMPTS, storage_scrubs_pending, storage_scrubs_retry
from memory.governance.services import memory_item_add, memory_item_forget
from memory.models import StorageScrub
from memory.tasks import storage_scrub_account
from qiwei_site.platform.tenancy import current_alias
from tests.memory.governance.test_no_bytes_left import NOTE, files_containing, second_reader, wal_size, windows

__all__ = ["second_reader"]  # the fixture, used below


def hold_the_wal(reader) -> None:
    """Another connection in a read transaction that still sees the note: no checkpoint can pass it."""
    reader.execute("BEGIN")
    assert reader.execute("SELECT content FROM memory_memoryitem").fetchall() == [(NOTE,)]


def test_forget_blocked_by_a_reader_leaves_a_pending_scrub_that_completes_later(
    customer, staff_user, second_reader, client, admin_client
):
    # Given a note, a reader holding the WAL, and a short wait for it (the account's is 5 s)
    item = memory_item_add(customer=customer, content=NOTE, actor=staff_user, reason="主管回访")
    reader = second_reader["connection"]
    hold_the_wal(reader)
    with connections[current_alias()].cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout = 200")
    # When the note is forgotten
    memory_item_forget(item=item, actor=staff_user, reason="客户要求删除")
    # Then the checkpoint could not pass the reader: a pending scrub, audited, names the conversation
    scrub = StorageScrub.objects.get()
    assert (scrub.cause, scrub.conversation_id, scrub.done_at) == ("forget", customer.conversation_id, None)
    pending = AuditEvent.objects.get(action=AuditAction.STORAGE_SCRUB_PENDING)
    assert pending.payload == {"scrub_id": scrub.pk, "cause": "forget"} and NOTE not in pending.reason
    # And /readyz stays ready but says so, and the start page counts it
    ready = client.get("/readyz").json()
    assert ready["status"] == "ok" and "1 pending storage scrub" in ready["checks"]["account_databases"]
    counter = "旧数据页暂留在 WAL 文件中，后台每分钟重试"  # the start page counter's own words
    assert counter in admin_client.get(reverse("admin:index")).content.decode()
    # When the background retry runs while the reader still holds on, nothing changes but the count
    assert storage_scrubs_retry() == 0
    assert StorageScrub.objects.get().attempts == 2 and storage_scrubs_pending() == 1
    # When the reader lets go and the task runs again
    reader.commit()
    assert storage_scrub_account("acme") == 1
    # Then the scrub is done, audited, and the WAL holds nothing of the note
    assert StorageScrub.objects.get().done_at is not None and storage_scrubs_pending() == 0
    assert AuditEvent.objects.filter(action=AuditAction.STORAGE_SCRUBBED).count() == 1
    assert wal_size() == 0 and files_containing(windows(NOTE, 4)) == {}
    assert counter not in admin_client.get(reverse("admin:index")).content.decode()


def test_pending_scrubs_stop_retrying_after_the_bound(customer, staff_user):
    # Given a scrub that has used every attempt
    StorageScrub.objects.create(cause="erase", conversation_id="wm_gone", attempts=STORAGE_SCRUB_MAX_ATTEMPTS)
    # When the retry runs, it is left alone (still pending and visible)
    assert storage_scrubs_retry() == 0
    assert StorageScrub.objects.get().attempts == STORAGE_SCRUB_MAX_ATTEMPTS and storage_scrubs_pending() == 1
