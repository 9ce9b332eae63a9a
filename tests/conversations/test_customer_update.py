"""customer_update: settings edits write history and audit, and nothing when nothing changed."""

from __future__ import annotations

import pytest

from conversations.models import AuditEvent, Customer, SessionMode
from conversations.services import customer_update
from qiwei_site.platform.errors import ValidationFailed
from tests.factories import CustomerFactory


def test_customer_update_writes_history_and_audit_without_the_name(account, staff_user):
    customer = CustomerFactory(display_name="王先生")
    updated = customer_update(
        customer=customer,
        changes={"display_name": "老王", "session_mode": SessionMode.AUTO},
        actor=staff_user,
        reason="客户要求自动回复",
    )
    assert (updated.display_name, updated.session_mode) == ("老王", "auto")
    latest = Customer.history.filter(id=customer.pk).first()
    assert latest.history_user_id == staff_user.pk and latest.history_change_reason == "客户要求自动回复"
    event = AuditEvent.objects.get(action="customer_updated")
    assert event.payload == {"fields": ["display_name", "session_mode"], "session_mode": "auto"}


def test_customer_update_nothing_changed_writes_nothing(account, staff_user):
    customer = CustomerFactory(display_name="李女士")
    versions = Customer.history.count()
    customer_update(customer=customer, changes={"display_name": "李女士"}, actor=staff_user, reason="无改动")
    assert Customer.history.count() == versions
    assert not AuditEvent.objects.filter(action="customer_updated").exists()


@pytest.mark.parametrize("changes", [{"conversation_id": "x"}, {"session_mode": "robot"}])
def test_customer_update_rejects_bad_changes(account, staff_user, changes):
    with pytest.raises(ValidationFailed):
        customer_update(customer=CustomerFactory(), changes=changes, actor=staff_user, reason="测试")
