"""Admin for an account's data, once an account is chosen (the registry's admin is the
platform's: `qiwei_site/platform/admin.py`): its drafts (reviewed
through the same services as the API, with the prompt each was made from), deliveries, business
state (tasks, alerts, recommendations and their feedback) and audit, one module each. The customer
and message pages are registered by memory.admin: the profile inline saves through memory's profile
service, and forgetting a message cascades to the memory items it supported."""

from conversations.admin import audit, business, drafts
from conversations.admin.audit import audit_payload_html

__all__ = ["audit", "audit_payload_html", "business", "drafts"]
