"""Admin for model-session epochs (read-only)."""

from __future__ import annotations

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from qiwei_site.platform.admin_site import (
    AccountHistoryAdminMixin,
    AccountScopedAdminMixin,
    ReadOnlyAdminMixin,
    TitledChangeFormMixin,
)
from sessions_epoch.models import SessionEpoch


@admin.register(SessionEpoch)
class SessionEpochAdmin(
    TitledChangeFormMixin, AccountScopedAdminMixin, ReadOnlyAdminMixin, AccountHistoryAdminMixin, SimpleHistoryAdmin
):
    list_display = ["session_id", "customer", "turns", "started_at", "closed_at", "close_reason", "memory_version"]
    list_filter = ["close_reason", "client"]
    search_fields = ["session_id", "parent_session_id", "customer__conversation_id"]
    list_select_related = ["customer"]

    def record_title(self, obj: SessionEpoch) -> str:
        return f"模型会话段 {obj.session_id}"
