"""WeCom's kf API as this account sees it: an access_token fetched once and shared by every worker
(the shared cache), refreshed when WeCom says it expired, and every `errcode` turned into a Chinese
message with its kind (`wecom.errcodes`). Nothing here logs a secret, a token or a message's words."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any

import requests
from django.conf import settings
from django.core.cache import caches

from qiwei_site.platform.sealing import SealBroken, seal, unseal
from wecom.errcodes import errcode_kind, errcode_message

logger = logging.getLogger(__name__)

TOKEN_CACHE_ALIAS = "shared"
# WeCom's tokens live 7,200 s; the cached copy is dropped this much earlier so none is used as it dies.
TOKEN_EARLY_SECONDS = 300


class WeComApiError(Exception):
    """WeCom answered with an errcode, or could not be reached (`errcode` None). The message is for
    people (Chinese); `kind` is the errcode's kind (token, transient, window, quota, config, request)
    or "unreachable"."""

    def __init__(
        self, message: str, *, errcode: int | None = None, kind: str = "unreachable", errmsg: str = ""
    ) -> None:
        super().__init__(message)
        self.errcode = errcode
        self.kind = kind
        self.errmsg = errmsg  # WeCom's own words, for telling codes apart; never shown to people


@dataclass(frozen=True)
class Credentials:
    account_id: str
    corp_id: str
    secret: str = field(repr=False)
    token: str = field(repr=False)
    aes_key: str = field(repr=False)
    open_kfids: tuple[str, ...] = ()


class WeComClient:
    def __init__(self, credentials: Credentials, *, api_base: str | None = None, timeout: float | None = None) -> None:
        self.credentials = credentials
        self.api_base = (api_base or settings.QIWEI_WECOM_API_BASE).rstrip("/")
        self.timeout = timeout if timeout is not None else settings.QIWEI_WECOM_TIMEOUT_SECONDS

    # --- the access token -----------------------------------------------------------------------

    def _token_key(self) -> str:
        # Keyed by the credentials too: a new secret never reuses the old secret's token.
        digest = hashlib.sha256(f"{self.credentials.corp_id}\0{self.credentials.secret}".encode()).hexdigest()[:16]
        return f"qiwei:wecom:access_token:{self.credentials.account_id}:{digest}"

    def token_forget(self) -> None:
        try:
            caches[TOKEN_CACHE_ALIAS].delete(self._token_key())
        except Exception:  # a broken cache costs a fetch, never the call
            logger.warning("wecom: the shared cache refused to drop an access token")

    def access_token(self, *, refresh: bool = False, timeout: float | None = None) -> str:
        cache = caches[TOKEN_CACHE_ALIAS]
        key = self._token_key()
        if not refresh:
            try:
                cached = cache.get(key)
            except Exception:
                cached = None
            if isinstance(cached, str) and cached:
                try:
                    return unseal(cached)
                except SealBroken:
                    pass  # sealed under a key since rotated away: fetch a new one
        body = self._request(
            "GET",
            "/cgi-bin/gettoken",
            params={"corpid": self.credentials.corp_id, "corpsecret": self.credentials.secret},
            timeout=timeout,
        )
        self._raise_for(body)
        token = body.get("access_token")
        if not isinstance(token, str) or not token:
            raise WeComApiError("企业微信没有返回 access_token", kind="transient")
        expires_in = body.get("expires_in")
        lifetime = expires_in if isinstance(expires_in, int) and expires_in > 0 else 7200
        try:
            # Sealed: the shared cache is a file or a Redis key, and a token lets anyone send as the
            # account for two hours.
            cache.set(key, seal(token), timeout=max(60, lifetime - TOKEN_EARLY_SECONDS))
        except Exception:
            logger.warning("wecom: the shared cache refused an access token; it will be fetched again")
        return token

    # --- calls ----------------------------------------------------------------------------------

    def call(self, path: str, payload: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """POST `payload` to `path` with the account's token; a token WeCom calls expired or invalid
        is fetched again and the call made once more. Raises WeComApiError for any other errcode."""
        for attempt in (0, 1):
            token = self.access_token(refresh=attempt == 1, timeout=timeout)
            body = self._request("POST", path, params={"access_token": token}, json=payload, timeout=timeout)
            code = _errcode(body)
            if code and errcode_kind(code) == "token" and attempt == 0:
                self.token_forget()
                continue
            self._raise_for(body)
            return body
        raise AssertionError("unreachable")  # pragma: no cover

    def sync_msg(self, *, open_kfid: str, cursor: str = "", token: str = "", limit: int = 1000) -> dict[str, Any]:
        payload: dict[str, Any] = {"open_kfid": open_kfid, "limit": limit}
        if cursor:
            payload["cursor"] = cursor
        if token:
            payload["token"] = token
        return self.call("/cgi-bin/kf/sync_msg", payload)

    def send_text(self, *, touser: str, open_kfid: str, text: str, msgid: str) -> str:
        body = self.call(
            "/cgi-bin/kf/send_msg",
            {"touser": touser, "open_kfid": open_kfid, "msgid": msgid, "msgtype": "text", "text": {"content": text}},
        )
        return str(body.get("msgid") or msgid)[:100]

    def customers(self, external_userids: list[str]) -> list[dict[str, Any]]:
        if not external_userids:
            return []
        body = self.call("/cgi-bin/kf/customer/batchget", {"external_userid_list": external_userids[:100]})
        found = body.get("customer_list")
        return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []

    # --- plumbing -------------------------------------------------------------------------------

    def _request(self, method: str, path: str, *, timeout: float | None = None, **kwargs: Any) -> dict[str, Any]:
        try:
            response = requests.request(method, f"{self.api_base}{path}", timeout=timeout or self.timeout, **kwargs)
        except requests.Timeout:
            raise WeComApiError(f"企业微信 {timeout or self.timeout:g} 秒内无响应") from None
        except requests.RequestException as exc:
            raise WeComApiError(f"无法连接企业微信（{exc.__class__.__name__}）") from None
        if response.status_code >= 400:
            raise WeComApiError(f"企业微信返回 HTTP {response.status_code}")
        try:
            body = response.json()
        except ValueError:
            raise WeComApiError("企业微信的回答不是 JSON") from None
        if not isinstance(body, dict):
            raise WeComApiError("企业微信的回答不是 JSON 对象")
        return body

    @staticmethod
    def _raise_for(body: dict[str, Any]) -> None:
        code = _errcode(body)
        if code:
            raw = body.get("errmsg")
            errmsg = raw if isinstance(raw, str) else ""
            raise WeComApiError(
                errcode_message(code, errmsg), errcode=code, kind=errcode_kind(code), errmsg=errmsg[:200]
            )


def _errcode(body: dict[str, Any]) -> int:
    code = body.get("errcode", 0)
    try:
        return int(code or 0)
    except (TypeError, ValueError):
        return -1
