"""A new account from the recorded template script on PostgreSQL (issue 38, item 3), in both layouts:
the replayed schema has the catalogue digest and fingerprint of a migrated one and works, a script
that does not make what `migrate` makes is refused inside its transaction for plain `migrate`, a
changed migration set records a new script, and concurrent creators record it once."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from django.db import connections

from conversations.models import Customer
from memory.capture.ingest import messages_ingest
from qiwei_site.platform import account_template, tenancy
from qiwei_site.platform.audit import account_audit_verify
from qiwei_site.platform.services import account_create
from qiwei_site.platform.tenancy import SCHEMA_TABLE, alias_for, use_account

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def template_dir(settings, tmp_path) -> Path:
    settings.QIWEI_ACCOUNT_TEMPLATE_DIR = tmp_path / "templates"
    return Path(settings.QIWEI_ACCOUNT_TEMPLATE_DIR)


@pytest.fixture
def scripts_recorded(monkeypatch) -> list[str]:
    recorded: list[str] = []
    real = account_template._record_pg_script

    def recording(alias: str, key: str) -> account_template.PgScript:
        recorded.append(key)
        return real(alias, key)

    monkeypatch.setattr(account_template, "_record_pg_script", recording)
    return recorded


def recorded_fingerprint(account_id: str) -> str:
    with use_account(account_id) as alias, tenancy.account_atomic(), connections[alias].cursor() as cursor:
        cursor.execute(f"SELECT fingerprint FROM {SCHEMA_TABLE}")
        return str(cursor.fetchone()[0])


def digest_of(account_id: str) -> str:
    with use_account(account_id) as alias:
        return account_template.alias_digest(alias)


def test_postgres_account_from_template_matches_a_migrated_one_and_works(
    postgres_accounts, template_dir, scripts_recorded, settings
):
    # Given one account made from the template script and one migrated the plain way
    made, migrated = postgres_accounts("tplmade"), postgres_accounts("tplplain")
    account_create(account_id=made, name="浦东门店")
    settings.QIWEI_ACCOUNT_TEMPLATES = "0"
    account_create(account_id=migrated, name="徐汇门店")
    assert tenancy.made_by(alias_for(made)) == tenancy.TEMPLATE
    assert tenancy.made_by(alias_for(migrated)) == tenancy.MIGRATE
    assert len(scripts_recorded) == 1
    # Then their catalogues and recorded fingerprints are equal
    assert digest_of(made) == digest_of(migrated)
    assert recorded_fingerprint(made) == recorded_fingerprint(migrated) == tenancy.migration_fingerprint()
    # When a customer's message arrives in the one made from the template
    with use_account(made):
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
        # Then it is stored and the audit chain (its triggers came from the script) verifies
        assert Customer.objects.get().display_name == "王先生"
        report = account_audit_verify()
        assert report.intact and report.rows >= 2


def test_postgres_account_template_that_makes_another_catalogue_is_refused(postgres_accounts, template_dir, caplog):
    # Given a recorded script with one trigger left out (its checksum made to match)
    first, second = postgres_accounts("tplfirst"), postgres_accounts("tplsecond")
    account_create(account_id=first, name="浦东门店")
    [path] = template_dir.glob("account-pg-*.json")
    body = json.loads(path.read_text())
    body["statements"] = [s for s in body["statements"] if "CREATE TRIGGER conversations_auditevent_guard" not in s[0]]
    statements = [(sql, account_template._decode(params), many) for sql, params, many in body["statements"]]
    body["checksum"] = account_template.PgScript(body["key"], "", "", statements).checksum()
    path.write_text(json.dumps(body))
    # When an account is created
    account_create(account_id=second, name="徐汇门店")
    # Then the replay was rolled back, the script set aside and the account migrated the plain way
    assert "catalogue digest" in caplog.text
    assert tenancy.made_by(alias_for(second)) == tenancy.MIGRATE
    assert not path.exists() and Path(f"{path}.rejected").exists()
    assert digest_of(second) == digest_of(first)
    with use_account(second):
        assert account_audit_verify().intact


def test_postgres_account_template_changed_migration_set_records_a_new_script(
    postgres_accounts, template_dir, scripts_recorded, monkeypatch
):
    # Given a script recorded for today's migrations
    first, second = postgres_accounts("tplold"), postgres_accounts("tplnew")
    account_create(account_id=first, name="浦东门店")
    # When the migration files change and an account is created
    monkeypatch.setattr(tenancy, "account_template_fingerprint", lambda: "0123456789abcdef")
    account_create(account_id=second, name="徐汇门店")
    # Then a second script was recorded under a new key and the account came from it
    assert len(scripts_recorded) == 2 and scripts_recorded[0] != scripts_recorded[1]
    assert len(list(template_dir.glob("account-pg-*.json"))) == 2
    assert tenancy.made_by(alias_for(second)) == tenancy.TEMPLATE


def test_postgres_two_concurrent_creations_record_one_script(postgres_accounts, template_dir, scripts_recorded):
    # Given no script yet and three accounts created at the same moment
    ids = [postgres_accounts(f"tplrace{n}") for n in range(3)]
    barrier = threading.Barrier(len(ids))
    errors: list[BaseException] = []

    def create(account_id: str) -> None:
        try:
            barrier.wait()
            account_create(account_id=account_id, name=f"分店{account_id}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=create, args=(account_id,)) for account_id in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then the script was recorded once and every account came from it, alike
    assert errors == []
    assert len(scripts_recorded) == 1
    assert {tenancy.made_by(alias_for(account_id)) for account_id in ids} == {tenancy.TEMPLATE}
    assert len({digest_of(account_id) for account_id in ids}) == 1
