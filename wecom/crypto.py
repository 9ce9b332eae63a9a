"""WeCom's callback message crypto (企业微信回调加解密方案): AES-256-CBC with the EncodingAESKey, SHA-1 signatures.

Used both to receive WeCom's callbacks and, by the stand-in, to produce them exactly as WeCom does.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
import struct
from xml.etree.ElementTree import ParseError

import defusedxml
import defusedxml.ElementTree
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

__all__ = [
    "PayloadInvalid",
    "ReceiverMismatch",
    "SignatureInvalid",
    "WeComCrypto",
    "WeComCryptoError",
    "message_signature",
    "xml_fields",
]

# WeCom pads to 32 bytes (its key length), not to AES's 16-byte block: a 16-byte PKCS#7 unpadder would reject
# half of its payloads.
_PAD_BLOCK = 32
_RANDOM_PREFIX_LEN = 16
_LENGTH_FIELD = struct.Struct(">I")
# The key is 43 characters of the standard alphabet; WeCom's own keys need not end in canonical bits (the
# published sample's does not), so only the alphabet and the decoded length are checked.
_KEY_RE = re.compile(r"[A-Za-z0-9+/]{43}")


class WeComCryptoError(Exception):
    """A callback could not be trusted or read. `code` is stable for logs and metrics; the message never
    carries the decrypted text or the key."""

    code: str = "crypto"


class SignatureInvalid(WeComCryptoError):
    code = "signature"


class ReceiverMismatch(WeComCryptoError):
    code = "receiver"


class PayloadInvalid(WeComCryptoError):
    code = "payload"


class EncodingAESKeyInvalid(WeComCryptoError, ValueError):
    """A ValueError too, so configuration code can treat it like any other bad setting."""

    code = "key"


def message_signature(token: str, timestamp: str, nonce: str, encrypted: str) -> str:
    """WeCom's msg_signature: SHA-1 hex of the four strings sorted and joined."""
    joined = "".join(sorted((token, timestamp, nonce, encrypted)))
    return hashlib.sha1(joined.encode("utf-8")).hexdigest()


def xml_fields(text: str | bytes) -> dict[str, str]:
    """The root's leaf children as {tag: text}. A DOCTYPE, entity or external reference is refused outright
    (billion laughs, XXE); children that have children of their own are left out."""
    try:
        root = defusedxml.ElementTree.fromstring(text, forbid_dtd=True)
    except (ParseError, defusedxml.DefusedXmlException, ValueError, TypeError) as exc:
        raise PayloadInvalid(f"XML 无法解析 (unparsable XML: {type(exc).__name__})") from None
    fields: dict[str, str] = {}
    for child in root:
        if len(child) or not isinstance(child.tag, str):
            continue
        # The first occurrence wins, so a value that was checked is the value that is used.
        fields.setdefault(child.tag, child.text or "")
    return fields


def _cdata(value: str) -> str:
    # "]]>" would end the section early; splitting it across two sections keeps the value intact.
    return "<![CDATA[" + value.replace("]]>", "]]]]><![CDATA[>") + "]]>"


def _decode_key(encoding_aes_key: str) -> bytes:
    message = (
        "EncodingAESKey 无效：应为 43 位 Base64 字符，解码后 32 字节 "
        "(EncodingAESKey must be 43 base64 characters that decode to 32 bytes)"
    )
    if not isinstance(encoding_aes_key, str) or not _KEY_RE.fullmatch(encoding_aes_key):
        raise EncodingAESKeyInvalid(message)
    try:
        key = base64.b64decode(encoding_aes_key + "=", validate=True)
    except (binascii.Error, ValueError):
        raise EncodingAESKeyInvalid(message) from None
    if len(key) != 32:
        raise EncodingAESKeyInvalid(message)
    return key


class WeComCrypto:
    """One WeCom callback configuration: its Token, EncodingAESKey and receive id (the corp id)."""

    def __init__(self, *, token: str, encoding_aes_key: str, receive_id: str) -> None:
        self._key = _decode_key(encoding_aes_key)
        self._iv = self._key[:16]
        self.token = token
        self.receive_id = receive_id

    def __repr__(self) -> str:  # the key and token stay out of reprs, tracebacks and logs
        return f"WeComCrypto(receive_id={self.receive_id!r})"

    def _cipher(self) -> Cipher[modes.CBC]:
        return Cipher(algorithms.AES(self._key), modes.CBC(self._iv))

    def encrypt(self, plaintext: str, *, random_prefix: bytes | None = None) -> str:
        prefix = os.urandom(_RANDOM_PREFIX_LEN) if random_prefix is None else random_prefix
        if len(prefix) != _RANDOM_PREFIX_LEN:
            raise ValueError("random_prefix 必须是 16 字节 (random_prefix must be 16 bytes)")
        message = plaintext.encode("utf-8")
        body = prefix + _LENGTH_FIELD.pack(len(message)) + message + self.receive_id.encode("utf-8")
        pad = _PAD_BLOCK - len(body) % _PAD_BLOCK
        body += bytes([pad]) * pad
        encryptor = self._cipher().encryptor()
        return base64.b64encode(encryptor.update(body) + encryptor.finalize()).decode("ascii")

    def decrypt(self, encrypted: str) -> str:
        try:
            ciphertext = base64.b64decode(encrypted, validate=True)
        except (binascii.Error, ValueError, TypeError):
            raise PayloadInvalid("密文不是合法的 Base64 (ciphertext is not valid base64)") from None
        if not ciphertext or len(ciphertext) % 16:
            raise PayloadInvalid("密文长度不是 AES 块长的整数倍 (ciphertext length is not a multiple of 16)")
        decryptor = self._cipher().decryptor()
        plain = decryptor.update(ciphertext) + decryptor.finalize()
        pad = plain[-1]
        if not 1 <= pad <= _PAD_BLOCK or plain[-pad:] != bytes([pad]) * pad:
            raise PayloadInvalid("填充无效，可能是 EncodingAESKey 不对 (bad padding; wrong EncodingAESKey?)")
        content = plain[_RANDOM_PREFIX_LEN:-pad]
        if len(content) < _LENGTH_FIELD.size:
            raise PayloadInvalid("明文过短 (decrypted payload too short)")
        (length,) = _LENGTH_FIELD.unpack_from(content)
        end = _LENGTH_FIELD.size + length
        if end > len(content):
            raise PayloadInvalid("明文长度字段超出范围 (length field exceeds the payload)")
        receiver = content[end:]
        if not hmac.compare_digest(receiver, self.receive_id.encode("utf-8")):
            raise ReceiverMismatch("消息不是发给本企业的 (the payload is addressed to another receive id)")
        try:
            return content[_LENGTH_FIELD.size : end].decode("utf-8")
        except UnicodeDecodeError:
            raise PayloadInvalid("明文不是 UTF-8 (decrypted message is not UTF-8)") from None

    def _check_signature(self, msg_signature: str, timestamp: str, nonce: str, encrypted: str) -> None:
        expected = message_signature(self.token, timestamp, nonce, encrypted)
        if not hmac.compare_digest(expected.encode("ascii"), msg_signature.encode("utf-8", "replace")):
            raise SignatureInvalid("签名校验失败 (msg_signature does not match)")

    def verify_url(self, *, msg_signature: str, timestamp: str, nonce: str, echostr: str) -> str:
        """WeCom's GET check of a callback URL: the answer must be the decrypted echostr."""
        self._check_signature(msg_signature, timestamp, nonce, echostr)
        return self.decrypt(echostr)

    def decrypt_message(self, *, body: str | bytes, msg_signature: str, timestamp: str, nonce: str) -> str:
        """A POSTed callback: checks the signature over its <Encrypt> and returns the inner XML text."""
        encrypted = xml_fields(body).get("Encrypt")
        if not encrypted:
            raise PayloadInvalid("回调缺少 Encrypt 字段 (callback body has no Encrypt element)")
        self._check_signature(msg_signature, timestamp, nonce, encrypted)
        return self.decrypt(encrypted)

    def encrypt_message(self, plaintext: str, *, timestamp: str, nonce: str) -> str:
        """A passive reply as WeCom expects it: the encrypted text with its signature, timestamp and nonce."""
        encrypted = self.encrypt(plaintext)
        signature = message_signature(self.token, timestamp, nonce, encrypted)
        return (
            f"<xml><Encrypt>{_cdata(encrypted)}</Encrypt><MsgSignature>{_cdata(signature)}</MsgSignature>"
            f"<TimeStamp>{timestamp}</TimeStamp><Nonce>{_cdata(nonce)}</Nonce></xml>"
        )

    def callback_body(
        self, plaintext: str, *, timestamp: str, nonce: str, to_user: str = "", agent_id: str = ""
    ) -> tuple[str, str]:
        """What WeCom POSTs to a callback URL, and the msg_signature that goes in its query string.
        ToUserName defaults to the receive id, as WeCom fills it; AgentID appears only when given."""
        encrypted = self.encrypt(plaintext)
        signature = message_signature(self.token, timestamp, nonce, encrypted)
        agent = f"<AgentID>{_cdata(agent_id)}</AgentID>" if agent_id else ""
        body = (
            f"<xml><ToUserName>{_cdata(to_user or self.receive_id)}</ToUserName>{agent}"
            f"<Encrypt>{_cdata(encrypted)}</Encrypt></xml>"
        )
        return body, signature
