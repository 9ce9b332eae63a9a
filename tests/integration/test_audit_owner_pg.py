"""An audit the application cannot rewrite (issue 36, item 1): PostgreSQL's schema layout with
provisioning apart from running. The runtime login has no CREATEROLE and does not own the database;
a superuser provisioning URL makes each account and hands its audit to the audit owner role.
Everything the application's own database user could try is refused by the database, and an
ordinary forget still scrubs and verifies."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connections, transaction
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from conversations.models import AuditAction, AuditEvent, Message
from memory.capture.ingest import messages_ingest
from memory.governance.messages import message_forget
from memory.governance.scrub import FORGOTTEN_MARK, Quotes
from qiwei_site.platform import audit_chain, audit_owner, tenancy
from qiwei_site.platform.audit import account_audit_verify, audit_record, audit_words_rewrite
from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.services import account_create, account_delete
from qiwei_site.platform.tenancy import UnsafeLoginRole, use_account

from .conftest import POSTGRES, require_server

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ADMIN = {"host": POSTGRES[0], "port": POSTGRES[1], "user": "postgres", "dbname": "postgres", "autocommit": True}
CONVERSATION = "wm_owner_zhou"


class Provisioned:
    def __init__(self, run: str):
        self.login = f"qiwei_it_rt_{run}"
        self.database = f"qiwei_it_owned_{run}"
        self.made: list[str] = []

    def account(self, label: str) -> str:
        value = f"{label}{self.login[-6:]}"
        self.made.append(value)
        return value

    @property
    def owner(self) -> str:
        return audit_owner.audit_owner_role(tenancy.role_prefix(self.database))

    def admin(self, sql_text: str, params: list | None = None) -> list[tuple]:
        import psycopg

        with psycopg.connect(**{**ADMIN, "dbname": self.database}) as conn:
            cursor = conn.execute(sql_text, params)
            return cursor.fetchall() if cursor.description else []


@pytest.fixture
def provisioned(settings) -> Iterator[Provisioned]:
    """A runtime login without CREATEROLE that does not own the database, and a superuser
    provisioning URL, as docs/scale-out.md sets them up."""
    require_server("PostgreSQL", POSTGRES)
    import psycopg
    from psycopg import sql

    setup = Provisioned(uuid.uuid4().hex[:6])
    login, database = sql.Identifier(setup.login), sql.Identifier(setup.database)
    with psycopg.connect(**ADMIN) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOINHERIT NOCREATEROLE").format(login))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(database))
        conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(database, login))
    settings.QIWEI_ACCOUNT_DATABASE_URL = f"postgres://{setup.login}@{POSTGRES[0]}:{POSTGRES[1]}/{setup.database}"
    settings.QIWEI_ACCOUNT_PROVISION_URL = f"postgres://postgres@{POSTGRES[0]}:{POSTGRES[1]}/postgres"
    yield setup

    from qiwei_site.platform.connections import account_pool

    for value in setup.made:
        tenancy.unregister_account_database(value)
    account_pool.close_idle()
    with psycopg.connect(**ADMIN) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(database))
        for role in [tenancy.account_role(setup.database, value) for value in setup.made] + [setup.owner]:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(login))


@pytest.fixture
def owned_account(provisioned) -> str:
    account_id = provisioned.account("owned")
    account_create(account_id=account_id, name="安居客服一部")
    return account_id


def write(reason: str) -> AuditEvent:
    return audit_record(
        action=AuditAction.CUSTOMER_UPDATED,
        conversation_id=CONVERSATION,
        actor="admin-王主管",
        reason=reason,
        payload={"fields": ["mode"]},
    )


def refused_for_the_database_user(alias: str, statement: str, params: list | None = None) -> str:
    """Run one statement as the application's database user (the account's role, switched) and
    return the database's refusal; fail when it is let through."""
    try:
        with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
            cursor.execute(statement, params)
    except DatabaseError as exc:
        return str(exc)
    raise AssertionError(f"the database user was allowed: {statement}")


def test_audit_owner_account_create_hands_the_audit_to_the_owner(provisioned, owned_account):
    # Given an account made with the provisioning URL
    schema = tenancy.alias_for(owned_account)
    # Then the schema, the audit table, the unlock table and the trigger functions are the owner's
    owners = dict(
        provisioned.admin(
            "SELECT 'schema', pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = %(s)s "
            "UNION ALL SELECT relname::text, pg_get_userbyid(relowner) FROM pg_class "
            "WHERE relnamespace = %(s)s::regnamespace "
            "AND relname IN ('conversations_auditevent', 'qiwei_audit_unlock') "
            "UNION ALL SELECT proname::text, pg_get_userbyid(proowner) FROM pg_proc "
            "WHERE pronamespace = %(s)s::regnamespace AND proname LIKE 'qiwei_audit%%'",
            {"s": schema},
        )
    )
    assert set(owners.values()) == {provisioned.owner}
    assert {"schema", "conversations_auditevent", "qiwei_audit_unlock", "qiwei_audit_scrub"} <= set(owners)
    # And the account role still owns its other tables; the runtime login is not the owner's member
    [(messages_owner, member)] = provisioned.admin(
        "SELECT pg_get_userbyid(relowner), pg_has_role(%s, %s, 'MEMBER') FROM pg_class "
        "WHERE relnamespace = %s::regnamespace AND relname = 'conversations_message'",
        [provisioned.login, provisioned.owner, schema],
    )
    assert messages_owner == tenancy.account_role(provisioned.database, owned_account)
    assert member is False


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE conversations_auditevent SET reason = '客户同意自动回复'",
        "DELETE FROM conversations_auditevent",
        "TRUNCATE conversations_auditevent",
        f"INSERT INTO {audit_chain.UNLOCK_TABLE} (purpose) VALUES ('scrub')",
        f"INSERT INTO {audit_chain.UNLOCK_TABLE} (purpose) VALUES ('flush')",
        "ALTER TABLE conversations_auditevent DISABLE TRIGGER USER",
        "DROP TRIGGER conversations_auditevent_guard ON conversations_auditevent",
        "DROP TABLE conversations_auditevent CASCADE",
        f"DROP FUNCTION {audit_chain.PG_GUARD_FUNCTION}() CASCADE",
        f"CREATE OR REPLACE FUNCTION {audit_chain.PG_GUARD_FUNCTION}() RETURNS trigger AS "
        "$$ BEGIN RETURN NEW; END $$ LANGUAGE plpgsql",
        "ALTER TABLE conversations_auditevent RENAME TO conversations_auditevent_old",
        "ALTER SCHEMA {schema} OWNER TO {account_role}",
        "SET ROLE {owner}",
        "GRANT {owner} TO {login}",
    ],
)
def test_audit_owner_database_user_cannot_rewrite_the_audit(provisioned, owned_account, statement):
    with use_account(owned_account) as alias:
        # Given an audit row
        row = write("客户要求改为人工接待")
        # When the application's database user runs the statement itself
        refusal = refused_for_the_database_user(
            alias,
            statement.format(
                schema=f'"{alias}"',
                account_role=f'"{tenancy.account_role(provisioned.database, owned_account)}"',
                owner=f'"{provisioned.owner}"',
                login=f'"{provisioned.login}"',
            ),
        )
        # Then the database refuses it by privilege, before any trigger
        assert any(word in refusal for word in ("permission denied", "must be owner", "must have admin")), refusal
        # And the row is as written, and the chain verifies
        assert AuditEvent.objects.get(pk=row.pk).reason == "客户要求改为人工接待"
        assert account_audit_verify().intact


def test_audit_owner_tamper_procedure_of_the_issue_is_refused_at_its_first_step(provisioned, owned_account):
    with use_account(owned_account) as alias:
        # Given an anchored row
        row = write("客户要求改为人工接待")
        call_command("audit_anchor", "--account", owned_account, stdout=io.StringIO())
        # When the database user inserts a scrub unlock, rewrites the words and sets their hash
        words = audit_chain.payload_hash("客户同意自动回复", {"fields": ["auto"]})
        with (
            pytest.raises(DatabaseError, match="permission denied"),
            transaction.atomic(using=alias),
            connections[alias].cursor() as cursor,
        ):
            cursor.execute(f"INSERT INTO {audit_chain.UNLOCK_TABLE} (purpose) VALUES ('scrub')")
            cursor.execute(
                "UPDATE conversations_auditevent SET reason = %s, payload = %s, scrubbed_hash = %s WHERE id = %s",
                ["客户同意自动回复", json.dumps({"fields": ["auto"]}), words, row.pk],
            )
        # Then nothing changed and audit_verify passes
        assert AuditEvent.objects.get(pk=row.pk).reason == "客户要求改为人工接待"
    call_command("audit_verify", "--account", owned_account, stdout=io.StringIO())


@pytest.mark.parametrize(
    ("reason", "payload"),
    [
        ("客户同意自动回复", {"fields": ["mode"]}),  # new words, no mark
        (f"客户要求改为{FORGOTTEN_MARK}，并同意自动回复", {"fields": ["mode"]}),  # a mark and new words
        (f"客户要求改为{FORGOTTEN_MARK}人工接待", {"fields": ["mode"]}),  # a mark that removed nothing
        ("客户要求改为人工接待", {"fields": ["auto"]}),  # the payload rewritten
        ("客户要求改为人工接待", {"fields": ["mode"], "extra": "新内容"}),  # the payload grown
    ],
)
def test_audit_owner_scrub_function_refuses_anything_but_removed_words(provisioned, owned_account, reason, payload):
    with use_account(owned_account) as alias:
        # Given an audit row
        row = write("客户要求改为人工接待")
        # When the database user calls the owner's scrub with words that were not there
        # (a temporary table named like the unlock table does not stand in for it either)
        with (
            pytest.raises(DatabaseError, match="只能删去原话"),
            transaction.atomic(using=alias),
            connections[alias].cursor() as cursor,
        ):
            cursor.execute(f"CREATE TEMPORARY TABLE {audit_chain.UNLOCK_TABLE} (purpose varchar(16))")
            cursor.execute(f"INSERT INTO pg_temp.{audit_chain.UNLOCK_TABLE} VALUES ('scrub')")
            audit_owner.scrub(cursor, row_id=row.pk, reason=reason, payload_json=json.dumps(payload), seal="f" * 64)
        # Then the row is as written
        assert AuditEvent.objects.get(pk=row.pk).reason == "客户要求改为人工接待"


def test_audit_owner_scrub_that_removes_words_is_taken_and_verifies(provisioned, owned_account):
    with use_account(owned_account) as alias:
        # Given a row quoting what the customer said
        row = write("电话里说女儿明年在张江上小学")
        # When the scrub service removes the quote
        changed = audit_words_rewrite([(row.pk, f"电话里说{FORGOTTEN_MARK}", {"fields": ["mode"]})], using=alias)
        # Then the words are gone, the scrub is in the chain, and the chain verifies with it
        assert changed == 1
        assert AuditEvent.objects.get(pk=row.pk).reason == f"电话里说{FORGOTTEN_MARK}"
        assert AuditEvent.objects.filter(action=AuditAction.AUDIT_WORDS_SCRUBBED).count() == 1
        report = account_audit_verify()
        assert report.intact and report.scrubbed == 1


def test_audit_owner_forgetting_a_message_scrubs_the_audit_through_the_owner(provisioned, owned_account):
    with use_account(owned_account):
        # Given a stored customer message, quoted in the audit by the forget's reason-bearing rows
        messages_ingest(
            conversation_id=CONVERSATION,
            messages=[
                {
                    "external_id": "m1",
                    "direction": "inbound",
                    "text": "我女儿明年在张江上小学，想租学区房",
                    "sent_at": "2026-03-02T10:00:00+08:00",
                    "sender": "周女士",
                }
            ],
            actor="test",
        )
        write("客户说女儿明年在张江上小学")
        message = Message.objects.get(external_id="m1")
        # When a supervisor forgets the message
        message_forget(message=message, actor="admin-王主管", reason="客户要求删除")
        # Then no audit row keeps its words, and the chain (rows written by the account role and
        # linked by the owner's function at commit) verifies with the scrub in it
        assert not AuditEvent.objects.filter(reason__contains="张江上小学").exists()
        report = account_audit_verify()
        assert report.intact and report.scrubbed >= 1


def test_audit_owner_runtime_login_that_may_create_roles_is_refused(provisioned):
    # Given a runtime login that was given CREATEROLE (it could grant itself the owner role)
    provisioned.admin(f'ALTER ROLE "{provisioned.login}" CREATEROLE')
    # When an account is provisioned
    # Then it is refused, naming what to run
    with pytest.raises(UnsafeLoginRole, match="NOCREATEROLE"):
        account_create(account_id=provisioned.account("unsafe"), name="安居客服二部")


def test_audit_owner_process_without_the_provisioning_url_cannot_make_or_drop_an_account(
    provisioned, owned_account, settings
):
    # Given a web process: the runtime login only, no provisioning URL
    settings.QIWEI_ACCOUNT_PROVISION_URL = ""
    # When it is asked to create an account
    with pytest.raises(ApplicationError) as refused:
        account_create(account_id=provisioned.account("web"), name="安居客服三部")
    # Then it answers a clear refusal naming the command, and makes nothing
    assert refused.value.code == "provisioning_required"
    assert "QIWEI_ACCOUNT_PROVISION_URL" in refused.value.detail
    # And the existing account still works from it
    with use_account(owned_account):
        write("客户要求改为人工接待")
        assert account_audit_verify().intact
    # And it cannot drop the account's schema either
    with pytest.raises(tenancy.ProvisioningRequired):
        tenancy.drop_account_database(owned_account)


def test_audit_owner_account_delete_by_the_provisioner_drops_everything(provisioned, owned_account):
    # When the provisioner deletes the account
    account_delete(account_id=owned_account, actor="manage.py", reason="临时账号")
    # Then its schema and role are gone
    assert not provisioned.admin("SELECT 1 FROM pg_namespace WHERE nspname = %s", [tenancy.alias_for(owned_account)])
    assert not provisioned.admin(
        "SELECT 1 FROM pg_roles WHERE rolname = %s", [tenancy.account_role(provisioned.database, owned_account)]
    )


def test_audit_owner_migrate_accounts_separates_an_account_made_before(provisioned, settings):
    # Given an account made while the runtime login still provisioned (the upgrade's starting point)
    provisioned.admin(f'ALTER ROLE "{provisioned.login}" CREATEROLE')
    provisioned.admin(f'ALTER DATABASE "{provisioned.database}" OWNER TO "{provisioned.login}"')
    settings.QIWEI_ACCOUNT_PROVISION_URL = ""
    account_id = provisioned.account("before")
    account_create(account_id=account_id, name="安居客服四部")
    with use_account(account_id):
        row = write("客户要求改为人工接待")
    # When the operator drops CREATEROLE and runs migrate_accounts with the provisioning URL
    provisioned.admin(f'ALTER ROLE "{provisioned.login}" NOCREATEROLE')
    settings.QIWEI_ACCOUNT_PROVISION_URL = f"postgres://postgres@{POSTGRES[0]}:{POSTGRES[1]}/postgres"
    call_command("migrate_accounts", "--account", account_id, "--jobs", "1", stdout=io.StringIO())
    # Then the audit is the owner's, refused to the database user, and the chain goes on verifying
    with use_account(account_id) as alias:
        assert "permission denied" in refused_for_the_database_user(
            alias, "UPDATE conversations_auditevent SET reason = '改写' WHERE id = %s", [row.pk]
        )
        write("客户同意自动回复")
        report = account_audit_verify()
        assert report.intact and report.rows >= 3


def test_audit_owner_mark_is_the_forget_mark():
    # The database's check knows the mark the scrub writes
    assert audit_owner.FORGOTTEN_MARK == FORGOTTEN_MARK


CUSTOMER_TEXT = st.text(
    alphabet=st.sampled_from(list('我女儿明年在张江上小学想租两居室预算五千元电话1380013800abc "\\\n，。！')),
    max_size=40,
)


@hypothesis_settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(said=CUSTOMER_TEXT, forgotten=st.lists(CUSTOMER_TEXT, min_size=1, max_size=3), at=st.integers(0, 60))
def test_audit_owner_words_kept_takes_every_scrub_and_refuses_added_words(owned_account, said, forgotten, at):
    """The database's check and the forget service's scrub agree: whatever the forget removes from
    a reason or a JSON payload is taken (a forget is never refused), and a word added is not."""
    quotes = Quotes(forgotten)
    payload = {"fields": ["mode"], "said": said, "nested": [said, {"k": said[::-1]}]}
    scrubbed_payload = quotes.scrub_json(payload)
    with use_account(owned_account) as alias, transaction.atomic(using=alias), connections[alias].cursor() as cursor:
        check = f"SELECT {audit_owner.WORDS_KEPT_FUNCTION}(%s, %s)"
        cursor.execute(check, [said, quotes.scrub(said)])
        assert cursor.fetchone()[0] is True
        cursor.execute(
            f"SELECT {audit_owner.WORDS_KEPT_FUNCTION}(%s::jsonb::text, %s::jsonb::text)",
            [json.dumps(payload), json.dumps(scrubbed_payload)],
        )
        assert cursor.fetchone()[0] is True
        # A word the customer never said ("新", outside the alphabet), put anywhere, is refused
        scrubbed = quotes.scrub(said)
        cursor.execute(check, [said, scrubbed[:at] + "新" + scrubbed[at:]])
        assert cursor.fetchone()[0] is False


# --- found in review: what the account role could plant before or beside the owner's code -------


def _pwn_table(cursor) -> None:
    cursor.execute("CREATE TABLE pwn (who text, via text)")
    cursor.execute("GRANT ALL ON pwn TO PUBLIC")


GRANT_ALL = "EXECUTE 'GRANT ALL ON conversations_auditevent, qiwei_audit_unlock TO \"{role}\"'"
SHADOWS = {
    # an exact argument-type match in the account's schema beats pg_catalog's, which needs a cast
    "hashtext": ("CREATE FUNCTION hashtext(name) RETURNS integer", "pg_catalog.hashtext($1::text)"),
    "to_jsonb": ("CREATE FUNCTION to_jsonb(conversations_auditevent) RETURNS jsonb", "pg_catalog.to_jsonb($1)"),
    "concat": ("CREATE FUNCTION textcat_varchar(text, varchar) RETURNS text", "pg_catalog.textcat($1, $2::text)"),
}


@pytest.mark.parametrize("shadow", sorted(SHADOWS))
def test_audit_owner_functions_run_no_code_the_account_role_planted(provisioned, owned_account, shadow):
    role = tenancy.account_role(provisioned.database, owned_account)
    with use_account(owned_account) as alias:
        # Given an audit row, and a function the account role planted in its own schema under a
        # name the owner's trigger functions call (a text || varchar operator for the last)
        row = write("客户不同意自动回复")
        signature, result = SHADOWS[shadow]
        with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
            _pwn_table(cursor)
            cursor.execute(
                f"{signature} LANGUAGE plpgsql AS $f$ BEGIN INSERT INTO pwn VALUES (current_user, '{shadow}'); "
                f"{GRANT_ALL.format(role=role)}; RETURN {result}; END $f$"
            )
            if shadow == "concat":
                cursor.execute("CREATE OPERATOR || (LEFTARG = text, RIGHTARG = varchar, FUNCTION = textcat_varchar)")
        # When ordinary audit rows are written and scrubbed from a new server session
        connections[alias].close()
        write("第二条")
        audit_words_rewrite([(row.pk, f"客户{FORGOTTEN_MARK}自动回复", {"fields": ["mode"]})], using=alias)
        # Then none of its code ran as the owner, it gained no privilege, and the chain verifies
        with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pwn")
            assert cursor.fetchone()[0] == 0
        refusal = refused_for_the_database_user(alias, "DELETE FROM conversations_auditevent WHERE id = %s", [row.pk])
        assert "permission denied" in refusal
        assert account_audit_verify().intact


def _made_before_separation(provisioned, settings, label: str) -> str:
    """An account made while the runtime login still provisioned (the upgrade's starting point)."""
    provisioned.admin(f'ALTER ROLE "{provisioned.login}" CREATEROLE')
    provisioned.admin(f'ALTER DATABASE "{provisioned.database}" OWNER TO "{provisioned.login}"')
    settings.QIWEI_ACCOUNT_PROVISION_URL = ""
    account_id = provisioned.account(label)
    account_create(account_id=account_id, name="安居客服五部")
    return account_id


def _separate_now(provisioned, settings, account_id: str) -> None:
    provisioned.admin(f'ALTER ROLE "{provisioned.login}" NOCREATEROLE')
    settings.QIWEI_ACCOUNT_PROVISION_URL = f"postgres://postgres@{POSTGRES[0]}:{POSTGRES[1]}/postgres"
    call_command("migrate_accounts", "--account", account_id, "--jobs", "1", stdout=io.StringIO())


def test_audit_owner_separation_drops_a_trigger_and_grants_the_account_role_left(provisioned, settings):
    import psycopg

    # Given an account whose role, before separation, put its own trigger on the audit table and
    # granted the login every privilege on it
    account_id = _made_before_separation(provisioned, settings, "left")
    schema = tenancy.alias_for(account_id)
    with use_account(account_id) as alias:
        row = write("客户要求改为人工接待")
        with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
            cursor.execute(
                "CREATE FUNCTION zz_stats() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RETURN NULL; END $f$"
            )
            cursor.execute(
                "CREATE TRIGGER zz_stats AFTER UPDATE ON conversations_auditevent "
                "FOR EACH ROW EXECUTE FUNCTION zz_stats()"
            )
            cursor.execute(f'GRANT ALL ON conversations_auditevent, qiwei_audit_unlock TO "{provisioned.login}"')
            cursor.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{provisioned.login}"')
    # When the operator separates it
    _separate_now(provisioned, settings, account_id)
    # Then the foreign trigger is gone and the login, connecting on its own, can delete nothing
    assert (
        provisioned.admin(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass AND tgname = 'zz_stats'",
            [f"{schema}.conversations_auditevent"],
        )
        == []
    )
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege),
        psycopg.connect(
            host=POSTGRES[0], port=POSTGRES[1], user=provisioned.login, dbname=provisioned.database
        ) as conn,
    ):
        conn.execute(f'DELETE FROM "{schema}".conversations_auditevent WHERE id = %s', [row.pk])
    with use_account(account_id):
        assert AuditEvent.objects.filter(pk=row.pk).exists()
        assert account_audit_verify().intact


def test_audit_owner_login_through_a_role_that_may_create_roles_is_refused(provisioned):
    # Given a runtime login without CREATEROLE that is a member of a NOLOGIN role with it
    group = f"qiwei_it_ops_{provisioned.login[-6:]}"
    provisioned.admin(f'CREATE ROLE "{group}" NOLOGIN CREATEROLE')
    provisioned.admin(f'GRANT "{group}" TO "{provisioned.login}"')
    try:
        # When an account is provisioned, then it is refused, naming the role
        with pytest.raises(UnsafeLoginRole, match=group):
            account_create(account_id=provisioned.account("grp"), name="安居客服六部")
    finally:
        provisioned.admin(f'DROP ROLE IF EXISTS "{group}"')


def test_audit_owner_scrub_refuses_a_payload_whose_keys_were_spliced(provisioned, owned_account):
    with use_account(owned_account) as alias:
        # Given a row whose payload has two keys
        row = audit_record(
            action=AuditAction.CUSTOMER_UPDATED,
            conversation_id=CONVERSATION,
            actor="admin-王主管",
            reason="修改接待方式",
            payload={"after": "人工接待", "before": "自动回复"},
        )
        # When the database user removes a key and splices its value into the other, through the
        # owner's scrub (each text only lost words, as a whole)
        with (
            pytest.raises(DatabaseError, match="只能删去原话"),
            transaction.atomic(using=alias),
            connections[alias].cursor() as cursor,
        ):
            spliced = {"after": f"人工接待{FORGOTTEN_MARK}自动回复"}  # as text, only words removed
            audit_owner.scrub(
                cursor, row_id=row.pk, reason="修改接待方式", payload_json=json.dumps(spliced), seal="f" * 64
            )
        # Then nothing changed
        assert AuditEvent.objects.get(pk=row.pk).payload == {"after": "人工接待", "before": "自动回复"}


def test_audit_owner_unsigned_scrub_made_by_hand_is_never_signed_later(provisioned, owned_account):
    with use_account(owned_account) as alias:
        # Given the database user calling the owner's scrub itself, with an unsigned (plain) hash
        row = write("客户不同意自动回复")
        words = f"客户{FORGOTTEN_MARK}同意自动回复"
        with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
            audit_owner.scrub(
                cursor,
                row_id=row.pk,
                reason=words,
                payload_json=json.dumps({"fields": ["mode"]}),
                seal=audit_chain.payload_hash(words, {"fields": ["mode"]}),
            )
        # Then audit_verify reports it, and --sign-scrubs refuses to sign it as a legacy scrub
        assert not account_audit_verify().intact
    with pytest.raises(CommandError, match="审计属主"):
        call_command("audit_anchor", "--account", owned_account, "--sign-scrubs", stdout=io.StringIO())
    with use_account(owned_account):
        assert not account_audit_verify().intact


def test_audit_owner_account_left_half_provisioned_is_not_finished_by_a_web_process(provisioned, settings):
    # Given a provisioning command that made the role and schema, then stopped (in a database
    # provisioned apart: the audit owner exists)
    account_create(account_id=provisioned.account("first"), name="安居客服七部")
    account_id = provisioned.account("half")
    alias = tenancy.register_account_database(account_id)
    tenancy._ensure_account_schema(dict(connections.settings[alias]))
    # When a web process (no provisioning URL) meets the account
    settings.QIWEI_ACCOUNT_PROVISION_URL = ""
    # Then it refuses to migrate it, naming the command, and leaves nothing behind to rewrite
    with pytest.raises(tenancy.ProvisioningRequired, match="QIWEI_ACCOUNT_PROVISION_URL"):
        tenancy.ensure_account_database(account_id)
    assert not provisioned.admin(
        "SELECT 1 FROM pg_class WHERE relname = 'conversations_auditevent' AND relnamespace = %s::regnamespace", [alias]
    )


NOTE = "女儿明年在张江上小学"


@pytest.mark.parametrize("path", ["item_forget", "customer_erase"])
def test_audit_owner_item_forget_and_erasure_scrub_through_the_owner(provisioned, owned_account, path):
    from conversations.models import Customer
    from memory.governance.erasure import customer_erase
    from memory.governance.services import memory_item_add, memory_item_forget

    with use_account(owned_account):
        # Given a supervisor's item and an audit row quoting it, on a separated audit
        messages_ingest(
            conversation_id=CONVERSATION,
            messages=[{"external_id": "m1", "direction": "inbound", "text": "想租学区房", "sender": "周女士"}],
            actor="test",
        )
        customer = Customer.objects.get(conversation_id=CONVERSATION)
        item = memory_item_add(customer=customer, content=NOTE, actor="admin-王主管", reason="电话沟通")
        quoted = write(f"电话里说{NOTE}，改为人工接待")
        # When the item is forgotten, or the customer erased (the other two forget paths)
        if path == "item_forget":
            memory_item_forget(item=item, actor="admin-王主管", reason="客户要求删除")
        else:
            customer_erase(customer=customer, actor="admin-王主管", reason="客户要求删除全部数据")
        # Then the quote is gone through the owner's function, and the chain verifies with it
        assert NOTE not in AuditEvent.objects.get(pk=quoted.pk).reason
        report = account_audit_verify()
        assert report.intact and report.scrubbed >= 1
