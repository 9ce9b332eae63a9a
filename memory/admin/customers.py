"""The customer page: settings through customer_update, the profile inline through
customer_profile_update (profile and its `profile:<field>` memory in one service), delete as
erasure. It is registered here, once, because those services live in memory (DESIGN §3)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from simple_history.admin import SimpleHistoryAdmin

from conversations.models import Customer, CustomerProfile, Message
from conversations.services import customer_update
from memory.governance.erasure import customer_erase
from memory.models import MemoryItem
from memory.profile import customer_profile_update
from qiwei_site.platform.admin_site import (
    AccountHistoryAdminMixin,
    AccountScopedAdminMixin,
    ReadOnlyAdminMixin,
    ServiceFormAdminMixin,
)
from qiwei_site.platform.errors import ApplicationError
from qiwei_site.reading.fields import PROFILE_FIELD_NAMES
from qiwei_site.reading.masking import mask_sensitive

REASON_MISSING = "请填写原因：它会写入历史记录和审计。"


class MessageInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Message
    fields = ["sent_at", "direction", "sender", "masked_text", "is_effective"]
    readonly_fields = ["sent_at", "direction", "sender", "masked_text", "is_effective"]
    extra = 0
    ordering = ["-sent_at"]
    max_num = 0
    show_change_link = True

    @admin.display(description="内容（已遮蔽）")
    def masked_text(self, obj: Message) -> str:
        return mask_sensitive(obj.text)


class CustomerAdminForm(forms.ModelForm):
    reason = forms.CharField(
        label="原因", max_length=300, required=False, help_text="修改设置或画像时必填，写入历史记录和审计。"
    )

    class Meta:
        model = Customer
        fields = ["display_name", "session_mode", "auto_send_whitelisted"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        changed = [name for name in self.changed_data if name != "reason"]
        if changed and not (cleaned.get("reason") or "").strip():
            self.add_error("reason", f"修改客户设置需要原因。{REASON_MISSING}")
        return cleaned


class ProfileFormSet(forms.BaseInlineFormSet):
    """A profile edit is a governance write: it needs the reason typed on the customer form."""

    def clean(self) -> None:
        super().clean()
        if any(form.has_changed() for form in self.forms) and not (self.data.get("reason") or "").strip():
            raise forms.ValidationError(f"修改画像需要原因（填在上方「原因」）。{REASON_MISSING}")


class ServiceProfileInline(admin.StackedInline):
    model = CustomerProfile
    formset = ProfileFormSet
    can_delete = False
    extra = 1
    max_num = 1


class MemoryItemInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = MemoryItem
    fk_name = "customer"
    fields = ["type", "content", "status", "confidence", "importance", "created_by", "expires_at"]
    readonly_fields = ["type", "content", "status", "confidence", "importance", "created_by", "expires_at"]
    extra = 0
    max_num = 0
    show_change_link = True
    verbose_name_plural = "记忆条目（在「记忆条目」中治理）"


@admin.register(Customer)
class CustomerAdmin(ServiceFormAdminMixin, AccountScopedAdminMixin, AccountHistoryAdminMixin, SimpleHistoryAdmin):
    list_display = ["conversation_id", "display_name", "session_mode", "auto_send_whitelisted", "last_message_at"]
    list_filter = ["session_mode", "auto_send_whitelisted"]
    search_fields = ["conversation_id", "display_name"]
    delete_confirmation_template = "admin/conversations/customer/erase_confirmation.html"
    form = CustomerAdminForm
    inlines = [ServiceProfileInline, MemoryItemInline, MessageInline]

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False  # customers appear with their first message (ingest), never by hand

    def save_model(self, request: HttpRequest, obj: Customer, form: Any, change: bool) -> None:
        changes = {f: form.cleaned_data[f] for f in form.changed_data if f in CustomerAdminForm.Meta.fields}
        if changes:
            customer_update(customer=obj, changes=changes, actor=request.user, reason=form.cleaned_data["reason"])

    def get_actions(self, request: HttpRequest) -> Any:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # erasure is one customer at a time, with a reason
        return actions

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        # Messages, memory and drafts are read-only in admin, which would make Django refuse the
        # delete; erasure removes them on purpose, through the service.
        to_delete, model_count, _perms_needed, protected = super().get_deleted_objects(objs, request)
        return to_delete, model_count, set(), protected

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> HttpResponse:
        if request.method == "POST" and not (request.POST.get("reason") or "").strip():
            self.message_user(request, f"未擦除：{REASON_MISSING}", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())
        return super().delete_view(request, object_id, extra_context)

    def delete_model(self, request: HttpRequest, obj: Customer) -> None:
        customer_erase(customer=obj, actor=request.user, reason=request.POST["reason"].strip())

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        if formset.model is not CustomerProfile:
            super().save_formset(request, form, formset, change)
            return
        # Admin's change message reads these, normally set by formset.save().
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        reason = form.cleaned_data["reason"]
        for profile_form in formset.forms:
            changes = {f: profile_form.cleaned_data.get(f) or "" for f in profile_form.changed_data}
            changes = {f: v for f, v in changes.items() if f in PROFILE_FIELD_NAMES}
            if not changes:
                continue
            try:
                profile = customer_profile_update(
                    customer=form.instance, changes=changes, actor=request.user, reason=reason
                )
            except ApplicationError as exc:
                self.message_user(request, f"画像未保存：{exc.detail}", messages.ERROR)
                continue
            formset.changed_objects.append((profile, sorted(changes)))
