"""Erasing a customer on request (spec §3.1): every row about them, history included, in one transaction.

Only one `customer_erased` audit row (conversation id, who, why, counts) remains; audit rows
hold ids and types, never content, so the customer's earlier audit trail is kept.
"""

from __future__ import annotations

from django.apps import apps
from django.db.models import Model

from conversations.models import AuditAction, Customer
from conversations.services import audit_record
from qiwei_site.platform.history import Actor
from qiwei_site.platform.tenancy import account_atomic, is_account_model


def _historical_models_with_customer() -> list[type[Model]]:
    """simple-history tables of account apps that reference a customer (found generically, so
    apps added later, such as session epochs, are erased without being imported here)."""
    found: list[type[Model]] = []
    for model in apps.get_models():
        field_names = {field.name for field in model._meta.get_fields()}
        if "history_id" in field_names and "customer" in field_names and is_account_model(model):
            found.append(model)
    return found


def customer_erase(*, customer: Customer, actor: Actor, reason: str) -> dict[str, int]:
    """Delete the customer and everything about them; returns the number of rows per model."""
    conversation_id, customer_pk = customer.conversation_id, customer.pk
    with account_atomic():
        _total, per_model = Customer.objects.filter(pk=customer_pk).delete()
        counts = {label: n for label, n in per_model.items() if n}
        history_rows = 0
        # Deleting wrote "-" history rows too; remove every past version of the customer's data.
        for model in _historical_models_with_customer():
            deleted, _ = model._default_manager.filter(customer_id=customer_pk).delete()
            history_rows += deleted
        deleted, _ = Customer.history.filter(id=customer_pk).delete()
        history_rows += deleted
        counts["history_rows"] = history_rows
        audit_record(
            action=AuditAction.CUSTOMER_ERASED,
            conversation_id=conversation_id,
            actor=actor,
            reason=reason,
            payload={"counts": counts},
        )
    return counts
