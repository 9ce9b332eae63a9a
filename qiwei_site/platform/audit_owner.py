"""An audit the application cannot rewrite (issue 36, item 1): PostgreSQL's schema layout with
provisioning apart from running.

With `QIWEI_ACCOUNT_PROVISION_URL` (a superuser, given to the provisioning commands only), each
account schema is handed, after it is made current, to the database's **audit owner**
(`<role prefix>_audit`, NOLOGIN; an account id never starts with "_", so no account role can have
that name), which the runtime login is never a member of:

- the schema itself (the account role keeps USAGE and CREATE: its own tables and migrations work
  as before, but a schema's owner could drop any table in it, so it must not be the account role);
- the audit table and its identity sequence (the account role may SELECT and INSERT, nothing else:
  UPDATE, DELETE, TRUNCATE, ALTER, DROP, DISABLE TRIGGER are refused by privilege before any
  trigger runs), the unlock table (no grant at all) and the trigger functions, each with a fixed
  `search_path` (a temporary table cannot stand in for the unlock table). The chain function is
  SECURITY DEFINER: it links a row at commit as the owner;
- `qiwei_audit_scrub(id, reason, payload, seal)`, SECURITY DEFINER, the one way to rewrite words:
  it accepts new words only when they are the old ones with runs removed, each replaced by the
  forget mark (`qiwei_audit_words_kept`), never new words, and only with a seal (the anchor key's
  signature over the words left, which the database cannot make). The scrub record in the chain is
  written by the caller in the same transaction, and `audit_verify` reports a scrubbed row no scrub
  record names.

This module holds the SQL; `tenancy` runs it on the provisioner's connection. Nothing here imports
the rest of the platform.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from qiwei_site.platform import audit_chain

logger = logging.getLogger(__name__)

AUDIT_TABLE = "conversations_auditevent"  # the account's chained table (the registry's is in `default`)
SCRUB_FUNCTION = "qiwei_audit_scrub"
WORDS_KEPT_FUNCTION = "qiwei_audit_words_kept"
JSON_KEPT_FUNCTION = "qiwei_audit_json_kept"
MAX_MARKS = 1000  # a bound on the check's work (it is quadratic in the marks): no scrub leaves more
SCRUB_SIGNATURE = audit_chain.PG_SCRUB_SIGNATURE
AUDIT_OWNER_SUFFIX = "_audit"
# The forget mark (memory.governance.scrub.FORGOTTEN_MARK; a test keeps the two equal).
FORGOTTEN_MARK = "［已遗忘内容已移除］"
SCRUB_REFUSED = "审计记录的清理只能删去原话，不能写入新内容 (an audit scrub may only remove words)"
_NAME = re.compile(r"\A[a-z0-9_]{1,63}\Z")


def audit_owner_role(role_prefix: str) -> str:
    return f"{role_prefix}{AUDIT_OWNER_SUFFIX}"


def _quoted(name: str) -> str:
    """Schema and role names here are ours (`acct_<id>`, `qiwei_<hex>_<id>`): checked, then quoted."""
    if not _NAME.match(name):
        raise ValueError(f"not a schema or role name of ours: {name!r}")
    return f'"{name}"'


def words_kept_sql(schema: str) -> str:
    """True when `new` is `old` with some non-empty runs each replaced by the forget mark (in order,
    nothing added): the only change a scrub may make. Unchanged text is kept too."""
    return f"""
CREATE OR REPLACE FUNCTION {_quoted(schema)}.{WORDS_KEPT_FUNCTION}(old text, new text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    pieces text[];
    n integer;
    pos integer;
    found integer;
BEGIN
    IF new IS NOT DISTINCT FROM old THEN
        RETURN true;
    END IF;
    IF old IS NULL OR new IS NULL THEN
        RETURN false;
    END IF;
    pieces := string_to_array(new, '{FORGOTTEN_MARK}');
    n := coalesce(array_length(pieces, 1), 0);
    IF n < 2 OR n > {MAX_MARKS} THEN
        RETURN false;  -- changed without a mark, or more marks than a scrub ever leaves in one text
    END IF;
    IF left(old, length(pieces[1])) <> pieces[1] THEN
        RETURN false;
    END IF;
    pos := length(pieces[1]) + 2;  -- each mark stands for at least one removed character
    FOR i IN 2 .. n - 1 LOOP
        found := strpos(substr(old, pos), pieces[i]);
        IF found = 0 THEN
            RETURN false;
        END IF;
        pos := pos + found - 1 + length(pieces[i]) + 1;
    END LOOP;
    RETURN length(old) - length(pieces[n]) + 1 >= pos AND right(old, length(pieces[n])) = pieces[n];
END
$$"""


def json_kept_sql(schema: str) -> str:
    """True when `new` is `old` leaf by leaf: the same structure (object keys, array lengths, types),
    equal numbers, booleans and nulls, and each string the old one with words removed."""
    s = _quoted(schema)
    return f"""
CREATE OR REPLACE FUNCTION {s}.{JSON_KEPT_FUNCTION}(old jsonb, new jsonb) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    key text;
BEGIN
    IF old IS NULL OR new IS NULL THEN
        RETURN old IS NOT DISTINCT FROM new;
    END IF;
    IF jsonb_typeof(old) <> jsonb_typeof(new) THEN
        RETURN false;
    END IF;
    IF jsonb_typeof(old) = 'string' THEN
        RETURN {s}.{WORDS_KEPT_FUNCTION}(old #>> '{{}}', new #>> '{{}}');
    END IF;
    IF jsonb_typeof(old) = 'object' THEN
        IF ARRAY(SELECT jsonb_object_keys(old) ORDER BY 1) <> ARRAY(SELECT jsonb_object_keys(new) ORDER BY 1) THEN
            RETURN false;
        END IF;
        FOR key IN SELECT jsonb_object_keys(old) LOOP
            IF NOT {s}.{JSON_KEPT_FUNCTION}(old -> key, new -> key) THEN
                RETURN false;
            END IF;
        END LOOP;
        RETURN true;
    END IF;
    IF jsonb_typeof(old) = 'array' THEN
        IF jsonb_array_length(old) <> jsonb_array_length(new) THEN
            RETURN false;
        END IF;
        FOR i IN 0 .. jsonb_array_length(old) - 1 LOOP
            IF NOT {s}.{JSON_KEPT_FUNCTION}(old -> i, new -> i) THEN
                RETURN false;
            END IF;
        END LOOP;
        RETURN true;
    END IF;
    RETURN old = new;
END
$$"""


def scrub_sql(schema: str) -> str:
    s = _quoted(schema)
    return f"""
CREATE OR REPLACE FUNCTION {s}.{SCRUB_FUNCTION}(p_id bigint, p_reason text, p_payload jsonb, p_seal text)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    old_reason text;
    old_payload jsonb;
BEGIN
    SELECT reason, payload INTO old_reason, old_payload FROM {s}.{AUDIT_TABLE} WHERE id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no audit row %', p_id USING ERRCODE = 'no_data_found';
    END IF;
    IF coalesce(p_seal, '') = ''
       OR NOT {s}.{WORDS_KEPT_FUNCTION}(old_reason, p_reason)
       OR NOT {s}.{JSON_KEPT_FUNCTION}(old_payload, p_payload) THEN
        RAISE EXCEPTION '{SCRUB_REFUSED}' USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO {s}.{audit_chain.UNLOCK_TABLE} (purpose) VALUES ('{audit_chain.SCRUB}');
    UPDATE {s}.{AUDIT_TABLE} SET reason = p_reason, payload = p_payload, scrubbed_hash = p_seal WHERE id = p_id;
    DELETE FROM {s}.{audit_chain.UNLOCK_TABLE} WHERE purpose = '{audit_chain.SCRUB}';
END
$$"""


def separation_statements(*, schema: str, account_role: str, owner: str) -> list[str]:
    """Hand `schema`'s audit to `owner` (idempotent; run by a superuser, in one transaction).
    The triggers and their functions are installed again as the owner first, so a migration that
    changed them (run as the account role, before the schema was separated) is kept."""
    s, role, own = _quoted(schema), _quoted(account_role), _quoted(owner)
    table, unlock = f"{s}.{AUDIT_TABLE}", f"{s}.{audit_chain.UNLOCK_TABLE}"
    _subject, lock_key = audit_chain.TABLES[AUDIT_TABLE]
    functions = (audit_chain.PG_GUARD_FUNCTION, audit_chain.PG_CHAIN_FUNCTION, audit_chain.PG_TRUNCATE_FUNCTION)
    return [
        f"ALTER SCHEMA {s} OWNER TO {own}",
        f"ALTER TABLE {table} OWNER TO {own}",  # its identity sequence and indexes follow
        f"ALTER TABLE {unlock} OWNER TO {own}",
        *(f"ALTER FUNCTION {s}.{function}() OWNER TO {own}" for function in functions),
        # As the owner: the functions again, every name qualified and the search path pinned to
        # pg_catalog (`audit_chain.pg_function_sql`), the triggers on them, the scrub's functions.
        f"SET LOCAL ROLE {own}",
        f"SET LOCAL search_path TO {s}",
        *audit_chain.pg_function_sql(schema),
        *audit_chain.pg_triggers(AUDIT_TABLE, lock_key),
        words_kept_sql(schema),
        json_kept_sql(schema),
        scrub_sql(schema),
        "RESET ROLE",
        "RESET search_path",
        f"REVOKE ALL ON FUNCTION {s}.{SCRUB_SIGNATURE} FROM PUBLIC",
        f"GRANT EXECUTE ON FUNCTION {s}.{SCRUB_SIGNATURE} TO {role}",
    ]


def _acl_reset_statements(conn: Any, *, schema: str, account_role: str, owner: str) -> list[str]:
    """Every grant on the schema, the audit table, its sequence and the unlock table taken back from
    everyone but the owner (what the account role may have granted before it was separated, to the
    login too), then only ours given: USAGE and CREATE on the schema, SELECT and INSERT on the table."""
    s, role = _quoted(schema), _quoted(account_role)
    table, unlock = f"{s}.{AUDIT_TABLE}", f"{s}.{audit_chain.UNLOCK_TABLE}"
    sequence = conn.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table]).fetchone()[0]
    acl_of_relation = "SELECT relacl FROM pg_class WHERE oid = to_regclass(%(name)s)"
    targets = [("SCHEMA", s, "SELECT nspacl FROM pg_namespace WHERE nspname = %(name)s", schema)]
    targets += [("TABLE", name, acl_of_relation, name) for name in (table, unlock)]
    if sequence is not None:  # quoted by PostgreSQL
        targets.append(("SEQUENCE", sequence, acl_of_relation, sequence))
    statements: list[str] = []
    for kind, target, acl_query, name in targets:
        grantees = conn.execute(
            "SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END"
            f" FROM ({acl_query}) AS acl(acl), aclexplode(acl.acl) AS a"
            " WHERE a.grantee <> (SELECT oid FROM pg_roles WHERE rolname = %(owner)s)",
            {"name": name, "owner": owner},
        ).fetchall()
        statements += [f"REVOKE ALL ON {kind} {target} FROM {grantee}" for (grantee,) in grantees]
    return [
        *statements,
        f"GRANT USAGE, CREATE ON SCHEMA {s} TO {role}",
        f"GRANT SELECT, INSERT ON {table} TO {role}",
    ]


def _foreign_statements(conn: Any, *, schema: str) -> list[str]:
    """Triggers, rules and row policies on the audit or unlock table that are not ours (dropped: they
    could run the account role's code as the owner), and a refusal when an index, constraint or
    default of the audit table calls a function outside pg_catalog."""
    s = _quoted(schema)
    ours = set(audit_chain.trigger_names(AUDIT_TABLE, "postgresql"))
    statements: list[str] = []
    for table in (AUDIT_TABLE, audit_chain.UNLOCK_TABLE):
        target = f"{s}.{table}"
        rows = conn.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass(%s) AND NOT tgisinternal", [target]
        ).fetchall()
        statements += [f'DROP TRIGGER "{name}" ON {target}' for (name,) in rows if name not in ours]
        rows = conn.execute(
            "SELECT rulename FROM pg_rewrite WHERE ev_class = to_regclass(%s) AND rulename <> '_RETURN'", [target]
        ).fetchall()
        statements += [f'DROP RULE "{name}" ON {target}' for (name,) in rows]
        rows = conn.execute("SELECT polname FROM pg_policy WHERE polrelid = to_regclass(%s)", [target]).fetchall()
        statements += [f'DROP POLICY "{name}" ON {target}' for (name,) in rows]
    called = conn.execute(
        "SELECT DISTINCT d.refobjid::regprocedure::text FROM pg_depend d JOIN pg_proc p ON p.oid = d.refobjid"
        " WHERE d.refclassid = 'pg_proc'::regclass AND p.pronamespace <> 'pg_catalog'::regnamespace"
        " AND ((d.classid = 'pg_class'::regclass"
        "       AND d.objid IN (SELECT indexrelid FROM pg_index WHERE indrelid = to_regclass(%(t)s)))"
        "   OR (d.classid = 'pg_constraint'::regclass"
        "       AND d.objid IN (SELECT oid FROM pg_constraint WHERE conrelid = to_regclass(%(t)s)))"
        "   OR (d.classid = 'pg_attrdef'::regclass"
        "       AND d.objid IN (SELECT oid FROM pg_attrdef WHERE adrelid = to_regclass(%(t)s))))",
        {"t": f"{s}.{AUDIT_TABLE}"},
    ).fetchall()
    if called:
        raise SeparationRefused(
            f"审计表 {schema}.{AUDIT_TABLE} 的索引、约束或默认值调用了账号自己的函数 {[c for (c,) in called]}，"
            "不能交给审计属主；请先检查并删除它们 (an index, constraint or default of the audit table calls a "
            "function of the account's own; remove it before the audit is separated)."
        )
    return statements


def separate(conn: Any, *, schema: str, account_role: str, owner: str, login: str) -> None:
    """On the provisioner's connection (psycopg, autocommit): make the owner role if missing, check
    that the runtime login can never become it, and hand the schema's audit over, in one transaction."""
    from psycopg import sql

    refusal = login_refusal(conn, login=login, owner=owner)
    if refusal:
        raise UnsafeRuntimeLogin(refusal)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('qiwei_account_schemas'))")
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [owner]).fetchone():
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(owner)))
        if conn.execute("SELECT to_regclass(%s) IS NULL", [f"{schema}.{AUDIT_TABLE}"]).fetchone()[0]:
            return  # nothing migrated yet (not reached: called once the schema is current)
        for statement in _foreign_statements(conn, schema=schema):
            logger.warning("audit owner: %s (not ours, on the audit of %s)", statement, schema)
            conn.execute(statement)
        for statement in separation_statements(schema=schema, account_role=account_role, owner=owner):
            conn.execute(statement)
        for statement in _acl_reset_statements(conn, schema=schema, account_role=account_role, owner=owner):
            conn.execute(statement)


class UnsafeRuntimeLogin(Exception):
    """The runtime login could still become, or act as, the audit's owner."""


class SeparationRefused(Exception):
    """The audit table depends on code of the account role's own: it cannot be handed over as it is."""


def login_refusal(conn: Any, *, login: str, owner: str) -> str | None:
    """Why the runtime login could still rewrite the audit, or None. A CREATEROLE login can grant
    itself any non-superuser role on PostgreSQL 15 (and holds ADMIN on the roles it made on 16)."""
    if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [login]).fetchone():
        return f"运行时登录角色 {login} 不存在 (the runtime login role {login} does not exist)."
    # The login itself and every role it is a member of, directly or through others.
    unsafe = conn.execute(
        "SELECT r.rolname FROM pg_roles r WHERE pg_has_role(%(login)s, r.oid, 'MEMBER') AND (r.rolsuper"
        " OR r.rolcreaterole OR r.rolbypassrls OR r.rolname IN ('pg_write_all_data', 'pg_read_all_data', %(owner)s))",
        {"login": login, "owner": owner},
    ).fetchall()
    if unsafe:
        return (
            f"运行时登录角色 {login}（及其所属角色 {sorted(r for (r,) in unsafe)}）不能是超级用户、不能有 CREATEROLE、"
            f"不能属于审计属主角色 {owner} 或 pg_write_all_data，"
            f"否则它能改写审计：ALTER ROLE {login} NOSUPERUSER NOCREATEROLE; REVOKE {owner} FROM {login} "
            f"(with QIWEI_ACCOUNT_PROVISION_URL the runtime login, and every role it is a member of, must be no "
            f"superuser, hold no CREATEROLE or BYPASSRLS, and not be pg_write_all_data, pg_read_all_data or the "
            f"audit owner {owner}; docs/scale-out.md)."
        )
    return None


def is_separated(cursor: Any) -> bool:
    """Whether the account schema on this (switched) cursor's search path has the scrub function."""
    cursor.execute("SELECT to_regprocedure(%s) IS NOT NULL", [SCRUB_SIGNATURE])
    return bool(cursor.fetchone()[0])


def scrub(cursor: Any, *, row_id: int, reason: str, payload_json: str, seal: str) -> None:
    cursor.execute(f"SELECT {SCRUB_FUNCTION}(%s, %s, %s::jsonb, %s)", [row_id, reason, payload_json, seal])
