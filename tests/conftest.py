"""Shared fixtures: every test gets its own account databases in a fresh data dir; local HTTP servers."""

from __future__ import annotations

import contextlib
import fcntl
import gc
import hashlib
import json
import socket
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import caches
from django.db import connections
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from qiwei_site.platform import tenancy
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.services import account_create, membership_grant
from tests.factories import StaffUserFactory, UserFactory


def pytest_configure(config) -> None:
    """Account databases are registered at run time; Django's test case only knows the static
    aliases and would forbid them. They are isolated per test by their own data dir instead."""
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.test.testcases import SimpleTestCase

    original = SimpleTestCase.ensure_connection_patch_method.__func__

    def ensure_connection_patch_method(cls):
        real_ensure_connection = BaseDatabaseWrapper.ensure_connection  # unblocked at set-up time
        guarded = original(cls)

        def patched(self, *args, **kwargs):
            if self.alias.startswith("acct_"):
                return real_ensure_connection(self, *args, **kwargs)
            return guarded(self, *args, **kwargs)

        return patched

    SimpleTestCase.ensure_connection_patch_method = classmethod(ensure_connection_patch_method)


@pytest.fixture(scope="session")
def django_db_setup(
    request,
    django_test_environment,
    django_db_blocker,
    django_db_use_migrations,
    django_db_keepdb,
    django_db_createdb,
    django_db_modify_db_settings,
):
    """pytest-django's set-up of the test databases, from a migrated copy of the SQLite default
    database when one exists for this code's migrations: each test process (every xdist worker,
    every run) would otherwise migrate an empty file. The copy is named by `_migrated_copy_path`'s
    hash and written once, under a file lock, by the first process that migrated. `--reuse-db`,
    `--create-db` and `--nomigrations` work as pytest-django's own set-up has them (no copy)."""
    from django.test.utils import setup_databases, teardown_databases
    from pytest_django.fixtures import _disable_migrations, _get_databases_for_setup

    if not django_db_use_migrations:
        _disable_migrations()
    keepdb = django_db_keepdb and not django_db_createdb
    aliases, serialized_aliases = _get_databases_for_setup(request.session.items)
    target = _sqlite_test_name("default")
    plain = keepdb or django_db_createdb or not django_db_use_migrations or "default" not in aliases
    copy = _migrated_copy_path() if target is not None and not plain else None
    reuse = copy is not None and copy.exists()
    if reuse:
        _sqlite_backup(copy, target)
    with django_db_blocker.unblock():
        db_cfg = setup_databases(
            verbosity=request.config.option.verbose,
            interactive=False,
            aliases=aliases,
            serialized_aliases=serialized_aliases,
            keepdb=keepdb or reuse,  # a copy's migrations are all applied: migrate finds nothing to do
        )
    if copy is not None and not reuse and _migrations_recorded(target):
        copy.parent.mkdir(parents=True, exist_ok=True)
        with open(copy.with_suffix(".lock"), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when closed
            if not copy.exists():
                building = copy.with_suffix(".building")
                _sqlite_backup(target, building)
                building.rename(copy)
    yield
    if not django_db_keepdb:
        with django_db_blocker.unblock():
            try:
                teardown_databases(db_cfg, verbosity=request.config.option.verbose)
            except Exception as exc:  # as pytest-django's own teardown: a warning, not an error
                request.node.warn(pytest.PytestWarning(f"Error when trying to teardown test databases: {exc!r}"))


def _migrations_recorded(path: Path) -> bool:
    """True when the file holds a migrated database (never save an empty file as the copy)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            return conn.execute("SELECT count(*) FROM django_migrations").fetchone()[0] > 0
    except sqlite3.Error:
        return False


def _sqlite_test_name(alias: str) -> Path | None:
    config = connections[alias].settings_dict
    name = (config.get("TEST") or {}).get("NAME")
    if not tenancy.is_sqlite_config(config) or not name or str(name).startswith(("file:", ":memory:")):
        return None
    return Path(name)


def _migrated_copy_path() -> Path:
    """Named by what decides the migrated schema: every installed app's migration files, which app
    goes to which database (the account template's fingerprint: account migrations, routing, Django
    and SQLite versions) and the user model. Another migration or version gives another name, so a
    stale copy is never used."""
    from django.conf import settings

    digest = hashlib.sha256(tenancy.account_template_fingerprint().encode())
    digest.update(str(settings.AUTH_USER_MODEL).encode())
    digest.update(tenancy.migration_files_digest().encode())
    return Path(settings.QIWEI_ACCOUNT_TEMPLATE_DIR) / f"default-{digest.hexdigest()[:16]}.sqlite3"


def _sqlite_backup(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite file (its WAL included), through SQLite's backup API."""
    target.unlink(missing_ok=True)
    with contextlib.closing(sqlite3.connect(source)) as src, contextlib.closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The modules, apps and collected tests are kept for the whole run: out of the collector's
    sight (`gc.freeze`), with a young generation of 50,000 allocations instead of 700, the cyclic
    collector stops re-walking them between tests (~3% of a run's CPU). Tests that rely on a
    collection call `gc.collect()` themselves."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


@pytest.hookimpl(tryfirst=True)  # before pytest-django's (registered earlier), whose stable sort then
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:  # groups db, transactional, the rest
    """The tests marked `long` first within each of pytest-django's groups: a parallel run then meets
    them early (work stealing gives each worker half of the list and lets an idle worker take the
    tail of another's queue, so the run does not end with one worker busy for seconds on a long
    test while the other is idle). Every worker sorts alike, as xdist requires."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture(autouse=True)
def _isolated_account_databases(tmp_path, settings) -> Iterator[None]:
    # Before as well as after: a browser test's page can still have a request in flight when its
    # test ends, and the live server thread answering it registers the account again; left there,
    # the next test's database guard would fence that alias off and the test could not create it.
    _unregister_account_databases()
    settings.QIWEI_DATA_DIR = tmp_path / "data"
    settings.QIWEI_KEY_DIR = settings.QIWEI_DATA_DIR  # the embedded default: keys beside the data
    # The in-process cache outlives a test's rolled-back database: a knowledge-index version token
    # left there would make the next test read the previous one's vocabulary.
    caches["default"].clear()
    yield
    _unregister_account_databases()


def _unregister_account_databases() -> None:
    for alias in [alias for alias in connections.settings if alias.startswith("acct_")]:
        account_id = tenancy.account_for_alias(alias)
        if account_id and not alias.endswith("__template"):
            tenancy.unregister_account_database(account_id)
        tenancy._migrated.discard(alias)


def make_account(account_id: str, name: str) -> WeComAccount:
    return account_create(account_id=account_id, name=name)


@pytest.fixture
def account(db) -> Iterator[WeComAccount]:
    """An account named `acme`, selected for the whole test."""
    acct = make_account("acme", "安居客服一部")
    with tenancy.use_account(acct.id):
        yield acct


@pytest.fixture
def other_account(db) -> WeComAccount:
    """A second account (`globex`), not selected."""
    return make_account("globex", "优居客服二部")


@pytest.fixture
def staff_user(db, account):
    user = StaffUserFactory()
    membership_grant(user=user, account=account)
    return user


@pytest.fixture
def agent_user(db, account):
    """A customer-service agent: a member of the account, not staff."""
    user = UserFactory()
    membership_grant(user=user, account=account)
    return user


def client_for(user) -> APIClient:
    token, _ = Token.objects.get_or_create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def staff_client(staff_user) -> APIClient:
    return client_for(staff_user)


@pytest.fixture
def agent_client(agent_user) -> APIClient:
    return client_for(agent_user)


@pytest.fixture
def admin_client(staff_user, account):
    """A supervisor logged in to admin with `acme` chosen in the account switcher."""
    from django.test import Client

    from qiwei_site.platform.middleware import SESSION_KEY

    client = Client()
    client.force_login(staff_user)
    session = client.session
    session[SESSION_KEY] = account.id
    session.save()
    return client


class _JsonHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _reply(self, status: int, body: Any) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method: str, payload: Any) -> None:
        server: Any = self.server
        server.requests.append((method, self.path, payload))
        route = server.routes.get((method, self.path), (404, {"error": "not found"}))
        status, body = route(payload) if callable(route) else route
        self._reply(status, body)

    def do_GET(self) -> None:
        self._route("GET", None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._route("POST", json.loads(self.rfile.read(length) or b"{}"))


@pytest.fixture
def json_server() -> Iterator[Any]:
    """A JSON HTTP server on 127.0.0.1 (random port): `server.routes[(method, path)]` is
    `(status, body)` or a function of the request body returning one; `server.requests` records calls."""
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _JsonHandler)
    server.routes = {}
    server.requests = []
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    # shutdown() waits up to one poll interval: the default 0.5 s cost every test using it that much.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


class HangingServer:
    """Accepts connections and never answers; counts what it was sent."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections: list[socket.socket] = []
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(0.5)
            self.connections.append(conn)
            with contextlib.suppress(OSError):
                self.received.append(conn.recv(4096))

    def close(self) -> None:
        self._stop.set()
        self.thread.join(timeout=2)
        for conn in self.connections:
            conn.close()
        self.sock.close()


@pytest.fixture
def hanging_server() -> Iterator[HangingServer]:
    server = HangingServer()
    yield server
    server.close()
