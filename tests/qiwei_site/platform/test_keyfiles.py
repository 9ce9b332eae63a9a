"""Keys fail closed (issue 36, item 2): a missing, corrupt, rotated, wrong or world-readable key —
no start-up ever makes a sealed original unreadable, and no message is lost."""

from __future__ import annotations

import os
import runpy
from io import StringIO
from pathlib import Path
from types import SimpleNamespace

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command

from conversations.models import Message, MessageSecret
from conversations.received import received_text
from memory.decisions import MEMORY_FINGERPRINT, fingerprint_key
from qiwei_site.platform import keyfiles
from qiwei_site.platform.keyfiles import KeysRefused, KeyUnavailable, startup_keys_check
from qiwei_site.platform.models import KeyFingerprint
from qiwei_site.platform.sealing import SEALING, seal, sealing_keys_verify, unseal
from tests.memory.conftest import wecom_message

URL = "/api/accounts/acme/conversations/wm_keys_001/messages/"
SECRET_MESSAGE = "门锁密码是 Lx9#qa2041，周六看房时直接进"


@pytest.fixture
def embedded(settings, tmp_path):
    """The embedded default: no configured sealing key, the key files in their own folder."""
    settings.QIWEI_SEALING_KEYS = []
    settings.QIWEI_KEY_DIR = tmp_path / "keys"
    return settings.QIWEI_KEY_DIR


def _sealing_file(folder: Path) -> Path:
    return folder / SEALING.file_name


def _ingest(agent_client, text: str = SECRET_MESSAGE, external_id: str = "wx_key_1"):
    return agent_client.post(URL, wecom_message(text, external_id=external_id), format="json")


def test_keys_missing_sealing_key_with_sealed_originals_is_refused_never_remade(account, agent_client, embedded):
    # Given a message sealed with the embedded default's key
    assert _ingest(agent_client).status_code == 201
    key_file = _sealing_file(embedded)
    kept = key_file.read_bytes()
    # When the key file is lost
    key_file.unlink()
    # Then start-up refuses, naming the file and what to do, in Chinese and English
    with pytest.raises(KeysRefused) as refused:
        startup_keys_check()
    assert str(key_file) in str(refused.value) and "从备份恢复" in str(refused.value)
    assert "restore it from backup" in str(refused.value)
    # And a new message carrying a secret is refused with a retriable 503 (not stored, nothing lost)
    response = _ingest(agent_client, "新的门禁密码是 Qz83!kd0", external_id="wx_key_2")
    assert response.status_code == 503 and response.headers["Retry-After"]
    assert response.json()["code"] == "sealing_key_missing"
    assert not Message.objects.filter(external_id="wx_key_2").exists()
    # And no key was made: once the file is back, every original still opens
    assert not key_file.exists()
    key_file.write_bytes(kept)
    key_file.chmod(0o600)
    startup_keys_check()
    assert received_text(Message.objects.get(external_id="wx_key_1")) == SECRET_MESSAGE
    # And the refused message, sent again, is stored and sealed
    assert _ingest(agent_client, "新的门禁密码是 Qz83!kd0", external_id="wx_key_2").status_code == 201
    assert MessageSecret.objects.filter(message__external_id="wx_key_2").exists()


def test_keys_missing_sealing_key_after_an_upgrade_is_refused_by_the_sealed_data(account, embedded):
    # Given sealed originals from before fingerprints were recorded (an upgrade): none on record
    token = seal(SECRET_MESSAGE)
    message = Message.objects.create(
        customer_id=_customer().pk, external_id="wx_old", direction="inbound", text="门锁密码是 ******", sent_at=_now()
    )
    MessageSecret.objects.create(message=message, sealed=token, categories=["credential"])
    KeyFingerprint.objects.all().delete()
    _sealing_file(embedded).unlink()
    # When the key is checked at start-up
    with pytest.raises(KeyUnavailable) as refused:
        sealing_keys_verify()
    # Then it is refused as missing, and no key was made
    assert refused.value.problem == keyfiles.MISSING
    assert not _sealing_file(embedded).exists()


def test_keys_corrupt_sealing_key_answers_503_and_loses_no_message(account, agent_client, embedded):
    # Given a working key, then its file corrupted
    assert _ingest(agent_client).status_code == 201
    key_file = _sealing_file(embedded)
    kept = key_file.read_text()
    key_file.write_text("这不是密钥")
    # When a message carrying a secret arrives
    response = _ingest(agent_client, "银行卡密码 884213，帮我记一下", external_id="wx_key_3")
    # Then it is refused with a JSON 503 naming the file (not the environment variable), to retry
    assert response.status_code == 503
    body = response.json()
    assert body["code"] == "sealing_key_corrupt" and str(key_file) in body["detail"]
    assert "QIWEI_SEALING_KEYS" not in body["detail"].split("(")[0]
    assert not Message.objects.filter(external_id="wx_key_3").exists()
    # And a message with nothing to seal is stored as usual
    assert _ingest(agent_client, "周六上午有空看房", external_id="wx_key_4").status_code == 201
    # And once the key is restored, the retried message is stored and sealed
    key_file.write_text(kept)
    assert _ingest(agent_client, "银行卡密码 884213，帮我记一下", external_id="wx_key_3").status_code == 201
    assert "884213" not in Message.objects.get(external_id="wx_key_3").text
    assert received_text(Message.objects.get(external_id="wx_key_3")) == "银行卡密码 884213，帮我记一下"


def test_keys_rotated_sealing_keys_verify_and_every_original_opens(account, agent_client, settings):
    # Given originals sealed with an old configured key
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.QIWEI_SEALING_KEYS = [old]
    assert _ingest(agent_client).status_code == 201
    startup_keys_check()
    # When a new key is put first and the originals re-sealed, then the old key retired
    settings.QIWEI_SEALING_KEYS = [new, old]
    startup_keys_check()
    call_command("messages_seal", "--rotate", stdout=StringIO())
    settings.QIWEI_SEALING_KEYS = [new]
    # Then start-up accepts the new key alone, and the check opens the originals
    startup_keys_check()
    out = StringIO()
    call_command("messages_seal", "--check", stdout=out)
    assert "最新一条可以打开" in out.getvalue()


def test_keys_wrong_sealing_key_is_refused_and_the_check_fails(account, agent_client, settings):
    # Given originals sealed with one configured key, on record
    settings.QIWEI_SEALING_KEYS = [Fernet.generate_key().decode()]
    assert _ingest(agent_client).status_code == 201
    startup_keys_check()
    # When another valid key is configured in its place
    settings.QIWEI_SEALING_KEYS = [Fernet.generate_key().decode()]
    # Then start-up refuses it as the wrong key
    with pytest.raises(KeysRefused) as refused:
        startup_keys_check()
    assert "QIWEI_SEALING_KEYS" in str(refused.value) and "不是本系统用过的密钥" in str(refused.value)
    # And messages_seal --check exits non-zero naming the account
    with pytest.raises(CommandError) as failed:
        call_command("messages_seal", "--check", stdout=StringIO(), stderr=StringIO())
    assert "acme" in str(failed.value)


def test_keys_world_readable_key_fails_readyz_and_start_up(db, client, embedded):
    # Given the embedded default's key, made owner-only
    seal(SECRET_MESSAGE)
    key_file = _sealing_file(embedded)
    startup_keys_check()
    # When anyone on the host may read it
    key_file.chmod(0o644)
    # Then readiness fails naming the key and the problem (not the path)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert "keys" in response.json()["failing"] and response.json()["checks"]["keys"] == "error: sealing: exposed"
    # And start-up refuses with the chmod to run
    with pytest.raises(KeysRefused) as refused:
        startup_keys_check()
    assert f"chmod 600 {key_file}" in str(refused.value)


def test_keys_missing_memory_fingerprint_key_with_decisions_is_refused(db, settings, tmp_path, monkeypatch):
    # Given the embedded default's fingerprint key, made and used
    settings.QIWEI_MEMORY_FINGERPRINT_KEY = ""
    settings.QIWEI_KEY_DIR = tmp_path / "keys"
    monkeypatch.setattr("memory.decisions._key_cache", {})
    fingerprint_key()
    # When its file is lost and a new process needs it
    (settings.QIWEI_KEY_DIR / MEMORY_FINGERPRINT.file_name).unlink()
    monkeypatch.setattr("memory.decisions._key_cache", {})
    # Then it is refused, not remade (a new key would recognise no decision)
    with pytest.raises(KeyUnavailable) as refused:
        fingerprint_key()
    assert refused.value.problem == keyfiles.MISSING and "驳回或遗忘" in refused.value.detail
    assert not (settings.QIWEI_KEY_DIR / MEMORY_FINGERPRINT.file_name).exists()


def test_keys_a_fresh_install_makes_its_keys_once_and_records_them(db, embedded):
    # Given nothing on record and no key file (a first start)
    # When start-up checks the keys
    startup_keys_check()
    # Then the sealing key was made owner-only, recorded, and it seals and opens
    key_file = _sealing_file(embedded)
    assert key_file.exists() and (key_file.stat().st_mode & 0o077) == 0
    assert KeyFingerprint.objects.filter(purpose=SEALING.purpose).count() == 1
    assert unseal(seal(SECRET_MESSAGE)) == SECRET_MESSAGE
    # And a second start changes nothing
    before = key_file.read_text()
    startup_keys_check()
    assert key_file.read_text() == before and KeyFingerprint.objects.filter(purpose=SEALING.purpose).count() == 1


def test_keys_gunicorn_refuses_to_start_without_its_key(db, embedded):
    # Given a sealing key on record whose file is gone
    seal(SECRET_MESSAGE)
    _sealing_file(embedded).unlink()
    hooks = runpy.run_path(str(Path(__file__).resolve().parents[3] / "qiwei_site" / "gunicorn.conf.py"))
    logged: list[str] = []
    server = SimpleNamespace(log=SimpleNamespace(error=lambda text, *args: logged.append(text % args)))
    # When gunicorn's master starts
    with pytest.raises(SystemExit) as stopped:
        hooks["on_starting"](server)
    # Then it exits non-zero, saying why
    assert stopped.value.code == 1 and str(_sealing_file(embedded)) in logged[0]


def test_keys_celery_worker_refuses_to_start_without_its_key(db, embedded):
    # Given a sealing key on record whose file is gone
    seal(SECRET_MESSAGE)
    _sealing_file(embedded).unlink()
    from qiwei_site import celery as celery_module

    # When a worker initialises
    with pytest.raises(SystemExit) as stopped:
        celery_module._refuse_without_keys()
    # Then it does not start
    assert stopped.value.code == 1


def test_keys_setup_command_refuses_to_go_on_without_its_key(db, embedded, monkeypatch):
    # Given a sealing key on record whose file is gone
    seal(SECRET_MESSAGE)
    _sealing_file(embedded).unlink()
    from qiwei_site.operations.management.commands import setup

    # When the set-up reaches its keys step
    with pytest.raises(CommandError) as refused:
        setup.Command().keys_check()
    # Then it stops with the reason
    assert "拒绝启动" in str(refused.value) and str(_sealing_file(embedded)) in str(refused.value)
    assert not os.path.exists(_sealing_file(embedded))


def _customer():
    from tests.factories import CustomerFactory

    return CustomerFactory(conversation_id="wm_keys_old")


def _now():
    from django.utils import timezone

    return timezone.now()
