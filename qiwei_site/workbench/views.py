"""The Workbench page 智能会话 (spec §9): the page shell; data arrives from the endpoints in apis.py,
so the shell renders at once."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser
from django.db import models
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.views.decorators.csrf import ensure_csrf_cookie

from conversations.drafts import draft_generation_stale_after
from conversations.models import FeedbackSource, FeedbackVerdict
from qiwei_site.platform.selectors import accounts_for_user
from qiwei_site.workbench.selectors import memory_admin_url

TIME_ZONE_LABELS = {"Asia/Shanghai": "北京时间"}


@login_required
@ensure_csrf_cookie
def workbench_page(request: HttpRequest) -> HttpResponse:
    """The page shell; data arrives from the endpoints above so the shell renders instantly."""
    accounts = [{"id": account.id, "name": account.name} for account in accounts_for_user(request.user)]
    return render(
        request,
        "workbench/index.html",
        {
            "accounts": accounts,
            "memory_admin_url": memory_admin_url(request.user),
            "admin_url": reverse("admin:index"),
            "config": page_config(request.user),
            "time_zone": settings.TIME_ZONE,
            "time_zone_label": TIME_ZONE_LABELS.get(settings.TIME_ZONE, settings.TIME_ZONE),
        },
    )


def page_config(user: AbstractBaseUser | AnonymousUser) -> dict[str, object]:
    """What the script needs from the server: every time is shown in settings.TIME_ZONE (the
    offset is the fallback for a browser that cannot convert to a named zone, and what a typed
    due time is read in); the choices of the business forms, labelled as the models label them;
    and, for staff, where the admin pages of the memory items and messages a prompt quotes are;
    after how long a draft still 生成中 counts as interrupted (the page offers 重新生成 then)."""
    offset = timezone.localtime(timezone.now(), ZoneInfo(settings.TIME_ZONE)).utcoffset()
    is_staff = bool(getattr(user, "is_staff", False))
    return {
        "time_zone": settings.TIME_ZONE,
        "utc_offset_minutes": int(offset.total_seconds() // 60) if offset is not None else 0,
        "is_staff": is_staff,
        "draft_stale_seconds": int(draft_generation_stale_after().total_seconds()),
        "admin_urls": admin_url_templates() if is_staff else {},
        "admin_open_url": reverse("admin:open_in_account") if is_staff else "",
        "choices": {
            "feedback_source": _choices(FeedbackSource),
            "feedback_verdict": _choices(FeedbackVerdict),
        },
    }


# Stands for the object id in an admin URL template; the script puts the id in its place.
ADMIN_ID_PLACEHOLDER = "__id__"


def admin_url_templates() -> dict[str, str]:
    """Admin change pages by kind, each with ADMIN_ID_PLACEHOLDER for the id (admin object ids are
    path segments, so the placeholder reverses like any id)."""
    names = {
        "memory_item": "admin:memory_memoryitem_change",
        "message": "admin:conversations_message_change",
        "task": "admin:conversations_task_change",
        "alert": "admin:conversations_alert_change",
        "recommendation": "admin:conversations_recommendation_change",
    }
    templates: dict[str, str] = {}
    for kind, name in names.items():
        try:
            templates[kind] = reverse(name, args=[ADMIN_ID_PLACEHOLDER])
        except NoReverseMatch:
            continue
    return templates


def _choices(choices: type[models.TextChoices]) -> list[dict[str, str]]:
    return [{"value": str(value), "label": str(label)} for value, label in choices.choices]
