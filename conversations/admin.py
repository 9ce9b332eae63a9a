"""Admin for accounts (default DB) and, once an account is chosen, its customers and messages."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest
from simple_history.admin import SimpleHistoryAdmin

from conversations.models import AuditEvent, Customer, CustomerProfile, Message
from conversations.services import account_create
from qiwei_site.platform.admin_site import AccountHistoryAdminMixin, AccountScopedAdminMixin, ReadOnlyAdminMixin
from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.models import AccountMembership, WeComAccount


@admin.register(WeComAccount)
class WeComAccountAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "is_active", "created_at"]
    search_fields = ["id", "name"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["id"] if obj else []

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting the registry row here would orphan the account's database; deactivate instead.
        return False

    def save_model(self, request: HttpRequest, obj: WeComAccount, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        try:
            created = account_create(account_id=obj.id, name=obj.name, actor=request.user)
        except ApplicationError as exc:
            messages.error(request, exc.detail)
            raise
        obj.created_at, obj.updated_at = created.created_at, created.updated_at
        obj._state.adding = False


@admin.register(AccountMembership)
class AccountMembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "account", "created_at"]
    list_filter = ["account"]
    autocomplete_fields = ["user"]


# memory.admin re-registers Customer with a subclass whose profile inline saves through
# memory.profile.customer_profile_update (profile and `profile:<field>` memory in one
# transaction); it lives there because conversations must not depend on memory (DESIGN §3).
class CustomerProfileInline(admin.StackedInline):
    model = CustomerProfile
    can_delete = False
    extra = 0


class MessageInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Message
    fields = ["sent_at", "direction", "sender", "text", "is_effective"]
    readonly_fields = ["sent_at", "direction", "sender", "text", "is_effective"]
    extra = 0
    ordering = ["-sent_at"]
    max_num = 0
    show_change_link = True


@admin.register(Customer)
class CustomerAdmin(AccountScopedAdminMixin, AccountHistoryAdminMixin, SimpleHistoryAdmin):
    list_display = ["conversation_id", "display_name", "session_mode", "auto_send_whitelisted", "last_message_at"]
    list_filter = ["session_mode", "auto_send_whitelisted"]
    search_fields = ["conversation_id", "display_name"]
    inlines = [CustomerProfileInline, MessageInline]


@admin.register(Message)
class MessageAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["sent_at", "customer", "direction", "sender", "text", "is_effective"]
    list_filter = ["direction", "is_effective"]
    search_fields = ["text", "customer__conversation_id", "external_id"]
    list_select_related = ["customer"]
    date_hierarchy = "sent_at"


@admin.register(AuditEvent)
class AuditEventAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["created_at", "action", "conversation_id", "actor_name", "reason", "short_payload"]
    list_filter = ["action", "actor_name", "created_at"]
    search_fields = ["=conversation_id", "actor_name", "action", "reason"]
    date_hierarchy = "created_at"
    fields = ["created_at", "action", "conversation_id", "actor_id", "actor_name", "reason", "payload"]
    readonly_fields = ["created_at", "action", "conversation_id", "actor_id", "actor_name", "reason", "payload"]

    @admin.display(description="详情")
    def short_payload(self, obj: AuditEvent) -> str:
        text = ", ".join(f"{key}={value}" for key, value in (obj.payload or {}).items())
        return text if len(text) <= 80 else text[:80] + "…"
