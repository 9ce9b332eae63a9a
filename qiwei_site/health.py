"""Liveness and readiness probes for the process manager and load balancer.

`/healthz` answers from the process alone. `/readyz` proves the dependencies can take work, not
merely that they answer: the default database runs a query, the broker accepts a message (a tiny
one, published to a health queue of its own and purged again), and account databases accept a
write (DDL inside a transaction that is rolled back) and, on SQLite, sit on a filesystem with free
space. Every check is bounded in time; a failure
answers 503 with the failing checks named.
"""

from __future__ import annotations

import itertools
import logging
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connections, transaction
from django.http import HttpRequest, JsonResponse
from kombu import Exchange, Producer, Queue

from qiwei_site.celery import app
from qiwei_site.platform.keyfiles import all_keys_verify
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.tenancy import register_account_database
from sessions_epoch.health import model_health

CHECK_TIMEOUT_SECONDS = 3.0
# Account databases probed per request, rotating through the active accounts, so a probe every
# few seconds visits all of them without a request's cost growing with their number.
ACCOUNT_SAMPLE_SIZE = 3
HEALTH_QUEUE = "qiwei.readyz"

_rotation = itertools.count()
logger = logging.getLogger(__name__)


class _RolledBack(Exception):
    """Raised inside the probe transaction so that its write never commits."""


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def readyz(request: HttpRequest) -> JsonResponse:
    deadline = time.monotonic() + CHECK_TIMEOUT_SECONDS  # one budget for the checks running side by side
    broker = _in_thread(_check_broker)
    model = _in_thread(_check_model)
    checks: dict[str, str] = {}
    checks["database"] = _run_inline(_check_default_database)
    # The account registry is in the default database: without it there is nothing to sample.
    checks["account_databases"] = _check_account_databases(deadline) if checks["database"] == "ok" else "skipped"
    # Keys fail closed (issue 36): missing, unreadable, not a key, the wrong one, readable by others.
    checks["keys"] = _run_inline(_check_keys) if checks["database"] == "ok" else "skipped"
    checks["broker"] = _result(broker, deadline=deadline)
    # Whether a model is connected: a note, never a failure (memory and drafts still work offline);
    # probed beside the others under the same deadline, and naming only the client and its state.
    checks["model"] = _result(model, deadline=deadline).replace("error:", "warning:", 1)
    failing = [name for name, value in checks.items() if value.startswith("error")]
    return JsonResponse(
        {"status": "unavailable" if failing else "ok", "checks": checks, "failing": failing},
        status=503 if failing else 200,
    )


def _error(exc: BaseException) -> str:
    # The class only: messages may carry paths or connection strings.
    return f"error: {exc.__class__.__name__}"


def _run_inline(check: Callable[[], str]) -> str:
    try:
        return check()
    except Exception as exc:  # readiness reports, never raises
        return _error(exc)


def _in_thread(check: Callable[..., str], *args: str) -> Future[str]:
    """Run a check that may block on a server in a daemon thread: a hung server costs the probe
    its timeout, never a web thread, and never holds up the process's exit."""
    future: Future[str] = Future()

    def run() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(check(*args))
            except BaseException as exc:
                future.set_exception(exc)

    threading.Thread(target=run, name="readyz", daemon=True).start()
    return future


def _result(future: Future[str], *, deadline: float) -> str:
    try:
        return future.result(timeout=max(0.0, deadline - time.monotonic()))
    except FutureTimeout:
        future.cancel()
        return "error: timeout"
    except Exception as exc:
        return _error(exc)


def _check_default_database() -> str:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def _check_keys() -> str:
    """Every key outside the database, by purpose and problem (no path: the detail is in the log)."""
    problems = []
    for purpose, problem in all_keys_verify().items():
        if problem is not None:
            logger.error("readyz: %s", problem.detail)
            problems.append(f"{purpose}: {problem.problem}")
    return "error: " + "; ".join(problems) if problems else "ok"


def _check_model() -> str:
    health = model_health()
    return f"ok: {health.client}" if health.ok else f"warning: {health.client}: {health.state}"


def health_queue() -> Queue:
    return Queue(
        HEALTH_QUEUE,
        Exchange(HEALTH_QUEUE, type="direct", durable=False),
        routing_key=HEALTH_QUEUE,
        durable=False,
        expires=60.0,  # RabbitMQ drops the idle queue; the other brokers ignore it
    )


def _check_broker() -> str:
    """Publish a tiny message to the health queue and purge it: a real write on any kombu broker."""
    queue = health_queue()
    with app.connection_for_write(connect_timeout=CHECK_TIMEOUT_SECONDS) as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, timeout=CHECK_TIMEOUT_SECONDS)
        with conn.channel() as channel:
            Producer(channel).publish(
                {"probe": time.time()},
                exchange=queue.exchange,
                routing_key=HEALTH_QUEUE,
                declare=[queue],
                serializer="json",
                delivery_mode="transient",
                retry=False,
            )
            queue.bind(channel).purge()
    return "ok"


def _sampled_accounts() -> list[str]:
    ids = list(WeComAccount.objects.filter(is_active=True).order_by("pk").values_list("pk", flat=True))
    if len(ids) <= ACCOUNT_SAMPLE_SIZE:
        return ids
    start = next(_rotation) * ACCOUNT_SAMPLE_SIZE % len(ids)
    return [ids[(start + i) % len(ids)] for i in range(ACCOUNT_SAMPLE_SIZE)]


def _check_account_databases(deadline: float) -> str:
    try:
        accounts = _sampled_accounts()
    except Exception as exc:
        return _error(exc)
    futures = {account_id: _in_thread(_probe_account_write, account_id) for account_id in accounts}
    outcomes = {account_id: _result(future, deadline=deadline) for account_id, future in futures.items()}
    failures = [
        f"{account_id}: {outcome.removeprefix('error: ')}"
        for account_id, outcome in outcomes.items()
        if outcome.startswith("error")
    ]
    if failures:
        return "error: " + "; ".join(failures)
    # Ready, but say so when a forget or erasure still waits for its checkpoint (not a failure).
    notes = [
        f"{account_id}: {outcome.removeprefix('ok: ')}" for account_id, outcome in outcomes.items() if outcome != "ok"
    ]
    return "ok: " + "; ".join(notes) if notes else "ok"


def _probe_account_write(account_id: str) -> str:
    """A write that must reach the account's storage, rolled back: proves it is not read-only."""
    alias = register_account_database(account_id)
    connection = connections[alias]
    if connection.vendor == "sqlite" and not Path(connection.settings_dict["NAME"]).exists():
        return "error: missing database file"  # connecting would create an empty one
    if connection.vendor == "sqlite" and (shortage := _disk_shortage(Path(connection.settings_dict["NAME"]))):
        return shortage
    try:
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                # This thread's own connection: a held write lock costs the probe, not 30 s.
                cursor.execute(f"PRAGMA busy_timeout = {int(CHECK_TIMEOUT_SECONDS * 1000)}")
        with transaction.atomic(using=alias), connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("SET LOCAL statement_timeout = %s", [int(CHECK_TIMEOUT_SECONDS * 1000)])
                cursor.execute("SET LOCAL lock_timeout = %s", [int(CHECK_TIMEOUT_SECONDS * 1000)])
            cursor.execute("CREATE TABLE qiwei_readyz_probe (id integer)")
            raise _RolledBack
    except _RolledBack:
        return _pending_scrubs(alias)
    finally:
        connection.close()


def _disk_shortage(path: Path) -> str:
    """An error when the file's filesystem is short of space, else ''. The probe's write is rolled
    back inside SQLite's page cache, so a full disk only shows at a real commit (a customer's)."""
    free_mb = shutil.disk_usage(path.parent).free // (1024 * 1024)
    if free_mb < settings.QIWEI_READYZ_MIN_FREE_MB:
        return f"error: disk full ({free_mb} MB free, {settings.QIWEI_READYZ_MIN_FREE_MB} MB needed)"
    return ""


def _pending_scrubs(alias: str) -> str:
    from memory.models import StorageScrub

    try:
        pending = StorageScrub.objects.using(alias).filter(done_at__isnull=True).count()
    except DatabaseError:  # not migrated yet: migrate_accounts reports that, not this probe
        return "ok"
    return f"ok: {pending} pending storage scrub(s)" if pending else "ok"
