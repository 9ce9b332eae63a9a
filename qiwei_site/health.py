"""Liveness and readiness probes for the process manager and load balancer."""

from __future__ import annotations

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, JsonResponse


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def readyz(request: HttpRequest) -> JsonResponse:
    checks: dict[str, str] = {}
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as exc:  # readiness reports, never raises
        checks["database"] = f"error: {exc.__class__.__name__}"
    checks["broker"] = _check_broker()
    ready = all(value == "ok" for value in checks.values())
    return JsonResponse({"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503)


def _check_broker() -> str:
    if getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False):
        return "ok"
    from qiwei_site.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return "ok"
    except Exception as exc:
        return f"error: {exc.__class__.__name__}"
