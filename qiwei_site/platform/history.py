"""Explicit simple-history bookkeeping: services set the user and reason on every write."""

from __future__ import annotations

from typing import Any

from django.db.models import Model


def stamp_history(instance: Model, *, actor: Any, reason: str) -> None:
    user = actor if getattr(actor, "pk", None) else None
    instance._history_user = user  # type: ignore[attr-defined]
    instance._change_reason = (reason or "")[:100]  # type: ignore[attr-defined]


def actor_identity(actor: Any) -> tuple[int | None, str]:
    """(id, display name) of whoever acts: a user, or a named system process."""
    if actor is None:
        return None, "system"
    if isinstance(actor, str):
        return None, actor
    return getattr(actor, "pk", None), getattr(actor, "get_username", lambda: str(actor))()
