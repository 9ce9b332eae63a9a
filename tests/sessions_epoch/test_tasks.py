"""Celery tasks take the account id first and run inside it."""

from __future__ import annotations

from conversations.drafts import draft_approve
from conversations.gateway import LoopbackGateway
from conversations.models import AuditEvent, Draft, DraftStatus
from conversations.tasks import draft_send_task
from qiwei_site.platform.tenancy import no_account
from sessions_epoch.tasks import draft_generate_task
from tests.factories import DraftFactory


def test_draft_generate_task_runs_in_the_given_account(customer, provider):
    # given no account selected in the caller (as in a worker)
    with no_account():
        # when the task runs for acme
        draft_id = draft_generate_task.delay("acme", customer.conversation_id).get()

    # then the draft was written in acme's database by the worker
    draft = Draft.objects.get(pk=draft_id)
    assert draft.customer_id == customer.pk
    assert AuditEvent.objects.get(action="draft_generated").actor_name == "worker"


def test_draft_send_task_sends_an_approved_draft_once(customer, staff_user):
    # given an approved draft
    draft = DraftFactory(customer=customer)
    draft_approve(draft=draft, actor=staff_user, reason="通过")

    # when the send task runs twice from a worker
    with no_account():
        draft_send_task.delay("acme", draft.pk)
        draft_send_task.delay("acme", draft.pk)

    # then one message went out
    draft.refresh_from_db()
    assert draft.status == DraftStatus.SENT
    assert len(LoopbackGateway.sent_records()) == 1
