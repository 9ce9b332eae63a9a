"""Admin for the account registry in the default database: accounts (created and changed through
the platform's account services), memberships and the registry's own audit journal; and the staff
pages that come from libraries (users, groups, sign-in records), with every label in Chinese."""

from __future__ import annotations

import json
from typing import Any

from axes.admin import AccessAttemptAdmin, AccessFailureLogAdmin, AccessLogAdmin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from rest_framework.authtoken.admin import TokenAdmin
from rest_framework.authtoken.models import Token, TokenProxy

from qiwei_site.platform.admin_site import ReadOnlyAdminMixin, ServiceFormAdminMixin, TitledChangeFormMixin
from qiwei_site.platform.authentication import TOKEN_SHOWN_CHARS, masked_token
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


# The registry journal's payloads (qiwei_site.platform.services): every key by its Chinese name.
REGISTRY_PAYLOAD_LABELS = {
    "account_id": "账号",
    "name": "名称",
    "is_active": "启用",
    "user_id": "用户",
    "registry_rows": "删除的登记记录",
    "corp_id": "企业 ID",
    "open_kfids": "客服账号",
    "upstream": "上游",
    "fields": "修改的项",
}
# The names a registry payload's "fields" lists (an account's WeCom connection: never the values).
REGISTRY_FIELD_LABELS = {
    "corp_id": "企业 ID",
    "secret": "客服应用密钥",
    "token": "回调令牌",
    "aes_key": "消息加密密钥",
    "open_kfids": "客服账号",
    "upstream": "上游",
    "name": "名称",
    "is_active": "启用",
}
REGISTRY_VALUE_LABELS = {"wecom": "企业微信客服", "default": "按全局设置"}


def registry_payload_html(payload: dict[str, Any]) -> SafeString:
    """A registry audit payload as a supervisor reads it: Chinese keys, a user by name linked to
    their staff page, flags as 是/否 (never `{"user_id": 2}`)."""
    rows: list[tuple[str, SafeString]] = []
    for key, value in (payload or {}).items():
        if key == "user_id" and isinstance(value, int) and not isinstance(value, bool):
            user = User.objects.filter(pk=value).first()
            shown = (
                format_html('<a href="{}">{}</a>', reverse("admin:auth_user_change", args=[value]), user.username)
                if user is not None
                else format_html("用户 #{}", value)
            )
        elif isinstance(value, bool):
            shown = format_html("{}", "是" if value else "否")
        elif value is None or value == "" or value == []:
            shown = format_html("{}", "无")
        elif isinstance(value, list):
            labels = REGISTRY_FIELD_LABELS if key == "fields" else {}
            shown = format_html("{}", "、".join(labels.get(str(part), str(part)) for part in value))
        elif isinstance(value, str) and value in REGISTRY_VALUE_LABELS:
            shown = format_html("{}", REGISTRY_VALUE_LABELS[value])
        else:
            shown = format_html("{}", value)
        rows.append((REGISTRY_PAYLOAD_LABELS.get(key, key), shown))
    return format_html_join("；", "{}：{}", rows) if rows else format_html("{}", "无")


@admin.register(RegistryAuditEvent)
class RegistryAuditEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["created_at", "action", "account_id", "actor", "reason", "details"]
    list_filter = ["action", "created_at"]
    search_fields = ["=account_id", "actor_name", "reason"]
    date_hierarchy = "created_at"
    fields = ("created_at", "action", "account_id", "actor", "reason", "details")
    readonly_fields = fields

    @admin.display(description="操作人", ordering="actor_name")
    def actor(self, obj: RegistryAuditEvent) -> SafeString:
        if obj.actor_id:
            url = reverse("admin:auth_user_change", args=[obj.actor_id])
            return format_html('<a href="{}">{}</a>', url, obj.actor_name or f"用户 #{obj.actor_id}")
        return format_html("{}", SYSTEM_ACTOR_LABELS.get(obj.actor_name, obj.actor_name) or "无")

    @admin.display(description="详情")
    def details(self, obj: RegistryAuditEvent) -> SafeString:
        return registry_payload_html(obj.payload)


# Who changed the registry when it was not a person (a command, the system).
SYSTEM_ACTOR_LABELS = {"manage.py": "命令行", "system": "系统", "api": "接口", "seed_demo": "演示数据"}


# --- Sign-in records (django-axes): its model and field names are translated in locale/zh_Hans;
# the two columns it adds without a label are named here.


def sign_in_record_label(record: Any) -> str:
    """A sign-in record as a title: django-axes's own `__str__` is English (「Failed access: user …」)."""
    when = timezone.localtime(record.attempt_time).strftime("%Y-%m-%d %H:%M") if record.attempt_time else ""
    parts = [str(record._meta.verbose_name), record.username or "未知用户", when, record.ip_address or ""]
    return " · ".join(part for part in parts if part)


class SignInRecordAdminMixin(TitledChangeFormMixin):
    def record_title(self, obj: Any) -> str:
        return sign_in_record_label(obj)


class LoginLockAdmin(SignInRecordAdminMixin, AccessAttemptAdmin):
    @admin.display(description="锁定到期")
    def expiration(self, obj: AccessAttempt) -> Any:
        return super().expiration(obj)

    @admin.display(description="状态")
    def status(self, obj: AccessAttempt) -> Any:
        return super().status(obj)


class SignInLogAdmin(SignInRecordAdminMixin, AccessLogAdmin):
    pass


class SignInFailureAdmin(SignInRecordAdminMixin, AccessFailureLogAdmin):
    pass


def _reregister(model: Any, admin_class: type[admin.ModelAdmin[Any]]) -> None:
    """Replace a library's registration with ours (idempotent when admin modules load again)."""
    if admin.site.is_registered(model):
        admin.site.unregister(model)
    admin.site.register(model, admin_class)


_reregister(AccessAttempt, LoginLockAdmin)
_reregister(AccessLog, SignInLogAdmin)
_reregister(AccessFailureLog, SignInFailureAdmin)


# --- Staff and groups: permissions by Chinese names. Django stores a permission's name in English
# ("Can add access log"); the page shows the app, the model and the verb as the supervisor reads them.

_PERMISSION_VERBS = {"add": "可以增加", "change": "可以修改", "delete": "可以删除", "view": "可以查看"}


def permission_label(permission: Permission) -> str:
    """「记忆 | 记忆条目 | 可以修改」; a history model as 「记忆条目（历史记录）」."""
    content_type = permission.content_type
    model = content_type.model_class()
    if model is None:
        return str(permission)
    tracked = getattr(model, "instance_type", None)  # simple-history's historical models
    model_name = f"{tracked._meta.verbose_name}（历史记录）" if tracked else str(model._meta.verbose_name)
    verb, _sep, _rest = permission.codename.partition("_")
    action = _PERMISSION_VERBS.get(verb, permission.name)
    return f"{model._meta.app_config.verbose_name} | {model_name} | {action}"


class PermissionChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return permission_label(obj)


class ChinesePermissionsMixin:
    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest | None = None, **kwargs: Any) -> Any:
        if db_field.name in ("permissions", "user_permissions"):
            kwargs["form_class"] = PermissionChoiceField
        return super().formfield_for_manytomany(db_field, request, **kwargs)  # type: ignore[misc]


class StaffUserAdmin(ChinesePermissionsMixin, UserAdmin):
    pass


class StaffGroupAdmin(ChinesePermissionsMixin, GroupAdmin):
    pass


_reregister(User, StaffUserAdmin)
_reregister(Group, StaffGroupAdmin)


# --- API tokens: shown whole once, when made; masked everywhere after (list, title, history, delete).


class MaskedTokenAdmin(TitledChangeFormMixin, TokenAdmin):
    """DRF's token admin names a token by its key (list, title, messages, the admin log): a token is
    a password, so ours shows its first characters only, and the whole key once, as it is made."""

    list_display = ("masked_key", "user", "created")
    delete_confirmation_template = "admin/qiwei/token_delete_confirmation.html"

    @admin.display(description="令牌")
    def masked_key(self, obj: Token) -> str:
        return masked_token(obj.key)

    def record_title(self, obj: Any) -> str:
        return f"{obj.user} 的令牌 {masked_token(obj.key)}"

    def response_add(self, request: HttpRequest, obj: Any, post_url_continue: str | None = None) -> HttpResponse:
        self.message_user(
            request,
            f"已为 {obj.user} 创建令牌：{obj.key} 。请现在复制保存：离开此页后只显示前 {TOKEN_SHOWN_CHARS} 位。",
            messages.SUCCESS,
        )
        return HttpResponseRedirect(reverse("admin:authtoken_tokenproxy_changelist"))

    def response_delete(self, request: HttpRequest, obj_display: str, obj_id: Any) -> HttpResponse:
        return super().response_delete(request, masked_token(obj_display), obj_id)

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None) -> Any:
        obj = self.get_object(request, object_id)
        extra = {**(extra_context or {}), "masked_title": self.record_title(obj) if obj else ""}
        return super().delete_view(request, object_id, extra)

    def _log(self, request: HttpRequest, obj: Any, flag: int, message: Any) -> LogEntry:
        return LogEntry.objects.create(
            user_id=int(request.user.pk or 0),
            content_type_id=ContentType.objects.get_for_model(obj, for_concrete_model=False).pk,
            object_id=str(obj.pk),
            object_repr=self.record_title(obj)[:200],
            action_flag=flag,
            change_message=message if isinstance(message, str) else json.dumps(message),
        )

    def log_addition(self, request: HttpRequest, obj: Any, message: Any) -> LogEntry:
        return self._log(request, obj, ADDITION, message)

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> LogEntry:
        return self._log(request, obj, CHANGE, message)

    def log_deletions(self, request: HttpRequest, queryset: Any) -> Any:
        return [self._log(request, obj, DELETION, "") for obj in queryset]

    def log_deletion(self, request: HttpRequest, obj: Any, object_repr: str) -> LogEntry:
        return self._log(request, obj, DELETION, "")


_reregister(TokenProxy, MaskedTokenAdmin)
