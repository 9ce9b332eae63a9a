"""Admin of an account's WeCom kf connection: staff set the credentials once; afterwards the form
shows that they are saved, never what they are (blank keeps them). Saves and deletions go through
`wecom.services`, so the registry journal records each."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from qiwei_site.platform.admin_site import ReadOnlyAdminMixin, ServiceFormAdminMixin
from qiwei_site.platform.selectors import accounts_for_user, user_can_access_account
from wecom.models import WeComConnection, WeComCursor
from wecom.services import wecom_connect, wecom_disconnect

KEPT_HELP = "已保存，不再显示；留空则保持不变"


def _credential(label: str) -> forms.CharField:
    """A credential field: typed, never rendered back."""
    return forms.CharField(label=label, required=False, strip=True, widget=forms.PasswordInput(render_value=False))


class WeComConnectionForm(forms.ModelForm):
    secret = _credential("客服应用密钥（后台的 Secret）")
    token = _credential("回调令牌（后台的 Token）")
    aes_key = _credential("消息加密密钥（后台的 EncodingAESKey）")
    open_kfids_text = forms.CharField(
        label="客服账号 ID", required=False, help_text="多个用逗号分隔；留空表示该企业的全部客服账号"
    )

    class Meta:
        model = WeComConnection
        fields = ["account", "corp_id", "upstream"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            for name in ("secret", "token", "aes_key"):
                self.fields[name].help_text = KEPT_HELP
            self.fields["open_kfids_text"].initial = ", ".join(self.instance.open_kfids or [])
        else:
            for name in ("secret", "token", "aes_key"):
                self.fields[name].required = True


class MemberAccountsOnly:
    """A staff user sees and changes the connections of the accounts they are a member of, never
    another account's (its corp id, its kf accounts, its credentials)."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)  # type: ignore[misc]
        return queryset.filter(account__in=accounts_for_user(request.user))

    def _may(self, request: HttpRequest, obj: Any) -> bool:
        return obj is None or user_can_access_account(request.user, obj.account_id)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) and self._may(request, obj)  # type: ignore[misc]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and self._may(request, obj)  # type: ignore[misc]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and self._may(request, obj)  # type: ignore[misc]

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "account":
            kwargs["queryset"] = accounts_for_user(request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]


@admin.register(WeComConnection)
class WeComConnectionAdmin(MemberAccountsOnly, ServiceFormAdminMixin, admin.ModelAdmin):
    form = WeComConnectionForm
    list_display = ["account", "corp_id", "kfids", "upstream", "credentials", "updated_at"]
    search_fields = ["account__id", "account__name", "corp_id"]
    fields = ["account", "corp_id", "secret", "token", "aes_key", "open_kfids_text", "upstream", "callback_path"]
    readonly_fields = ["callback_path"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["account", "callback_path"] if obj else ["callback_path"]

    @admin.display(description="客服账号")
    def kfids(self, obj: WeComConnection) -> str:
        return "、".join(obj.open_kfids or []) or "全部"

    @admin.display(description="凭据")
    def credentials(self, obj: WeComConnection) -> str:
        return "已密封保存"

    @admin.display(description="回调 URL（填到企业微信后台）")
    def callback_path(self, obj: WeComConnection | None) -> str:
        account = obj.account_id if obj is not None and obj.pk else "<账号 ID>"
        return f"/wecom/{account}/callback/"

    def save_model(self, request: HttpRequest, obj: WeComConnection, form: Any, change: bool) -> None:
        data = form.cleaned_data
        saved = wecom_connect(
            account_id=obj.account_id,
            corp_id=data["corp_id"],
            secret=data.get("secret") or None,
            token=data.get("token") or None,
            aes_key=data.get("aes_key") or None,
            open_kfids=data.get("open_kfids_text") or "",
            upstream=data["upstream"],
            actor=request.user,
            reason="后台设置企业微信客服连接",
        )
        obj.pk = saved.pk
        obj.created_at, obj.updated_at = saved.created_at, saved.updated_at
        obj._state.adding = False

    def delete_model(self, request: HttpRequest, obj: WeComConnection) -> None:
        wecom_disconnect(account_id=obj.account_id, actor=request.user, reason="后台断开企业微信客服")

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[WeComConnection]) -> None:
        for connection in queryset:
            wecom_disconnect(account_id=connection.account_id, actor=request.user, reason="后台批量断开企业微信客服")


@admin.register(WeComCursor)
class WeComCursorAdmin(MemberAccountsOnly, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Where each kf account's pull stands: for an operator asking 'did the messages come in?'."""

    list_display = ["account", "open_kfid", "synced_at", "messages_synced", "leased_until"]
    list_filter = ["account"]
    fields = ["account", "open_kfid", "synced_at", "messages_synced", "leased_until"]
