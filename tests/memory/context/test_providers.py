"""The provider boundary (spec §7): the local provider over the account database."""

from __future__ import annotations

import sys
import types

import pytest

from conversations.models import AuditEvent, CustomerProfile, MessageDirection
from memory.context.builder import LATEST_MESSAGE, BuiltContext
from memory.models import MemoryItem, MemorySnapshot
from memory.providers import (
    CaptureTurn,
    LocalMemoryProvider,
    MemoryProvider,
    PrefetchRequest,
    SearchScope,
    get_provider,
)
from qiwei_site.platform.errors import NotFound, ValidationFailed
from tests.factories import MemoryItemFactory

IN = MessageDirection.INBOUND


def test_get_provider_is_the_local_memory_provider():
    provider = get_provider()
    assert isinstance(provider, LocalMemoryProvider) and isinstance(provider, MemoryProvider)


def test_prefetch_builds_the_context_for_the_latest_or_a_given_message(customer, chat):
    first, second = chat(customer, [(IN, "想找地铁附近的两居室"), (IN, "预算5000")])
    latest = get_provider().prefetch(PrefetchRequest.for_conversation("wm_wang"))
    assert isinstance(latest, BuiltContext) and latest.trace["latest_message_id"] == second.id
    earlier = get_provider().prefetch(PrefetchRequest.for_conversation("wm_wang", first.id))
    assert earlier.trace["latest_message_id"] == first.id
    assert "两居室" in next(s.text for s in earlier.sections if s.name == LATEST_MESSAGE)


def test_prefetch_refuses_unknown_conversation_or_message(customer, chat):
    with pytest.raises(NotFound):
        get_provider().prefetch(PrefetchRequest.for_conversation("wm_nobody"))
    with pytest.raises(NotFound):
        get_provider().prefetch(PrefetchRequest.for_conversation("wm_wang", 999_999))


def test_capture_enqueues_a_job_with_the_documented_payload(customer, monkeypatch):
    # Given the capture queue (stubbed: this test covers the provider's side of the contract)
    calls = []
    fake = types.ModuleType("memory.capture.jobs")
    fake.capture_job_enqueue = lambda *, customer, payload: calls.append((customer, payload))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "memory.capture.jobs", fake)
    # When a turn is captured
    get_provider().capture(
        CaptureTurn(customer=customer, draft_id=7, profile_updates={"budget": "5000"}, source_message_ids=[3])
    )
    # Then one job carries the updates, their evidence and the draft
    assert calls == [(customer, {"profile_updates": {"budget": "5000"}, "source_message_ids": [3], "draft_id": 7})]


def test_search_goes_through_session_search(customer, chat):
    chat(customer, [(IN, "想找地铁附近的两居室"), (IN, "预算5000")])
    found = get_provider().search("地铁", SearchScope(conversation_id="wm_wang"))
    assert [m.text for m in found] == ["想找地铁附近的两居室"]


def test_conclude_refreshes_the_snapshot(customer):
    MemoryItemFactory(customer=customer, content="更喜欢地铁附近")
    get_provider().conclude("wm_wang")
    snapshot = MemorySnapshot.objects.get(customer=customer)
    assert "更喜欢地铁附近" in snapshot.content


def test_get_profile_returns_the_declared_fields(customer):
    CustomerProfile.objects.filter(customer=customer).update(budget="5000元/月")
    profile = get_provider().get_profile("wm_wang")
    assert profile["budget"] == "5000元/月" and set(profile) >= {"city", "layout", "preferred_name"}


def test_forget_deletes_the_item_through_governance(customer, staff_user):
    item = MemoryItemFactory(customer=customer, content="更喜欢地铁附近")
    get_provider().forget(item.pk, actor=staff_user, reason="客户要求删除")
    assert not MemoryItem.objects.filter(pk=item.pk).exists()
    assert AuditEvent.objects.filter(action="memory_item_forgotten").exists()


def test_forget_refuses_unknown_item_or_missing_reason(customer, staff_user):
    item = MemoryItemFactory(customer=customer)
    with pytest.raises(NotFound):
        get_provider().forget(999_999, actor=staff_user, reason="客户要求删除")
    with pytest.raises(ValidationFailed):
        get_provider().forget(item.pk, actor=staff_user, reason=" ")


def test_capture_writes_a_durable_capture_job(customer, chat):
    from memory.models import CaptureJob

    (message,) = chat(customer, [(IN, "预算5000")])
    get_provider().capture(
        CaptureTurn(
            customer=customer,
            draft_id=None,
            profile_updates={"budget": "5000"},
            source_message_ids=[message.id],
        )
    )
    job = CaptureJob.objects.get(customer=customer, message__isnull=True)
    assert job.payload == {"profile_updates": {"budget": "5000"}, "source_message_ids": [message.id], "draft_id": None}
