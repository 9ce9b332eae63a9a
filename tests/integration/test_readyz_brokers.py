"""/readyz against the production brokers and PostgreSQL account databases: a real write each,
nothing left behind."""

from __future__ import annotations

import pytest
from kombu import Connection

from qiwei_site.health import health_queue
from qiwei_site.platform.services import account_create
from tests.qiwei_site.test_health import broker_configured

pytestmark = pytest.mark.integration


def messages_waiting(url: str) -> int:
    with Connection(url) as conn:
        try:
            return int(health_queue()(conn.default_channel).queue_declare(passive=True).message_count)
        except conn.channel_errors:  # Redis keeps no empty list: no queue is an empty queue
            return 0


@pytest.mark.parametrize("broker", ["redis_broker_url", "rabbitmq_broker_url"])
def test_readyz_publishes_to_a_real_broker_and_leaves_nothing(db, client, broker, request):
    # Given Redis or RabbitMQ as the broker
    url = request.getfixturevalue(broker)
    with broker_configured(url):
        # When readiness is asked twice (the health queue already exists the second time)
        first, second = client.get("/readyz"), client.get("/readyz")
        # Then the broker accepted the probe both times and the health queue is empty again
        assert first.status_code == second.status_code == 200, second.json()
        assert messages_waiting(url) == 0


@pytest.mark.django_db(transaction=True)
def test_readyz_writes_to_postgres_account_databases(client, postgres_accounts):
    # Given two accounts whose databases are on PostgreSQL
    for label in ("rza", "rzb"):
        account_create(account_id=postgres_accounts(label), name=label)
    # When readiness is asked
    response = client.get("/readyz")
    # Then both account databases took the rolled-back write
    assert response.status_code == 200, response.json()
    assert response.json()["checks"]["account_databases"] == "ok"
