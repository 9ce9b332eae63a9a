"""The admin site: Chinese UI with an account switcher; customer data shows only for the chosen account.

The index is the supervisor's start page: for the chosen account it shows what needs attention,
as counts that link to the filtered lists. Platform imports no app, so apps register their
counters here (`start_page_counter_register`, from their AppConfig.ready)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import formats, timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST
from simple_history.template_utils import HistoricalRecordContextHelper

from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.middleware import SESSION_KEY
from qiwei_site.platform.selectors import accounts_for_user, user_can_access_account
from qiwei_site.platform.tenancy import current_account


@dataclass(frozen=True)
class StartPageCount:
    """One line of the start page: how many rows need attention, and the list that shows exactly them."""

    label: str
    count: int
    url: str
    help_text: str = ""
    order: int = 100
    note: str = ""  # e.g. how long the oldest row has waited
    warning: bool = False  # the note is a warning (shown highlighted)


StartPageCounter = Callable[[HttpRequest], Iterable[StartPageCount]]
_start_page_counters: list[StartPageCounter] = []


def start_page_counter_register(counter: StartPageCounter) -> None:
    """Add a source of start-page counts (idempotent: ready() may run more than once in tests)."""
    if counter not in _start_page_counters:
        _start_page_counters.append(counter)


def start_page_counts(request: HttpRequest) -> list[StartPageCount]:
    """Every registered count for the chosen account, in their declared order."""
    counts = [count for counter in _start_page_counters for count in counter(request)]
    return sorted(counts, key=lambda count: count.order)


class QiweiAdminSite(admin.AdminSite):
    site_header = "企微客服记忆后台"
    site_title = "企微记忆后台"
    index_title = "记忆治理"
    index_template = "admin/qiwei/index.html"

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> TemplateResponse:
        context = dict(extra_context or {})
        if current_account() is not None:
            context["qiwei_start_counts"] = start_page_counts(request)
            context["qiwei_start_checked_at"] = timezone.localtime()
        return super().index(request, context)

    def each_context(self, request: HttpRequest) -> dict[str, Any]:
        context = super().each_context(request)
        if getattr(request, "user", None) is not None and request.user.is_authenticated:
            context["qiwei_accounts"] = list(accounts_for_user(request.user))
            context["qiwei_current_account"] = current_account()
        return context

    def get_urls(self) -> list[Any]:
        return [
            path("account/switch/", self.admin_view(require_POST(self.switch_account)), name="switch_account"),
            path(
                "account/open/",
                self.admin_view(require_http_methods(["GET", "POST"])(self.open_in_account)),
                name="open_in_account",
            ),
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

    def open_in_account(self, request: HttpRequest) -> HttpResponse:
        """A link from outside the admin (the Workbench's prompt view) to one row of one account:
        choose that account, then open the page. Ids are per account, so without this a link could
        open another account's row with the same id. Only a local admin page is a target. When the
        account is not the one chosen, a GET only asks; the switch itself is a POST with CSRF, like
        the switcher, so no other site can move a supervisor's admin to another account."""
        data = request.POST if request.method == "POST" else request.GET
        account_id = data.get("account_id", "")
        target = data.get("next", "")
        index = reverse("admin:index")
        if not target.startswith(index) or not url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}
        ):
            target = index
        if not user_can_access_account(request.user, account_id):
            messages.error(request, "无权访问该账号")
            return HttpResponseRedirect(index)
        if request.session.get(SESSION_KEY) == account_id:
            return HttpResponseRedirect(target)
        if request.method != "POST":
            context = {
                **self.each_context(request),
                "title": "切换账号后打开",
                "account_id": account_id,
                "target": target,
                "current": request.session.get(SESSION_KEY) or "",
            }
            return TemplateResponse(request, "admin/qiwei/open_in_account.html", context)
        request.session[SESSION_KEY] = account_id
        messages.info(request, f"已切换到账号 {account_id}")
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


EMPTY_VALUE = "无"


def readable_value(value: Any) -> Any:
    """A value as a supervisor reads it: nothing is 「无」, a time is local (Asia/Shanghai), a flag is 是/否."""
    if value is None or value == "":
        return EMPTY_VALUE
    if isinstance(value, bool):
        return "是" if value else "否"
    if isinstance(value, dt.datetime):
        local = timezone.localtime(value) if timezone.is_aware(value) else value
        return formats.date_format(local, "DATETIME_FORMAT")
    return value


class ChoiceLabelContextHelper(HistoricalRecordContextHelper):
    """History changes read as a supervisor would say them: a choices field by its Chinese label
    (「待审核 → 已批准」), an empty value as 「无」 and a time in Asia/Shanghai, never
    `None → 2026-11-02 10:00:00+00:00`."""

    def prepare_delta_change_value(self, change: Any, value: Any) -> Any:
        field = self.model._meta.get_field(change.field)
        choices = dict(field.flatchoices) if getattr(field, "choices", None) else {}
        if choices and value in choices:
            return choices[value]
        return readable_value(super().prepare_delta_change_value(change, value))


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


class TitledChangeFormMixin:
    """A change form that names its record with `record_title(obj)` in the title and breadcrumbs,
    for models whose `__str__` is a library's English or an internal code."""

    change_form_template: Any = "admin/qiwei/change_form_titled.html"

    def record_title(self, obj: Any) -> str:
        return str(obj)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> Any:
        obj = self.get_object(request, object_id)  # type: ignore[attr-defined]
        extra = dict(extra_context or {})
        if obj is not None:
            extra["subtitle"] = self.record_title(obj)
        return super().change_view(request, object_id, form_url, extra)  # type: ignore[misc]


class ServiceFormAdminMixin:
    """Add and edit forms that save through a service: a domain error the service raises (its
    transaction rolled back) is shown on the form, which re-renders with what the user typed.

    The refused POST is validated once more with a form class that carries the refusal as a
    non-field error, so Django renders its own bound form (values, inlines, the error) and saves
    nothing. The refusal travels in a context variable for that one call, not on the request.
    """

    def changeform_view(
        self, request: HttpRequest, object_id: str | None = None, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)  # type: ignore[misc]
        except ApplicationError as exc:
            if request.method != "POST":
                raise
            refusal = exc.detail
        token = _form_refusal.set(refusal)
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)  # type: ignore[misc]
        except ApplicationError as exc:
            # Refused before the form was even built (not by the save): say so on the page we came from.
            self.message_user(request, exc.detail, messages.ERROR)  # type: ignore[attr-defined]
            return HttpResponseRedirect(request.get_full_path())
        finally:
            _form_refusal.reset(token)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form_class = super().get_form(request, obj, change=change, **kwargs)  # type: ignore[misc]
        detail = _form_refusal.get()
        return refusing_form(form_class, detail) if detail else form_class


_form_refusal: ContextVar[str | None] = ContextVar("qiwei_admin_form_refusal", default=None)


def refusing_form(form_class: type[forms.BaseForm], detail: str) -> type[forms.BaseForm]:
    """`form_class`, refusing to validate with `detail` as its non-field error."""

    class RefusedForm(form_class):  # type: ignore[valid-type,misc]
        def clean(self) -> Any:
            super().clean()
            raise ValidationError(detail, code="refused")

    RefusedForm.__name__ = form_class.__name__
    return RefusedForm
