"""The WeCom stand-in over real HTTP: tokens, sync_msg paging, send_msg's 48-hour and 5-message rules, batchget,
and the encrypted callbacks it posts, checked with wecom.crypto."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.core.management import CommandError, call_command

from wecom import errcodes
from wecom.crypto import WeComCrypto, xml_fields
from wecom.management.commands.wecom_standin import Command
from wecom.standin import WeComStandin

CORP_ID = "wwstandin0000001"
SECRET = "standin-secret-0123456789"
TOKEN = "standinToken"
AES_KEY = "6qkdMrq68nTKduznJYO1A37W2oEgpkMUvkttRToqhUt"
KFID = "wkstandin01"
OTHER_KFID = "wkstandin02"
HOURS = 3600


class Receiver:
    """A tiny callback receiver, as the backoffice would be: verifies and decrypts with wecom.crypto."""

    def __init__(self) -> None:
        self.crypto = WeComCrypto(token=TOKEN, encoding_aes_key=AES_KEY, receive_id=CORP_ID)
        self.received: list[dict[str, str]] = []
        self.errors: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _query(self) -> dict[str, str]:
                return {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}

            def _answer(self, status: int, text: str) -> None:
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                q = self._query()
                try:
                    echo = receiver.crypto.verify_url(
                        msg_signature=q["msg_signature"],
                        timestamp=q["timestamp"],
                        nonce=q["nonce"],
                        echostr=q["echostr"],
                    )
                except Exception as exc:
                    receiver.errors.append(repr(exc))
                    self._answer(403, "")
                    return
                self._answer(200, echo)

            def do_POST(self) -> None:
                q = self._query()
                body = self.rfile.read(int(self.headers["Content-Length"]))
                try:
                    inner = receiver.crypto.decrypt_message(
                        body=body, msg_signature=q["msg_signature"], timestamp=q["timestamp"], nonce=q["nonce"]
                    )
                except Exception as exc:
                    receiver.errors.append(repr(exc))
                    self._answer(403, "")
                    return
                receiver.received.append(xml_fields(inner))
                self._answer(200, "success")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/wecom/demo/callback/"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def standin(receiver: Receiver) -> Iterator[WeComStandin]:
    with WeComStandin(
        corp_id=CORP_ID,
        secret=SECRET,
        token=TOKEN,
        encoding_aes_key=AES_KEY,
        open_kfids=[KFID, OTHER_KFID],
        callback_url=receiver.url,
    ) as s:
        yield s


def gettoken(s: WeComStandin, corpid: str = CORP_ID, corpsecret: str = SECRET) -> dict[str, Any]:
    return requests.get(
        f"{s.url}/cgi-bin/gettoken", params={"corpid": corpid, "corpsecret": corpsecret}, timeout=5
    ).json()


def access_token(s: WeComStandin) -> str:
    answer = gettoken(s)
    assert answer["errcode"] == 0, answer
    return str(answer["access_token"])


def api(s: WeComStandin, path: str, body: dict[str, Any], token: str | None = None) -> dict[str, Any]:
    token = access_token(s) if token is None else token
    response = requests.post(f"{s.url}/cgi-bin/kf/{path}", params={"access_token": token}, json=body, timeout=5)
    assert response.status_code == 200
    answer: dict[str, Any] = response.json()
    assert "errcode" in answer and "errmsg" in answer
    return answer


def send(s: WeComStandin, touser: str, content: str = "您好", **extra: Any) -> dict[str, Any]:
    body = {"touser": touser, "open_kfid": KFID, "msgtype": "text", "text": {"content": content}, **extra}
    return api(s, "send_msg", body)


# --- gettoken and access tokens ------------------------------------------------------------------------------------


def test_gettoken_right_credentials_issues_a_token(standin: WeComStandin) -> None:
    answer = gettoken(standin)
    assert answer["errcode"] == 0 and answer["errmsg"] == "ok"
    assert answer["access_token"] and answer["expires_in"] == 7200
    # Asked again within its validity, WeCom answers the same token
    assert gettoken(standin)["access_token"] == answer["access_token"]
    # The secret is not kept in the call log
    assert standin.calls[0] == ("/cgi-bin/gettoken", {"corpid": CORP_ID, "corpsecret": "***"})


@pytest.mark.parametrize(
    ("corpid", "corpsecret", "errcode"),
    [
        ("wwsomeoneelse", SECRET, errcodes.CORP_INVALID),
        (CORP_ID, "wrong", errcodes.SECRET_INVALID),
        ("", SECRET, errcodes.CORP_MISSING),
        (CORP_ID, "", errcodes.SECRET_MISSING),
    ],
)
def test_gettoken_wrong_credentials_answers_wecoms_code(
    standin: WeComStandin, corpid: str, corpsecret: str, errcode: int
) -> None:
    answer = gettoken(standin, corpid, corpsecret)
    assert answer["errcode"] == errcode and "access_token" not in answer


def test_api_token_expired_unknown_or_missing_answers_42001_40014_41001(standin: WeComStandin) -> None:
    token = access_token(standin)
    assert api(standin, "sync_msg", {}, token)["errcode"] == 0
    # Given the stand-in expires every token
    standin.expire_tokens()
    # Then the old one answers 42001 on every API, and gettoken issues a new one that works
    for path in ("sync_msg", "send_msg", "customer/batchget"):
        assert api(standin, path, {}, token)["errcode"] == errcodes.TOKEN_EXPIRED
    fresh = access_token(standin)
    assert fresh != token
    assert api(standin, "sync_msg", {}, fresh)["errcode"] == 0
    assert api(standin, "sync_msg", {}, "never-issued")["errcode"] == errcodes.TOKEN_INVALID
    assert api(standin, "sync_msg", {}, "")["errcode"] == errcodes.TOKEN_MISSING


def test_api_token_older_than_two_hours_answers_42001(standin: WeComStandin) -> None:
    token = access_token(standin)
    standin.clock_offset = 2 * HOURS + 1
    assert api(standin, "sync_msg", {}, token)["errcode"] == errcodes.TOKEN_EXPIRED


def test_api_bad_json_and_unknown_path(standin: WeComStandin) -> None:
    token = access_token(standin)
    response = requests.post(
        f"{standin.url}/cgi-bin/kf/sync_msg", params={"access_token": token}, data=b"{not json", timeout=5
    )
    assert response.json()["errcode"] == errcodes.INVALID_PARAMETER
    response = requests.get(f"{standin.url}/cgi-bin/nothing", timeout=5)
    assert response.status_code == 404 and response.json()["errcode"] != 0


# --- sync_msg ------------------------------------------------------------------------------------------------------


def test_sync_msg_2500_messages_limit_1000_pages_without_gaps(standin: WeComStandin) -> None:
    # Given 2,500 customer messages on one account and a few on another
    stored = [standin.customer_says(f"wm{i % 7:04d}", f"第{i}条", callback=False)["msgid"] for i in range(2500)]
    standin.customer_says("wmother", "别的账号", open_kfid=OTHER_KFID, callback=False)
    token = access_token(standin)
    # When it is read 1,000 at a time from the start
    pages: list[dict[str, Any]] = []
    cursor = ""
    while True:
        answer = api(standin, "sync_msg", {"cursor": cursor, "limit": 1000, "open_kfid": KFID}, token)
        assert answer["errcode"] == 0
        pages.append(answer)
        cursor = answer["next_cursor"]
        if not answer["has_more"]:
            break
    # Then three pages, 1000/1000/500, with has_more 1/1/0, everything once and in order
    assert [len(p["msg_list"]) for p in pages] == [1000, 1000, 500]
    assert [p["has_more"] for p in pages] == [1, 1, 0]
    assert [m["msgid"] for p in pages for m in p["msg_list"]] == stored
    assert all(m["open_kfid"] == KFID for p in pages for m in p["msg_list"])
    # And the last cursor gives nothing new until a new message arrives
    answer = api(standin, "sync_msg", {"cursor": cursor, "open_kfid": KFID}, token)
    assert answer["msg_list"] == [] and answer["has_more"] == 0
    new = standin.customer_says("wm0001", "新消息", callback=False)
    answer = api(standin, "sync_msg", {"cursor": answer["next_cursor"], "open_kfid": KFID}, token)
    assert [m["msgid"] for m in answer["msg_list"]] == [new["msgid"]]


def test_sync_msg_returns_wecoms_message_shapes(standin: WeComStandin) -> None:
    standin.event("wm0001", callback=False)
    standin.customer_says("wm0001", "你好", nickname="小王", callback=False)
    standin.customer_says(
        "wm0001",
        msgtype="link",
        payload={"title": "标题", "desc": "说明", "url": "https://example.com", "pic_url": ""},
        callback=False,
    )
    standin.agent_says("wm0001", "人工回复", servicer_userid="lisi", callback=False)
    event, text, link, agent = api(standin, "sync_msg", {"open_kfid": KFID})["msg_list"]
    # An event carries its account and customer inside "event", as WeCom's do
    assert event["origin"] == 4 and event["msgtype"] == "event"
    assert event["event"]["event_type"] == "enter_session"
    assert event["event"]["open_kfid"] == KFID and event["event"]["external_userid"] == "wm0001"
    assert "open_kfid" not in event and "external_userid" not in event
    assert text == {
        "msgid": text["msgid"],
        "open_kfid": KFID,
        "external_userid": "wm0001",
        "send_time": text["send_time"],
        "origin": 3,
        "msgtype": "text",
        "text": {"content": "你好"},
    }
    assert link["msgtype"] == "link" and link["link"]["title"] == "标题"
    assert agent["origin"] == 5 and agent["servicer_userid"] == "lisi" and agent["text"] == {"content": "人工回复"}


def test_sync_msg_refuses_bad_token_limit_cursor_and_account(standin: WeComStandin) -> None:
    assert api(standin, "sync_msg", {"token": "never-issued"})["errcode"] == errcodes.MSG_TOKEN_INVALID
    assert api(standin, "sync_msg", {"limit": 1001})["errcode"] == errcodes.INVALID_PARAMETER
    assert api(standin, "sync_msg", {"limit": 0})["errcode"] == errcodes.INVALID_PARAMETER
    assert api(standin, "sync_msg", {"cursor": "bm9wZQ"})["errcode"] == errcodes.INVALID_PARAMETER
    assert api(standin, "sync_msg", {"open_kfid": "wkunknown"})["errcode"] == errcodes.OPEN_KFID_INVALID


def test_sync_msg_returns_only_the_last_three_days(standin: WeComStandin) -> None:
    standin.customer_says("wm0001", "old", callback=False)
    standin.clock_offset = 73 * HOURS
    standin.customer_says("wm0001", "new", callback=False)
    contents = [m["text"]["content"] for m in api(standin, "sync_msg", {"open_kfid": KFID})["msg_list"]]
    assert contents == ["new"]


# --- send_msg ------------------------------------------------------------------------------------------------------


def test_send_msg_within_the_window_is_sent(standin: WeComStandin) -> None:
    standin.customer_says("wm0001", "在吗", callback=False)
    answer = send(standin, "wm0001", "在的")
    assert answer["errcode"] == 0 and answer["msgid"]
    assert standin.sent == [
        {
            "msgid": answer["msgid"],
            "touser": "wm0001",
            "open_kfid": KFID,
            "msgtype": "text",
            "text": "在的",
            "send_time": standin.sent[0]["send_time"],
        }
    ]
    # Messages sent through the API are not read back by sync_msg, as WeCom documents
    assert [m["origin"] for m in api(standin, "sync_msg", {"open_kfid": KFID})["msg_list"]] == [3]


def test_send_msg_49_hours_later_is_refused_with_window_closed(standin: WeComStandin) -> None:
    # Given a customer who wrote, and a token fetched then
    standin.customer_says("wm0001", "在吗", callback=False)
    token = access_token(standin)
    body = {"touser": "wm0001", "open_kfid": KFID, "msgtype": "text", "text": {"content": "迟到的回复"}}
    # When 47 hours have passed (the old token has expired meanwhile; a fresh one works), it can still be sent
    standin.clock_offset = 47 * HOURS
    assert api(standin, "send_msg", body, token)["errcode"] == errcodes.TOKEN_EXPIRED
    assert send(standin, "wm0001")["errcode"] == 0
    # When 49 hours have passed, Then it is refused and nothing more is sent
    standin.clock_offset = 49 * HOURS
    answer = send(standin, "wm0001", "迟到的回复")
    assert answer["errcode"] == errcodes.WINDOW_CLOSED == 95002
    assert errcodes.errcode_kind(answer["errcode"]) == "window"
    assert len(standin.sent) == 1
    # And a new customer message opens the window again
    standin.customer_says("wm0001", "我又来了", callback=False)
    assert send(standin, "wm0001")["errcode"] == 0


def test_send_msg_sixth_reply_is_refused_until_the_customer_writes_again(standin: WeComStandin) -> None:
    standin.customer_says("wm0001", "问题", callback=False)
    assert [send(standin, "wm0001", f"回复{i}")["errcode"] for i in range(5)] == [0] * 5
    # The 6th is refused
    answer = send(standin, "wm0001", "第六条")
    assert answer["errcode"] == errcodes.QUOTA_EXCEEDED == 95001
    assert len(standin.sent) == 5
    # The limit is per customer
    standin.customer_says("wm0002", "另一个客户", callback=False)
    assert send(standin, "wm0002")["errcode"] == 0
    # A new message from the customer resets the count
    standin.customer_says("wm0001", "还有一个问题", callback=False)
    assert [send(standin, "wm0001", f"再回复{i}")["errcode"] for i in range(6)] == [0] * 5 + [95001]


def test_send_msg_concurrent_replies_accept_exactly_five(standin: WeComStandin) -> None:
    standin.customer_says("wm0001", "问题", callback=False)
    token = access_token(standin)
    body = {"touser": "wm0001", "open_kfid": KFID, "msgtype": "text", "text": {"content": "并发"}}
    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = list(pool.map(lambda _: api(standin, "send_msg", body, token)["errcode"], range(12)))
    assert sorted(codes) == [0] * 5 + [95001] * 7
    assert len(standin.sent) == 5


def test_send_msg_repeated_msgid_is_not_sent_twice(standin: WeComStandin) -> None:
    standin.customer_says("wm0001", "问题", callback=False)
    first = send(standin, "wm0001", "回复", msgid="reply-001")
    assert first == {"errcode": 0, "errmsg": "ok", "msgid": "reply-001"}
    # The same msgid again is an error (WeCom: msgid must be unique within the account), and nothing is sent
    again = send(standin, "wm0001", "回复", msgid="reply-001")
    assert again["errcode"] == errcodes.INVALID_PARAMETER and "msgid" in again["errmsg"]
    assert [s["msgid"] for s in standin.sent] == ["reply-001"]
    # It does not use up one of the five replies
    assert [send(standin, "wm0001", msgid=f"reply-00{i}")["errcode"] for i in range(2, 6)] == [0] * 4
    # Another account may use the same msgid
    standin.customer_says("wm0001", "问题", open_kfid=OTHER_KFID, callback=False)
    body = {
        "touser": "wm0001",
        "open_kfid": OTHER_KFID,
        "msgid": "reply-001",
        "msgtype": "text",
        "text": {"content": "x"},
    }
    assert api(standin, "send_msg", body)["errcode"] == 0


@pytest.mark.parametrize(
    ("overrides", "errcode"),
    [
        ({"touser": "wmnobody"}, errcodes.EXTERNAL_USERID_INVALID),
        ({"touser": ""}, errcodes.INVALID_PARAMETER),
        ({"open_kfid": "wkunknown"}, errcodes.OPEN_KFID_INVALID),
        ({"msgtype": "image"}, errcodes.INVALID_MSGTYPE),
        ({"text": {"content": ""}}, errcodes.TEXT_EMPTY),
        ({"text": {"content": "长" * 683}}, errcodes.MESSAGE_TOO_LONG),
        ({"msgid": "has space"}, errcodes.INVALID_PARAMETER),
        ({"msgid": "x" * 33}, errcodes.INVALID_PARAMETER),
    ],
)
def test_send_msg_bad_request_answers_wecoms_code(
    standin: WeComStandin, overrides: dict[str, Any], errcode: int
) -> None:
    standin.customer_says("wm0001", "问题", callback=False)
    body = {"touser": "wm0001", "open_kfid": KFID, "msgtype": "text", "text": {"content": "回复"}, **overrides}
    assert api(standin, "send_msg", body)["errcode"] == errcode
    assert standin.sent == []


def test_send_msg_customer_who_never_wrote_to_this_account_is_outside_the_window(standin: WeComStandin) -> None:
    standin.customer_says("wm0001", "问题", open_kfid=OTHER_KFID, callback=False)
    assert send(standin, "wm0001")["errcode"] == errcodes.WINDOW_CLOSED


# --- customer/batchget ---------------------------------------------------------------------------------------------


def test_batchget_returns_known_customers_and_lists_unknown(standin: WeComStandin) -> None:
    standin.customer_says("wmabcd1234", "你好", nickname="张三", callback=False)
    standin.customer_says("wmefgh5678", "你好", callback=False)
    answer = api(standin, "customer/batchget", {"external_userid_list": ["wmabcd1234", "wmefgh5678", "wmnobody"]})
    assert answer["errcode"] == 0
    first, second = answer["customer_list"]
    assert first == {
        "external_userid": "wmabcd1234",
        "nickname": "张三",
        "avatar": f"{standin.url}/avatar/wmabcd1234.png",
        "gender": 0,
        "unionid": "",
    }
    assert second["nickname"] == "客户5678"
    assert answer["invalid_external_userid"] == ["wmnobody"]
    assert standin.customer("wmabcd1234") == first
    # The avatar resolves
    avatar = requests.get(first["avatar"], timeout=5)
    assert avatar.status_code == 200 and avatar.content.startswith(b"\x89PNG")
    assert api(standin, "customer/batchget", {"external_userid_list": []})["errcode"] == errcodes.INVALID_PARAMETER


# --- callbacks -----------------------------------------------------------------------------------------------------


def test_callback_verifies_decrypts_and_its_token_syncs(standin: WeComStandin, receiver: Receiver) -> None:
    # Given a customer message on the second account
    message = standin.customer_says("wm0001", "你好", open_kfid=OTHER_KFID)
    # Then the receiver got one callback that verified and decrypted with wecom.crypto
    assert receiver.errors == []
    assert len(receiver.received) == 1
    fields = receiver.received[0]
    assert fields["ToUserName"] == CORP_ID
    assert fields["MsgType"] == "event" and fields["Event"] == "kf_msg_or_event"
    assert fields["OpenKfId"] == OTHER_KFID
    assert int(fields["CreateTime"]) > 0
    assert standin.callbacks == [(OTHER_KFID, 200, "")]
    # And its Token reads the message with sync_msg
    answer = api(standin, "sync_msg", {"token": fields["Token"], "open_kfid": OTHER_KFID, "limit": 1000})
    assert answer["errcode"] == 0
    assert [m["msgid"] for m in answer["msg_list"]] == [message["msgid"]]
    # The token lives 10 minutes
    standin.clock_offset = 601
    assert api(standin, "sync_msg", {"token": fields["Token"]})["errcode"] == errcodes.MSG_TOKEN_INVALID


def test_callback_each_message_kind_posts_one_and_none_when_disabled(standin: WeComStandin, receiver: Receiver) -> None:
    standin.event("wm0001")
    standin.agent_says("wm0001", "人工")
    standin.customer_says("wm0001", "静默", callback=False)
    assert len(receiver.received) == 2
    assert len({f["Token"] for f in receiver.received}) == 2


def test_callback_url_verification_echoes_the_plaintext(standin: WeComStandin, receiver: Receiver) -> None:
    response = standin.verify_callback_url()
    assert response.status_code == 200
    assert standin.last_echostr and response.text == standin.last_echostr
    assert receiver.errors == []


def test_callback_signed_with_another_token_is_refused_by_the_receiver(receiver: Receiver) -> None:
    with WeComStandin(
        corp_id=CORP_ID, secret=SECRET, token="wrong", encoding_aes_key=AES_KEY, callback_url=receiver.url
    ) as s:
        assert s.post_callback().status_code == 403
        assert s.verify_callback_url().status_code == 403


def test_callback_unreachable_receiver_does_not_lose_the_message() -> None:
    with WeComStandin(
        corp_id=CORP_ID, secret=SECRET, token=TOKEN, encoding_aes_key=AES_KEY, callback_url="http://127.0.0.1:9/x"
    ) as s:
        message = s.customer_says("wm0001", "你好")
        assert s.callbacks == [(KFID, None, "ConnectionError")]
        assert [m["msgid"] for m in api(s, "sync_msg", {})["msg_list"]] == [message["msgid"]]


# --- the demo's controls and the command ---------------------------------------------------------------------------


def test_control_customer_says_and_sent(standin: WeComStandin, receiver: Receiver) -> None:
    response = requests.post(
        f"{standin.url}/standin/customer_says",
        json={"external_userid": "wm0001", "text": "演示消息", "nickname": "演示客户"},
        timeout=10,
    )
    answer = response.json()
    assert answer["errcode"] == 0 and answer["message"]["text"] == {"content": "演示消息"}
    assert answer["callback"] == {"status": 200, "error": ""}
    assert len(receiver.received) == 1
    assert standin.customer("wm0001")["nickname"] == "演示客户"
    send(standin, "wm0001", "演示回复")
    sent = requests.get(f"{standin.url}/standin/sent", timeout=5).json()
    assert sent["errcode"] == 0 and [s["text"] for s in sent["sent"]] == ["演示回复"]
    bad = requests.post(f"{standin.url}/standin/customer_says", json={"text": "x"}, timeout=5)
    assert bad.status_code == 400 and bad.json()["errcode"] == errcodes.INVALID_PARAMETER


def test_command_say_posts_a_customer_message(standin: WeComStandin, receiver: Receiver) -> None:
    out: list[str] = []

    class Capture:
        def write(self, text: str) -> None:
            out.append(text)

        def flush(self) -> None:
            pass

    call_command(Command(), "--port", str(standin.port), "--say", "命令行消息", "--from", "wmcli0001", stdout=Capture())
    assert "wmcli0001" in "".join(out)
    assert standin.customer("wmcli0001")["nickname"] == "客户0001"
    assert len(receiver.received) == 1


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--say", "只有文本"], id="say-without-from"),
        pytest.param(["--from", "wm1"], id="from-without-say"),
        pytest.param(["--corp-id", "ww1", "--secret", "s", "--token", "t", "--aes-key", "short"], id="bad-aes-key"),
        pytest.param(["--corp-id", "ww1", "--token", "t", "--aes-key", AES_KEY], id="missing-secret"),
        pytest.param(
            ["--corp-id", "ww1", "--secret", "s", "--token", "t", "--aes-key", AES_KEY, "--callback-url", "ftp://x"],
            id="bad-callback-url",
        ),
        pytest.param(["--port", "70000"], id="bad-port"),
        pytest.param(["--port", "9", "--say", "x", "--from", "wm1"], id="say-with-no-standin"),
    ],
)
def test_command_bad_arguments_raise_command_error(argv: list[str]) -> None:
    with pytest.raises(CommandError) as caught:
        call_command(Command(), *argv)
    # The message is in Chinese
    assert any("\u4e00" <= ch <= "\u9fff" for ch in str(caught.value))
