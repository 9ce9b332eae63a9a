"""Admin for the account registry in the default database: accounts (created and changed through
the platform's account services), memberships and the registry's own audit journal."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from qiwei_site.platform.admin_site import ReadOnlyAdminMixin, ServiceFormAdminMixin
from qiwei_site.platform.models import AccountMembership, RegistryAuditEvent, WeComAccount
from qiwei_site.platform.services import account_create, account_update, membership_grant, membership_revoke


@admin.register(WeComAccount)
class WeComAccountAdmin(ServiceFormAdminMixin, admin.ModelAdmin):
    list_display = ["id", "name", "is_active", "created_at"]
    search_fields = ["id", "name"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["id"] if obj else []

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting the registry row here would orphan the account's database; deactivate instead.
        return False

    def save_model(self, request: HttpRequest, obj: WeComAccount, form: Any, change: bool) -> None:
        if change:
            changes = {field: form.cleaned_data[field] for field in form.changed_data if field in ("name", "is_active")}
            account_update(account=obj, changes=changes, actor=request.user, reason="后台修改账号")
            return
        created = account_create(account_id=obj.id, name=obj.name, actor=request.user, reason="后台创建账号")
        obj.created_at, obj.updated_at = created.created_at, created.updated_at
        obj._state.adding = False


@admin.register(AccountMembership)
class AccountMembershipAdmin(admin.ModelAdmin):
    """Grant and revoke through the services, so the registry journal records both; a grant is
    never edited in place (revoke it and grant another)."""

    list_display = ["user", "account", "created_at"]
    list_filter = ["account"]
    autocomplete_fields = ["user"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and super().has_change_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: AccountMembership, form: Any, change: bool) -> None:
        granted = membership_grant(user=obj.user, account=obj.account, actor=request.user, reason="后台授予账号权限")
        obj.pk, obj.created_at, obj.updated_at = granted.pk, granted.created_at, granted.updated_at
        obj._state.adding = False

    def delete_model(self, request: HttpRequest, obj: AccountMembership) -> None:
        membership_revoke(membership=obj, actor=request.user, reason="后台撤销账号权限")

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[AccountMembership]) -> None:
        for membership in queryset:
            membership_revoke(membership=membership, actor=request.user, reason="后台批量撤销账号权限")


@admin.register(RegistryAuditEvent)
class RegistryAuditEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["created_at", "action", "account_id", "actor_name", "reason"]
    list_filter = ["action", "created_at"]
    search_fields = ["=account_id", "actor_name", "reason"]
    date_hierarchy = "created_at"
    fields = ("created_at", "action", "account_id", "actor_id", "actor_name", "reason", "payload")
    readonly_fields = fields
