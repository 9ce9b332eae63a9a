"""WeCom's callback crypto against WeCom's published sample values, and the errcode table."""

from __future__ import annotations

import base64

import pytest

from wecom import errcodes
from wecom.crypto import (
    PayloadInvalid,
    ReceiverMismatch,
    SignatureInvalid,
    WeComCrypto,
    WeComCryptoError,
    message_signature,
    xml_fields,
)

# WeCom's official sample for the 加解密方案 (the callback/Sample.py by jonyqin that ships with WeCom's
# WXBizMsgCrypt library, mirrored at github.com/sbzhu/weworkapi_python). Its Token, EncodingAESKey and CorpID:
SAMPLE_TOKEN = "hJqcu3uJ9Tn2gXPmxx2w9kkCkCE2EPYo"
SAMPLE_AES_KEY = "6qkdMrq68nTKduznJYO1A37W2oEgpkMUvkttRToqhUt"
SAMPLE_CORP_ID = "ww1436e0e65a779aee"

# 使用示例一：验证回调URL — the verify-URL request of the same sample.
VERIFY_MSG_SIGNATURE = "012bc692d0a58dd4b10f8dfe5c4ac00ae211ebeb"
VERIFY_TIMESTAMP = "1476416373"
VERIFY_NONCE = "47744683"
VERIFY_ECHOSTR = "fsi1xnbH4yQh0+PJxcOdhhK6TDXkjMyhEPA7xB2TGz6b+g7xyAbEkRxN/3cNXW9qdqjnoVzEtpbhnFyq6SVHyA=="
VERIFY_ECHOSTR_PLAINTEXT = "1288432023552776189"

# 使用示例二：对用户回复的消息解密 — the encrypted POST of the same sample.
REQ_MSG_SIGNATURE = "0c3914025cb4b4d68103f6bfc8db550f79dcf48e"
REQ_TIMESTAMP = "1476422779"
REQ_NONCE = "1597212914"
REQ_DATA = (
    "<xml><ToUserName><![CDATA[ww1436e0e65a779aee]]></ToUserName>\n"
    "<Encrypt><![CDATA[Kl7kjoSf6DMD1zh7rtrHjFaDapSCkaOnwu3bqLc5tAybhhMl9pFeK8NslNPVdMwmBQTNoW4mY7AIjeLvEl3NyeTkAgG"
    "zBhzTtRLNshw2AEew+kkYcD+Fq72Kt00fT0WnN87hGrW8SqGc+NcT3mu87Ha3dz1pSDi6GaUA6A0sqfde0VJPQbZ9U+3JWcoD4Z5jaU0y9GS"
    "h010wsHF8KZD24YhmZH4ch4Ka7ilEbjbfvhKkNL65HHL0J6EYJIZUC2pFrdkJ7MhmEbU2qARR4iQHE7wy24qy0cRX3Mfp6iELcDNfSsPGjUQ"
    "VDGxQDCWjayJOpcwocugux082f49HKYg84EpHSGXAyh+/oxwaWbvL6aSDPOYuPDGOCI8jmnKiypE+]]></Encrypt>\n"
    "<AgentID><![CDATA[1000002]]></AgentID>\n</xml>"
)
# The plaintext the sample documents for that message (its 使用示例三 reply is the same XML).
REQ_PLAINTEXT = (
    "<xml><ToUserName>ww1436e0e65a779aee</ToUserName><FromUserName>ChenJiaShun</FromUserName>"
    "<CreateTime>1476422779</CreateTime><MsgType>text</MsgType><Content>你好</Content>"
    "<MsgId>1456453720</MsgId><AgentID>1000002</AgentID></xml>"
)

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<xml><Encrypt>&lol3;</Encrypt></xml>"""


@pytest.fixture
def crypto() -> WeComCrypto:
    return WeComCrypto(token=SAMPLE_TOKEN, encoding_aes_key=SAMPLE_AES_KEY, receive_id=SAMPLE_CORP_ID)


def _sample_encrypt() -> str:
    return xml_fields(REQ_DATA)["Encrypt"]


def test_message_signature_matches_the_official_samples() -> None:
    # Given the sample's token and both of its signed requests
    # When the signature is computed over each
    # Then it is the one WeCom sent
    assert message_signature(SAMPLE_TOKEN, VERIFY_TIMESTAMP, VERIFY_NONCE, VERIFY_ECHOSTR) == VERIFY_MSG_SIGNATURE
    assert message_signature(SAMPLE_TOKEN, REQ_TIMESTAMP, REQ_NONCE, _sample_encrypt()) == REQ_MSG_SIGNATURE


def test_verify_url_official_sample_returns_the_echostr_plaintext(crypto: WeComCrypto) -> None:
    # Given the sample's verify-URL query
    # When it is verified
    echo = crypto.verify_url(
        msg_signature=VERIFY_MSG_SIGNATURE, timestamp=VERIFY_TIMESTAMP, nonce=VERIFY_NONCE, echostr=VERIFY_ECHOSTR
    )
    # Then the answer is the plaintext WeCom expects back
    assert echo == VERIFY_ECHOSTR_PLAINTEXT


def test_decrypt_message_official_sample_returns_the_documented_xml(crypto: WeComCrypto) -> None:
    # Given the sample's encrypted POST and its query
    # When it is decrypted
    inner = crypto.decrypt_message(
        body=REQ_DATA, msg_signature=REQ_MSG_SIGNATURE, timestamp=REQ_TIMESTAMP, nonce=REQ_NONCE
    )
    # Then it is the documented message, and its fields read back
    assert inner == REQ_PLAINTEXT
    assert xml_fields(inner)["Content"] == "你好"


def test_decrypt_message_accepts_bytes_body(crypto: WeComCrypto) -> None:
    inner = crypto.decrypt_message(
        body=REQ_DATA.encode("utf-8"), msg_signature=REQ_MSG_SIGNATURE, timestamp=REQ_TIMESTAMP, nonce=REQ_NONCE
    )
    assert inner == REQ_PLAINTEXT


def test_encrypt_round_trip_restores_text_and_pads_to_32(crypto: WeComCrypto) -> None:
    # Given texts of every length around the 32-byte padding boundary, Chinese included
    for n in range(0, 70):
        text = "客" * (n % 5) + "x" * n
        # When encrypted and decrypted
        encrypted = crypto.encrypt(text)
        # Then the text comes back, and the ciphertext is padded to 32 bytes, not 16
        assert crypto.decrypt(encrypted) == text
        assert len(base64.b64decode(encrypted)) % 32 == 0


def test_encrypt_with_fixed_prefix_is_deterministic(crypto: WeComCrypto) -> None:
    prefix = b"0123456789abcdef"
    assert crypto.encrypt("hi", random_prefix=prefix) == crypto.encrypt("hi", random_prefix=prefix)
    assert crypto.encrypt("hi") != crypto.encrypt("hi")
    with pytest.raises(ValueError):
        crypto.encrypt("hi", random_prefix=b"short")


def test_encrypt_message_round_trip_through_decrypt_message(crypto: WeComCrypto) -> None:
    # Given a passive reply built by encrypt_message
    outer = crypto.encrypt_message("<xml><Content>回复</Content></xml>", timestamp="1700000000", nonce="42")
    fields = xml_fields(outer)
    # Then it carries the signature, timestamp and nonce, and decrypts back
    assert set(fields) == {"Encrypt", "MsgSignature", "TimeStamp", "Nonce"}
    assert fields["TimeStamp"] == "1700000000"
    inner = crypto.decrypt_message(body=outer, msg_signature=fields["MsgSignature"], timestamp="1700000000", nonce="42")
    assert inner == "<xml><Content>回复</Content></xml>"


def test_callback_body_is_what_a_receiver_can_decrypt(crypto: WeComCrypto) -> None:
    # Given a callback body as WeCom posts it
    body, signature = crypto.callback_body("<xml><Event>kf_msg_or_event</Event></xml>", timestamp="1", nonce="n")
    # Then its ToUserName is the corp id, and it verifies and decrypts
    assert xml_fields(body)["ToUserName"] == SAMPLE_CORP_ID
    assert "AgentID" not in xml_fields(body)
    assert crypto.decrypt_message(body=body, msg_signature=signature, timestamp="1", nonce="n") == (
        "<xml><Event>kf_msg_or_event</Event></xml>"
    )
    body, _ = crypto.callback_body("x", timestamp="1", nonce="n", to_user="wwother", agent_id="1000002")
    assert xml_fields(body)["ToUserName"] == "wwother"
    assert xml_fields(body)["AgentID"] == "1000002"


def test_decrypt_message_tampered_signature_raises_signature_invalid(crypto: WeComCrypto) -> None:
    # Given the sample POST with one character of its signature changed
    bad = "1" + REQ_MSG_SIGNATURE[1:]
    # When decrypted, Then the signature is refused
    with pytest.raises(SignatureInvalid) as caught:
        crypto.decrypt_message(body=REQ_DATA, msg_signature=bad, timestamp=REQ_TIMESTAMP, nonce=REQ_NONCE)
    assert caught.value.code == "signature"
    # And a different timestamp breaks it too (the signature covers it)
    with pytest.raises(SignatureInvalid):
        crypto.decrypt_message(body=REQ_DATA, msg_signature=REQ_MSG_SIGNATURE, timestamp="1", nonce=REQ_NONCE)


def test_verify_url_wrong_token_raises_signature_invalid() -> None:
    other = WeComCrypto(token="another", encoding_aes_key=SAMPLE_AES_KEY, receive_id=SAMPLE_CORP_ID)
    with pytest.raises(SignatureInvalid):
        other.verify_url(
            msg_signature=VERIFY_MSG_SIGNATURE, timestamp=VERIFY_TIMESTAMP, nonce=VERIFY_NONCE, echostr=VERIFY_ECHOSTR
        )


def test_decrypt_another_corp_id_inside_raises_receiver_mismatch(crypto: WeComCrypto) -> None:
    # Given a payload encrypted with the same key for another corp
    other = WeComCrypto(token=SAMPLE_TOKEN, encoding_aes_key=SAMPLE_AES_KEY, receive_id="wwsomeoneelse0000")
    encrypted = other.encrypt("<xml>secret words</xml>")
    # When we decrypt it, Then it is refused, and the message does not leak the text
    with pytest.raises(ReceiverMismatch) as caught:
        crypto.decrypt(encrypted)
    assert caught.value.code == "receiver"
    assert "secret words" not in str(caught.value)
    # And a sample receiver that is only a prefix of ours is refused too
    prefix = WeComCrypto(token=SAMPLE_TOKEN, encoding_aes_key=SAMPLE_AES_KEY, receive_id=SAMPLE_CORP_ID[:-1])
    with pytest.raises(ReceiverMismatch):
        crypto.decrypt(prefix.encrypt("x"))


@pytest.mark.parametrize(
    "encrypted",
    [
        pytest.param("not base64 at all!", id="bad-base64"),
        pytest.param("", id="empty"),
        pytest.param(base64.b64encode(b"x" * 31).decode(), id="not-a-block-multiple"),
        pytest.param(VERIFY_ECHOSTR[:-4], id="truncated-base64"),
        pytest.param(base64.b64encode(base64.b64decode(VERIFY_ECHOSTR)[:-16]).decode(), id="truncated-block"),
        pytest.param(base64.b64encode(bytes(64)).decode(), id="garbage-blocks"),
    ],
)
def test_decrypt_malformed_ciphertext_raises_payload_invalid(crypto: WeComCrypto, encrypted: str) -> None:
    with pytest.raises(PayloadInvalid) as caught:
        crypto.decrypt(encrypted)
    assert caught.value.code == "payload"


def test_decrypt_wrong_key_raises_a_crypto_error() -> None:
    # Given the sample echostr and some other key
    other = WeComCrypto(token=SAMPLE_TOKEN, encoding_aes_key="a" * 43, receive_id=SAMPLE_CORP_ID)
    # When decrypted, Then it fails as a crypto error (bad padding, or nonsense inside), never as a crash
    with pytest.raises(WeComCryptoError):
        other.decrypt(VERIFY_ECHOSTR)


def test_decrypt_length_field_beyond_payload_raises_payload_invalid(crypto: WeComCrypto) -> None:
    # Given a payload whose 4-byte length claims more than it carries, built with the real key and IV
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    key = base64.b64decode(SAMPLE_AES_KEY + "=")
    body = bytes(16) + (1000).to_bytes(4, "big") + b"short" + SAMPLE_CORP_ID.encode()
    pad = 32 - len(body) % 32
    body += bytes([pad]) * pad
    encryptor = Cipher(algorithms.AES(key), modes.CBC(key[:16])).encryptor()
    encrypted = base64.b64encode(encryptor.update(body) + encryptor.finalize()).decode()
    # Then it is refused
    with pytest.raises(PayloadInvalid):
        crypto.decrypt(encrypted)


def test_decrypt_message_without_encrypt_raises_payload_invalid(crypto: WeComCrypto) -> None:
    with pytest.raises(PayloadInvalid):
        crypto.decrypt_message(body="<xml><ToUserName>x</ToUserName></xml>", msg_signature="", timestamp="", nonce="")


def test_xml_fields_billion_laughs_raises_payload_invalid(crypto: WeComCrypto) -> None:
    # Given an XML with a DOCTYPE and nested entities
    # When it is read, alone or as a callback body, Then it is refused before any expansion
    with pytest.raises(PayloadInvalid):
        xml_fields(BILLION_LAUGHS)
    with pytest.raises(PayloadInvalid):
        crypto.decrypt_message(body=BILLION_LAUGHS, msg_signature="x", timestamp="1", nonce="1")


def test_xml_fields_external_entity_raises_payload_invalid() -> None:
    xxe = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><xml><A>&e;</A></xml>'
    with pytest.raises(PayloadInvalid):
        xml_fields(xxe)


@pytest.mark.parametrize("text", ["", "not xml", "<xml><A>unclosed</xml>", b"\xff\xfe<"])
def test_xml_fields_broken_xml_raises_payload_invalid(text: str | bytes) -> None:
    with pytest.raises(PayloadInvalid):
        xml_fields(text)


def test_xml_fields_reads_leaf_children_and_skips_nested() -> None:
    fields = xml_fields(
        '<?xml version="1.0" encoding="utf-8"?><xml><A><![CDATA[一]]></A><B/><C><D>x</D></C><A>second</A></xml>'
    )
    assert fields == {"A": "一", "B": ""}


@pytest.mark.parametrize(
    "key",
    [
        pytest.param("", id="empty"),
        pytest.param(SAMPLE_AES_KEY[:-1], id="42-chars"),
        pytest.param(SAMPLE_AES_KEY + "A", id="44-chars"),
        pytest.param(SAMPLE_AES_KEY[:-1] + "=", id="padding-char"),
        pytest.param(SAMPLE_AES_KEY[:-1] + "-", id="urlsafe-char"),
        pytest.param(SAMPLE_AES_KEY[:-1] + "客", id="non-ascii"),
    ],
)
def test_crypto_bad_key_raises_value_error(key: str) -> None:
    with pytest.raises(ValueError) as caught:
        WeComCrypto(token=SAMPLE_TOKEN, encoding_aes_key=key, receive_id=SAMPLE_CORP_ID)
    # The message explains in both languages and does not echo the key
    assert "EncodingAESKey" in str(caught.value) and "43" in str(caught.value)
    if key:
        assert key not in str(caught.value)


def test_crypto_repr_hides_key_and_token(crypto: WeComCrypto) -> None:
    assert SAMPLE_AES_KEY not in repr(crypto) and SAMPLE_TOKEN not in repr(crypto)


# --- the errcode table -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "kind", "retryable"),
    [
        (errcodes.TOKEN_EXPIRED, "token", True),
        (errcodes.TOKEN_INVALID, "token", True),
        (errcodes.TOKEN_MISSING, "token", True),
        (errcodes.SYSTEM_BUSY, "transient", True),
        (45009, "transient", True),
        (errcodes.SECRET_INVALID, "config", False),
        (errcodes.CORP_INVALID, "config", False),
        (60020, "config", False),
        (errcodes.WINDOW_CLOSED, "window", False),
        (errcodes.SESSION_STATE_INVALID, "window", False),
        (errcodes.QUOTA_EXCEEDED, "quota", False),
        (errcodes.EXTERNAL_USERID_INVALID, "request", False),
        (errcodes.MSG_TOKEN_INVALID, "request", False),
    ],
)
def test_errcode_kind_classifies_the_codes_callers_react_to(code: int, kind: str, retryable: bool) -> None:
    assert errcodes.errcode_kind(code) == kind
    assert errcodes.is_retryable(code) is retryable
    assert errcodes.errcode_message(code)


def test_errcode_constants_are_wecoms_codes() -> None:
    assert (errcodes.TOKEN_EXPIRED, errcodes.TOKEN_INVALID, errcodes.SECRET_INVALID, errcodes.CORP_INVALID) == (
        42001,
        40014,
        40001,
        40013,
    )
    assert (errcodes.WINDOW_CLOSED, errcodes.QUOTA_EXCEEDED) == (95002, 95001)


def test_errcode_table_rows_are_well_formed() -> None:
    kinds = {"token", "transient", "window", "quota", "config", "request"}
    for code, info in errcodes.ERRCODES.items():
        assert isinstance(code, int) and code != 0
        assert info.kind in kinds
        # Only token and transient failures are worth retrying
        assert info.retryable is (info.kind in {"token", "transient"})
        # A Chinese message for people
        assert any("\u4e00" <= ch <= "\u9fff" for ch in info.message)


def test_errcode_message_unknown_code_names_the_code() -> None:
    assert errcodes.errcode_message(123456) == "企业微信返回错误 123456"
    assert errcodes.errcode_kind(123456) == "request"
    assert errcodes.is_retryable(123456) is False
    # WeCom's errmsg is kept for unknown codes, without its hint and caller IP
    message = errcodes.errcode_message(
        123456, "something odd, hint: [1645025097593810238423219], from ip: 49.74.77.205, more info at https://x"
    )
    assert message == "企业微信返回错误 123456：something odd"
    # A known code ignores errmsg
    assert errcodes.errcode_message(42001, "access_token expired") == errcodes.ERRCODES[42001].message
    assert errcodes.errcode_message(0) == "成功"
