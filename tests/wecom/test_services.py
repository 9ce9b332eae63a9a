"""An account's WeCom connection, set by staff in admin and by `manage.py wecom_connect`: the secret,
token and EncodingAESKey sealed at rest, never shown after saving, never in the audit or a log."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from qiwei_site.platform.admin import registry_payload_html
from qiwei_site.platform.errors import ValidationFailed
from qiwei_site.platform.models import RegistryAuditEvent
from wecom.models import WeComConnection
from wecom.selectors import credentials_get
from wecom.services import wecom_connect, wecom_disconnect

from .conftest import AES_KEY, CALLBACK_TOKEN, CORP_ID, OPEN_KFID, SECRET


def _connect(account, **overrides):
    values = dict(
        account_id=account.id,
        corp_id=CORP_ID,
        secret=SECRET,
        token=CALLBACK_TOKEN,
        aes_key=AES_KEY,
        open_kfids=[OPEN_KFID],
        actor="test",
        reason="接入企业微信客服",
    )
    return wecom_connect(**{**values, **overrides})


def test_wecom_connect_seals_credentials_and_audits_without_them(account):
    # when a supervisor connects the account
    connection = _connect(account)

    # then no credential is stored in the clear, they open again, and the journal names only fields
    stored = WeComConnection.objects.filter(pk=connection.pk).values().get()
    assert all(value not in str(stored) for value in (SECRET, CALLBACK_TOKEN, AES_KEY))
    opened = credentials_get(account.id)
    assert (opened.secret, opened.token, opened.aes_key, opened.open_kfids) == (
        SECRET,
        CALLBACK_TOKEN,
        AES_KEY,
        (OPEN_KFID,),
    )
    event = RegistryAuditEvent.objects.get(action="wecom_connected")
    assert SECRET not in str(event.payload) and AES_KEY not in str(event.payload)
    shown = str(registry_payload_html(event.payload))
    assert "客服应用密钥" in shown and "企业微信客服" in shown


def test_wecom_connect_again_without_credentials_keeps_them_and_writes_nothing_unchanged(account):
    _connect(account)
    _connect(account, secret=None, token=None, aes_key=None)
    assert RegistryAuditEvent.objects.filter(action="wecom_connected").count() == 1
    assert credentials_get(account.id).secret == SECRET


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"corp_id": "ww 12"}, "invalid_corp_id"),
        ({"aes_key": "tooshort"}, "invalid_aes_key"),
        ({"token": "含中文"}, "invalid_token"),
        ({"open_kfids": ["wk/../x"]}, "invalid_open_kfid"),
        ({"secret": None}, "credentials_required"),
    ],
)
def test_wecom_connect_refuses_bad_settings_with_a_reason(account, overrides, code):
    with pytest.raises(ValidationFailed) as refused:
        _connect(account, **overrides)
    assert refused.value.code == code
    assert not WeComConnection.objects.exists()


def test_wecom_disconnect_removes_the_credentials_and_is_audited(account):
    _connect(account)
    assert wecom_disconnect(account_id=account.id, actor="test") is True
    assert credentials_get(account.id) is None
    assert RegistryAuditEvent.objects.filter(action="wecom_disconnected").count() == 1


def test_wecom_connect_command_reads_a_secret_from_stdin_and_prints_the_callback_url(account, monkeypatch):
    # given the secret piped in, so it stays out of the shell's history
    monkeypatch.setattr("sys.stdin", io.StringIO(SECRET + "\n"))
    out = io.StringIO()

    # when the operator connects the account
    call_command(
        "wecom_connect",
        account.id,
        "--corp-id",
        CORP_ID,
        "--secret",
        "-",
        "--token",
        CALLBACK_TOKEN,
        "--aes-key",
        AES_KEY,
        "--open-kfid",
        OPEN_KFID,
        stdout=out,
    )

    # then the secret is the one piped in, and the output says where WeCom must call, never the secret
    assert credentials_get(account.id).secret == SECRET
    assert f"/wecom/{account.id}/callback/" in out.getvalue()
    assert SECRET not in out.getvalue()


def test_wecom_connect_command_refuses_a_bad_key_with_a_message(account):
    with pytest.raises(CommandError, match="EncodingAESKey"):
        call_command(
            "wecom_connect",
            account.id,
            "--corp-id",
            CORP_ID,
            "--secret",
            SECRET,
            "--token",
            CALLBACK_TOKEN,
            "--aes-key",
            "short",
        )


def test_wecom_admin_saves_through_the_service_and_never_shows_the_secret(admin_client, account):
    # given a supervisor adds the connection in admin
    response = admin_client.post(
        reverse("admin:wecom_wecomconnection_add"),
        {
            "account": account.id,
            "corp_id": CORP_ID,
            "secret": SECRET,
            "token": CALLBACK_TOKEN,
            "aes_key": AES_KEY,
            "open_kfids_text": OPEN_KFID,
            "upstream": "wecom",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]

    # when she opens it again
    page = admin_client.get(reverse("admin:wecom_wecomconnection_change", args=[account.id])).content.decode()

    # then the credentials are not on the page, the callback URL is, and saving with blanks keeps them
    assert SECRET not in page and AES_KEY not in page and CALLBACK_TOKEN not in page
    assert f"/wecom/{account.id}/callback/" in page
    admin_client.post(
        reverse("admin:wecom_wecomconnection_change", args=[account.id]),
        {
            "corp_id": CORP_ID,
            "secret": "",
            "token": "",
            "aes_key": "",
            "open_kfids_text": OPEN_KFID,
            "upstream": "wecom",
        },
    )
    assert credentials_get(account.id).secret == SECRET


def test_wecom_admin_refusal_keeps_the_form_with_the_reason(admin_client, account):
    response = admin_client.post(
        reverse("admin:wecom_wecomconnection_add"),
        {
            "account": account.id,
            "corp_id": CORP_ID,
            "secret": SECRET,
            "token": CALLBACK_TOKEN,
            "aes_key": "short",
            "open_kfids_text": "",
            "upstream": "wecom",
        },
    )
    assert response.status_code == 200
    assert "EncodingAESKey" in response.content.decode()
    assert not WeComConnection.objects.exists()


def test_wecom_admin_hides_another_accounts_connection_from_a_supervisor(admin_client, account, other_account):
    # given globex is connected, and acme's supervisor is no member of globex
    _connect(other_account)

    # when acme's supervisor opens globex's connection, or posts to it
    url = reverse("admin:wecom_wecomconnection_change", args=[other_account.id])
    page = admin_client.get(url)
    changed = admin_client.post(url, {"corp_id": CORP_ID, "open_kfids_text": "wkAttacker", "upstream": "default"})

    # then she cannot see or change it, and it is not in her list
    assert page.status_code in (302, 403, 404)
    assert changed.status_code in (302, 403, 404)
    assert WeComConnection.objects.get(pk=other_account.id).open_kfids == [OPEN_KFID]
    listing = admin_client.get(reverse("admin:wecom_wecomconnection_changelist")).content.decode()
    assert url not in listing


def test_wecom_connect_command_rotating_the_secret_keeps_the_kf_accounts_and_upstream(account):
    # given a connection serving one kf account, replies through the shared upstream
    _connect(account, upstream="default")

    # when the operator rotates only the secret
    call_command("wecom_connect", account.id, "--corp-id", CORP_ID, "--secret", "new-secret-2026", stdout=io.StringIO())

    # then the kf accounts and the upstream are as they were
    connection = WeComConnection.objects.get(pk=account.id)
    assert (connection.open_kfids, connection.upstream) == ([OPEN_KFID], "default")
    assert credentials_get(account.id).secret == "new-secret-2026"
