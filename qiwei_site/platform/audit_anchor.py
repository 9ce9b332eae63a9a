"""The audit's anchor outside the store (issue 36, item 1).

The chains (`audit_chain`) prove a row was not edited, deleted or moved — to someone who trusts the
database to hold them. Whoever can write the store itself (any writer of a SQLite file; on
PostgreSQL, an owner) could rebuild a chain, or cut its newest rows, and it would still verify. Two
things the database does not hold close that:

- **Anchors.** Each chain's head (sequence number and chain hash; per account and for the registry)
  is signed with the audit anchor key (HMAC-SHA256; `QIWEI_AUDIT_ANCHOR_KEY`, or the embedded
  default's key file beside the sealing key) and appended to the anchor log, a file outside the
  store opened append-only (`QIWEI_AUDIT_ANCHOR_LOG`). `audit_verify` checks each chain against its
  latest anchor: the anchored row must still be there with the anchored hash, so a rewritten past
  or a cut tail is reported. `audit_anchor` (every few minutes from Celery beat, and
  `manage.py audit_anchor`) checks what was appended since the last anchor before it signs the new
  head: a chain that does not verify is never anchored.
- **Signed scrubs.** A scrub (forget, erasure) rewrites a row's words; the row keeps the hash of what
  it said (`payload_hash`, in its entry hash, in the chain) and `scrubbed_hash` is an HMAC under the
  same key of (table, row, what it said, what is left). Without the key no one can put new words in
  a row and have it verify as scrubbed.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from qiwei_site.platform import keyfiles
from qiwei_site.platform.keyfiles import KeySpec

REGISTRY_CHAIN = "registry"


def account_chain(account_id: str) -> str:
    return f"account:{account_id}"


def anchor_log_path() -> Path:
    configured = getattr(settings, "QIWEI_AUDIT_ANCHOR_LOG", "")
    return Path(configured) if configured else Path(settings.QIWEI_KEY_DIR) / "audit-anchors.jsonl"


def _log_samples() -> Iterator[str]:
    path = anchor_log_path()
    if path.exists() and path.stat().st_size > 0:
        yield str(path)


AUDIT_ANCHOR = KeySpec(
    purpose="audit_anchor",
    label="审计锚定密钥",
    file_name="audit-anchor.key",
    setting="QIWEI_AUDIT_ANCHOR_KEY",
    cost="已记录的审计锚点和清理签名都将无法核验",
    cost_en="every anchor and signed scrub unverifiable",
    generate=lambda: secrets.token_hex(32),
    valid=lambda key: bool(key.strip()),
)
keyfiles.in_use_probe_register(AUDIT_ANCHOR.purpose, _log_samples)
keyfiles.verifier_register(AUDIT_ANCHOR.purpose, lambda: keyfiles.keys_verify(AUDIT_ANCHOR))


def anchor_key() -> bytes:
    """The newest anchor key (`KeyUnavailable` when it cannot be used)."""
    return keyfiles.read_keys(AUDIT_ANCHOR)[0].encode("utf-8")


def _anchor_keys() -> list[bytes]:
    return [key.encode("utf-8") for key in keyfiles.read_keys(AUDIT_ANCHOR)]


def _mac(key: bytes, *parts: object) -> str:
    return hmac.new(key, "\x1f".join(str(part) for part in parts).encode("utf-8"), hashlib.sha256).hexdigest()


# --- signed scrubs ------------------------------------------------------------------------------


def scrub_seal(*, table: str, row_id: int, payload_hash: str, words_hash: str) -> str:
    """The `scrubbed_hash` of a row whose words a scrub left as `words_hash`."""
    return _mac(anchor_key(), "scrub v1", table, row_id, payload_hash, words_hash)


def scrub_seal_valid(*, table: str, row_id: int, payload_hash: str, words_hash: str, seal: str) -> bool:
    """Whether `seal` was made by a scrub under one of the anchor keys (rotation keeps old seals)."""
    return any(
        hmac.compare_digest(_mac(key, "scrub v1", table, row_id, payload_hash, words_hash), seal)
        for key in _anchor_keys()
    )


# --- anchors ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Anchor:
    chain: str
    seq: int
    head: str
    at: str


def _anchor_mac(key: bytes, anchor: Anchor) -> str:
    return _mac(key, "anchor v1", anchor.chain, anchor.seq, anchor.head, anchor.at)


def anchor_append(anchors: list[Anchor]) -> None:
    """Append signed anchors to the log (append-only, owner-only, fsynced; one writer at a time)."""
    if not anchors:
        return
    key = anchor_key()
    path = anchor_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(
        json.dumps({**anchor.__dict__, "mac": _anchor_mac(key, anchor)}, ensure_ascii=False, sort_keys=True) + "\n"
        for anchor in anchors
    )
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, lines.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class AnchorLog:
    """The latest valid anchor of each chain, and the lines that did not verify."""

    latest: dict[str, Anchor]
    forged: list[str]


def anchors_read() -> AnchorLog:
    """Read the log: each chain's latest anchor whose signature holds under one of the anchor keys;
    a line that does not parse or verify is reported (someone wrote it without the key)."""
    log = AnchorLog(latest={}, forged=[])
    path = anchor_log_path()
    if not path.exists():
        return log
    keys = _anchor_keys()
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                anchor = Anchor(
                    chain=str(entry["chain"]), seq=int(entry["seq"]), head=str(entry["head"]), at=str(entry["at"])
                )
                mac = str(entry["mac"])
            except (ValueError, KeyError, TypeError):
                log.forged.append(f"锚点日志第 {number} 行无法解析 (line {number} does not parse)")
                continue
            if not any(hmac.compare_digest(_anchor_mac(key, anchor), mac) for key in keys):
                log.forged.append(f"锚点日志第 {number} 行的签名不符 (line {number}: signature does not verify)")
                continue
            previous = log.latest.get(anchor.chain)
            if previous is None or anchor.seq >= previous.seq:
                log.latest[anchor.chain] = anchor
    return log


def now_text() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
