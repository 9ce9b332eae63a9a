"""A new account from the migrated template (issue 38, item 3), SQLite: the copy is verified against
the template's catalogue digest and fingerprint, a changed migration set makes a new template, a
damaged template is refused for plain `migrate`, concurrent creators make one template, and
`accounts_onboard` resumes."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import threading
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections

from conversations.models import Customer, Message
from memory.capture.ingest import messages_ingest
from qiwei_site.platform import account_template, tenancy
from qiwei_site.platform.audit import account_audit_verify
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.services import account_create
from qiwei_site.platform.tenancy import SCHEMA_TABLE, alias_for, use_account


@pytest.fixture
def template_dir(settings, tmp_path) -> Path:
    """A template directory of the test's own: the template is made in the test."""
    settings.QIWEI_ACCOUNT_TEMPLATE_DIR = tmp_path / "templates"
    return Path(settings.QIWEI_ACCOUNT_TEMPLATE_DIR)


@pytest.fixture
def template_builds(monkeypatch) -> list[str]:
    """The template aliases `migrate` ran on."""
    built: list[str] = []
    real = tenancy._migrate_alias

    def recording(alias: str) -> None:
        if alias.endswith("__template"):
            built.append(alias)
        real(alias)

    monkeypatch.setattr(tenancy, "_migrate_alias", recording)
    return built


def recorded_fingerprint(account_id: str) -> str:
    with connections[alias_for(account_id)].cursor() as cursor:
        cursor.execute(f"SELECT fingerprint FROM {SCHEMA_TABLE}")
        return str(cursor.fetchone()[0])


def test_account_from_template_has_the_catalogue_and_fingerprint_of_a_migrated_one_and_works(db, settings):
    # Given one account made from the template and one migrated the plain way
    account_create(account_id="pudong", name="浦东门店")
    settings.QIWEI_ACCOUNT_TEMPLATES = "0"
    account_create(account_id="xuhui", name="徐汇门店")
    assert tenancy.made_by(alias_for("pudong")) == tenancy.TEMPLATE
    assert tenancy.made_by(alias_for("xuhui")) == tenancy.MIGRATE
    # Then their catalogues (tables, indexes, triggers, migrations, rows) and fingerprints are equal
    assert account_template.alias_digest(alias_for("pudong")) == account_template.alias_digest(alias_for("xuhui"))
    assert recorded_fingerprint("pudong") == recorded_fingerprint("xuhui") == tenancy.migration_fingerprint()
    # When a customer's message arrives in the one made from the template
    with use_account("pudong"):
        messages_ingest(
            conversation_id="wm_wang",
            messages=[
                {
                    "external_id": "m1",
                    "direction": "inbound",
                    "text": "我预算5000，想在浦东租两居室",
                    "sent_at": "2026-03-02T10:00:00+08:00",
                    "sender": "王先生",
                }
            ],
            actor="test",
        )
        # Then the customer and the message are stored, and the audit chain verifies
        assert Customer.objects.get().display_name == "王先生"
        assert Message.objects.count() == 1
        assert account_audit_verify().intact


def test_account_template_changed_migration_set_makes_a_new_template(db, template_dir, template_builds, monkeypatch):
    # Given a template made for today's migrations
    account_create(account_id="pudong", name="浦东门店")
    old = account_template.sqlite_template_path()
    assert old.exists() and len(template_builds) == 1
    # When the migration set changes (another fingerprint) and an account is created
    monkeypatch.setattr(tenancy, "account_template_fingerprint", lambda: "0123456789abcdef")
    monkeypatch.setattr(tenancy, "migration_fingerprint", lambda: "f" * 64)
    account_create(account_id="xuhui", name="徐汇门店")
    # Then a new template was made for it and the account records the new fingerprint
    new = account_template.sqlite_template_path()
    assert new != old and new.exists()
    assert len(template_builds) == 2
    assert json.loads(Path(f"{new}.json").read_text())["fingerprint"] == "f" * 64
    assert recorded_fingerprint("xuhui") == "f" * 64


def test_account_template_recording_another_fingerprint_is_refused(db, template_dir, caplog):
    # Given a template whose record says it was made by other migrations
    account_create(account_id="pudong", name="浦东门店")
    path = account_template.sqlite_template_path()
    sidecar = Path(f"{path}.json")
    sidecar.write_text(json.dumps({**json.loads(sidecar.read_text()), "fingerprint": "0" * 64}))
    # When an account is created
    account_create(account_id="xuhui", name="徐汇门店")
    # Then the template was refused and the account migrated, current
    assert "refused" in caplog.text
    assert tenancy.made_by(alias_for("xuhui")) == tenancy.MIGRATE
    assert recorded_fingerprint("xuhui") == tenancy.migration_fingerprint()


def test_account_template_whose_digest_is_wrong_is_refused_and_migrate_used(db, template_dir, template_builds, caplog):
    # Given a template someone changed after it was made (an audit trigger dropped)
    account_create(account_id="pudong", name="浦东门店")
    path = account_template.sqlite_template_path()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TRIGGER conversations_auditevent_no_update")
    conn.close()
    # When an account is created
    account_create(account_id="xuhui", name="徐汇门店")
    # Then the copy was refused, the template set aside, and the account migrated the plain way
    assert "catalogue digest" in caplog.text
    assert tenancy.made_by(alias_for("xuhui")) == tenancy.MIGRATE
    assert Path(f"{path}.rejected").exists() and not path.exists()
    assert account_template.alias_digest(alias_for("xuhui")) == account_template.alias_digest(alias_for("pudong"))
    # And the next account makes a good template again and comes from it
    account_create(account_id="minhang", name="闵行门店")
    assert len(template_builds) == 2
    assert tenancy.made_by(alias_for("minhang")) == tenancy.TEMPLATE


def test_account_template_two_concurrent_creations_make_one_template(db, template_dir, template_builds):
    # Given no template yet and two accounts created at the same moment from two threads
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def create(account_id: str) -> None:
        try:
            barrier.wait()
            tenancy.ensure_account_database(account_id)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=create, args=(name,)) for name in ("pudong", "xuhui")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then the template was made once, both accounts came from it, and they are alike and current
    assert errors == []
    assert len(template_builds) == 1
    assert {tenancy.made_by(alias_for(name)) for name in ("pudong", "xuhui")} == {tenancy.TEMPLATE}
    assert account_template.alias_digest(alias_for("pudong")) == account_template.alias_digest(alias_for("xuhui"))
    assert tenancy.schema_is_current(alias_for("pudong")) and tenancy.schema_is_current(alias_for("xuhui"))


def onboard(*args: str) -> str:
    out = io.StringIO()
    call_command("accounts_onboard", *args, "--jobs", "1", stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_accounts_onboard_resumes_where_a_run_stopped(db, monkeypatch):
    # Given a run over four accounts in which the third failed
    from qiwei_site.platform import services

    real = services.account_create

    def failing(**kwargs):
        if kwargs["account_id"] == "shop0003":
            raise RuntimeError("disk full")
        return real(**kwargs)

    monkeypatch.setattr(services, "account_create", failing)
    with pytest.raises(CommandError, match="shop0003"):
        onboard("--prefix", "shop", "--count", "4")
    assert sorted(WeComAccount.objects.values_list("id", flat=True)) == ["shop0001", "shop0002", "shop0004"]
    # When the same command runs again (and the second account's database was lost meanwhile)
    monkeypatch.setattr(services, "account_create", real)
    tenancy.unregister_account_database("shop0002")
    tenancy._migrated.discard(alias_for("shop0002"))
    Path(tenancy.account_database_config("shop0002")["NAME"]).unlink()
    out = onboard("--prefix", "shop", "--count", "4")
    # Then only the missing account is created, the lost database made again, the rest skipped
    assert "shop0003: 已创建（模板）" in out
    assert "shop0002: 已补齐迁移（模板）" in out
    assert "shop0001: 已存在且是最新，跳过" in out and "shop0004: 已存在且是最新，跳过" in out
    assert "新建 1，补齐 1，跳过 2，失败 0" in out
    assert WeComAccount.objects.count() == 4
    with use_account("shop0003"):
        assert account_audit_verify().intact


def test_accounts_onboard_from_csv_creates_named_accounts(db, tmp_path):
    # Given a CSV of two accounts
    path = tmp_path / "accounts.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerows([["account_id", "name"], ["pudong", "浦东门店"], ["xuhui", "徐汇门店"]])
    # When it is onboarded
    out = onboard("--from", str(path))
    # Then both are registered with their names
    assert dict(WeComAccount.objects.values_list("id", "name")) == {"pudong": "浦东门店", "xuhui": "徐汇门店"}
    assert "新建 2" in out


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ("id,name\npudong,浦东\n", "表头"),
        ("account_id,name\npudong,浦东\nShop-1,坏\n", "第 3 行"),
        ("account_id,name\npudong,浦东\npudong,又一个\n", "重复"),
        ("account_id,name\n", "没有账号"),
    ],
)
def test_accounts_onboard_refuses_a_bad_file_before_creating_anything(db, tmp_path, lines, message):
    # Given a CSV with a problem
    path = tmp_path / "accounts.csv"
    path.write_text(lines, encoding="utf-8")
    # When it is onboarded, then the command exits with the problem and creates nothing
    with pytest.raises(CommandError, match=message):
        onboard("--from", str(path))
    assert not WeComAccount.objects.exists()


def test_accounts_onboard_refuses_bad_arguments(db, tmp_path):
    with pytest.raises(CommandError, match="--count"):
        onboard("--prefix", "shop")
    with pytest.raises(CommandError, match="不合法"):
        onboard("--prefix", "Shop-", "--count", "2")
    with pytest.raises(CommandError, match="无法读取"):
        onboard("--from", str(tmp_path / "missing.csv"))


def test_account_template_fingerprint_covers_every_project_module_a_migration_imports():
    # Given the account apps' migration files (some import the SQL of their triggers from the code)
    import ast
    from pathlib import Path

    from qiwei_site.platform.tenancy import ACCOUNT_APPS, MIGRATION_SQL_MODULES

    root = Path(__file__).resolve().parents[3]
    project = {"conversations", "memory", "knowledge", "sessions_epoch", "qiwei_site"}
    imported: set[str] = set()
    for app in ACCOUNT_APPS:
        folder = root / app.replace(".", "/") / "migrations"
        for path in folder.glob("*.py") if folder.is_dir() else ():
            # module-level imports: the SQL a migration runs (a data step's import inside its function
            # runs on existing rows only, of which a template has none)
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in project:
                    imported |= {f"{node.module}.{alias.name}" for alias in node.names}
    # Then the template's fingerprint reads each (a change there must not reuse an old template)
    assert imported and imported <= set(MIGRATION_SQL_MODULES), imported - set(MIGRATION_SQL_MODULES)


def test_account_template_fingerprint_changes_with_the_sql_a_migration_imports(monkeypatch):
    # Given today's fingerprint
    from qiwei_site.platform import tenancy

    before = tenancy.account_template_fingerprint()
    # When a module whose SQL the migrations import reads differently (here: another module's file)
    monkeypatch.setattr(
        tenancy, "MIGRATION_SQL_MODULES", ("qiwei_site.platform.audit_chain", "qiwei_site.platform.sql")
    )
    # Then the fingerprint is another one
    assert tenancy.account_template_fingerprint() != before


def test_account_template_gone_mid_copy_falls_back_to_migrate(db, template_dir, monkeypatch, caplog):
    # Given a template, and another process setting it aside just as this one copies it (review)
    account_create(account_id="pudong", name="浦东门店")

    def vanished(source, target):
        raise FileNotFoundError(source)

    monkeypatch.setattr(account_template.shutil, "copyfile", vanished)
    # When an account is created
    account_create(account_id="xuhui", name="徐汇门店")
    # Then it was migrated the plain way instead of failing, and is current
    assert "went away" in caplog.text
    assert tenancy.made_by(alias_for("xuhui")) == tenancy.MIGRATE
    assert recorded_fingerprint("xuhui") == tenancy.migration_fingerprint()
