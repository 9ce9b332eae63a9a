"""Who acts, and explicit simple-history bookkeeping: services set the user and reason on every write."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeAlias

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db.models import Model
from django.utils import timezone
from simple_history.utils import get_change_reason_from_object, get_history_manager_for_model

from qiwei_site.platform.sql import insert

# A signed-in user (staff in admin, an agent in the Workbench, a token's owner in the API), or a
# named system process ("celery", "backfill_memory", "agent_console_smoke"), or nobody (None).
Actor: TypeAlias = AbstractBaseUser | AnonymousUser | str | None


def stamp_history(instance: Model, *, actor: Actor, reason: str) -> None:
    user = actor if isinstance(actor, AbstractBaseUser) and actor.pk else None
    instance._history_user = user  # type: ignore[attr-defined]
    instance._change_reason = (reason or "")[:100]  # type: ignore[attr-defined]


def actor_identity(actor: Actor) -> tuple[int | None, str]:
    """(id, display name) of whoever acts: a user, or a named system process."""
    if actor is None:
        return None, "system"
    if isinstance(actor, str):
        return None, actor
    return getattr(actor, "pk", None), actor.get_username()


def _history_model(model: type[Model]) -> Any:
    """The model's historical model (simple-history's, made once per model)."""
    historical = _historical_models.get(model)
    if historical is None:
        historical = _historical_models[model] = get_history_manager_for_model(model).model
    return historical


_historical_models: dict[type[Model], Any] = {}


def history_rows(instances: Iterable[Model], *, update: bool) -> list[Model]:
    """The history rows simple-history's `bulk_history_create(instances, update=update)` writes ('+'
    a creation, '~' a change), made now with the instances' values as they are now, but not written:
    a caller writes rows of several kinds together (`history_rows_insert`)."""
    if not getattr(settings, "SIMPLE_HISTORY_ENABLED", True):
        return []
    rows: list[Model] = []
    for instance in instances:
        historical = _history_model(type(instance))
        row = historical(
            history_date=getattr(instance, "_history_date", None) or timezone.now(),
            history_user=getattr(instance, "_history_user", historical.get_default_history_user(instance)),
            history_change_reason=get_change_reason_from_object(instance) or "",
            history_type="~" if update else "+",
            **{field.attname: getattr(instance, field.attname) for field in historical.tracked_fields},
        )
        if hasattr(historical, "history_relation"):
            row.history_relation_id = instance.pk
        rows.append(row)
    return rows


def history_rows_insert(rows: Sequence[Model]) -> None:
    """Write history rows of one model (from `history_rows`) in one statement."""
    if rows:
        insert(rows)
