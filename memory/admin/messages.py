"""Messages, masked by the reader everywhere; "查看原文" is a separate, audited page for staff, and
"遗忘这条消息" deletes one with its standing as evidence (`memory.governance.messages.message_forget`).
Registered by memory (not conversations) because forgetting cascades to memory items."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from conversations.models import Message, MessageDirection
from conversations.services import message_reveal
from memory.governance.messages import message_forget
from qiwei_site.platform.admin_site import AccountScopedAdminMixin, ReadOnlyAdminMixin
from qiwei_site.platform.errors import ApplicationError
from qiwei_site.reading.masking import mask_sensitive


# Message text is shown masked by the reader's rules; the original only through the audited reveal.
def masked_message_text(message: Message) -> str:
    return mask_sensitive(message.text)


class MessageRevealForm(forms.Form):
    reason = forms.CharField(label="原因（写入审计）", max_length=300)


@admin.register(Message)
class MessageAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Masked everywhere; "查看原文" is a separate, audited page for staff (conversations.services.message_reveal)."""

    list_display = ["sent_at", "customer", "direction", "sender", "masked_text", "is_effective"]
    list_filter = ["direction", "is_effective"]
    search_fields = ["text", "customer__conversation_id", "external_id"]
    list_select_related = ["customer"]
    date_hierarchy = "sent_at"
    _shown = (
        "customer",
        "external_id",
        "direction",
        "sender",
        "masked_text",
        "sent_at",
        "is_effective",
        "reveal",
        "forget",
    )
    fields = _shown
    readonly_fields = _shown
    reveal_template = "admin/conversations/message/reveal.html"
    forget_template = "admin/conversations/message/forget.html"

    @admin.display(description="内容（已遮蔽）")
    def masked_text(self, obj: Message) -> str:
        return masked_message_text(obj)

    @admin.display(description="原文")
    def reveal(self, obj: Message) -> str:
        url = reverse("admin:conversations_message_reveal", args=[obj.pk])
        return format_html('<a class="button" href="{}">{}</a>', url, "查看原文（记入审计）")

    @admin.display(description="遗忘")
    def forget(self, obj: Message) -> str:
        if obj.direction != MessageDirection.INBOUND:
            return "—（我方回复在草稿中处理）"
        url = reverse("admin:conversations_message_forget", args=[obj.pk])
        return format_html('<a class="button" href="{}">{}</a>', url, "遗忘这条消息（记入审计）")

    def has_forget_permission(self, request: HttpRequest) -> bool:
        """Forgetting deletes, as forgetting an item or erasing a customer does: staff with the
        permission to delete messages (ReadOnlyAdminMixin keeps the admin's own delete off)."""
        user = request.user
        return bool(user.is_active and user.is_staff) and user.has_perm("conversations.delete_message")

    def has_reveal_permission(self, request: HttpRequest) -> bool:
        user = request.user
        return bool(user.is_active and user.is_staff) and self.has_view_permission(request)

    def get_urls(self) -> list[Any]:
        return [
            path(
                "<int:object_id>/reveal/",
                self.admin_site.admin_view(self.reveal_view),
                name="conversations_message_reveal",
            ),
            path(
                "<int:object_id>/forget/",
                self.admin_site.admin_view(self.forget_view),
                name="conversations_message_forget",
            ),
            *super().get_urls(),
        ]

    def _staff_message_form(self, request: HttpRequest, object_id: int) -> tuple[Message, MessageRevealForm]:
        """The message of a staff-only page (reveal, forget) and its reason form, bound on POST."""
        if not self.has_reveal_permission(request):
            raise PermissionDenied
        message = self.get_object(request, str(object_id))
        if message is None:
            raise Http404
        return message, MessageRevealForm(request.POST if request.method == "POST" else None)

    def reveal_view(self, request: HttpRequest, object_id: int) -> TemplateResponse:
        """GET asks why; POST records the audit and shows the message as received (never cached)."""
        message, form = self._staff_message_form(request, object_id)
        original: str | None = None
        if request.method == "POST" and form.is_valid():
            try:
                original = message_reveal(message=message, actor=request.user, reason=form.cleaned_data["reason"])
            except ApplicationError as exc:
                self.message_user(request, exc.detail, messages.ERROR)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "查看未遮蔽消息",
            "message_obj": message,
            "masked": masked_message_text(message),
            "original": original,
            "form": form,
        }
        return TemplateResponse(request, self.reveal_template, context)

    def forget_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """GET asks why and says what will go; POST forgets the message (and the automatic items it
        alone supported) and returns to the customer's messages."""
        if not self.has_forget_permission(request):
            raise PermissionDenied
        message, form = self._staff_message_form(request, object_id)
        if request.method == "POST" and form.is_valid():
            try:
                result = message_forget(message=message, actor=request.user, reason=form.cleaned_data["reason"])
            except ApplicationError as exc:
                self.message_user(request, exc.detail, messages.ERROR)
            else:
                forgotten = len(result["items_forgotten"])
                self.message_user(
                    request, f"已遗忘消息 #{result['message_id']}，随之遗忘仅以它为证据的自动记忆 {forgotten} 条。"
                )
                return HttpResponseRedirect(reverse("admin:conversations_message_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "遗忘消息",
            "message_obj": message,
            "masked": masked_message_text(message),
            "form": form,
        }
        return TemplateResponse(request, self.forget_template, context)
