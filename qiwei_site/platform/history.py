"""Who acts, and explicit simple-history bookkeeping: services set the user and reason on every write."""

from __future__ import annotations

from typing import TypeAlias

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db.models import Model

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
