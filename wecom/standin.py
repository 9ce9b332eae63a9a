"""A stand-in for WeCom's 微信客服 (kf) API on 127.0.0.1, for tests and the demo: gettoken, kf/sync_msg, kf/send_msg
and kf/customer/batchget with WeCom's rules and errcodes, and the encrypted kf_msg_or_event callbacks WeCom posts."""

from __future__ import annotations

import base64
import binascii
import copy
import hmac
import ipaddress
import json
import logging
import re
import secrets
import struct
import threading
import time
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

from wecom import errcodes
from wecom.crypto import WeComCrypto, message_signature

__all__ = ["WeComStandin"]

logger = logging.getLogger(__name__)

ACCESS_TOKEN_TTL = 7200
# sync_msg's token "10分钟内有效" (接收消息和事件).
MSG_TOKEN_TTL = 600
# send_msg: "仅当微信客户在主动发送消息给客服后的48小时内，企业可发送消息给客户，最多可发送5条消息" (发送消息).
REPLY_WINDOW = 48 * 3600
REPLIES_PER_CUSTOMER_MESSAGE = 5
# sync_msg "可以通过该接口获取最近3天内具体的消息内容和事件".
SYNC_HISTORY = 3 * 24 * 3600
SYNC_LIMIT_MAX = 1000
TEXT_MAX_BYTES = 2048
BATCHGET_MAX = 100
# WeCom gives a callback receiver 5 seconds to answer.
CALLBACK_TIMEOUT = 5.0
MAX_BODY_BYTES = 2 * 1024 * 1024
_MSGID_RE = re.compile(r"[0-9a-zA-Z_-]{1,32}")
_AVATAR_RE = re.compile(r"/avatar/([^/]{1,128})\.png")

Json = dict[str, Any]


class _ApiError(Exception):
    def __init__(self, errcode: int, errmsg: str, status: int = 200) -> None:
        super().__init__(errmsg)
        self.errcode = errcode
        self.errmsg = errmsg
        self.status = status


@dataclass
class _Stored:
    seq: int
    open_kfid: str
    external_userid: str
    send_time: int
    message: Json


def _cdata(value: str) -> str:
    return "<![CDATA[" + value.replace("]]>", "]]]]><![CDATA[>") + "]]>"


def _tiny_png() -> bytes:
    """A 1x1 grey PNG, so avatar URLs in customer profiles resolve in the demo."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\x99")) + chunk(b"IEND", b"")
    )


_AVATAR_PNG = _tiny_png()


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class WeComStandin:
    """WeCom for one corp, in this process. Its clock is time.time() + clock_offset: tests move it to cross the
    48-hour window or to age tokens. Every API answer carries errcode/errmsg as WeCom's do."""

    def __init__(
        self,
        *,
        corp_id: str,
        secret: str,
        token: str,
        encoding_aes_key: str,
        open_kfids: list[str] | None = None,
        callback_url: str | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
    ) -> None:
        self.corp_id = corp_id
        self._secret = secret
        self.crypto = WeComCrypto(token=token, encoding_aes_key=encoding_aes_key, receive_id=corp_id)
        self.open_kfids: list[str] = list(open_kfids) if open_kfids else ["wkstandin01"]
        self.callback_url = callback_url
        self.host = host
        self.port = port
        self.url = ""
        self.clock_offset = 0.0
        self.sent: list[Json] = []
        self.calls: list[tuple[str, Json]] = []
        # (open_kfid, HTTP status or None when it could not be delivered, error text) of each callback posted.
        self.callbacks: list[tuple[str, int | None, str]] = []
        self.last_echostr: str | None = None
        self._lock = threading.RLock()
        self._access_tokens: dict[str, float] = {}  # token -> expiry on the stand-in's clock
        self._msg_tokens: dict[str, float] = {}
        self._messages: list[_Stored] = []
        self._customers: dict[str, Json] = {}
        self._last_customer_message: dict[tuple[str, str], float] = {}
        self._replies: dict[tuple[str, str], int] = {}
        self._sent_msgids: dict[tuple[str, str], Json] = {}
        self._cursor_salt = secrets.token_hex(4)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"WeComStandin(corp_id={self.corp_id!r}, url={self.url!r})"

    # --- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> WeComStandin:
        if self._server is not None:
            return self
        server = _Server((self.host, self.port), _Handler)
        server.standin = self
        self._server = server
        self.port = server.server_address[1]
        self.url = f"http://{self.host}:{self.port}"
        # A short poll interval lets stop() return at once, which matters to tests that start one per test.
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"wecom-standin-{self.port}", daemon=True
        )
        self._thread.start()
        logger.info("WeCom stand-in listening on %s", self.url)
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> WeComStandin:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- the simulated world ---------------------------------------------------------------------------------

    def now(self) -> float:
        return time.time() + self.clock_offset

    def _kfid(self, open_kfid: str | None) -> str:
        kfid = open_kfid or self.open_kfids[0]
        if kfid not in self.open_kfids:
            raise ValueError(f"unknown open_kfid {kfid!r}; this stand-in serves {self.open_kfids}")
        return kfid

    def _register(self, external_userid: str, nickname: str | None) -> None:
        known = self._customers.get(external_userid)
        if known is None:
            self._customers[external_userid] = {
                "external_userid": external_userid,
                "nickname": nickname or "客户" + external_userid[-4:],
                "avatar": f"{self.url or 'http://127.0.0.1'}/avatar/{external_userid}.png",
                "gender": 0,
                "unionid": "",
            }
        elif nickname:
            known["nickname"] = nickname

    def _append(self, kfid: str, external_userid: str, message: Json) -> Json:
        seq = len(self._messages) + 1
        send_time = int(self.now())
        stored: Json = {"msgid": f"from_msgid_{secrets.randbelow(10**12):012d}{seq:07d}"}
        # WeCom leaves open_kfid and external_userid out of event messages; they are inside "event".
        if message.get("msgtype") != "event":
            stored.update(open_kfid=kfid, external_userid=external_userid)
        stored.update(send_time=send_time)
        stored.update(message)
        self._messages.append(_Stored(seq, kfid, external_userid, send_time, stored))
        return copy.deepcopy(stored)

    def customer_says(
        self,
        external_userid: str,
        text: str = "",
        *,
        open_kfid: str | None = None,
        msgtype: str = "text",
        payload: Json | None = None,
        nickname: str | None = None,
        callback: bool = True,
    ) -> Json:
        """A message from the WeChat customer (origin 3). It opens a new 48-hour window with 5 replies.
        For msgtype other than text, payload is that type's object (e.g. {"media_id": ...} for an image)."""
        kfid = self._kfid(open_kfid)
        if msgtype == "text":
            body: Json = {"content": text, **(payload or {})}
        elif isinstance(payload, dict):
            body = dict(payload)
        else:
            raise ValueError(f"msgtype {msgtype!r} needs its payload object")
        with self._lock:
            self._register(external_userid, nickname)
            message = self._append(kfid, external_userid, {"origin": 3, "msgtype": msgtype, msgtype: body})
            self._last_customer_message[(kfid, external_userid)] = message["send_time"]
            self._replies[(kfid, external_userid)] = 0
        logger.debug("customer message %s from %s on %s", message["msgid"], external_userid, kfid)
        if callback:
            self._notify(kfid)
        return message

    def agent_says(
        self,
        external_userid: str,
        text: str,
        *,
        open_kfid: str | None = None,
        servicer_userid: str = "zhangsan",
        callback: bool = True,
    ) -> Json:
        """A reply typed by a servicer in the WeCom client (origin 5); it uses none of the API's 5 replies."""
        kfid = self._kfid(open_kfid)
        with self._lock:
            self._register(external_userid, None)
            message = self._append(
                kfid,
                external_userid,
                {"origin": 5, "servicer_userid": servicer_userid, "msgtype": "text", "text": {"content": text}},
            )
        if callback:
            self._notify(kfid)
        return message

    def event(
        self,
        external_userid: str,
        event_type: str = "enter_session",
        *,
        open_kfid: str | None = None,
        callback: bool = True,
        extra: Json | None = None,
    ) -> Json:
        """A system event (origin 4), e.g. the customer entering the session; `extra` adds the event's
        own fields (`fail_msgid` and `fail_type` of msg_send_fail, `recall_msgid` of user_recall_msg)."""
        kfid = self._kfid(open_kfid)
        detail: Json = {
            "event_type": event_type,
            "open_kfid": kfid,
            "external_userid": external_userid,
            **(extra or {}),
        }
        if event_type == "enter_session":
            detail.update(scene="", scene_param="", welcome_code=secrets.token_urlsafe(24))
        with self._lock:
            self._register(external_userid, None)
            message = self._append(kfid, external_userid, {"origin": 4, "msgtype": "event", "event": detail})
        if callback:
            self._notify(kfid)
        return message

    def expire_tokens(self) -> None:
        """Every access_token issued so far now answers 42001; gettoken issues a new one."""
        with self._lock:
            for token in self._access_tokens:
                self._access_tokens[token] = float("-inf")

    def customer(self, external_userid: str) -> Json:
        with self._lock:
            return copy.deepcopy(self._customers[external_userid])

    # --- callbacks ---------------------------------------------------------------------------------------------

    def _notify(self, kfid: str) -> tuple[int | None, str] | None:
        """Posts the callback if there is a callback_url: (HTTP status or None, error name), or None."""
        # The lock is not held here: the receiver typically calls sync_msg back before it answers.
        if not self.callback_url:
            return None
        try:
            response = self.post_callback(kfid)
        except requests.RequestException as exc:
            logger.warning("WeCom stand-in: callback for %s not delivered (%s)", kfid, type(exc).__name__)
            outcome: tuple[int | None, str] = (None, type(exc).__name__)
        else:
            if response.status_code != 200:
                logger.warning("WeCom stand-in: callback for %s answered HTTP %s", kfid, response.status_code)
            outcome = (response.status_code, "")
        with self._lock:
            self.callbacks.append((kfid, *outcome))
        return outcome

    def _issue_msg_token(self) -> str:
        token = "ENC" + secrets.token_urlsafe(33)
        with self._lock:
            self._msg_tokens[token] = self.now() + MSG_TOKEN_TTL
        return token

    def post_callback(self, open_kfid: str | None = None) -> requests.Response:
        """The kf_msg_or_event callback exactly as WeCom posts it: the inner event XML encrypted into the outer
        XML, msg_signature/timestamp/nonce in the query. Its Token is a fresh sync_msg token."""
        if not self.callback_url:
            raise RuntimeError("this stand-in has no callback_url")
        kfid = self._kfid(open_kfid)
        inner = (
            f"<xml><ToUserName>{_cdata(self.corp_id)}</ToUserName><CreateTime>{int(self.now())}</CreateTime>"
            f"<MsgType>{_cdata('event')}</MsgType><Event>{_cdata('kf_msg_or_event')}</Event>"
            f"<Token>{_cdata(self._issue_msg_token())}</Token><OpenKfId>{_cdata(kfid)}</OpenKfId></xml>"
        )
        # The query timestamp is the transport's, on the real clock, so a receiver's freshness check holds even
        # when a test has moved the stand-in's clock.
        timestamp = str(int(time.time()))
        nonce = str(secrets.randbelow(10**10))
        body, signature = self.crypto.callback_body(inner, timestamp=timestamp, nonce=nonce)
        return requests.post(
            self.callback_url,
            params={"msg_signature": signature, "timestamp": timestamp, "nonce": nonce},
            data=body.encode("utf-8"),
            headers={"Content-Type": "text/xml; charset=utf-8"},
            timeout=CALLBACK_TIMEOUT,
        )

    def verify_callback_url(self) -> requests.Response:
        """WeCom's GET check of the callback URL; the body must equal last_echostr (the echostr's plaintext)."""
        if not self.callback_url:
            raise RuntimeError("this stand-in has no callback_url")
        plaintext = str(secrets.randbelow(10**19))
        echostr = self.crypto.encrypt(plaintext)
        timestamp = str(int(time.time()))
        nonce = str(secrets.randbelow(10**10))
        self.last_echostr = plaintext
        signature = message_signature(self.crypto.token, timestamp, nonce, echostr)
        return requests.get(
            self.callback_url,
            params={"msg_signature": signature, "timestamp": timestamp, "nonce": nonce, "echostr": echostr},
            timeout=CALLBACK_TIMEOUT,
        )

    # --- the API -----------------------------------------------------------------------------------------------

    def _check_access_token(self, query: dict[str, str]) -> None:
        token = query.get("access_token", "")
        if not token:
            raise _ApiError(errcodes.TOKEN_MISSING, "access_token missing")
        expiry = self._access_tokens.get(token)
        if expiry is None:
            raise _ApiError(errcodes.TOKEN_INVALID, "invalid access_token")
        if self.now() >= expiry:
            raise _ApiError(errcodes.TOKEN_EXPIRED, "access_token expired")

    def _api_gettoken(self, query: dict[str, str]) -> Json:
        corpid, secret = query.get("corpid", ""), query.get("corpsecret", "")
        if not corpid:
            raise _ApiError(errcodes.CORP_MISSING, "corpid missing")
        if not secret:
            raise _ApiError(errcodes.SECRET_MISSING, "corpsecret missing")
        if corpid != self.corp_id:
            raise _ApiError(errcodes.CORP_INVALID, "invalid corpid")
        if not hmac.compare_digest(secret.encode("utf-8"), self._secret.encode("utf-8")):
            raise _ApiError(errcodes.SECRET_INVALID, "invalid credential")
        now = self.now()
        # "有效期内重复获取返回相同结果，过期后获取会返回新的access_token" (获取access_token).
        for token, expiry in self._access_tokens.items():
            if expiry > now:
                return {"access_token": token, "expires_in": int(expiry - now)}
        token = secrets.token_urlsafe(48)
        self._access_tokens[token] = now + ACCESS_TOKEN_TTL
        return {"access_token": token, "expires_in": ACCESS_TOKEN_TTL}

    def _encode_cursor(self, seq: int) -> str:
        return base64.urlsafe_b64encode(f"{self._cursor_salt}:{seq}".encode()).rstrip(b"=").decode("ascii")

    def _decode_cursor(self, cursor: str) -> int:
        try:
            salt, _, seq = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii").partition(":")
            value = int(seq)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise _ApiError(errcodes.INVALID_PARAMETER, "invalid cursor") from None
        if salt != self._cursor_salt or not 0 <= value <= len(self._messages):
            raise _ApiError(errcodes.INVALID_PARAMETER, "invalid cursor")
        return value

    def _api_sync_msg(self, body: Json) -> Json:
        kfid = body.get("open_kfid") or None
        if kfid is not None and kfid not in self.open_kfids:
            raise _ApiError(errcodes.OPEN_KFID_INVALID, "invalid open_kfid")
        limit = body.get("limit", SYNC_LIMIT_MAX)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= SYNC_LIMIT_MAX:
            raise _ApiError(errcodes.INVALID_PARAMETER, "invalid limit")
        token = body.get("token") or ""
        if token:
            expiry = self._msg_tokens.get(str(token))
            if expiry is None or self.now() >= expiry:
                raise _ApiError(errcodes.MSG_TOKEN_INVALID, "invalid msg token")
        cursor = body.get("cursor") or ""
        start = self._decode_cursor(str(cursor)) if cursor else 0
        horizon = self.now() - SYNC_HISTORY
        batch: list[Json] = []
        has_more = False
        last_seq = len(self._messages)
        for stored in self._messages[start:]:
            if (kfid is not None and stored.open_kfid != kfid) or stored.send_time < horizon:
                continue
            if len(batch) == limit:
                has_more = True
                break
            batch.append(copy.deepcopy(stored.message))
            last_seq = stored.seq
        return {
            "next_cursor": self._encode_cursor(last_seq),
            "has_more": 1 if has_more else 0,
            "msg_list": batch,
        }

    def _api_send_msg(self, body: Json) -> Json:
        touser, kfid, msgid = body.get("touser"), body.get("open_kfid"), body.get("msgid")
        if not isinstance(touser, str) or not touser:
            raise _ApiError(errcodes.INVALID_PARAMETER, "touser missing")
        if not isinstance(kfid, str) or kfid not in self.open_kfids:
            raise _ApiError(errcodes.OPEN_KFID_INVALID, "invalid open_kfid")
        if body.get("msgtype") != "text":
            raise _ApiError(errcodes.INVALID_MSGTYPE, "invalid msgtype (the stand-in sends text only)")
        text = body.get("text")
        content = text.get("content") if isinstance(text, dict) else None
        if not isinstance(content, str) or not content:
            raise _ApiError(errcodes.TEXT_EMPTY, "empty content")
        if len(content.encode("utf-8")) > TEXT_MAX_BYTES:
            raise _ApiError(errcodes.MESSAGE_TOO_LONG, "content size out of limit")
        if msgid is not None and (not isinstance(msgid, str) or not _MSGID_RE.fullmatch(msgid)):
            raise _ApiError(errcodes.INVALID_PARAMETER, "invalid msgid")
        if touser not in self._customers:
            raise _ApiError(errcodes.EXTERNAL_USERID_INVALID, "invalid external userid")
        if msgid is not None and (kfid, msgid) in self._sent_msgids:
            # 发送消息: "若指定msgid，开发者需确保客服账号内唯一，否则接口返回错误" -- WeCom names no code for it.
            raise _ApiError(errcodes.INVALID_PARAMETER, "msgid already used in this open_kfid")
        key = (kfid, touser)
        now = self.now()
        last = self._last_customer_message.get(key)
        if last is None or now - last > REPLY_WINDOW:
            raise _ApiError(errcodes.WINDOW_CLOSED, "send msg time limit: customer's last message over 48 hours ago")
        if self._replies.get(key, 0) >= REPLIES_PER_CUSTOMER_MESSAGE:
            raise _ApiError(errcodes.QUOTA_EXCEEDED, "send msg count limit: 5 messages per customer message")
        if msgid is None:
            msgid = secrets.token_hex(16)
        self._replies[key] = self._replies.get(key, 0) + 1
        record = {
            "msgid": msgid,
            "touser": touser,
            "open_kfid": kfid,
            "msgtype": "text",
            "text": content,
            "send_time": int(now),
        }
        self.sent.append(record)
        self._sent_msgids[(kfid, msgid)] = record
        return {"msgid": msgid}

    def _api_batchget(self, body: Json) -> Json:
        ids = body.get("external_userid_list")
        if not isinstance(ids, list) or not 1 <= len(ids) <= BATCHGET_MAX or not all(isinstance(i, str) for i in ids):
            raise _ApiError(errcodes.INVALID_PARAMETER, "invalid external_userid_list")
        found = [copy.deepcopy(self._customers[i]) for i in ids if i in self._customers]
        return {"customer_list": found, "invalid_external_userid": [i for i in ids if i not in self._customers]}

    def _handle_api(self, method: str, path: str, query: dict[str, str], body: Json | None) -> Json:
        """One WeCom API call; raises _ApiError for WeCom's error answers."""
        with self._lock:
            if method == "GET" and path == "/cgi-bin/gettoken":
                self.calls.append((path, {**query, "corpsecret": "***"} if "corpsecret" in query else dict(query)))
                return self._api_gettoken(query)
            routes = {
                "/cgi-bin/kf/sync_msg": self._api_sync_msg,
                "/cgi-bin/kf/send_msg": self._api_send_msg,
                "/cgi-bin/kf/customer/batchget": self._api_batchget,
            }
            handler = routes.get(path)
            if handler is None or method != "POST":
                raise _ApiError(errcodes.INVALID_PARAMETER, f"no such api: {method} {path}", status=404)
            self.calls.append((path, copy.deepcopy(body) if body is not None else {}))
            self._check_access_token(query)
            if body is None:
                raise _ApiError(errcodes.INVALID_PARAMETER, "Warning: wrong json format.")
            return handler(body)

    def _sent_snapshot(self) -> list[Json]:
        with self._lock:
            return copy.deepcopy(self.sent)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    standin: WeComStandin


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        # The default writes the request line, query (access_token, corpsecret) included, to stderr.
        logger.debug("WeCom stand-in %s %s", self.command, urlsplit(self.path).path)

    def _send(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _json(self, data: Json, status: int = 200) -> None:
        self._send(status, json.dumps(data, ensure_ascii=False).encode("utf-8"), "application/json; charset=utf-8")

    def _read_raw(self) -> bytes:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            raise _ApiError(errcodes.INVALID_PARAMETER, "bad Content-Length", status=400) from None
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            raise _ApiError(errcodes.INVALID_PARAMETER, "body too large", status=413)
        return self.rfile.read(length) if length > 0 else b""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        standin = self.server.standin
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        try:
            # Read the whole body first, whatever the answer, so a kept-alive connection stays in step.
            raw = self._read_raw()
            body = _parse_json(raw) if method == "POST" else None
            if parts.path.startswith("/standin/"):
                self._control(method, parts.path, body)
                return
            if method == "GET" and _AVATAR_RE.fullmatch(parts.path):
                self._send(200, _AVATAR_PNG, "image/png")
                return
            result = standin._handle_api(method, parts.path, query, body)
            self._json({"errcode": 0, "errmsg": "ok", **result})
        except _ApiError as exc:
            self._json({"errcode": exc.errcode, "errmsg": exc.errmsg}, status=exc.status)
        except Exception:
            logger.exception("WeCom stand-in failed on %s %s", method, parts.path)
            self._json({"errcode": errcodes.SYSTEM_BUSY, "errmsg": "system error"}, status=500)

    def _control(self, method: str, path: str, body: Json | None) -> None:
        """The demo's controls: simulate a customer, list what was sent. Loopback callers only."""
        if not _is_loopback(self.client_address[0]):
            raise _ApiError(errcodes.INVALID_PARAMETER, "control endpoints answer 127.0.0.1 only", status=403)
        standin = self.server.standin
        if method == "GET" and path == "/standin/sent":
            self._json({"errcode": 0, "errmsg": "ok", "sent": standin._sent_snapshot()})
            return
        if method == "POST" and path == "/standin/customer_says":
            if body is None:
                raise _ApiError(errcodes.INVALID_PARAMETER, "Warning: wrong json format.", status=400)
            user, text = body.get("external_userid"), body.get("text")
            kfid, nickname = body.get("open_kfid") or None, body.get("nickname") or None
            if not isinstance(user, str) or not user or not isinstance(text, str) or not text:
                raise _ApiError(errcodes.INVALID_PARAMETER, "external_userid and text are required", status=400)
            if kfid is not None and kfid not in standin.open_kfids:
                raise _ApiError(errcodes.OPEN_KFID_INVALID, "invalid open_kfid", status=400)
            message = standin.customer_says(user, text, open_kfid=kfid, nickname=nickname, callback=False)
            outcome = standin._notify(message["open_kfid"])
            callback = None if outcome is None else {"status": outcome[0], "error": outcome[1]}
            self._json({"errcode": 0, "errmsg": "ok", "message": message, "callback": callback})
            return
        raise _ApiError(errcodes.INVALID_PARAMETER, f"no such control: {method} {path}", status=404)


def _parse_json(raw: bytes) -> Json | None:
    try:
        data = json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None
