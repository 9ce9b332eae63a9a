"""Sealing: what must never be stored in the clear is kept encrypted instead (a message's words as
received when the reader finds a credential or a personal number in them; the stored message keeps
only the masked text).

Fernet from the `cryptography` package (AES-128-CBC with HMAC-SHA256, a timestamped token), through
`MultiFernet` so keys rotate: `QIWEI_SEALING_KEYS` lists Fernet keys newest first; the first seals,
any of them unseals, and `reseal` re-seals an old token with the first (`manage.py messages_seal
--rotate`). With no key configured (the embedded default), a key is made once in
`QIWEI_DATA_DIR/sealing.key`, readable by its owner only, and a warning says where: that file is
then as precious as the database (without it nothing sealed can be read) and must be backed up
apart from it."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

logger = logging.getLogger(__name__)

KEY_FILE_NAME = "sealing.key"

_lock = threading.Lock()
_cached: tuple[tuple[str, ...], MultiFernet] | None = None


class SealBroken(Exception):
    """A sealed value could not be opened: no configured key made it, or it was altered."""


def _key_file(data_dir: Path) -> str:
    """The embedded default's key: made once (atomically, owner-only), then read."""
    path = data_dir / KEY_FILE_NAME
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        partial = data_dir / f".{KEY_FILE_NAME}.{os.getpid()}.{threading.get_ident()}"
        with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as handle:
            handle.write(Fernet.generate_key().decode("ascii"))
            handle.flush()
            os.fsync(handle.fileno())  # on disk before it takes the final name: never an empty key
        try:
            os.link(partial, path)  # atomic: another process's key, if it won the race, stays
            logger.warning(
                "sealing: no QIWEI_SEALING_KEYS configured; made a key in %s (owner-only). Back it up "
                "apart from the database: without it sealed message originals cannot be read.",
                path,
            )
        except FileExistsError:
            pass
        finally:
            partial.unlink(missing_ok=True)
    return path.read_text().strip()


def sealing_keys() -> tuple[str, ...]:
    """The configured keys, newest first, or the embedded default's one key."""
    configured = tuple(key.strip() for key in getattr(settings, "QIWEI_SEALING_KEYS", ()) if key.strip())
    return configured or (_key_file(Path(settings.QIWEI_DATA_DIR)),)


def _fernet() -> MultiFernet:
    global _cached
    keys = sealing_keys()
    cached = _cached
    if cached is not None and cached[0] == keys:
        return cached[1]
    with _lock:
        try:
            fernet = MultiFernet([Fernet(key.encode("ascii")) for key in keys])
        except (ValueError, UnicodeEncodeError) as exc:
            raise SealBroken("QIWEI_SEALING_KEYS holds a value that is not a Fernet key") from exc
        _cached = (keys, fernet)
    return fernet


def seal(text: str) -> str:
    """`text` encrypted with the newest key, as ASCII."""
    return _fernet().encrypt(text.encode("utf-8")).decode("ascii")


def unseal(token: str) -> str:
    """The text a `seal` made, with whichever configured key made it."""
    try:
        return _fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, UnicodeError) as exc:
        raise SealBroken("a sealed value could not be opened with the configured keys") from exc


def reseal(token: str) -> str:
    """The same text sealed with the newest key (key rotation); unchanged text, new token."""
    try:
        return _fernet().rotate(token.encode("ascii")).decode("ascii")
    except (InvalidToken, UnicodeError) as exc:
        raise SealBroken("a sealed value could not be opened with the configured keys") from exc
