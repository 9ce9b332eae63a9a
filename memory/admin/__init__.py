"""Memory's admin pages: items and their governance actions, snapshots and capture jobs, customers,
and messages (their audited reveal, and forgetting one with the items it alone supported)."""

from memory.admin import customers, items, messages, snapshots

__all__ = ["customers", "items", "messages", "snapshots"]
