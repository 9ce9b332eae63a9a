"""Integration tests against the machine's PostgreSQL and Redis, and real Celery workers.

Locally they skip with a reason when a server is absent; in CI (QIWEI_REQUIRE_INTEGRATION=1)
an absent server is a failure, never a skip.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
POSTGRES = ("127.0.0.1", 5432)
REDIS = ("127.0.0.1", 6379)
RABBITMQ = ("127.0.0.1", 5672)
PG_URL_TEMPLATE = "postgres://postgres@127.0.0.1:5432/{name}"


def require_server(name: str, address: tuple[str, int]) -> None:
    try:
        with socket.create_connection(address, timeout=1):
            return
    except OSError as exc:
        message = f"{name} is not reachable at {address[0]}:{address[1]} ({exc})"
        if os.environ.get("QIWEI_REQUIRE_INTEGRATION") == "1":
            pytest.fail(f"{message}; QIWEI_REQUIRE_INTEGRATION=1 forbids skipping")
        pytest.skip(message)


@pytest.fixture(params=["schema", "database"])
def pg_layout(request) -> str:
    """The two PostgreSQL account layouts (issue 23): a schema per account in one database (the
    default) and a database per account."""
    return str(request.param)


@pytest.fixture
def postgres_accounts(settings, pg_layout) -> Iterator[Callable[[str], str]]:
    """Put accounts on PostgreSQL in each layout; returns a function making a unique account id.
    Every database, schema and role created is dropped afterwards. The schema layout logs in as a
    role of its own that is no superuser and NOINHERIT, as production must."""
    require_server("PostgreSQL", POSTGRES)
    import psycopg
    from psycopg import sql

    run = uuid.uuid4().hex[:6]
    made: list[str] = []
    admin = {"host": POSTGRES[0], "port": POSTGRES[1], "user": "postgres", "dbname": "postgres", "autocommit": True}
    login, database = f"qiwei_it_login_{run}", f"qiwei_it_schemas_{run}"
    if pg_layout == "schema":
        with psycopg.connect(**admin) as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOINHERIT CREATEROLE").format(sql.Identifier(login)))
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database), sql.Identifier(login)))
        settings.QIWEI_ACCOUNT_DATABASE_URL = f"postgres://{login}@{POSTGRES[0]}:{POSTGRES[1]}/{database}"
    else:
        settings.QIWEI_ACCOUNT_DATABASE_URL = PG_URL_TEMPLATE.format(name="qiwei_it_{account}")

    def account_id(label: str) -> str:
        value = f"{label}{run}"
        made.append(value)
        return value

    yield account_id

    from qiwei_site.platform import tenancy
    from qiwei_site.platform.connections import account_pool

    for value in made:
        tenancy.unregister_account_database(value)
    account_pool.close_idle()
    with psycopg.connect(**admin) as conn:
        if pg_layout == "schema":
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))
            for value in made:
                conn.execute(
                    sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(tenancy.account_role(database, value)))
                )
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(login)))
            return
        for value in made:
            name = f"qiwei_it_{value}"
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def redis_broker_url() -> str:
    require_server("Redis", REDIS)
    return f"redis://{REDIS[0]}:{REDIS[1]}/{int(os.environ.get('QIWEI_TEST_REDIS_DB', '13'))}"


@pytest.fixture
def rabbitmq_broker_url() -> str:
    require_server("RabbitMQ", RABBITMQ)
    return f"amqp://guest:guest@{RABBITMQ[0]}:{RABBITMQ[1]}//"


class WorkerProcess:
    """A real `celery worker` subprocess sharing the test's databases and broker."""

    def __init__(self, env: dict[str, str], log: Path):
        self.env = env
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, concurrency: int = 2) -> None:
        handle = open(self.log, "ab")  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "qiwei_site",
                "worker",
                "--loglevel=INFO",
                f"--concurrency={concurrency}",
                "--without-gossip",
                "--without-mingle",
                "--pool=prefork",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self) -> None:
        """SIGKILL the whole process group, as a crashed machine would."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def celery_worker_factory(settings, tmp_path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start real workers on a broker URL; the worker sees the same default and account databases."""
    from django.db import connections

    workers: list[WorkerProcess] = []

    def start(broker_url: str, concurrency: int = 2) -> WorkerProcess:
        default_db = connections["default"].settings_dict["NAME"]
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "qiwei_site.settings.local",
            "QIWEI_DATA_DIR": str(settings.QIWEI_DATA_DIR),
            "QIWEI_ACCOUNT_TEMPLATE_DIR": str(settings.QIWEI_ACCOUNT_TEMPLATE_DIR),
            "DATABASE_URL": f"sqlite:///{default_db}",
            "CELERY_BROKER_URL": broker_url,
            "QIWEI_ACCOUNT_DATABASE_URL": settings.QIWEI_ACCOUNT_DATABASE_URL,
            "QIWEI_SEALING_KEYS": ",".join(settings.QIWEI_SEALING_KEYS),
        }
        worker = WorkerProcess(env, tmp_path / f"worker-{len(workers)}.log")
        worker.start(concurrency)
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()


def wait_until(predicate: Callable[[], bool], timeout: float = 60.0, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


@pytest.fixture
def non_eager() -> Iterator[None]:
    """Send tasks to the broker for real (unit tests run Celery eagerly)."""
    from qiwei_site.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        yield
    finally:
        app.conf.task_always_eager = previous


@contextlib.contextmanager
def celery_sending_to(broker_url: str) -> Iterator[None]:
    """Make this process's Celery app send to `broker_url`, dropping connection and producer pools
    cached by earlier tests (they would keep sending to the old broker)."""
    from qiwei_site.celery import app

    def reset_pools() -> None:
        if app._pool is not None:  # type: ignore[attr-defined]
            app._pool.force_close_all()  # type: ignore[attr-defined]
        app._pool = None  # type: ignore[attr-defined]
        app.amqp._producer_pool = None

    previous = app.conf.broker_url
    app.conf.broker_url = broker_url
    reset_pools()
    try:
        yield
    finally:
        reset_pools()
        app.conf.broker_url = previous
