"""Admin for an account's data, once an account is chosen (the registry's admin is the
platform's: `qiwei_site/platform/admin.py`): its messages, drafts (reviewed
through the same services as the API, with the prompt each was made from), deliveries, business
state (tasks, alerts, recommendations and their feedback) and audit, one module each. The customer
page itself is registered by memory.admin: its profile inline saves through memory's profile service."""

from conversations.admin import audit, business, drafts, messages
from conversations.admin.audit import audit_payload_html

__all__ = ["audit", "audit_payload_html", "business", "drafts", "messages"]
