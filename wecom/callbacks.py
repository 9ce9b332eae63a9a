"""Taking WeCom's callbacks (the view in `wecom.views` is thin): verify, decrypt, refuse what is not
the account's own, take each event once, queue its pull."""

from __future__ import annotations

import hashlib
import time

from django.db import IntegrityError, transaction

from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.sealing import SealBroken
from qiwei_site.platform.tenancy import InvalidAccountId, validate_account_id
from wecom.crypto import WeComCrypto, WeComCryptoError, xml_fields
from wecom.models import WeComCallback, WeComConnection
from wecom.selectors import connection_get, credentials_of
from wecom.services import OPEN_KFID_RE

# WeCom signs the time it sent a callback; one older (or newer) than this is refused as a replay.
REPLAY_WINDOW_SECONDS = 300
KF_EVENT = "kf_msg_or_event"


class CallbackRefused(ApplicationError):
    code = "callback_refused"
    status_code = 403

    def __init__(self, detail: str, *, code: str | None = None, status: int | None = None) -> None:
        super().__init__(detail, code=code)
        if status is not None:
            self.status_code = status


def _crypto_for(account_id: str) -> tuple[WeComConnection, WeComCrypto]:
    try:
        validate_account_id(account_id)
    except InvalidAccountId:
        raise CallbackRefused("账号不存在 (no such account).", code="not_found", status=404) from None
    connection = connection_get(account_id)
    if connection is None:
        raise CallbackRefused("该账号没有连接企业微信客服 (not connected).", code="wecom_not_connected", status=404)
    if not connection.account.is_active:
        raise CallbackRefused("该账号已停用 (account inactive).", code="account_inactive", status=404)
    try:
        credentials = credentials_of(connection)
    except SealBroken:
        raise CallbackRefused(
            "企业微信凭据暂时无法打开（密封密钥不可用），请稍后重试 (credentials unavailable).",
            code="credentials_unavailable",
            status=503,
        ) from None
    crypto = WeComCrypto(token=credentials.token, encoding_aes_key=credentials.aes_key, receive_id=credentials.corp_id)
    return connection, crypto


def _fresh(timestamp: str) -> None:
    try:
        sent = int(timestamp)
    except (TypeError, ValueError):
        raise CallbackRefused("回调缺少有效的时间戳 (bad timestamp).", code="callback_bad_timestamp") from None
    if abs(time.time() - sent) > REPLAY_WINDOW_SECONDS:
        raise CallbackRefused("回调时间戳已过期，拒绝重放 (stale callback refused).", code="callback_stale")


def _refused(error: WeComCryptoError) -> CallbackRefused:
    return CallbackRefused(
        f"回调未通过企业微信签名或解密校验 (callback failed verification: {error.code}).", code=f"callback_{error.code}"
    )


def callback_verify_url(*, account_id: str, msg_signature: str, timestamp: str, nonce: str, echostr: str) -> str:
    """WeCom's URL check: the echostr decrypted, when its signature holds."""
    _connection, crypto = _crypto_for(account_id)
    _fresh(timestamp)
    try:
        return crypto.verify_url(msg_signature=msg_signature, timestamp=timestamp, nonce=nonce, echostr=echostr)
    except WeComCryptoError as error:
        raise _refused(error) from None


def callback_take(*, account_id: str, body: bytes, msg_signature: str, timestamp: str, nonce: str) -> bool:
    """Verify and take one callback; True when it queued a pull (False: a retry of one already
    taken, or an event that needs none)."""
    connection, crypto = _crypto_for(account_id)
    _fresh(timestamp)
    try:
        inner = crypto.decrypt_message(body=body, msg_signature=msg_signature, timestamp=timestamp, nonce=nonce)
        fields = xml_fields(inner)
    except WeComCryptoError as error:
        raise _refused(error) from None
    to_user = fields.get("ToUserName", "")
    if to_user and to_user != connection.corp_id:
        raise CallbackRefused("回调不是发给本企业的 (callback for another corp).", code="callback_receiver")
    if fields.get("Event") != KF_EVENT:
        return False
    open_kfid = fields.get("OpenKfId", "")
    if not OPEN_KFID_RE.fullmatch(open_kfid):
        raise CallbackRefused("回调缺少有效的 OpenKfId (bad OpenKfId).", code="callback_bad_open_kfid", status=400)
    if connection.open_kfids and open_kfid not in connection.open_kfids:
        return False  # a kf account this account does not serve
    digest = hashlib.sha256(inner.encode("utf-8")).hexdigest()
    sync_token = fields.get("Token", "")[:128]
    try:
        with transaction.atomic():
            WeComCallback.objects.create(account=connection.account, digest=digest, open_kfid=open_kfid)
    except IntegrityError:
        return False  # WeCom's retry of a callback already taken
    # Taken (committed): queue its pull now, inside the request, so a refusing broker is known
    # before WeCom gets its answer.
    _queue_sync(account_id, open_kfid, sync_token, digest)
    return True


def _queue_sync(account_id: str, open_kfid: str, token: str, digest: str) -> None:
    """Queue the pull; when the broker refuses, forget that the callback was taken, so WeCom's retry
    of it is taken again (the view answers 503 and WeCom retries)."""
    from wecom.tasks import wecom_sync_task

    try:
        wecom_sync_task.delay(account_id, open_kfid, token)
    except Exception:
        WeComCallback.objects.filter(account_id=account_id, digest=digest).delete()
        raise
