"""Sealing: what must never be stored in the clear is kept encrypted instead (a message's words as
received when the reader finds a credential or a personal number in them; the stored message keeps
only the masked text).

Fernet from the `cryptography` package (AES-128-CBC with HMAC-SHA256, a timestamped token), through
`MultiFernet` so keys rotate: `QIWEI_SEALING_KEYS` lists Fernet keys newest first; the first seals,
any of them unseals, and `reseal` re-seals an old token with the first (`manage.py messages_seal
--rotate`). With no key configured (the embedded default), a key is made once in
`QIWEI_DATA_DIR/sealing.key`, readable by its owner only, and a warning says where: that file is
then as precious as the database (without it nothing sealed can be read) and must be backed up
apart from it.

Keys fail closed (issue 36, `qiwei_site.platform.keyfiles`): a key is never made once one was on
record, so a lost file is refused (start-up, /readyz, and a seal answer `KeyUnavailable`, a
retriable 503) instead of silently replaced by a key that opens nothing sealed before."""

from __future__ import annotations

import threading

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from qiwei_site.platform import keyfiles
from qiwei_site.platform.keyfiles import KeySpec, KeyUnavailable

KEY_FILE_NAME = "sealing.key"

_lock = threading.Lock()
_cached: tuple[tuple[str, ...], MultiFernet] | None = None


def _is_fernet_key(key: str) -> bool:
    try:
        Fernet(key.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        return False
    return True


SEALING = KeySpec(
    purpose="sealing",
    label="密封密钥",
    file_name=KEY_FILE_NAME,
    setting="QIWEI_SEALING_KEYS",
    cost="已密封的消息原文将全部无法读取",
    cost_en="every sealed message original unreadable",
    generate=lambda: Fernet.generate_key().decode("ascii"),
    valid=_is_fernet_key,
)


class SealBroken(Exception):
    """A sealed value could not be opened: no configured key made it, or it was altered."""


def sealing_keys() -> tuple[str, ...]:
    """The configured keys, newest first, or the embedded default's one key (`KeyUnavailable` when
    it is missing with sealed data on record, unreadable or not a key)."""
    return keyfiles.read_keys(SEALING)


def _fernet_for(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key.encode("ascii")) for key in keys])


def _fernet() -> MultiFernet:
    global _cached
    keys = sealing_keys()
    cached = _cached
    if cached is not None and cached[0] == keys:
        return cached[1]
    with _lock:
        fernet = _fernet_for(keys)
        _cached = (keys, fernet)
    return fernet


def _opens(keys: tuple[str, ...], token: str) -> bool:
    try:
        _fernet_for(keys).decrypt(token.encode("ascii"))
    except (InvalidToken, UnicodeError):
        return False
    return True


def sealing_keys_verify() -> tuple[str, ...]:
    """The sealing keys checked for a start or /readyz (`keyfiles.keys_verify`): with no key on
    record yet, a sealed original must open with them."""
    return keyfiles.keys_verify(SEALING, opens=_opens)


keyfiles.verifier_register(SEALING.purpose, sealing_keys_verify)


def seal(text: str) -> str:
    """`text` encrypted with the newest key, as ASCII (`KeyUnavailable`, a retriable 503, when the
    key cannot be used: nothing is stored half-sealed)."""
    return _fernet().encrypt(text.encode("utf-8")).decode("ascii")


def unseal(token: str) -> str:
    """The text a `seal` made, with whichever configured key made it."""
    try:
        return _fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, UnicodeError, KeyUnavailable) as exc:
        raise SealBroken("a sealed value could not be opened with the configured keys") from exc


def reseal(token: str) -> str:
    """The same text sealed with the newest key (key rotation); unchanged text, new token."""
    try:
        return _fernet().rotate(token.encode("ascii")).decode("ascii")
    except (InvalidToken, UnicodeError) as exc:
        raise SealBroken("a sealed value could not be opened with the configured keys") from exc
