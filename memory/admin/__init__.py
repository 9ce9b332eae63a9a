"""Memory's admin pages: items and their governance actions, snapshots and capture jobs, customers."""

from conversations.admin import message_masker_install
from memory.admin import customers, items, snapshots
from memory.capture.masking import mask_sensitive

message_masker_install(mask_sensitive)  # conversations' message pages show text masked by memory's rules

__all__ = ["customers", "items", "snapshots"]
