"""The Workbench page 智能会话 (spec §9): the page shell; data arrives from the endpoints in apis.py,
so the shell renders at once."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.csrf import ensure_csrf_cookie

from qiwei_site.platform.selectors import accounts_for_user
from qiwei_site.workbench.selectors import memory_admin_url


@login_required
@ensure_csrf_cookie
def workbench_page(request: HttpRequest) -> HttpResponse:
    """The page shell; data arrives from the endpoints above so the shell renders instantly."""
    accounts = [{"id": account.id, "name": account.name} for account in accounts_for_user(request.user)]
    return render(
        request,
        "workbench/index.html",
        {"accounts": accounts, "memory_admin_url": memory_admin_url(), "admin_url": reverse("admin:index")},
    )
