"""Cheap first use (issue 13): an account database records the migrations it was migrated to, and a
process meeting the account for the first time compares that one row instead of running `migrate`."""

from __future__ import annotations

import hashlib

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections
from django.db.migrations.loader import MigrationLoader

from conversations.models import Customer
from qiwei_site.platform import tenancy
from qiwei_site.platform.tenancy import SCHEMA_TABLE, alias_for, use_account
from tests.conftest import make_account
from tests.factories import CustomerFactory


@pytest.fixture
def migrations_run(monkeypatch) -> list[str]:
    """The aliases `migrate` really ran on (it still runs)."""
    ran: list[str] = []
    real = tenancy._migrate_alias

    def recording(alias: str) -> None:
        ran.append(alias)
        real(alias)

    monkeypatch.setattr(tenancy, "_migrate_alias", recording)
    return ran


def recorded_fingerprint(account_id: str) -> str | None:
    with connections[alias_for(account_id)].cursor() as cursor:
        cursor.execute(f"SELECT fingerprint FROM {SCHEMA_TABLE}")
        row = cursor.fetchone()
    return row[0] if row else None


def as_if_new_process(account_id: str) -> None:
    """What a restarted worker knows about the account: nothing."""
    tenancy.unregister_account_database(account_id)
    tenancy._migrated.discard(alias_for(account_id))


def test_migration_fingerprint_covers_the_migrations_django_finds_on_disk(db):
    # Given the migrations Django's own loader finds for every installed app
    loader = MigrationLoader(None, ignore_no_migrations=True)
    names = sorted(f"{app}.{name}" for app, name in loader.disk_migrations)
    # Then the fingerprint is exactly theirs
    assert tenancy.migration_fingerprint() == hashlib.sha256("\n".join(names).encode()).hexdigest()


def test_account_first_use_in_new_process_skips_migrate_when_fingerprint_matches(db, migrations_run):
    # Given an account created and migrated (the fingerprint recorded), and 王先生 in it
    make_account("pudong", "浦东门店")
    with use_account("pudong"):
        CustomerFactory(display_name="王先生")
    as_if_new_process("pudong")
    migrations_run.clear()
    # When a new process uses the account for the first time
    with use_account("pudong"):
        names = list(Customer.objects.values_list("display_name", flat=True))
    # Then it did not run migrate, and the data is there
    assert migrations_run == []
    assert names == ["王先生"]


def test_account_first_use_migrates_when_recorded_fingerprint_differs(db, migrations_run):
    # Given an account migrated by an older release (another set of migrations)
    make_account("xuhui", "徐汇门店")
    with use_account("xuhui"), connections[alias_for("xuhui")].cursor() as cursor:
        cursor.execute(f"UPDATE {SCHEMA_TABLE} SET fingerprint = %s", ["0" * 64])
    as_if_new_process("xuhui")
    migrations_run.clear()
    # When a process of this release uses it
    with use_account("xuhui"):
        Customer.objects.count()
        # Then it migrates as before, and records this release's fingerprint
        assert migrations_run == [alias_for("xuhui")]
        assert recorded_fingerprint("xuhui") == tenancy.migration_fingerprint()


def test_account_migrated_before_fingerprints_is_migrated_once_and_recorded(db, migrations_run):
    # Given an account database from before fingerprints (no such table)
    make_account("jingan", "静安门店")
    with use_account("jingan"), connections[alias_for("jingan")].cursor() as cursor:
        cursor.execute(f"DROP TABLE {SCHEMA_TABLE}")
    as_if_new_process("jingan")
    migrations_run.clear()
    # When it is first used, then again by yet another process
    with use_account("jingan"):
        Customer.objects.count()
    as_if_new_process("jingan")
    with use_account("jingan"):
        fingerprint = recorded_fingerprint("jingan")
    # Then it was migrated once, and is now recorded as current
    assert migrations_run == [alias_for("jingan")]
    assert fingerprint == tenancy.migration_fingerprint()


def test_new_sqlite_account_copied_from_template_starts_current_without_migrating(db, migrations_run):
    # Given the migrated template exists (made for the first account)
    make_account("minhang", "闵行门店")
    migrations_run.clear()
    # When another account is created
    make_account("baoshan", "宝山门店")
    # Then it was copied and not migrated, and it is usable
    assert migrations_run == []
    with use_account("baoshan"):
        assert recorded_fingerprint("baoshan") == tenancy.migration_fingerprint()
        assert Customer.objects.count() == 0


def test_new_sqlite_account_builds_the_template_once_where_none_is_kept(db, settings, tmp_path, migrations_run):
    # Given a template directory with no template in it (test runs keep one in .cache otherwise)
    settings.QIWEI_ACCOUNT_TEMPLATE_DIR = tmp_path / "templates"
    # When two accounts are created
    make_account("minhang", "闵行门店")
    make_account("baoshan", "宝山门店")
    # Then the template was migrated once, under its fingerprint's name, and both accounts are current
    assert migrations_run == [f"{alias_for('minhang')}__template"]
    kept = sorted(path.name for path in (tmp_path / "templates").glob("*.sqlite3"))
    assert kept == [f"account-{tenancy.account_template_fingerprint()}.sqlite3"]
    for account_id in ("minhang", "baoshan"):
        with use_account(account_id):
            assert recorded_fingerprint(account_id) == tenancy.migration_fingerprint()


def test_account_template_fingerprint_changes_with_the_django_version(monkeypatch):
    # Given the fingerprint of this code's account template
    import django

    before = tenancy.account_template_fingerprint()
    # When another Django version would run the migrations
    monkeypatch.setattr(django, "get_version", lambda: "0.0.0")
    # Then a template kept from before is not this one
    assert tenancy.account_template_fingerprint() != before


def test_migrate_accounts_skips_a_current_account_and_forced_migrates_and_records(db, migrations_run, capsys):
    # Given an account whose recorded migrations are this code's
    make_account("songjiang", "松江门店")
    migrations_run.clear()
    # When migrate_accounts runs, it checks the fingerprint and leaves it alone
    call_command("migrate_accounts", "--account", "songjiang")
    assert migrations_run == []
    assert "songjiang: 已是最新" in capsys.readouterr().out
    # When forced, it migrates and records again
    call_command("migrate_accounts", "--account", "songjiang", "--force")
    assert migrations_run == [alias_for("songjiang")]
    assert "songjiang: 已迁移" in capsys.readouterr().out
    with use_account("songjiang"):
        assert recorded_fingerprint("songjiang") == tenancy.migration_fingerprint()


def test_migrate_accounts_migrates_an_account_behind_in_parallel_jobs(db, capsys):
    # Given three accounts, one of them recorded as migrated by older code
    for account_id, name in [("xuhui", "徐汇门店"), ("putuo", "普陀门店"), ("yangpu", "杨浦门店")]:
        make_account(account_id, name)
    with use_account("putuo") as alias, connections[alias].cursor() as cursor:
        cursor.execute(f"UPDATE {tenancy.SCHEMA_TABLE} SET fingerprint = 'older'")
    tenancy._migrated.discard(alias_for("putuo"))
    # When migrate_accounts runs with two jobs (forked processes)
    call_command("migrate_accounts", "--jobs", "2")
    # Then the one behind was migrated, the others found current, each reported in order
    out = capsys.readouterr().out
    assert out.splitlines() == ["putuo: 已迁移", "xuhui: 已是最新", "yangpu: 已是最新"]
    with use_account("putuo"):
        assert recorded_fingerprint("putuo") == tenancy.migration_fingerprint()


def test_migrate_accounts_refuses_zero_jobs(db):
    with pytest.raises(CommandError, match="--jobs"):
        call_command("migrate_accounts", "--jobs", "0")
