"""A new account from a migrated template (issue 38, item 3): `migrate` runs once per migration
set, not once per account, and every account made from the template is checked against it.

SQLite: a migrated template file per `account_template_fingerprint()`, copied for each new account.
PostgreSQL (both layouts): `migrate` runs once in a throw-away template schema or database while an
`execute_wrapper` records every statement it sends (DDL, the audit and context-version triggers and
functions, RunPython's reads and writes, the `django_migrations` rows); a new account replays that
script in ONE transaction on its own connection (its role and `search_path`, as `migrate` would run).
Either way the result is verified before it counts: a digest of its catalogue (tables, columns and
types, constraints, indexes, triggers, functions, applied migrations, rows per table; the schema's
name left out) must equal the digest taken of the template right after `migrate`, and the recorded
fingerprint must be this code's. Anything else is refused, logged, and the account is migrated the
plain way. `QIWEI_ACCOUNT_TEMPLATES=0` always takes the plain way (benchmarks compare the two).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import secrets
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections, transaction
from django.utils import timezone

from qiwei_site.platform import tenancy

logger = logging.getLogger(__name__)

# Bumped when what a template holds or how it is checked changes: older files are never read.
TEMPLATE_FORMAT = 2
_REJECTED_SUFFIX = ".rejected"


class TemplateRefused(Exception):
    """A template (or an account made from it) that does not match what `migrate` makes."""


def templates_enabled() -> bool:
    """On unless `QIWEI_ACCOUNT_TEMPLATES=0` (a setting of that name wins over the environment)."""
    value = getattr(settings, "QIWEI_ACCOUNT_TEMPLATES", None)
    if value is None:
        value = os.environ.get("QIWEI_ACCOUNT_TEMPLATES", "1")
    return str(value).strip().lower() not in ("0", "false", "no", "off")


def template_dir() -> Path:
    return Path(settings.QIWEI_ACCOUNT_TEMPLATE_DIR)


# --- the catalogue digest ----------------------------------------------------------------------


def _digest(parts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def sqlite_catalogue(conn: sqlite3.Connection) -> dict[str, Any]:
    """What `migrate` made in a SQLite account file: every schema object's definition, the applied
    migrations, the rows of every table and the recorded fingerprint."""
    objects = conn.execute(
        "SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
        "ORDER BY type, name"
    ).fetchall()
    tables = [name for kind, name, _, definition in objects if kind == "table" and "VIRTUAL TABLE" not in definition]
    counts = {table: conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] for table in tables}
    counts.pop(tenancy.SCHEMA_TABLE, None)  # holds when it was migrated: one row either way
    migrations = conn.execute("SELECT app, name FROM django_migrations ORDER BY app, name").fetchall()
    return {"objects": objects, "rows": counts, "migrations": migrations}


def sqlite_file_digest(path: Path) -> str:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return _digest(sqlite_catalogue(conn))


def sqlite_file_fingerprint(path: Path) -> str | None:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        row = conn.execute(f"SELECT fingerprint FROM {tenancy.SCHEMA_TABLE}").fetchone()
    return str(row[0]) if row else None


# One statement each; `%(schema)s` is the schema the connection's search path puts first (the
# account's in the schema layout, `public` in a database of its own). Definitions are read with the
# account's search path, so they name nothing of it but the schema, which is taken out.
_NAMESPACE = "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())"
_PG_CATALOGUE = {
    "relations": f"SELECT relname, relkind::text FROM pg_class WHERE relnamespace = {_NAMESPACE} ORDER BY 1",
    "columns": (
        "SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,"
        " a.attidentity::text, COALESCE(pg_get_expr(d.adbin, d.adrelid), '')"
        " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
        " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
        f" WHERE c.relnamespace = {_NAMESPACE} AND a.attnum > 0 AND NOT a.attisdropped"
        " AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1, 2"
    ),
    "constraints": (
        "SELECT c.relname, k.conname, k.contype::text, pg_get_constraintdef(k.oid)"
        f" FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid WHERE k.connamespace = {_NAMESPACE}"
        " ORDER BY 1, 2"
    ),
    "indexes": (
        "SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
        f" WHERE i.relnamespace = {_NAMESPACE} ORDER BY 1"
    ),
    "triggers": (
        "SELECT c.relname, t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
        f" WHERE c.relnamespace = {_NAMESPACE} AND NOT t.tgisinternal ORDER BY 1, 2"
    ),
    "functions": (
        "SELECT proname, pg_get_function_identity_arguments(oid), md5(prosrc) FROM pg_proc"
        f" WHERE pronamespace = {_NAMESPACE} ORDER BY 1, 2"
    ),
    "migrations": "SELECT app, name FROM django_migrations ORDER BY app, name",
}


def pg_catalogue(cursor: Any) -> dict[str, Any]:
    """The PostgreSQL counterpart of `sqlite_catalogue`, for the schema first on the search path."""
    cursor.execute("SELECT current_schema()")
    schema = str(cursor.fetchone()[0])

    def strip(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(f'"{schema}".', "").replace(f"{schema}.", "")
        return value

    found: dict[str, Any] = {}
    for part, query in _PG_CATALOGUE.items():
        cursor.execute(query)
        found[part] = [[strip(value) for value in row] for row in cursor.fetchall()]
    tables = [name for name, kind in found["relations"] if kind in ("r", "p") and name != tenancy.SCHEMA_TABLE]
    if tables:
        cursor.execute(" UNION ALL ".join(f"SELECT '{name}', count(*) FROM \"{name}\"" for name in tables))
        found["rows"] = sorted([str(name), int(count)] for name, count in cursor.fetchall())
    return found


def alias_digest(alias: str) -> str:
    """The catalogue digest of an account database as its own connection sees it."""
    connection = connections[alias]
    if connection.vendor == "sqlite":
        return sqlite_file_digest(Path(connection.settings_dict["NAME"]))
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        return _digest(pg_catalogue(cursor))


# --- SQLite: a migrated file, copied --------------------------------------------------------


def sqlite_template_path() -> Path:
    return template_dir() / f"account-{tenancy.account_template_fingerprint()}.sqlite3"


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


@dataclass(frozen=True)
class SqliteTemplate:
    path: Path
    fingerprint: str
    digest: str


def _read_sqlite_template(path: Path) -> SqliteTemplate | None:
    try:
        recorded = json.loads(_sidecar(path).read_text())
    except (OSError, ValueError):
        return None
    if not path.exists() or recorded.get("format") != TEMPLATE_FORMAT:
        return None  # an older kind of template (none before the digest): made again
    return SqliteTemplate(path, str(recorded.get("fingerprint", "")), str(recorded.get("digest", "")))


def sqlite_template(alias: str) -> SqliteTemplate:
    """The migrated template file for this code, made once (under a file lock) when missing."""
    path = sqlite_template_path()
    found = _read_sqlite_template(path)
    if found is not None:
        return found
    with tenancy._file_lock(path.with_suffix(".lock")):
        found = _read_sqlite_template(path)
        if found is not None:
            return found
        building = path.with_suffix(".building")
        building.unlink(missing_ok=True)
        config = dict(connections.settings[alias])
        config["NAME"] = str(building)
        config["OPTIONS"] = {"timeout": 30}
        with _temporary_alias(f"{alias}__template", config) as template_alias:
            tenancy._migrate_alias(template_alias)  # records the fingerprint: copies start current
        found = SqliteTemplate(path, tenancy.migration_fingerprint(), sqlite_file_digest(building))
        # The file first, then its record: a template counts once both are there.
        building.rename(path)
        _write_atomically(
            _sidecar(path),
            json.dumps({"format": TEMPLATE_FORMAT, "fingerprint": found.fingerprint, "digest": found.digest}),
        )
        logger.info("account template made: %s", path.name)
        return found


def sqlite_from_template(alias: str, target: Path) -> bool:
    """Create a new SQLite account file as a verified copy of the template. False (the file left
    absent, the reason logged) when the template cannot be used: the caller migrates instead."""
    if target.exists() or not templates_enabled():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    template = sqlite_template(alias)
    copying = target.with_name(f".{target.name}.{secrets.token_hex(4)}.copying")
    try:
        shutil.copyfile(template.path, copying)
        _verify_sqlite_copy(copying, template)
        os.replace(copying, target)  # whole or not at all: a reader never sees half a copy
        return True
    except (TemplateRefused, sqlite3.Error) as exc:
        logger.warning("account %s: template %s refused (%s); migrating instead", alias, template.path.name, exc)
        _set_aside(template.path)
        return False
    except FileNotFoundError:
        # another process set the template aside while this one copied it: migrate instead
        logger.warning("account %s: template %s went away while copied; migrating instead", alias, template.path.name)
        return False
    finally:
        copying.unlink(missing_ok=True)


def _verify_sqlite_copy(copy: Path, template: SqliteTemplate) -> None:
    if template.fingerprint != tenancy.migration_fingerprint():
        raise TemplateRefused(f"the template records fingerprint {template.fingerprint[:12]}, not this code's")
    if sqlite_file_fingerprint(copy) != template.fingerprint:
        raise TemplateRefused("the copy records another fingerprint than its template")
    digest = sqlite_file_digest(copy)
    if digest != template.digest:
        raise TemplateRefused(f"catalogue digest {digest[:12]} is not the template's {template.digest[:12]}")


def _set_aside(path: Path) -> None:
    """Move a refused template out of the way (kept for a post-mortem); the next account makes a
    new one."""
    with contextlib.suppress(OSError):
        os.replace(_sidecar(path), _sidecar(path).with_name(_sidecar(path).name + _REJECTED_SUFFIX))
    with contextlib.suppress(OSError):
        os.replace(path, path.with_name(path.name + _REJECTED_SUFFIX))


# --- PostgreSQL: the recorded script ---------------------------------------------------------


@dataclass(frozen=True)
class PgScript:
    key: str
    fingerprint: str
    digest: str
    statements: list[tuple[str, Any, bool]]

    def checksum(self) -> str:
        return _digest({"statements": [list(s) for s in self.statements]})


def pg_script_key(alias: str) -> str:
    """What the script depends on: the account migration files, Django (`account_template_
    fingerprint`), the layout and the server's major version."""
    connection = connections[alias]
    connection.ensure_connection()
    major = int(connection.pg_version) // 10000  # type: ignore[attr-defined]
    layout = "schema" if tenancy.is_schema_config(connection.settings_dict) else "database"
    seed = f"{TEMPLATE_FORMAT}|{tenancy.account_template_fingerprint()}|{layout}|{major}"
    return hashlib.sha256(seed.encode()).hexdigest()[:16]


def pg_script_path(key: str) -> Path:
    return template_dir() / f"account-pg-{key}.json"


def _encode(value: Any) -> Any:
    """A parameter as JSON; a type we cannot bring back exactly refuses the template."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_encode(item) for item in value]
    if isinstance(value, dt.datetime):
        return {"$datetime": value.isoformat()}
    raise TemplateRefused(f"a migration sent a {type(value).__name__} parameter; the template cannot record it")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if isinstance(value, dict) and set(value) == {"$datetime"}:
        return dt.datetime.fromisoformat(value["$datetime"])
    return value


def _read_pg_script(path: Path, key: str) -> PgScript | None:
    try:
        recorded = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    script = PgScript(
        key=str(recorded.get("key")),
        fingerprint=str(recorded.get("fingerprint")),
        digest=str(recorded.get("digest")),
        statements=[(str(sql), _decode(params), bool(many)) for sql, params, many in recorded.get("statements", [])],
    )
    if script.key != key or recorded.get("checksum") != script.checksum():
        logger.warning("account template %s is damaged or not this code's; making it again", path.name)
        _set_aside_file(path)
        return None
    return script


def _set_aside_file(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.replace(path, path.with_name(path.name + _REJECTED_SUFFIX))


def pg_script(alias: str) -> PgScript:
    """The recorded script for this code and server, made once per host (under a file lock) when
    missing. Hosts sharing a server each make their own: the template's schema or database has a
    random name, so two never collide, and the script does not depend on which made it."""
    key = pg_script_key(alias)
    path = pg_script_path(key)
    script = _read_pg_script(path, key)
    if script is not None:
        return script
    with tenancy._file_lock(path.with_suffix(".lock")):
        script = _read_pg_script(path, key)
        if script is not None:
            return script
        script = _record_pg_script(alias, key)
        body = {
            "key": script.key,
            "fingerprint": script.fingerprint,
            "digest": script.digest,
            "checksum": script.checksum(),
            "statements": [[sql, _encode(params), many] for sql, params, many in script.statements],
        }
        _write_atomically(path, json.dumps(body, ensure_ascii=False))
        logger.info("account template made: %s (%s statements)", path.name, len(script.statements))
        return script


def _record_pg_script(alias: str, key: str) -> PgScript:
    """Migrate a throw-away template (a schema with a role of its own, or a database), recording what
    `migrate` sends; take its digest; drop it."""
    from django.core.management import call_command

    config = dict(connections.settings[alias])
    # Names no account can have (an account id never starts with "_"), random so that two hosts
    # making one at the same time never meet.
    suffix = f"_tpl_{key[:12]}_{secrets.token_hex(3)}"
    if tenancy.is_schema_config(config):
        config["QIWEI_SCHEMA"] = f"acct_{suffix}"
        config["QIWEI_ROLE"] = f"{tenancy.role_prefix(str(config['NAME']))}{suffix}"
        names = [config["QIWEI_SCHEMA"], config["QIWEI_ROLE"]]
    else:
        config["NAME"] = f"qiwei_{suffix}"
        names = [config["NAME"]]
    if _pg_template_exists(config):
        raise TemplateRefused(f"{names[0]} exists already")
    statements: list[tuple[str, Any, bool]] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)  # a statement that failed is not recorded
        if many:
            statements.append((sql, [list(row) for row in params], True))
        else:
            statements.append((sql, None if params is None else list(params), False))
        return result

    try:
        if tenancy.is_schema_config(config):
            tenancy._ensure_account_schema(config)
        else:
            tenancy._ensure_postgres_database(config)
        with _temporary_alias(f"acct_{suffix}__template", config) as template_alias:
            with connections[template_alias].execute_wrapper(record):
                call_command("migrate", database=template_alias, interactive=False, verbosity=0)
            tenancy._record_schema_fingerprint(template_alias)  # as every account records it
            digest = alias_digest(template_alias)
    finally:
        _drop_template(config)
    for sql, params, _ in statements:
        text = f"{sql} {params!r}"
        for name in names:
            if name in text:
                # The script would create or touch the template's own objects in every account.
                raise TemplateRefused(f"a migration statement names the template's {name!r}: {sql[:120]}")
    return PgScript(key=key, fingerprint=tenancy.migration_fingerprint(), digest=digest, statements=statements)


def _pg_template_exists(config: dict[str, Any]) -> bool:
    import psycopg

    schema = tenancy.is_schema_config(config)
    dbname = config["NAME"] if schema else "postgres"
    with psycopg.connect(dbname=dbname, autocommit=True, **tenancy.server_params(config)) as conn:
        if schema:
            found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [config["QIWEI_SCHEMA"]]).fetchone()
        else:
            found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [config["NAME"]]).fetchone()
    return found is not None


def _drop_template(config: dict[str, Any]) -> None:
    if tenancy.is_schema_config(config):
        tenancy._drop_account_schema(config)
        return
    import psycopg
    from psycopg import sql

    tenancy._forget_known_database(config)
    with psycopg.connect(dbname="postgres", autocommit=True, **tenancy.server_params(config)) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(config["NAME"])))


_MIGRATION_ROW = 'INSERT INTO "django_migrations"'


def pg_from_template(alias: str) -> bool:
    """Fill a new, empty account schema or database from the script, in one transaction with the
    fingerprint recorded, verified before it commits. False (nothing left behind, the reason
    logged) when it cannot be used: the caller migrates instead."""
    if not templates_enabled():
        return False
    try:
        script = pg_script(alias)
    except (TemplateRefused, DatabaseError, OSError) as exc:
        logger.warning("account %s: no template (%s); migrating instead", alias, exc)
        return False
    if script.fingerprint != tenancy.migration_fingerprint():
        logger.warning("account %s: template %s records another fingerprint; migrating", alias, script.key)
        _set_aside_file(pg_script_path(script.key))
        return False
    connection = connections[alias]
    try:
        with transaction.atomic(using=alias), connection.cursor() as cursor:
            # Another host creating the same account queues here, then finds it not empty.
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"qiwei_account_template:{alias}"])
            cursor.execute(f"SELECT count(*) FROM pg_class WHERE relnamespace = {_NAMESPACE}")
            if cursor.fetchone()[0]:
                return False  # someone else's work: `migrate` brings it to current
            now = timezone.now()
            for sql, params, many in script.statements:
                if many:
                    cursor.executemany(sql, params)
                    continue
                if sql.startswith(_MIGRATION_ROW) and params:
                    params = [now if isinstance(value, dt.datetime) else value for value in params]
                cursor.execute(sql, params)
            tenancy._record_schema_fingerprint(alias)
            digest = _digest(pg_catalogue(cursor))
            if digest != script.digest:
                raise TemplateRefused(f"catalogue digest {digest[:12]} is not the template's {script.digest[:12]}")
    except (TemplateRefused, DatabaseError) as exc:
        logger.warning("account %s: template %s refused (%s); migrating instead", alias, script.key, exc)
        _set_aside_file(pg_script_path(script.key))
        return False
    return True


# --- shared ----------------------------------------------------------------------------------


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")
    partial.write_text(text)
    os.replace(partial, path)


@contextlib.contextmanager
def _temporary_alias(alias: str, config: dict[str, Any]) -> Iterator[str]:
    """A database alias known only while a template is made."""
    with tenancy._registration_lock:
        new_settings = dict(connections.settings)
        new_settings[alias] = config
        connections.__dict__["settings"] = connections.configure_settings(new_settings)
    try:
        yield alias
    finally:
        with contextlib.suppress(Exception):
            connections[alias].close()
        with tenancy._registration_lock:
            new_settings = dict(connections.settings)
            new_settings.pop(alias, None)
            connections.__dict__["settings"] = new_settings
            with contextlib.suppress(AttributeError):
                delattr(connections._connections, alias)  # type: ignore[attr-defined]
        from qiwei_site.platform.connections import account_pool

        account_pool.discard(alias)


tenancy.template_fillers_register(sqlite=sqlite_from_template, postgres=pg_from_template)
