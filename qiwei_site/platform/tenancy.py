"""One database per WeCom account (DESIGN §4).

`default` holds staff, the account registry and the knowledge index. Every
customer-data model lives only in its account's database, alias `acct_<id>`.
`use_account()` selects the account for the current context; the router fails
closed when customer data is touched with no account selected, or when a row of
one account is used while another is selected.
"""

from __future__ import annotations

import contextlib
import contextvars
import fcntl
import hashlib
import logging
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connections, transaction
from django.db.models import Model

logger = logging.getLogger(__name__)

# No hyphen: the id names a PostgreSQL database and a file as it is, so two ids can never map to
# one database (a `shop-1` turned into `shop_1` would have shared `shop_1`'s data).
ACCOUNT_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_]{0,39}$")
ACCOUNT_APPS = frozenset({"conversations", "memory", "sessions_epoch"})
# Models of ACCOUNT_APPS that live in `default`: the registry as `conversations`' historical
# migrations still name it (it now belongs to qiwei_site.platform, which lives in `default`), and
# the registry's audit journal (an account's database cannot keep the record of its own deletion).
DEFAULT_DB_MODELS = frozenset(
    {"conversations.wecomaccount", "conversations.accountmembership", "conversations.registryauditevent"}
)

_current_account: contextvars.ContextVar[str | None] = contextvars.ContextVar("qiwei_account", default=None)
_registration_lock = threading.Lock()


class TenancyError(RuntimeError):
    """Base for tenancy violations: these are programming errors, never user input."""


class NoAccountSelected(TenancyError):
    pass


class CrossAccountAccess(TenancyError):
    pass


class InvalidAccountId(ValueError):
    pass


def validate_account_id(account_id: str) -> str:
    if not isinstance(account_id, str) or not ACCOUNT_ID_RE.match(account_id):
        raise InvalidAccountId(
            f"账号 ID {account_id!r} 不合法：只能使用小写字母、数字和下划线，"
            "以字母或数字开头，最长 40 个字符 "
            "(account id must match [a-z0-9][a-z0-9_]{0,39})."
        )
    return account_id


def alias_for(account_id: str) -> str:
    return f"acct_{validate_account_id(account_id)}"


def account_for_alias(alias: str) -> str | None:
    return alias[len("acct_") :] if alias.startswith("acct_") else None


def is_account_model(model: type[Model]) -> bool:
    meta = model._meta
    return meta.app_label in ACCOUNT_APPS and meta.label_lower not in DEFAULT_DB_MODELS


def current_account() -> str | None:
    return _current_account.get()


def current_alias() -> str:
    account_id = _current_account.get()
    if account_id is None:
        raise NoAccountSelected("客户数据查询必须在 use_account() 中进行 (no account selected).")
    return alias_for(account_id)


# --- connection registration -------------------------------------------------------------


def account_database_config(account_id: str) -> dict[str, Any]:
    template = settings.QIWEI_ACCOUNT_DATABASE_URL
    if template:
        import environ

        if "{account}" not in template:
            raise ImproperlyConfigured("QIWEI_ACCOUNT_DATABASE_URL must contain '{account}'.")
        config = environ.Env.db_url_config(template.replace("{account}", validate_account_id(account_id)))
        config.setdefault("CONN_MAX_AGE", settings.QIWEI_DB_CONN_MAX_AGE)
        config["CONN_HEALTH_CHECKS"] = True
        return config
    path = Path(settings.QIWEI_DATA_DIR) / "accounts" / f"{account_id}.sqlite3"
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(path),
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 5,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        "TEST": {"NAME": str(path)},
    }


def is_registered(account_id: str) -> bool:
    return alias_for(account_id) in connections.settings


def register_account_database(account_id: str) -> str:
    """Make `acct_<id>` known to Django's connection handler (idempotent, thread-safe).

    The settings dict is replaced, never mutated, so a thread iterating it sees a
    consistent mapping.
    """
    alias = alias_for(account_id)
    if alias in connections.settings:
        return alias
    with _registration_lock:
        if alias in connections.settings:
            return alias
        config = account_database_config(account_id)
        new_settings = dict(connections.settings)
        new_settings[alias] = config
        # Fill Django's default keys the same way it does for settings.DATABASES.
        connections.__dict__["settings"] = connections.configure_settings(new_settings)
    return alias


def unregister_account_database(account_id: str) -> None:
    alias = alias_for(account_id)
    with _registration_lock:
        if alias not in connections.settings:
            return
        with contextlib.suppress(Exception):
            connections[alias].close()
        new_settings = dict(connections.settings)
        new_settings.pop(alias, None)
        connections.__dict__["settings"] = new_settings
        with contextlib.suppress(AttributeError):
            delattr(connections._connections, alias)  # type: ignore[attr-defined]


# --- creation and migration ----------------------------------------------------------


def _account_migrations_fingerprint() -> str:
    """A hash of every account-app migration file, so a cached template is never stale."""
    digest = hashlib.sha256()
    base = Path(settings.BASE_DIR)
    for app in sorted(ACCOUNT_APPS):
        for path in sorted((base / app / "migrations").glob("*.py")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _migrate_alias(alias: str) -> None:
    from django.core.management import call_command

    call_command("migrate", database=alias, interactive=False, verbosity=0)


def _ensure_postgres_database(config: dict[str, Any]) -> None:
    import psycopg
    from psycopg import sql

    params: dict[str, Any] = {
        "host": config.get("HOST") or None,
        "port": config.get("PORT") or None,
        "user": config.get("USER") or None,
        "password": config.get("PASSWORD") or None,
        "dbname": "postgres",
        "autocommit": True,
    }
    with psycopg.connect(**{k: v for k, v in params.items() if v is not None}) as conn:  # type: ignore[arg-type]
        # An advisory lock serialises creation across processes; threads are serialised below.
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", [config["NAME"]])
        try:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [config["NAME"]]).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(config["NAME"])))
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", [config["NAME"]])


_migrated: set[str] = set()
_create_locks: dict[str, threading.Lock] = {}


def ensure_account_database(account_id: str, *, force_migrate: bool = False) -> str:
    """Register the account's database and bring it to the current migrations.

    Safe to call from many threads and processes at once: creation and migration run
    under a per-account lock (a thread lock plus a file lock or a PostgreSQL advisory lock).
    """
    alias = register_account_database(account_id)
    if alias in _migrated and not force_migrate:
        return alias
    with _registration_lock:
        lock = _create_locks.setdefault(alias, threading.Lock())
    with lock:
        if alias in _migrated and not force_migrate:
            return alias
        config = connections.settings[alias]
        lock_path = Path(settings.QIWEI_DATA_DIR) / "locks" / f"{alias}.lock"
        with _file_lock(lock_path):
            if config["ENGINE"] == "django.db.backends.sqlite3":
                _create_sqlite_from_template(alias, Path(config["NAME"]))
            else:
                _ensure_postgres_database(config)
            _migrate_alias(alias)
        _migrated.add(alias)
    return alias


def _create_sqlite_from_template(alias: str, target: Path) -> None:
    """Copy a migrated template file for a brand-new SQLite account (migrating is the slow part)."""
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    template = Path(settings.QIWEI_ACCOUNT_TEMPLATE_DIR) / f"account-{_account_migrations_fingerprint()}.sqlite3"
    if not template.exists():
        template.parent.mkdir(parents=True, exist_ok=True)
        with _file_lock(template.with_suffix(".lock")):
            if not template.exists():
                tmp_alias = f"{alias}__template"
                building = template.with_suffix(".building")
                building.unlink(missing_ok=True)
                config = dict(connections.settings[alias])
                config["NAME"] = str(building)
                config["OPTIONS"] = {"timeout": 30}
                with _registration_lock:
                    new_settings = dict(connections.settings)
                    new_settings[tmp_alias] = config
                    connections.__dict__["settings"] = connections.configure_settings(new_settings)
                try:
                    _migrate_alias(tmp_alias)
                finally:
                    connections[tmp_alias].close()
                    with _registration_lock:
                        new_settings = dict(connections.settings)
                        new_settings.pop(tmp_alias, None)
                        connections.__dict__["settings"] = new_settings
                building.rename(template)
    shutil.copyfile(template, target)


def drop_account_database(account_id: str) -> None:
    """Remove an account's database entirely (temporary accounts, e.g. the smoke check)."""
    config = dict(connections.settings.get(alias_for(account_id)) or account_database_config(account_id))
    unregister_account_database(account_id)
    _migrated.discard(alias_for(account_id))
    if config["ENGINE"] == "django.db.backends.sqlite3":
        for suffix in ("", "-wal", "-shm"):
            Path(f"{config['NAME']}{suffix}").unlink(missing_ok=True)
        return
    import psycopg
    from psycopg import sql

    params = {
        "host": config.get("HOST") or None,
        "port": config.get("PORT") or None,
        "user": config.get("USER") or None,
        "password": config.get("PASSWORD") or None,
    }
    with psycopg.connect(dbname="postgres", autocommit=True, **{k: v for k, v in params.items() if v}) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(config["NAME"])))


# --- selecting an account ----------------------------------------------------------------


@contextlib.contextmanager
def use_account(account_id: str) -> Iterator[str]:
    """Select an account for the code inside; every customer-data query goes to its database."""
    alias = ensure_account_database(account_id)
    token = _current_account.set(account_id)
    try:
        yield alias
    finally:
        _current_account.reset(token)


@contextlib.contextmanager
def no_account() -> Iterator[None]:
    """Explicitly run with no account selected (a request must not inherit a caller's account)."""
    token = _current_account.set(None)
    try:
        yield
    finally:
        _current_account.reset(token)


def account_atomic(savepoint: bool = True) -> transaction.Atomic:
    """`transaction.atomic()` on the selected account's database (a bare atomic covers only default)."""
    return transaction.atomic(using=current_alias(), savepoint=savepoint)


def on_account_commit(func: Any) -> None:
    transaction.on_commit(func, using=current_alias())


class AccountRouter:
    """Send customer data to the selected account's database and nowhere else."""

    def _route(self, model: type[Model], **hints: Any) -> str | None:
        if not is_account_model(model):
            return "default"
        alias = current_alias()
        instance = hints.get("instance")
        instance_db = getattr(getattr(instance, "_state", None), "db", None)
        if instance_db is not None and instance_db != alias and instance_db.startswith("acct_"):
            raise CrossAccountAccess(f"{model._meta.label} row from {instance_db} used while {alias} is selected.")
        return alias

    def db_for_read(self, model: type[Model], **hints: Any) -> str | None:
        return self._route(model, **hints)

    def db_for_write(self, model: type[Model], **hints: Any) -> str | None:
        return self._route(model, **hints)

    def allow_relation(self, obj1: Model, obj2: Model, **hints: Any) -> bool | None:
        db1, db2 = obj1._state.db, obj2._state.db
        if db1 and db2 and db1 != db2 and (db1.startswith("acct_") or db2.startswith("acct_")):
            # A historical row's user (default) is referenced without a constraint.
            return not (db1.startswith("acct_") and db2.startswith("acct_"))
        return None

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool:
        is_account_db = db.startswith("acct_")
        if app_label not in ACCOUNT_APPS:
            return not is_account_db
        if model_name is None:
            return is_account_db
        label = f"{app_label}.{model_name}"
        if label in DEFAULT_DB_MODELS:
            return not is_account_db
        return is_account_db
