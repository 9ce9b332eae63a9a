"""The admin site: Chinese UI with an account switcher; customer data shows only for the chosen account."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from simple_history.template_utils import HistoricalRecordContextHelper

from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.middleware import SESSION_KEY
from qiwei_site.platform.selectors import accounts_for_user, user_can_access_account
from qiwei_site.platform.tenancy import current_account


class QiweiAdminSite(admin.AdminSite):
    site_header = "企微客服记忆后台"
    site_title = "企微记忆后台"
    index_title = "记忆治理"

    def each_context(self, request: HttpRequest) -> dict[str, Any]:
        context = super().each_context(request)
        if getattr(request, "user", None) is not None and request.user.is_authenticated:
            context["qiwei_accounts"] = list(accounts_for_user(request.user))
            context["qiwei_current_account"] = current_account()
        return context

    def get_urls(self) -> list[Any]:
        return [
            path("account/switch/", self.admin_view(require_POST(self.switch_account)), name="switch_account"),
            *super().get_urls(),
        ]

    def switch_account(self, request: HttpRequest) -> HttpResponseRedirect:
        account_id = request.POST.get("account_id", "")
        target = request.POST.get("next") or reverse("admin:index")
        if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
            target = reverse("admin:index")
        if account_id == "":
            request.session.pop(SESSION_KEY, None)
        elif user_can_access_account(request.user, account_id):
            request.session[SESSION_KEY] = account_id
            messages.success(request, f"已切换到账号 {account_id}")
            # The page we came from belongs to the old account: go to the index.
            target = reverse("admin:index")
        else:
            messages.error(request, "无权访问该账号")
        return HttpResponseRedirect(target)


class AccountScopedAdminMixin:
    """Customer-data admins are visible only once an account is chosen.

    They write no admin LogEntry: the account's AuditEvent is the trail, and a LogEntry (in
    `default`) would copy names and memory text where `forget` and erasure cannot reach them.
    """

    def log_addition(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        return None

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        return None

    def log_deletion(self, request: HttpRequest, obj: Any, object_repr: str) -> Any:
        return None

    def log_deletions(self, request: HttpRequest, queryset: Any) -> Any:
        return None

    def has_module_permission(self, request: HttpRequest) -> bool:
        return current_account() is not None and super().has_module_permission(request)  # type: ignore[misc]

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return current_account() is not None and super().has_view_permission(request, obj)  # type: ignore[misc]

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return current_account() is not None and super().has_add_permission(request, *args)  # type: ignore[misc]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return current_account() is not None and super().has_change_permission(request, obj)  # type: ignore[misc]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return current_account() is not None and super().has_delete_permission(request, obj)  # type: ignore[misc]


class ReadOnlyAdminMixin:
    """Records written only by services (messages, audit, snapshots, deliveries): view, never edit."""

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ChoiceLabelContextHelper(HistoricalRecordContextHelper):
    """History changes of a choices field read as its Chinese label (「待审核 → 已批准」), not its code."""

    def prepare_delta_change_value(self, change: Any, value: Any) -> Any:
        field = self.model._meta.get_field(change.field)
        choices = dict(field.flatchoices) if getattr(field, "choices", None) else {}
        return choices.get(value, value) if choices else super().prepare_delta_change_value(change, value)


class AccountHistoryAdminMixin:
    """History pages for account models (put it before SimpleHistoryAdmin in the bases).

    History rows live in the account database and users in `default`, so simple-history's
    `select_related("history_user")` cannot join them: users are prefetched from `default`
    instead. Reverting a version is off, on the page and on POST: it would save the row
    without the service, so without its audit event and side effects (snapshots, profile memory).
    """

    object_history_list_template = "admin/qiwei/object_history_list.html"

    def get_historical_record_context_helper(self, request: HttpRequest, historical_record: Any) -> Any:
        return ChoiceLabelContextHelper(self.model, historical_record)  # type: ignore[attr-defined]

    def get_history_queryset(self, request: HttpRequest, history_manager: Any, pk_name: str, object_id: Any) -> Any:
        return (
            history_manager.filter(**{pk_name: object_id})
            .prefetch_related("history_user")
            .order_by("-history_date", "-history_id")
        )

    def revert_disabled(self, request: HttpRequest, obj: Any = None) -> bool:
        return True

    def history_form_view(
        self, request: HttpRequest, object_id: str, version_id: str, extra_context: Any = None
    ) -> Any:
        if request.method == "POST":
            raise PermissionDenied("历史版本只读，不能恢复；请用编辑或治理操作修改。")
        return super().history_form_view(request, object_id, version_id, extra_context)  # type: ignore[misc]


class ServiceFormAdminMixin:
    """Add and edit forms that save through a service: a domain error the service raises (its
    transaction rolled back) is shown on the page instead of a server error."""

    def changeform_view(
        self, request: HttpRequest, object_id: str | None = None, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)  # type: ignore[misc]
        except ApplicationError as exc:
            self.message_user(request, exc.detail, messages.ERROR)  # type: ignore[attr-defined]
            return HttpResponseRedirect(request.get_full_path())
