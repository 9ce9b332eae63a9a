"""Liveness and readiness probes: /readyz proves the broker and account databases accept writes."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connections

from qiwei_site import health
from qiwei_site.celery import BROKER_FOLDER_OPTIONS, app
from qiwei_site.platform.tenancy import alias_for


@contextlib.contextmanager
def broker_configured(url: str, options: dict[str, str] | None = None) -> Iterator[None]:
    previous = app.conf.broker_url, app.conf.broker_transport_options
    app.conf.broker_url, app.conf.broker_transport_options = url, options or {}
    try:
        yield
    finally:
        app.conf.broker_url, app.conf.broker_transport_options = previous


@pytest.fixture
def filesystem_broker(tmp_path) -> Iterator[Path]:
    """The embedded broker as shipped, in this test's own folder."""
    root = tmp_path / "broker"
    options = {
        "data_folder_in": str(root / "queue"),
        "data_folder_out": str(root / "queue"),
        "processed_folder": str(root / "processed"),
        "control_folder": str(root / "control"),
        "corrupt_folder": str(root / "corrupt"),
    }
    for key in BROKER_FOLDER_OPTIONS:
        Path(options[key]).mkdir(parents=True, exist_ok=True)
    with broker_configured("filesystem://localhost/", options):
        yield root


def _writable(path: Path) -> bool:
    probe = (path / ".probe") if path.is_dir() else path
    try:
        with open(probe, "a"):
            pass
    except OSError:
        return False
    if probe != path:
        probe.unlink()
    return True


@contextlib.contextmanager
def unwritable(path: Path) -> Iterator[None]:
    """Make a file or directory unwritable, for root too (whom permission bits do not stop):
    permission bits, else the immutable attribute, else (a directory) a plain file in its place."""
    mode = path.stat().st_mode
    path.chmod(0o555 if path.is_dir() else 0o444)
    immutable = moved = None
    chattr = shutil.which("chattr")
    if _writable(path) and chattr and subprocess.run([chattr, "+i", str(path)], capture_output=True).returncode == 0:
        immutable = path
    if _writable(path) and path.is_dir():
        moved = path.rename(path.with_name(f"{path.name}.away"))
        path.write_text("not a directory")
    try:
        if _writable(path) and not moved:
            pytest.skip(f"cannot make {path} unwritable for uid {os.geteuid()} on this filesystem")
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(immutable)], check=True)
        if moved:
            path.unlink()
            moved.rename(path)
        path.chmod(mode)


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server that accepts connections and never answers: a hung broker."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                accepted.append(server.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"
    server.close()
    for conn in accepted:
        conn.close()


def test_healthz_answers_without_dependencies(client):
    # Given a broker that would fail, and no database access allowed (no `db` fixture)
    with broker_configured("redis://127.0.0.1:1/0"):
        # When the liveness probe is asked
        response = client.get("/healthz")
    # Then it answers from the process alone
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_all_good_is_200_and_leaves_no_probe_behind(db, client, account, filesystem_broker):
    # Given the embedded broker and one account database, both writable
    # When readiness is asked
    response = client.get("/readyz")
    # Then every check passed
    assert response.status_code == 200, response.json()
    assert response.json() == {
        "status": "ok",
        "checks": {
            "database": "ok",
            "account_databases": "ok",
            "keys": "ok",
            "broker": "ok",
            # the offline default: a note that no model is connected, never a failure
            "model": "warning: offline: offline",
        },
        "failing": [],
    }
    # And the probe message was purged, the probe table rolled back
    assert [p.name for p in (filesystem_broker / "queue").iterdir()] == []
    with connections[alias_for(account.id)].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM sqlite_master WHERE name = 'qiwei_readyz_probe'")
        assert cursor.fetchone() == (0,)


def test_readyz_unwritable_broker_dir_is_503_naming_broker(db, client, account, filesystem_broker):
    # Given a broker queue directory nobody can write to
    with unwritable(filesystem_broker / "queue"):
        # When readiness is asked
        response = client.get("/readyz")
    # Then it is unavailable because of the broker alone
    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "unavailable" and body["failing"] == ["broker"]
    assert body["checks"]["broker"] == "error: ChannelError"
    assert body["checks"]["database"] == body["checks"]["account_databases"] == "ok"


def test_readyz_unreachable_broker_is_503(db, client):
    # Given a broker URL where nothing listens
    with broker_configured("redis://127.0.0.1:1/0"):
        response = client.get("/readyz")
    # Then readiness fails on the broker
    body = response.json()
    assert response.status_code == 503 and body["failing"] == ["broker"]
    assert body["checks"]["broker"].startswith("error")


def test_readyz_hung_broker_answers_within_the_timeout(db, client, silent_server, monkeypatch):
    # Given a broker that accepts connections and never answers, and a short check timeout
    monkeypatch.setattr(health, "CHECK_TIMEOUT_SECONDS", 0.5)
    with broker_configured(silent_server):
        # When readiness is asked
        started = time.monotonic()
        response = client.get("/readyz")
        elapsed = time.monotonic() - started
    # Then it answers 503 on time instead of hanging with the broker
    assert response.status_code == 503 and response.json()["checks"]["broker"] == "error: timeout"
    assert elapsed < 2.0


def test_readyz_read_only_account_database_is_503_naming_it(db, client, account, filesystem_broker):
    # Given the account's SQLite file is read-only (and no connection to it is open)
    alias = alias_for(account.id)
    path = Path(connections[alias].settings_dict["NAME"])
    connections[alias].close()
    with unwritable(path):
        # When readiness is asked
        response = client.get("/readyz")
    # Then it is unavailable because of that account's database
    body = response.json()
    assert response.status_code == 503
    assert body["failing"] == ["account_databases"]
    assert body["checks"]["account_databases"] == "error: acme: OperationalError"
    assert body["checks"]["broker"] == "ok"


def test_readyz_account_database_on_a_full_disk_is_503_naming_it(db, client, account, filesystem_broker, settings):
    # Given the filesystem holding the account's SQLite file has less free space than required
    path = Path(connections[alias_for(account.id)].settings_dict["NAME"])
    free_mb = shutil.disk_usage(path.parent).free // (1024 * 1024)
    settings.QIWEI_READYZ_MIN_FREE_MB = free_mb + 1024
    # When readiness is asked
    response = client.get("/readyz")
    # Then it is unavailable because of that account's disk, with the figures
    body = response.json()
    assert response.status_code == 503
    assert body["failing"] == ["account_databases"]
    assert body["checks"]["account_databases"].startswith("error: acme: disk full (")
    assert f"{free_mb + 1024} MB needed" in body["checks"]["account_databases"]


def test_readyz_account_database_with_enough_free_space_is_ready(db, client, account, filesystem_broker, settings):
    # Given the default threshold, far below what this machine has free
    settings.QIWEI_READYZ_MIN_FREE_MB = 1
    # When readiness is asked
    response = client.get("/readyz")
    # Then the account database is ready
    assert response.json()["checks"]["account_databases"] == "ok"


def test_readyz_missing_account_database_is_503_and_creates_nothing(db, client, account, filesystem_broker):
    # Given an active account whose SQLite file has gone
    alias = alias_for(account.id)
    path = Path(connections[alias].settings_dict["NAME"])
    connections[alias].close()
    path.unlink()
    # When readiness is asked
    response = client.get("/readyz")
    # Then it names the account, and does not create an empty database in its place
    assert response.status_code == 503
    assert response.json()["checks"]["account_databases"] == "error: acme: missing database file"
    assert not path.exists()


def test_readyz_samples_accounts_in_rotation(db, monkeypatch):
    # Given more active accounts than one request probes
    from qiwei_site.platform.services import account_create

    for n in range(5):
        account_create(account_id=f"acct{n}", name=f"账号{n}")
    monkeypatch.setattr(health, "ACCOUNT_SAMPLE_SIZE", 2)
    # When readiness is asked three times
    samples = [health._sampled_accounts() for _ in range(3)]
    # Then each request probes a bounded sample and together they visit every account
    assert all(len(sample) == 2 for sample in samples)
    assert {account for sample in samples for account in sample} == {f"acct{n}" for n in range(5)}
