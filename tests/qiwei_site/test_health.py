"""Liveness and readiness probes."""

from __future__ import annotations

import pytest

from qiwei_site.celery import app


@pytest.fixture
def unreachable_broker(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    previous = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    yield
    app.conf.broker_url = previous


def test_healthz_answers_without_dependencies(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_checks_database_and_broker(db, client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "broker": "ok"}


def test_readyz_reports_unreachable_broker_as_503(db, client, unreachable_broker):
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable" and body["checks"]["database"] == "ok"
    assert body["checks"]["broker"].startswith("error")
