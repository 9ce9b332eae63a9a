"""Workbench sign-in: any active user (customer-service agents are not staff, so /admin/login/ refuses them)."""

from __future__ import annotations

from django.contrib.auth.views import LoginView, LogoutView


class WorkbenchLoginView(LoginView):
    """Django's login with a Chinese page in the Workbench look; back to the Workbench afterwards."""

    template_name = "registration/workbench_login.html"
    redirect_authenticated_user = True
    next_page = "workbench"


class WorkbenchLogoutView(LogoutView):
    """POST only (Django's LogoutView refuses GET), then back to the sign-in page."""

    next_page = "workbench-login"
