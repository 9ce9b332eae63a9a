"""Writes of an account's WeCom connection: connect (or change) and disconnect, each audited in the
registry's journal. The secret, the callback token and the EncodingAESKey are sealed before they
are stored and never written to the audit, a log or an answer."""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction

from qiwei_site.platform.audit import registry_audit_record
from qiwei_site.platform.errors import NotFound, ValidationFailed
from qiwei_site.platform.history import Actor
from qiwei_site.platform.models import AuditAction, WeComAccount
from qiwei_site.platform.sealing import seal
from wecom.crypto import WeComCrypto
from wecom.models import Upstream, WeComConnection

CORP_ID_RE = re.compile(r"\A[A-Za-z0-9]{4,64}\Z")
OPEN_KFID_RE = re.compile(r"\A[A-Za-z0-9_-]{1,64}\Z")
CALLBACK_TOKEN_RE = re.compile(r"\A[A-Za-z0-9]{1,32}\Z")  # WeCom's console: letters and digits, ≤ 32
SECRET_MAX_CHARS = 128


def _clean_open_kfids(raw: Any) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        raw = [part.strip() for part in raw.replace("，", ",").split(",") if part.strip()]
    if not isinstance(raw, list | tuple):
        raise ValidationFailed("open_kfid 必须是列表 (open_kfids must be a list).", code="invalid_open_kfid")
    cleaned: list[str] = []
    for value in raw:
        if not isinstance(value, str) or not OPEN_KFID_RE.fullmatch(value):
            raise ValidationFailed(
                "open_kfid 只能包含字母、数字、下划线和连字符 (open_kfid: letters, digits, _ and -).",
                code="invalid_open_kfid",
            )
        if value not in cleaned:
            cleaned.append(value)
    return cleaned


def _validated(*, corp_id: str, secret: str | None, token: str | None, aes_key: str | None) -> None:
    if not isinstance(corp_id, str) or not CORP_ID_RE.fullmatch(corp_id):
        raise ValidationFailed(
            "企业 ID 格式不对：4–64 位字母或数字 (corp id: 4–64 letters or digits).", code="invalid_corp_id"
        )
    if secret is not None and (not secret or len(secret) > SECRET_MAX_CHARS or not secret.isprintable()):
        raise ValidationFailed(
            "Secret 不能为空，且最长 128 个字符 (secret: 1–128 printable chars).", code="invalid_secret"
        )
    if token is not None and not CALLBACK_TOKEN_RE.fullmatch(token):
        raise ValidationFailed(
            "回调 Token 只能是 1–32 位字母或数字 (token: 1–32 letters or digits).", code="invalid_token"
        )
    if aes_key is not None:
        try:
            WeComCrypto(token=token or "x", encoding_aes_key=aes_key, receive_id=corp_id)
        except ValueError:
            raise ValidationFailed(
                "EncodingAESKey 必须是企业微信后台生成的 43 位字符 (EncodingAESKey: 43 chars from WeCom).",
                code="invalid_aes_key",
            ) from None


def wecom_connect(
    *,
    account_id: str,
    corp_id: str,
    secret: str | None,
    token: str | None,
    aes_key: str | None,
    open_kfids: Any = None,
    upstream: str | None = None,
    actor: Actor,
    reason: str = "连接企业微信客服",
) -> WeComConnection:
    """Connect an account to a WeCom kf app, or change its connection. A secret, token or key given
    as None keeps the stored one (the admin form leaves them blank); a new connection needs all three.
    `open_kfids` None and `upstream` None keep what is stored (a new connection: every kf account,
    replies through WeCom); an empty list means every kf account of the corp."""
    account = WeComAccount.objects.filter(pk=account_id).first()
    if account is None:
        raise NotFound(f"账号 {account_id} 不存在 (no such account).", code="account_not_found")
    if upstream is not None and upstream not in Upstream.values:
        raise ValidationFailed(f"上游只能是 {'、'.join(Upstream.values)}", code="invalid_upstream")
    corp_id = (corp_id or "").strip() if isinstance(corp_id, str) else corp_id
    kfids = None if open_kfids is None else _clean_open_kfids(open_kfids)
    _validated(corp_id=corp_id, secret=secret, token=token, aes_key=aes_key)
    with transaction.atomic():
        existing = WeComConnection.objects.select_for_update().filter(account=account).first()
        if existing is None and (secret is None or token is None or aes_key is None):
            raise ValidationFailed(
                "首次连接需要 Secret、回调 Token 和 EncodingAESKey (a new connection needs all three).",
                code="credentials_required",
            )
        connection = existing or WeComConnection(account=account)
        if kfids is None:
            kfids = list(connection.open_kfids or []) if existing is not None else []
        if upstream is None:
            upstream = connection.upstream if existing is not None else Upstream.WECOM
        changed: list[str] = []
        for name, value in (("corp_id", corp_id), ("open_kfids", kfids), ("upstream", upstream)):
            if getattr(connection, name) != value:
                setattr(connection, name, value)
                changed.append(name)
        sealed: tuple[tuple[str, str | None], ...] = (
            ("secret_sealed", secret),
            ("token_sealed", token),
            ("aes_key_sealed", aes_key),
        )
        for sealed_name, plain in sealed:
            if plain is not None:
                setattr(connection, sealed_name, seal(plain))
                changed.append(sealed_name.removesuffix("_sealed"))
        if existing is not None and not changed:
            return existing
        connection.save()
        registry_audit_record(
            action=AuditAction.WECOM_CONNECTED,
            account_id=account_id,
            actor=actor,
            reason=reason,
            # What changed, never a credential's value.
            payload={"corp_id": corp_id, "open_kfids": kfids, "upstream": upstream, "fields": changed},
        )
    return connection


def wecom_disconnect(*, account_id: str, actor: Actor, reason: str = "断开企业微信客服") -> bool:
    with transaction.atomic():
        deleted, _ = WeComConnection.objects.filter(account_id=account_id).delete()
        if deleted:
            registry_audit_record(
                action=AuditAction.WECOM_DISCONNECTED, account_id=account_id, actor=actor, reason=reason, payload={}
            )
    return bool(deleted)
