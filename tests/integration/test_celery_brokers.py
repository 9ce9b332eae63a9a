"""A real Celery worker on Redis (and on RabbitMQ) runs account tasks inside the right account."""

from __future__ import annotations

import uuid

import pytest

from conversations.models import AuditEvent
from qiwei_site.celery import app
from qiwei_site.operations.tasks import account_ping
from qiwei_site.platform.services import account_create
from qiwei_site.platform.tenancy import use_account
from tests.integration.conftest import wait_until

pytestmark = pytest.mark.integration


@pytest.mark.django_db(transaction=True)
def test_celery_worker_on_redis_runs_task_in_the_named_account(redis_broker_url, celery_worker_factory, non_eager):
    _worker_runs_task_in_the_named_account(redis_broker_url, celery_worker_factory)


@pytest.mark.django_db(transaction=True)
def test_celery_worker_on_rabbitmq_runs_task_in_the_named_account(
    rabbitmq_broker_url, celery_worker_factory, non_eager
):
    _worker_runs_task_in_the_named_account(rabbitmq_broker_url, celery_worker_factory)


def _worker_runs_task_in_the_named_account(broker_url, celery_worker_factory):
    # Given two accounts and a real worker on the broker
    account_create(account_id="north", name="北区")
    account_create(account_id="south", name="南区")
    worker = celery_worker_factory(broker_url)
    # When a ping is queued for `south` (a marker of this run's own: the broker is shared with
    # earlier runs, and a ping one of them left queued may reach this worker too)
    marker = f"巡检-{uuid.uuid4().hex[:8]}"
    with app.connection_for_write(broker_url) as conn:
        account_ping.apply_async(args=["south", marker], connection=conn)

    def pinged(account_id: str) -> bool:
        with use_account(account_id):
            return AuditEvent.objects.filter(action="worker_ping", payload__marker=marker).exists()

    # Then the worker records it in south's database, once, and north sees nothing
    assert wait_until(lambda: pinged("south"), timeout=90), worker.log.read_text()[-3000:]
    with use_account("south"):
        assert AuditEvent.objects.filter(action="worker_ping", payload__marker=marker).count() == 1
    with use_account("north"):
        assert not AuditEvent.objects.filter(action="worker_ping").exists()
