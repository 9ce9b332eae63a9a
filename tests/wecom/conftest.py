"""Fixtures for WeCom: a running stand-in (WeCom's kf API on 127.0.0.1) and the `acme` account
connected to it, and a helper that posts a signed, encrypted callback as WeCom does."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import pytest
from django.core.cache import caches
from django.test import Client

from wecom.models import WeComConnection
from wecom.services import wecom_connect
from wecom.standin import WeComStandin

CORP_ID = "ww5f3a9c1e7b2d4068"
SECRET = "kf-secret-Zt8qWm3Lx0Rb6Yv2Nc5Hs9Pd1Gf4Jk7A"
CALLBACK_TOKEN = "Qk7Tn2Wb9Xc4"
AES_KEY = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"
OPEN_KFID = "wkAnJuKe01"


@pytest.fixture(autouse=True)
def _fresh_shared_cache() -> Iterator[None]:
    caches["shared"].clear()  # access tokens and statuses of another test's stand-in
    yield
    caches["shared"].clear()


def running_standin(callback_url: str | None = None) -> WeComStandin:
    """The stand-in for the test corp, started (the caller stops it)."""
    return WeComStandin(
        corp_id=CORP_ID,
        secret=SECRET,
        token=CALLBACK_TOKEN,
        encoding_aes_key=AES_KEY,
        open_kfids=[OPEN_KFID],
        callback_url=callback_url,
    ).start()


def connect_to(account_id: str, standin: WeComStandin, settings) -> WeComConnection:
    """The account connected to the stand-in's corp: its replies go through WeCom."""
    settings.QIWEI_WECOM_API_BASE = standin.url
    return wecom_connect(
        account_id=account_id,
        corp_id=CORP_ID,
        secret=SECRET,
        token=CALLBACK_TOKEN,
        aes_key=AES_KEY,
        open_kfids=[OPEN_KFID],
        actor="test",
        reason="接入企业微信客服",
    )


@pytest.fixture
def standin() -> Iterator[WeComStandin]:
    server = running_standin()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def connected(account, standin, settings) -> WeComConnection:
    """`acme` connected to the stand-in's corp, replies through WeCom."""
    return connect_to(account.id, standin, settings)


def callback_parts(
    standin: WeComStandin, *, open_kfid: str = OPEN_KFID, corp_id: str | None = None, timestamp: int | None = None
) -> tuple[dict[str, str], bytes]:
    """(query, body) of a kf_msg_or_event callback, signed and encrypted as WeCom does."""
    inner = (
        f"<xml><ToUserName><![CDATA[{corp_id or standin.corp_id}]]></ToUserName>"
        f"<CreateTime>{int(time.time())}</CreateTime><MsgType><![CDATA[event]]></MsgType>"
        f"<Event><![CDATA[kf_msg_or_event]]></Event><Token><![CDATA[{standin._issue_msg_token()}]]></Token>"
        f"<OpenKfId><![CDATA[{open_kfid}]]></OpenKfId></xml>"
    )
    stamp = str(timestamp if timestamp is not None else int(time.time()))
    nonce = str(secrets.randbelow(10**10))
    body, signature = standin.crypto.callback_body(inner, timestamp=stamp, nonce=nonce)
    return {"msg_signature": signature, "timestamp": stamp, "nonce": nonce}, body.encode("utf-8")


def post_callback(client: Client, account_id: str, query: dict[str, str], body: bytes):
    from urllib.parse import urlencode

    return client.post(f"/wecom/{account_id}/callback/?{urlencode(query)}", data=body, content_type="text/xml")
