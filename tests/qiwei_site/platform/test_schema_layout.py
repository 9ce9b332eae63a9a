"""The schema layout's configuration (issue 23), without a server: which layout a URL names, the
account's schema and role, what the backend is told, and the commands' refusals. Against the
machine's PostgreSQL: tests/integration/test_schema_layout_pg.py."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import CommandError

from qiwei_site.platform import tenancy
from qiwei_site.platform.connections.postgresql.base import pool_key, switch_sql

ONE_DATABASE = "postgres://qiwei@db.internal:5432/qiwei_accounts?prepare_threshold=5"


@pytest.mark.parametrize(
    ("url", "layout"),
    [
        ("", tenancy.SQLITE_LAYOUT),
        ("postgres://qiwei@db.internal:5432/qiwei_acct_{account}", tenancy.DATABASE_LAYOUT),
        (ONE_DATABASE, tenancy.SCHEMA_LAYOUT),
    ],
)
def test_account_layout_is_named_by_the_url(settings, url, layout):
    settings.QIWEI_ACCOUNT_DATABASE_URL = url
    assert tenancy.account_layout() == layout


def test_schema_layout_config_names_the_accounts_schema_and_role_and_keeps_no_session_state(settings):
    # Given one database for every account, and a URL asking for prepared statements
    settings.QIWEI_ACCOUNT_DATABASE_URL = ONE_DATABASE
    # When two accounts are located
    pudong, xuhui = tenancy.account_database_config("pudong"), tenancy.account_database_config("xuhui")
    # Then both are in the one database, each with its own schema and role, through our backend
    assert pudong["NAME"] == xuhui["NAME"] == "qiwei_accounts"
    assert (pudong["QIWEI_SCHEMA"], xuhui["QIWEI_SCHEMA"]) == ("acct_pudong", "acct_xuhui")
    assert pudong["QIWEI_ROLE"] != xuhui["QIWEI_ROLE"]
    assert pudong["QIWEI_ROLE"].endswith("_pudong") and len(pudong["QIWEI_ROLE"]) <= 63
    assert pudong["ENGINE"] == "qiwei_site.platform.connections.postgresql"
    # And nothing can outlive the transaction that carried the switch
    assert pudong["DISABLE_SERVER_SIDE_CURSORS"] is True
    assert "prepare_threshold" not in pudong["OPTIONS"]
    # And both share one pool key: any idle connection serves any account
    assert pool_key("acct_pudong", pudong) == pool_key("acct_xuhui", xuhui)


def test_account_role_differs_between_databases_of_one_server():
    # Roles belong to the whole server: two installations' accounts of one id never share a role
    assert tenancy.account_role("qiwei_accounts", "pudong") != tenancy.account_role("qiwei_staging", "pudong")


def test_schema_layout_switch_quotes_role_and_schema():
    assert switch_sql("qiwei_0a1b2c3d_pudong", "acct_pudong") == (
        'RESET ROLE; RESET search_path; '
        'SET LOCAL ROLE "qiwei_0a1b2c3d_pudong"; SET LOCAL search_path TO "acct_pudong", "qiwei_ext"; '
    )


def test_schema_layout_refuses_a_url_that_is_not_postgresql(settings):
    settings.QIWEI_ACCOUNT_DATABASE_URL = "mysql://qiwei@db.internal:3306/qiwei_accounts"
    with pytest.raises(ImproperlyConfigured, match="PostgreSQL"):
        tenancy.account_database_config("pudong")


def test_account_vacuum_refuses_pgbouncer_in_the_schema_layout(settings, account):
    # Given the schema layout reached through PgBouncer's transaction pooling
    settings.QIWEI_ACCOUNT_DATABASE_URL = ONE_DATABASE
    settings.QIWEI_PGBOUNCER = True
    # When VACUUM is asked for, it refuses (a session role could reach another client) and says how
    with pytest.raises(CommandError, match="直连"):
        call_command("account_vacuum", account.id)


def test_account_vacuum_on_sqlite_has_nothing_to_do(account, capsys):
    call_command("account_vacuum", account.id)
    assert "无需 VACUUM" in capsys.readouterr().out


def test_account_vacuum_unknown_account_is_refused(db):
    with pytest.raises(CommandError, match="不存在"):
        call_command("account_vacuum", "nobody")


def test_accounts_to_schemas_refuses_without_the_schema_layout(account):
    with pytest.raises(CommandError, match="schema"):
        call_command("accounts_to_schemas", "--from", "postgres://qiwei@db.internal/qiwei_acct_{account}")


def test_accounts_to_schemas_refuses_a_source_without_account(settings, account):
    settings.QIWEI_ACCOUNT_DATABASE_URL = ONE_DATABASE
    with pytest.raises(CommandError, match="必须是含"):
        call_command("accounts_to_schemas", "--from", "postgres://qiwei@db.internal/qiwei_old")
