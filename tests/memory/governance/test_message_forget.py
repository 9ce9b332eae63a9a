"""Forgetting a message (issue 25, item 4): it goes, and with it its standing as evidence — an
automatic item it alone supported is forgotten (audited), an item with other evidence keeps it, a
supervisor's item stays; the prompt never lists a forgotten fact again."""

from __future__ import annotations

import pytest

from conversations.models import AuditEvent, CustomerProfile, Message, MessageDirection, MessageSecret
from conversations.received import stored_form
from memory.capture.services import capture_message
from memory.context.search import search_messages
from memory.governance.messages import CASCADE_REASON, message_forget
from memory.governance.services import memory_item_reject
from memory.models import CaptureJob, MemoryCreatedBy, MemoryItem, MemorySnapshot, MemoryStatus
from memory.profile import customer_profile_update
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.errors import Conflict
from tests.factories import CustomerFactory, MemoryItemFactory, MessageFactory

BASE = "/api/accounts/acme/conversations/wm_forget_001"
REASON = "客户要求删除这条消息"


@pytest.fixture
def said(account):
    """A customer whose budget rests on one message, and whose layout rests on two."""
    customer = CustomerFactory(conversation_id="wm_forget_001", display_name="周女士")
    budget = MessageFactory(customer=customer, text="预算四千五左右")
    layout = MessageFactory(customer=customer, text="想租两居室")
    again = MessageFactory(customer=customer, text="还是两居室")
    for message in (budget, layout, again):
        capture_message(message=message)
    return customer, budget, layout, again


def _active(customer, key):
    return MemoryItem.objects.filter(customer=customer, key=key, status=MemoryStatus.ACTIVE).first()


def test_message_forget_forgets_the_automatic_item_it_alone_supported(said, staff_user):
    customer, budget, _layout, _again = said
    item = _active(customer, "profile:budget")
    assert item is not None and item.source_message_ids == [budget.pk]
    # When the only message behind the budget is forgotten
    result = message_forget(message=budget, actor=staff_user, reason=REASON)
    # Then the message and the budget are gone, each audited, and the snapshot no longer shows it
    assert not Message.objects.filter(pk=budget.pk).exists()
    assert not MemoryItem.objects.filter(pk=item.pk).exists()
    assert result["items_forgotten"] == [item.pk]
    forgotten = AuditEvent.objects.get(action="memory_item_forgotten")
    assert forgotten.reason.startswith(CASCADE_REASON) and forgotten.payload["item_id"] == item.pk
    event = AuditEvent.objects.get(action="message_forgotten")
    assert event.payload["message_id"] == budget.pk and event.payload["items_forgotten"] == [item.pk]
    assert "4500" not in MemorySnapshot.objects.filter(customer=customer).latest("version").content
    # And the message's words are found by no search
    assert search_messages(query="四千五", conversation_id=customer.conversation_id) == []


def test_message_forget_keeps_an_item_with_other_evidence(said, staff_user):
    customer, _budget, layout, again = said
    item = _active(customer, "profile:layout")
    assert set(item.source_message_ids) == {layout.pk, again.pk}
    # When one of its two messages is forgotten
    result = message_forget(message=layout, actor=staff_user, reason=REASON)
    # Then the item stays, citing only the other
    item.refresh_from_db()
    assert item.status == MemoryStatus.ACTIVE and item.source_message_ids == [again.pk]
    assert result == {
        "message_id": layout.pk,
        "items_forgotten": [],
        "items_evidence_removed": [item.pk],
        "drafts_scrubbed": [],
    }


def test_message_forget_keeps_a_supervisors_item(account, staff_user):
    # Given an item a supervisor wrote, citing one message
    message = MessageFactory(text="我姓周")
    item = MemoryItemFactory(
        customer=message.customer, source_message_ids=[message.pk], created_by=MemoryCreatedBy.HUMAN
    )
    # When the message is forgotten
    message_forget(message=message, actor=staff_user, reason=REASON)
    # Then the supervisor's item stands, with no evidence left
    item.refresh_from_db()
    assert item.status == MemoryStatus.ACTIVE and item.source_message_ids == []


def test_message_forget_deletes_the_sealed_original(account, staff_user):
    # Given a message stored masked with its original sealed, as ingest stores it
    stored, sealed, categories = stored_form("门锁密码是Lx9qa2041")
    message = MessageFactory(text=stored)
    MessageSecret.objects.create(message=message, sealed=sealed, categories=list(categories))
    # When it is forgotten
    message_forget(message=message, actor=staff_user, reason=REASON)
    # Then the sealed original goes with it
    assert not MessageSecret.objects.exists()
    assert AuditEvent.objects.get(action="message_forgotten").payload["sealed_original_deleted"] is True


def test_message_forget_api_needs_staff_and_a_reason(said, staff_client, agent_client):
    _customer, budget, _layout, _again = said
    url = f"{BASE}/messages/{budget.pk}/forget/"
    # An agent may not; staff without a reason get a 400 with a code
    assert agent_client.post(url, {"reason": REASON}, format="json").status_code == 403
    missing = staff_client.post(url, {}, format="json")
    assert missing.status_code == 400 and missing.json()["code"]
    # Staff with a reason forget it
    response = staff_client.post(url, {"reason": REASON}, format="json")
    assert response.status_code == 200 and response.json()["message_id"] == budget.pk
    # And a second time it is unknown
    again = staff_client.post(url, {"reason": REASON}, format="json")
    assert again.status_code == 404 and again.json()["code"] == "message_not_found"


@pytest.mark.parametrize("message_id", ["abc", "0", "-1", "99999999999999999999999"])
def test_message_forget_api_unknown_ids_are_404(said, staff_client, message_id):
    response = staff_client.post(f"{BASE}/messages/{message_id}/forget/", {"reason": REASON}, format="json")
    assert response.status_code == 404 and response.json()["code"] == "message_not_found"


def test_message_forget_api_another_customers_message_is_unknown(said, staff_client):
    # Given a message of another customer
    other = MessageFactory(text="预算六千")
    # When it is asked for under this conversation
    response = staff_client.post(f"{BASE}/messages/{other.pk}/forget/", {"reason": REASON}, format="json")
    # Then it is unknown here, and it stays
    assert response.status_code == 404 and Message.objects.filter(pk=other.pk).exists()


def test_message_forget_records_no_decision_so_the_customer_may_say_it_again(said, staff_user):
    customer, budget, _layout, _again = said
    # Given the only message behind the budget forgotten (sent by mistake)
    message_forget(message=budget, actor=staff_user, reason=REASON)
    # When the customer says it again
    capture_message(message=MessageFactory(customer=customer, text="预算四千五左右"))
    # Then it is captured again: the cascade refused nothing
    assert _active(customer, "profile:budget") is not None


def test_message_forget_refuses_our_own_reply(account, staff_user):
    # Given one of our replies
    reply = MessageFactory(text="王先生您好，周六上午可以看房", direction=MessageDirection.OUTBOUND)
    # Then it is not forgotten here (it lives on in its draft and delivery)
    with pytest.raises(Conflict) as refused:
        message_forget(message=reply, actor=staff_user, reason=REASON)
    assert refused.value.code == "not_inbound" and Message.objects.filter(pk=reply.pk).exists()


def test_message_forget_cancels_a_model_turns_pending_write_citing_it(said, staff_user):
    customer, budget, _layout, _again = said
    # Given a model turn's pending write resting on the message
    job = CaptureJob.objects.create(
        customer=customer, payload={"profile_updates": {"budget": "五千以内"}, "source_message_ids": [budget.pk]}
    )
    # When the message is forgotten
    message_forget(message=budget, actor=staff_user, reason=REASON)
    # Then the write is cancelled, and the audit says so
    assert not CaptureJob.objects.filter(pk=job.pk).exists()
    assert AuditEvent.objects.get(action="message_forgotten").payload["capture_jobs_cancelled"] == [job.pk]


def test_message_forget_of_a_short_message_leaves_other_words_alone(account, staff_user):
    # Given a short message and an unrelated audit reason that happens to contain it
    message = MessageFactory(text="好的")
    conversation_id = message.customer.conversation_id
    audit_record(action="customer_updated", conversation_id=conversation_id, actor="x", reason="客户说好的，改为自动")
    # When it is forgotten
    message_forget(message=message, actor=staff_user, reason=REASON)
    # Then the unrelated reason keeps its words
    assert AuditEvent.objects.filter(reason="客户说好的，改为自动").exists()


def test_message_forget_keeps_the_value_a_supervisor_has_since_written(said, staff_user):
    # Given the customer's layout (two messages), rejected by a supervisor who later writes the same
    # value by hand: the rejected automatic item still cites the messages
    customer, _budget, layout, again = said
    automatic = _active(customer, "profile:layout")
    value = automatic.content.split("：", 1)[1]
    memory_item_reject(item=automatic, actor=staff_user, reason="先不记")
    customer_profile_update(customer=customer, changes={"layout": value}, actor=staff_user, reason="电话确认")
    written = _active(customer, "profile:layout")
    assert written.created_by == MemoryCreatedBy.HUMAN and written.content == automatic.content
    # When both messages are forgotten (found by a property test: the profile lost the value)
    message_forget(message=layout, actor=staff_user, reason=REASON)
    message_forget(message=again, actor=staff_user, reason=REASON)
    # Then the rejected automatic item is gone, and the supervisor's item and the profile still say it
    assert not MemoryItem.objects.filter(pk=automatic.pk).exists()
    assert _active(customer, "profile:layout").content == written.content
    assert CustomerProfile.objects.get(customer=customer).layout == value
