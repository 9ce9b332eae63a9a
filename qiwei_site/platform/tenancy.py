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
import functools
import hashlib
import importlib
import logging
import os
import pkgutil
import re
import threading
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import request_finished
from django.db import DatabaseError, connections, transaction
from django.db.models import Model

from qiwei_site.platform.connections import account_pool, is_cap_error, pool_enabled, set_reclaimer

logger = logging.getLogger(__name__)

# No hyphen: the id names a PostgreSQL database and a file as it is, so two ids can never map to
# one database (a `shop-1` turned into `shop_1` would have shared `shop_1`'s data).
ACCOUNT_ID_RE = re.compile(r"\A[a-z0-9][a-z0-9_]{0,39}\Z")  # \Z: "$" would let a trailing newline through
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
    if not isinstance(account_id, str) or not ACCOUNT_ID_RE.fullmatch(account_id):
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


# Django's PostgreSQL backend, and ours that takes account connections from the process's bounded
# pool. SQLite has no server to run out of connections: its account connections are closed when
# released (a pool measured no faster, and slower once accounts outnumber the cap).
_POOLED_ENGINES = {"django.db.backends.postgresql": "qiwei_site.platform.connections.postgresql"}


def is_sqlite_config(config: dict[str, Any]) -> bool:
    return str(config["ENGINE"]).endswith("sqlite3")


SQLITE_LAYOUT, DATABASE_LAYOUT, SCHEMA_LAYOUT = "sqlite", "database", "schema"
# The schema every account's search path ends with: the one database's shared extensions (pg_trgm),
# usable by every account role, holding no table.
EXTENSION_SCHEMA = "qiwei_ext"


def account_layout() -> str:
    """Where accounts live (issue 23): a SQLite file each (no URL); a PostgreSQL database each (a
    URL naming `{account}`); or a schema each in one PostgreSQL database (a URL without it)."""
    template = settings.QIWEI_ACCOUNT_DATABASE_URL
    if not template:
        return SQLITE_LAYOUT
    return DATABASE_LAYOUT if "{account}" in template else SCHEMA_LAYOUT


def account_role(database: str, account_id: str) -> str:
    """The account's own PostgreSQL role in the schema layout. Roles belong to the whole server, so
    the name carries the database's (hashed: 63 bytes at most); the schema is `acct_<id>`."""
    return f"{role_prefix(database)}{validate_account_id(account_id)}"


def role_prefix(database: str) -> str:
    """What every account role of `database` starts with (a template's role too)."""
    return f"qiwei_{hashlib.sha256(database.encode()).hexdigest()[:8]}_"


def is_schema_config(config: dict[str, Any]) -> bool:
    return bool(config.get("QIWEI_SCHEMA"))


def account_database_config(account_id: str) -> dict[str, Any]:
    """Where an account's data lives: the URL template (`{account}` may stand in the host too, so
    accounts can be spread over several servers), a schema of the one PostgreSQL database the URL
    names, or a SQLite file under the data dir."""
    template = settings.QIWEI_ACCOUNT_DATABASE_URL
    if template:
        import environ

        config = environ.Env.db_url_config(template.replace("{account}", validate_account_id(account_id)))
        if account_layout() == SCHEMA_LAYOUT:
            if config["ENGINE"] not in _POOLED_ENGINES:
                raise ImproperlyConfigured(
                    "QIWEI_ACCOUNT_DATABASE_URL 不含 {account} 时必须是 PostgreSQL：每个账号一个 schema "
                    "(without '{account}' the URL must name one PostgreSQL database: a schema per account)."
                )
            # The backend switches every transaction to the account's role and schema with
            # SET LOCAL (connections.postgresql): nothing of an account stays on the connection.
            config["QIWEI_SCHEMA"] = alias_for(account_id)
            config["QIWEI_ROLE"] = account_role(str(config["NAME"]), account_id)
            config["ENGINE"] = _POOLED_ENGINES[config["ENGINE"]]
            # A named cursor would outlive the transaction its switch was made in.
            config["DISABLE_SERVER_SIDE_CURSORS"] = True
            config.setdefault("OPTIONS", {}).pop("prepare_threshold", None)
            config["OPTIONS"].pop("server_side_binding", None)
            return _with_connection_policy(config)
        if settings.QIWEI_PGBOUNCER:
            # Transaction pooling: a named (server-side) cursor or a prepared statement would
            # outlive the transaction on a server connection another client gets next.
            config["DISABLE_SERVER_SIDE_CURSORS"] = True
            config.setdefault("OPTIONS", {}).pop("prepare_threshold", None)  # Django's None: never prepare
        return _with_connection_policy(config)
    path = Path(settings.QIWEI_DATA_DIR) / "accounts" / f"{account_id}.sqlite3"
    return _with_connection_policy(
        {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(path),
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 5,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            "TEST": {"NAME": str(path)},
        }
    )


_SQLITE_ENGINE = "django.db.backends.sqlite3"
_KEPT_SQLITE_ENGINE = "qiwei_site.platform.connections.sqlite3"


def _with_connection_policy(config: dict[str, Any]) -> dict[str, Any]:
    if pool_enabled() and (config["ENGINE"] in _POOLED_ENGINES or is_schema_config(config)):
        # Django never closes these for age (None): `account_connection_release` hands them back
        # to the pool, which keeps them for QIWEI_DB_CONN_MAX_AGE seconds and checks them at
        # checkout. Any other close() still closes for real (a broken connection, a probe).
        config["ENGINE"] = _POOLED_ENGINES.get(config["ENGINE"], config["ENGINE"])
        config["CONN_MAX_AGE"] = None
        config["CONN_HEALTH_CHECKS"] = False
    elif pool_enabled() and config["ENGINE"] == _SQLITE_ENGINE:
        # Kept open by the thread between uses (`account_connection_release`), at most the cap
        # per thread; checked at each first use that the path still names the file it opened.
        config["ENGINE"] = _KEPT_SQLITE_ENGINE
        config["CONN_MAX_AGE"] = None
        config["CONN_HEALTH_CHECKS"] = True
    elif not is_sqlite_config(config):
        # The pool switched off (QIWEI_ACCOUNT_CONN_CAP=0): Django's per-thread connections.
        config.setdefault("CONN_MAX_AGE", settings.QIWEI_DB_CONN_MAX_AGE)
        config["CONN_HEALTH_CHECKS"] = True
    return config


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
        _kept_sqlite().pop(alias, None)
    account_pool.discard(alias)


# --- creation and migration ----------------------------------------------------------


def account_template_fingerprint() -> str:
    """A hash of what decides a migrated account file: every account-app migration file, which
    models route where, and the Django and SQLite versions that ran them — a template kept in the
    data dir across deploys is never used by code it was not made for."""
    import sqlite3

    import django

    digest = hashlib.sha256(migration_fingerprint().encode())
    digest.update(f"{django.get_version()}|{sqlite3.sqlite_version}".encode())
    digest.update(repr((sorted(ACCOUNT_APPS), sorted(DEFAULT_DB_MODELS))).encode())
    digest.update(migration_files_digest(ACCOUNT_APPS).encode())
    # The SQL some migrations import (the audit chain's and the context version's triggers): a
    # change there changes what a plain `migrate` makes, so it must not reuse a template either.
    for module in MIGRATION_SQL_MODULES:
        digest.update(Path(importlib.import_module(module).__file__ or "").read_bytes())
    return digest.hexdigest()[:16]


# Modules whose SQL account migrations import (kept in step with the migrations' imports by
# `tests/qiwei_site/platform/test_account_template.py`).
MIGRATION_SQL_MODULES = ("qiwei_site.platform.audit_chain", "conversations.context_version")


# The migration graph an account database was last migrated to is recorded in it, so a process
# that meets the account for the first time compares one row instead of running `migrate` (46–79
# ms, then again after every worker restart). Outside Django's models on purpose: it must be
# readable before any migration has run, and it never reaches the admin or the audit.
SCHEMA_TABLE = "qiwei_account_schema"


def _migration_packages() -> list[tuple[str, Any]]:
    """(app label, its migrations package) for every installed app that has one, by label, as
    `migrate` finds them."""
    from django.apps import apps
    from django.db.migrations.loader import MigrationLoader

    found = []
    for config in sorted(apps.get_app_configs(), key=lambda config: config.label):
        module_name, _ = MigrationLoader.migrations_module(config.label)
        if module_name is None:
            continue
        try:
            found.append((config.label, importlib.import_module(module_name)))
        except ModuleNotFoundError:
            continue
    return found


@functools.cache
def migration_fingerprint() -> str:
    """A hash of the (app, migration) names on disk for every installed app: what `migrate`
    would find. Computed once per process."""
    names: list[str] = []
    for label, package in _migration_packages():
        for _, name, is_pkg in pkgutil.iter_modules(getattr(package, "__path__", [])):
            if not is_pkg and name[0] not in "_~":  # the loader's own rule
                names.append(f"{label}.{name}")
    return hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()


def migration_files_digest(labels: Collection[str] | None = None) -> str:
    """A hash of the names and bytes of the migration files of these apps (every installed app by
    default): a file edited in place changes it, where `migration_fingerprint` (names) would not.
    Read once per process, like `migration_fingerprint` (a new account's template name asks for
    it; a deploy that changes the files starts new processes)."""
    return _migration_files_digest(None if labels is None else frozenset(labels))


@functools.cache
def _migration_files_digest(labels: frozenset[str] | None) -> str:
    digest = hashlib.sha256()
    for label, package in _migration_packages():
        if labels is not None and label not in labels:
            continue
        for folder in getattr(package, "__path__", []):
            for path in sorted(Path(folder).glob("*.py")):
                digest.update(f"{label}/{path.name}".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def schema_is_current(alias: str) -> bool:
    """One cheap query: was this database migrated to the migrations this process has?"""
    connection = connections[alias]
    if connection.in_atomic_block:
        return False  # a failing query would break the caller's transaction
    if is_sqlite_config(connection.settings_dict) and not Path(connection.settings_dict["NAME"]).exists():
        return False  # connecting would create an empty file
    # PgBouncer keeps a client asking for a database that does not exist waiting while it retries
    # the server login (15 s by default), then backs off that database: ask the catalogue first.
    behind_pgbouncer = (
        settings.QIWEI_PGBOUNCER
        and not is_sqlite_config(connection.settings_dict)
        and not is_schema_config(connection.settings_dict)  # the one database exists
    )
    if behind_pgbouncer and not _postgres_database_exists(connection.settings_dict):
        return False
    schema_layout = is_schema_config(connection.settings_dict)
    try:
        with connection.cursor() as cursor:
            # The schema layout: the same round trip asks whether the login role (session_user)
            # could read this account's rows without the switch (every process, every account).
            cursor.execute(f"SELECT fingerprint, {_LOGIN_READS if schema_layout else 'false'} FROM {SCHEMA_TABLE}")
            row = cursor.fetchone()
    except DatabaseError as exc:  # no such table (never recorded), or no such database yet
        if is_cap_error(exc):
            raise
        return False
    if row is not None and row[1]:
        raise UnsafeLoginRole(_unsafe_login_message(str(connection.settings_dict.get("USER") or "")))
    return row is not None and row[0] == migration_fingerprint()


# Inside the switched transaction current_user is the account's role and session_user the login
# role: true when the login role holds the account's privileges without switching (a superuser, an
# inheriting grant — PostgreSQL 16 sets inheritance per grant —, or pg_read_all_data).
_LOGIN_READS = (
    "(SELECT rolsuper FROM pg_roles WHERE rolname = session_user)"
    " OR pg_has_role(session_user, current_user, 'USAGE')"
    " OR CASE WHEN to_regrole('pg_read_all_data') IS NULL THEN false"
    " ELSE pg_has_role(session_user, 'pg_read_all_data', 'USAGE') END"
)


def _unsafe_login_message(name: str) -> str:
    return (
        f"PostgreSQL 登录角色 {name} 不能是超级用户，不能继承账号角色的权限（NOINHERIT，且授予时不带 INHERIT），"
        f"也不能属于 pg_read_all_data，否则数据库无法隔离账号：ALTER ROLE {name} NOSUPERUSER NOINHERIT "
        "(the schema layout needs a login role that is no superuser, holds no account role's privileges and "
        "is not in pg_read_all_data; README, operations)."
    )


def _record_schema_fingerprint(alias: str) -> None:
    from django.utils import timezone

    with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} "
            "(fingerprint varchar(64) NOT NULL, migrated_at varchar(40) NOT NULL)"
        )
        cursor.execute(f"DELETE FROM {SCHEMA_TABLE}")
        cursor.execute(
            f"INSERT INTO {SCHEMA_TABLE} (fingerprint, migrated_at) VALUES (%s, %s)",
            [migration_fingerprint(), timezone.now().isoformat()],
        )


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
    _record_schema_fingerprint(alias)


def server_params(config: dict[str, Any]) -> dict[str, Any]:
    """psycopg's connection keywords for a database config's server (no database name)."""
    params = {
        "host": config.get("HOST") or None,
        "port": config.get("PORT") or None,
        "user": config.get("USER") or None,
        "password": config.get("PASSWORD") or None,
    }
    return {k: v for k, v in params.items() if v is not None}


class ProvisioningRequired(ImproperlyConfigured):
    """An account's role or schema must be made (or dropped) and this process may not: its login
    has no CREATEROLE and no provisioning URL was given to it."""


def provisioning_params(config: dict[str, Any]) -> dict[str, Any] | None:
    """psycopg's keywords for the provisioner (`QIWEI_ACCOUNT_PROVISION_URL`) on the server of a
    schema-layout config, or None when this process was given none."""
    url = settings.QIWEI_ACCOUNT_PROVISION_URL
    if not url or not is_schema_config(config):
        return None
    import environ

    return server_params(environ.Env.db_url_config(url))


def _provisioner(config: dict[str, Any]) -> dict[str, Any]:
    """Who makes and drops an account's role and schema: the provisioner when given, else the login."""
    return provisioning_params(config) or server_params(config)


def _provisioning_refused(config: dict[str, Any], what: str) -> ProvisioningRequired:
    return ProvisioningRequired(
        f"账号 schema {config['QIWEI_SCHEMA']} 需要{what}，本进程的数据库登录角色无权这样做："
        "请在配有 QIWEI_ACCOUNT_PROVISION_URL 的运维命令中执行（manage.py account_create / migrate_accounts）"
        f" (the account's schema needs to be {'made' if what == '开通' else 'dropped'} by the provisioner: run the "
        "provisioning command with QIWEI_ACCOUNT_PROVISION_URL; docs/scale-out.md)."
    )


# The databases each server was last seen to have, by server: a process's first use of each of
# 500 accounts behind PgBouncer would otherwise open 500 extra connections just to ask.
_known_databases: dict[tuple[tuple[str, Any], ...], frozenset[str]] = {}


def _postgres_database_exists(config: dict[str, Any]) -> bool:
    """Whether the account's database exists: from the names last listed for its server, or, when
    it is not among them, from the server's list read again (one query for every database)."""
    import psycopg

    params = server_params(config)
    server = tuple(sorted(params.items()))
    if config["NAME"] in _known_databases.get(server, frozenset()):
        return True
    with psycopg.connect(dbname="postgres", autocommit=True, **params) as conn:
        names = frozenset(row[0] for row in conn.execute("SELECT datname FROM pg_database"))
    _known_databases[server] = names
    return config["NAME"] in names


def _forget_known_database(config: dict[str, Any]) -> None:
    server = tuple(sorted(server_params(config).items()))
    if server in _known_databases:
        _known_databases[server] = _known_databases[server] - {config["NAME"]}


def _ensure_postgres_database(config: dict[str, Any]) -> None:
    """Create the account's database unless it exists. No lock: two creators racing both try, one
    wins and the other is told it exists. (A session advisory lock would not survive PgBouncer's
    transaction pooling: lock and unlock could run on different server connections.)"""
    import psycopg
    from psycopg import errors, sql

    with psycopg.connect(dbname="postgres", autocommit=True, **server_params(config)) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [config["NAME"]]).fetchone():
            return
        # DuplicateDatabase, or UniqueViolation on pg_database's name index when both commit at once.
        with contextlib.suppress(errors.DuplicateDatabase, errors.UniqueViolation):
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(config["NAME"])))


# Servers whose login role was found fit for the schema layout, by (server, database).
_checked_logins: set[tuple[Any, ...]] = set()


class UnsafeLoginRole(ImproperlyConfigured):
    pass


def check_login_role(conn: Any, config: dict[str, Any]) -> None:
    """Refuse a login role that could read account schemas without switching: a superuser (no
    privilege is checked for it) or a role inheriting the account roles' privileges. Isolation
    fails closed only when the login role itself can read nothing (docs/architecture.md)."""
    key = (*sorted(server_params(config).items()), config["NAME"])
    if key in _checked_logins:
        return
    row = conn.execute(
        "SELECT rolsuper, rolinherit, current_user FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    if row is None:  # pragma: no cover - current_user always has a pg_roles row
        return
    superuser, inherits, name = row
    if superuser or inherits:
        raise UnsafeLoginRole(_unsafe_login_message(str(name)))
    _checked_logins.add(key)


def _ensure_account_schema(config: dict[str, Any]) -> None:
    """Create the account's role (NOLOGIN, a member granted to the login role, which does not
    inherit it) and its schema owned by that role, unless they exist. The shared extension schema
    is made once. One transaction under a transaction-level advisory lock (it holds through
    PgBouncer's transaction pooling): racing creators in any process queue, the later finds it done."""
    import psycopg
    from psycopg import sql

    role, schema = sql.Identifier(config["QIWEI_ROLE"]), sql.Identifier(config["QIWEI_SCHEMA"])
    extensions = sql.Identifier(EXTENSION_SCHEMA)
    provisioner = provisioning_params(config)
    login = str(config.get("USER") or "")
    with psycopg.connect(dbname=config["NAME"], autocommit=True, **_provisioner(config)) as conn:
        if provisioner is None:
            check_login_role(conn, config)
        else:
            _check_provisioner(conn)
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('qiwei_account_schemas'))")
            if not conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [EXTENSION_SCHEMA]).fetchone():
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(extensions))
                conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO PUBLIC").format(extensions))
                try:
                    with conn.transaction():  # a savepoint: a refused extension keeps the rest
                        conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA {}").format(extensions))
                except psycopg.Error:
                    logger.warning(
                        "search: pg_trgm could not be installed in %s; search runs unindexed", EXTENSION_SCHEMA
                    )
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [config["QIWEI_ROLE"]]).fetchone():
                if provisioner is None and not _may_create_roles(conn):
                    raise _provisioning_refused(config, "开通")
                conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(role))
            _grant_switch_only(conn, role, config["QIWEI_ROLE"], login if provisioner is not None else None)
            if provisioner is None and _separation_pending(conn, config):
                raise _provisioning_refused(config, "开通")
            if not conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [config["QIWEI_SCHEMA"]]).fetchone():
                conn.execute(sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(schema, role))


def _separation_pending(conn: Any, config: dict[str, Any]) -> bool:
    """In a database provisioned apart (its audit owner role exists), a schema not yet handed to the
    owner is the provisioner's to finish: a process without the URL must not migrate it, or it
    would be left with an audit its own role can rewrite (a provisioning command cut short)."""
    from qiwei_site.platform import audit_owner

    owner = audit_owner.audit_owner_role(role_prefix(str(config["NAME"])))
    if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [owner]).fetchone():
        return False
    row = conn.execute(
        "SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = %s", [config["QIWEI_SCHEMA"]]
    ).fetchone()
    return row is None or row[0] != owner


def provisioning_refusal(account_id: str) -> str | None:
    """Why this process cannot make the account's schema (the schema layout, no provisioning URL,
    a login without CREATEROLE, the role not made yet), or None. Asked before anything is made."""
    import psycopg

    config = account_database_config(account_id)
    if not is_schema_config(config) or provisioning_params(config) is not None:
        return None
    with psycopg.connect(dbname=config["NAME"], autocommit=True, **server_params(config)) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [config["QIWEI_ROLE"]]).fetchone():
            return None
        if _may_create_roles(conn):
            return None
    return str(_provisioning_refused(config, "开通"))


def _may_create_roles(conn: Any) -> bool:
    row = conn.execute("SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user").fetchone()
    return bool(row and row[0])


def _check_provisioner(conn: Any) -> None:
    row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    if not (row and row[0]):
        raise ImproperlyConfigured(
            "QIWEI_ACCOUNT_PROVISION_URL 的角色必须是 PostgreSQL 超级用户（只交给开通和迁移命令使用）"
            " (the provisioning URL must name a superuser, given to the provisioning commands only)."
        )


def audit_owner_separate(account_id: str) -> bool:
    """Hand the account schema's audit to the audit owner role (issue 36, item 1; `audit_owner`),
    when this process is the provisioner. Idempotent; False when there is nothing to do here."""
    config = connections.settings.get(alias_for(account_id)) or account_database_config(account_id)
    return _audit_owner_separate(config)


def _audit_owner_separate(config: dict[str, Any]) -> bool:
    import psycopg

    from qiwei_site.platform import audit_owner

    provisioner = provisioning_params(config)
    if provisioner is None:
        return False
    with psycopg.connect(dbname=config["NAME"], autocommit=True, **provisioner) as conn:
        _check_provisioner(conn)
        try:
            audit_owner.separate(
                conn,
                schema=config["QIWEI_SCHEMA"],
                account_role=config["QIWEI_ROLE"],
                owner=audit_owner.audit_owner_role(role_prefix(str(config["NAME"]))),
                login=str(config.get("USER") or ""),
            )
        except audit_owner.UnsafeRuntimeLogin as exc:
            raise UnsafeLoginRole(str(exc)) from None
        except audit_owner.SeparationRefused as exc:
            raise ImproperlyConfigured(str(exc)) from None
    return True


def _grant_switch_only(conn: Any, role: Any, name: str, login: str | None = None) -> None:
    """Let the login role (the connection's own, or `login` when a provisioner grants it) SET ROLE
    to the account's role without holding its privileges. PostgreSQL 16 sets this per grant (and
    makes a role's creator an ADMIN member that may not SET ROLE to it); 15 and older by
    membership, with the login role NOINHERIT."""
    from psycopg import sql

    grantee = sql.Identifier(login) if login else sql.SQL("CURRENT_USER")
    who = login or conn.execute("SELECT current_user").fetchone()[0]
    version = int(conn.execute("SHOW server_version_num").fetchone()[0])
    if version >= 160000:
        can = conn.execute("SELECT pg_has_role(%s, %s, 'SET')", [who, name]).fetchone()
        if not (can and can[0]):
            conn.execute(sql.SQL("GRANT {} TO {} WITH INHERIT FALSE, SET TRUE").format(role, grantee))
        return
    member = conn.execute("SELECT pg_has_role(%s, %s, 'MEMBER')", [who, name]).fetchone()
    if not (member and member[0]):
        conn.execute(sql.SQL("GRANT {} TO {}").format(role, grantee))


def _drop_account_schema(config: dict[str, Any]) -> None:
    """Drop the account's schema with everything in it, then its role."""
    import psycopg
    from psycopg import sql

    role, schema = sql.Identifier(config["QIWEI_ROLE"]), sql.Identifier(config["QIWEI_SCHEMA"])
    provisioner = provisioning_params(config)
    with psycopg.connect(dbname=config["NAME"], autocommit=True, **_provisioner(config)) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [config["QIWEI_ROLE"]]).fetchone():
            return
        owner = conn.execute(
            "SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = %s", [config["QIWEI_SCHEMA"]]
        ).fetchone()
        if provisioner is None and owner is not None and owner[0] != config["QIWEI_ROLE"]:
            raise _provisioning_refused(config, "删除")  # its audit belongs to the audit owner
        with conn.transaction():
            if provisioner is None:
                # As the owner: the login role holds no privilege of its own on the schema.
                conn.execute(sql.SQL("SET LOCAL ROLE {}").format(role))
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(schema))
            conn.execute(sql.SQL("DROP OWNED BY {}").format(role))
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(role))


_migrated: set[str] = set()
_create_locks: dict[str, threading.Lock] = {}


def ensure_account_database(account_id: str, *, force_migrate: bool = False) -> str:
    """Register the account's database and make sure it has the current migrations.

    First use in a process reads the migration fingerprint recorded in the database; only when it
    differs (or is missing: a new database, or one migrated before fingerprints) does it create or
    migrate it, under a per-account lock (a thread lock plus a file lock), as `migrate_accounts`
    always does. A new database is made from the migrated template (`_create_account_database`).
    """
    alias = register_account_database(account_id)
    if alias in _migrated and not force_migrate:
        return alias
    if not force_migrate and schema_is_current(alias):
        _migrated.add(alias)
        return alias
    with _registration_lock:
        lock = _create_locks.setdefault(alias, threading.Lock())
    with lock:
        if alias in _migrated and not force_migrate:
            return alias
        config = connections.settings[alias]
        lock_path = Path(settings.QIWEI_DATA_DIR) / "locks" / f"{alias}.lock"
        with _file_lock(lock_path):
            _create_account_database(alias, config, force_migrate=force_migrate)
        _migrated.add(alias)
    return alias


# How this process last made each account's database current: TEMPLATE, MIGRATE or CURRENT (found
# so under the lock), for the onboarding command's summary.
TEMPLATE, MIGRATE, CURRENT = "template", "migrate", "current"
_made_by: dict[str, str] = {}


def made_by(alias: str) -> str | None:
    return _made_by.get(alias)


# Filling a new account from the migrated template: `account_template` builds on this module and
# registers its two fillers when it is imported (the platform app's ready()), so this module never
# imports it. Each returns False when the template cannot be used: the caller migrates instead.
_template_fillers: dict[str, Callable[..., bool]] = {}


def template_fillers_register(*, sqlite: Callable[[str, Path], bool], postgres: Callable[[str], bool]) -> None:
    _template_fillers.update(sqlite=sqlite, postgres=postgres)


def _from_template(kind: str, *args: Any) -> bool:
    filler = _template_fillers.get(kind)
    return filler is not None and filler(*args)


def _create_account_database(alias: str, config: dict[str, Any], *, force_migrate: bool) -> None:
    """A new account is made from the migrated template of this code's migrations and verified
    against it (`account_template`); anything else, or a template refused, runs `migrate`."""
    if is_sqlite_config(config):
        if not force_migrate and _from_template("sqlite", alias, Path(config["NAME"])):
            _made_by[alias] = TEMPLATE
            return
    elif is_schema_config(config):
        _ensure_account_schema(config)
    else:
        _ensure_postgres_database(config)
    if not force_migrate and schema_is_current(alias):
        _made_by[alias] = CURRENT
    elif not force_migrate and not is_sqlite_config(config) and _from_template("postgres", alias):
        _made_by[alias] = TEMPLATE
    else:
        _migrate_alias(alias)
        _made_by[alias] = MIGRATE
    _audit_owner_separate(config)


def drop_account_database(account_id: str) -> None:
    """Remove an account's database entirely (temporary accounts, e.g. the smoke check)."""
    config = dict(connections.settings.get(alias_for(account_id)) or account_database_config(account_id))
    unregister_account_database(account_id)
    _migrated.discard(alias_for(account_id))
    if is_sqlite_config(config):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{config['NAME']}{suffix}").unlink(missing_ok=True)
        return
    if is_schema_config(config):
        _drop_account_schema(config)
        return
    import psycopg
    from psycopg import sql

    _forget_known_database(config)
    with psycopg.connect(dbname="postgres", autocommit=True, **server_params(config)) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(config["NAME"])))


# --- releasing account connections ---------------------------------------------------------
#
# A thread gives its account connection back to the process's pool (qiwei_site/platform/
# connections) as soon as it is done with the account: on leaving the outermost `use_account()`
# of it, and at the end of every request and Celery task. "Done" means: not inside that
# account's `use_account()` any more (a per-thread depth), not the account still selected in
# this context (an API view selects its account without the context manager), and no transaction
# open on it. Only the owning thread ever closes or hands back its own connection.

_depths = threading.local()


def _depth_map() -> dict[str, int]:
    depths: dict[str, int] | None = getattr(_depths, "by_alias", None)
    if depths is None:
        depths = _depths.by_alias = {}
    return depths


def _kept_sqlite() -> dict[str, None]:
    """This thread's open SQLite account connections, least recently used first."""
    kept: dict[str, None] | None = getattr(_depths, "kept_sqlite", None)
    if kept is None:
        kept = _depths.kept_sqlite = {}
    return kept


def _in_use_here(alias: str, wrapper: Any) -> bool:
    return bool(wrapper.in_atomic_block or _depth_map().get(alias) or _current_alias_or_none() == alias)


def _keep_sqlite(alias: str) -> None:
    """Keep this thread's SQLite connection to `alias` open; close the least recently used ones
    beyond the cap (those not in use here)."""
    kept = _kept_sqlite()
    kept.setdefault(alias, None)
    surplus = len(kept) - int(settings.QIWEI_ACCOUNT_CONN_CAP)
    for oldest in list(kept):
        if surplus <= 0:
            break
        wrapper = getattr(connections._connections, oldest, None)  # type: ignore[attr-defined]
        if wrapper is not None and _in_use_here(oldest, wrapper):
            continue
        surplus -= 1
        account_connection_release(oldest, keep=False)
        kept.pop(oldest, None)


def _sqlite_touched(alias: str) -> None:
    """An outermost `use_account`: this connection is now the most recently used, and its file
    is checked again at its next use (Django's health check, `connections.sqlite3`)."""
    kept = _kept_sqlite()
    if alias in kept:
        kept[alias] = kept.pop(alias)
        wrapper = getattr(connections._connections, alias, None)  # type: ignore[attr-defined]
        if wrapper is not None:
            wrapper.health_check_done = False


def _forget_kept_sqlite_after_fork() -> None:
    """A forked child never uses the SQLite connections its parent's thread kept: it closes them.
    (Not kept aside unused, as PostgreSQL's are: SQLite would take the child's later connections
    to the same file for that one, so they would hold no lock of their own, and the parent,
    closing its last connection, would delete the write-ahead log the child writes to. Closing in
    the child releases nothing of the parent's and cannot checkpoint while the parent holds it.)"""
    kept = getattr(_depths, "kept_sqlite", None)
    if not kept:
        return
    for alias in kept:
        wrapper = getattr(connections._connections, alias, None)  # type: ignore[attr-defined]
        if wrapper is not None and wrapper.connection is not None:
            with contextlib.suppress(Exception):
                wrapper.connection.close()
            wrapper.connection = None
    kept.clear()


def _close_unregistered(alias: str) -> None:
    _kept_sqlite().pop(alias, None)
    wrapper = getattr(connections._connections, alias, None)  # type: ignore[attr-defined]
    if wrapper is not None:
        with contextlib.suppress(Exception):
            wrapper.close()
        with contextlib.suppress(AttributeError):
            delattr(connections._connections, alias)  # type: ignore[attr-defined]


def account_connection_release(alias: str, *, keep: bool = True) -> bool:
    """Hand this thread's connection to one account database back: idle in the pool (`keep`), or
    closed. A SQLite one is kept open by this thread (`keep`, up to the cap) or closed. False when
    it is still in use here, kept open, or when the pool is switched off."""
    if not pool_enabled():
        return False
    wrapper = getattr(connections._connections, alias, None)  # type: ignore[attr-defined]
    if wrapper is None:
        return False
    if _in_use_here(alias, wrapper):
        return False
    if wrapper.settings_dict.get("ENGINE") == _KEPT_SQLITE_ENGINE:
        if keep and wrapper.connection is not None:
            _keep_sqlite(alias)
            return False  # nothing handed back: kept open by this thread
        _kept_sqlite().pop(alias, None)
    wrapper.qiwei_keep_connection = keep  # read by the pooled backends' _close
    try:
        wrapper.close()
    finally:
        wrapper.qiwei_keep_connection = False
    if wrapper.connection is None:
        # Drop the wrapper too: a thread that met 500 accounts would otherwise keep 500 of them.
        with contextlib.suppress(AttributeError):
            del connections[alias]
    return True


def account_connections_release_idle(*, keep: bool = True, except_alias: str | None = None) -> int:
    """Release every account connection this thread is done with (end of a request or task)."""
    if not pool_enabled():
        return 0
    released = 0
    # An account erased meanwhile (by another thread) is no longer in the settings: close what
    # this thread still keeps of it, so its deleted files are not held open.
    for alias in [alias for alias in _kept_sqlite() if alias not in connections.settings]:
        _close_unregistered(alias)
        released += 1
    for alias in list(connections.settings):
        if alias.startswith("acct_") and alias != except_alias and account_connection_release(alias, keep=keep):
            released += 1
    return released


set_reclaimer(lambda opening: account_connections_release_idle(except_alias=opening))
os.register_at_fork(after_in_child=_forget_kept_sqlite_after_fork)


def account_connections_close(account_id: str) -> None:
    """Close an account's connections once a loop over all accounts is done with it: this thread's,
    and any the pool keeps idle, so the loop's next account does not add to them."""
    alias = alias_for(account_id)
    account_connection_release(alias, keep=False)
    if pool_enabled():
        account_pool.discard(alias)


def _current_alias_or_none() -> str | None:
    account_id = _current_account.get()
    return alias_for(account_id) if account_id is not None else None


def _release_at_request_end(sender: Any, **kwargs: Any) -> None:
    account_connections_release_idle()


request_finished.connect(_release_at_request_end, dispatch_uid="qiwei_account_connections_release")


# --- selecting an account ----------------------------------------------------------------


@contextlib.contextmanager
def use_account(account_id: str) -> Iterator[str]:
    """Select an account for the code inside; every customer-data query goes to its database.
    Leaving the outermost selection of an account hands its connection back to the pool."""
    alias = ensure_account_database(account_id)
    previous = _current_account.get()
    token = _current_account.set(account_id)
    depths = _depth_map()
    if not depths.get(alias):
        _sqlite_touched(alias)
    depths[alias] = depths.get(alias, 0) + 1
    try:
        yield alias
    finally:
        _current_account.reset(token)
        depths[alias] -= 1
        if not depths[alias]:
            del depths[alias]
            if previous != account_id:
                account_connection_release(alias)


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
