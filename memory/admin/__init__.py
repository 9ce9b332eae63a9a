"""Memory's admin pages: items and their governance actions, snapshots and capture jobs, customers."""

from memory.admin import customers, items, snapshots

__all__ = ["customers", "items", "snapshots"]
