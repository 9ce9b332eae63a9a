"""Keys kept outside the database, and failing closed (issue 36, item 2).

Three keys live beside the data and never in it: the sealing key (message originals), the memory
fingerprint key (a forgotten or rejected value refused without being kept) and the audit anchor key
(chain heads signed outside the store). Each is configured (an environment variable) or, in the
embedded default, a file made once in QIWEI_KEY_DIR (the data dir unless set), owner-only.

Losing such a key costs what it guards (every sealed original unreadable; every decision
unrecognisable; anchors unprovable), so a key is made only when nothing was ever guarded by one:
the registry (`default`) keeps a fingerprint of every key it has seen (`KeyFingerprint`, an HMAC
of a constant under the key: it proves which key, and reveals nothing of it), and an app may say
whether data guarded by the key exists (`in_use_probe_register`). A missing key file with a
fingerprint on record, or with guarded data, is refused — at start-up (`keys_verify`, from
`manage.py setup`, gunicorn and the Celery worker), by /readyz, and by the code that would have made
it — with a message naming the file and what to do, never a new key.

`keys_verify` also refuses a key file others may read, a file that is not a key, and a key the
registry has never seen while it knows others (the wrong file restored): a key is trusted when one
of the current keys is on record (rotation keeps continuity: the newer keys are recorded beside
it), or when nothing is on record and the guarded data it can open agrees (an upgrade)."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError

from qiwei_site.platform.errors import ApplicationError

logger = logging.getLogger(__name__)

MISSING, UNREADABLE, CORRUPT, WRONG, EXPOSED = "missing", "unreadable", "corrupt", "wrong", "exposed"

_PROBLEMS = {
    MISSING: (
        "密钥文件 {path} 不存在，而已有数据依赖它。请从备份恢复该文件（或设置 {setting}）后再启动；"
        "不要删除或新建密钥，否则{cost}",
        "the key file {path} is missing while data depends on it: restore it from backup (or set {setting}) "
        "and start again; making a new key would leave {cost_en}",
    ),
    UNREADABLE: (
        "密钥文件 {path} 无法读取（权限或磁盘问题）。请修复文件权限（属主可读，chmod 600）后重试",
        "the key file {path} cannot be read: fix its permissions (owner-readable, chmod 600) and retry",
    ),
    CORRUPT: (
        "{source} 中的内容不是有效的密钥（文件损坏或被改动）。请从备份恢复后重试",
        "{source} does not hold a valid key (corrupt or altered): restore it from backup and retry",
    ),
    WRONG: (
        "{source} 中的密钥不是本系统用过的密钥（恢复了错误的文件？）。请恢复原来的密钥后重试",
        "{source} holds a key this system never used (the wrong file restored?): restore the right key and retry",
    ),
    EXPOSED: (
        "密钥文件 {path} 其他用户也能读取。请执行 chmod 600 {path}，只让运行服务的用户读取",
        "the key file {path} is readable by other users: run chmod 600 {path}",
    ),
}


@dataclass(frozen=True)
class KeySpec:
    """One key: what it guards, where it is configured, where the embedded default keeps it."""

    purpose: str
    label: str
    file_name: str
    setting: str
    cost: str  # what losing it costs, in Chinese
    cost_en: str
    generate: Callable[[], str]
    valid: Callable[[str], bool]


class KeyUnavailable(ApplicationError):
    """A key cannot be used now: a retriable 503 for a request, a refusal to start for a process.
    The detail names the file (or the setting) and what to do, in Chinese and English."""

    code = "key_unavailable"
    status_code = 503
    retry_after = 60

    def __init__(self, spec: KeySpec, problem: str):
        self.spec, self.problem = spec, problem
        path = key_path(spec)
        source = f"环境变量 {spec.setting}" if configured_keys(spec) else f"密钥文件 {path}"
        source_en = f"the setting {spec.setting}" if configured_keys(spec) else f"the key file {path}"
        chinese, english = _PROBLEMS[problem]
        values = {"path": path, "setting": spec.setting, "cost": spec.cost, "cost_en": spec.cost_en}
        detail = (
            f"{spec.label}："
            + chinese.format(source=source, **values)
            + f" ({english.format(source=source_en, **values)})."
        )
        super().__init__(detail, code=f"{spec.purpose}_key_{problem}", extra={"problem": problem})


# --- where a key comes from ---------------------------------------------------------------------


def configured_keys(spec: KeySpec) -> tuple[str, ...]:
    value = getattr(settings, spec.setting, None) or ()
    values = [value] if isinstance(value, str) else list(value)
    return tuple(key.strip() for key in values if key and key.strip())


def key_path(spec: KeySpec) -> Path:
    return Path(settings.QIWEI_KEY_DIR) / spec.file_name


def key_fingerprint(key: str) -> str:
    """Which key this is, without revealing it."""
    return hmac.new(key.encode("utf-8"), b"qiwei key fingerprint v1", hashlib.sha256).hexdigest()[:32]


def _exposed(path: Path) -> bool:
    try:
        return bool(stat.S_IMODE(path.stat().st_mode) & 0o077)
    except OSError:
        return False


def _read_file(spec: KeySpec, path: Path) -> str:
    try:
        key = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise KeyUnavailable(spec, CORRUPT if isinstance(exc, UnicodeDecodeError) else UNREADABLE) from None
    if not spec.valid(key):
        raise KeyUnavailable(spec, CORRUPT)
    return key


def _make_file(spec: KeySpec, path: Path) -> None:
    """Make the key file atomically (another process's key, if it won the race, stays)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.parent / f".{spec.file_name}.{os.getpid()}.{threading.get_ident()}"
    with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as handle:
        handle.write(spec.generate())
        handle.flush()
        os.fsync(handle.fileno())  # on disk before it takes the final name: never an empty key
    try:
        os.link(partial, path)
        logger.warning(
            "%s: no %s configured; made a key in %s (owner-only). Back it up apart from the database: without it %s.",
            spec.purpose,
            spec.setting,
            path,
            spec.cost_en,
        )
    except FileExistsError:
        pass
    finally:
        partial.unlink(missing_ok=True)


def read_keys(spec: KeySpec) -> tuple[str, ...]:
    """The keys to use, newest first: the configured ones, or the embedded default's file — made
    only when no key was ever on record (else `KeyUnavailable`, never a new key)."""
    configured = configured_keys(spec)
    if configured:
        if not all(spec.valid(key) for key in configured):
            raise KeyUnavailable(spec, CORRUPT)
        return configured
    path = key_path(spec)
    if not path.exists():
        if not may_make(spec):
            logger.error(
                "%s: key file %s is missing while keys are on record; refusing to make one", spec.purpose, path
            )
            raise KeyUnavailable(spec, MISSING)
        _make_file(spec, path)
        key = _read_file(spec, path)
        fingerprints_record(spec, [key])
        return (key,)
    return (_read_file(spec, path),)


# --- the record of keys, and of data they guard ----------------------------------------------------

_probes: dict[str, Callable[[], Iterator[str]]] = {}


def in_use_probe_register(purpose: str, probe: Callable[[], Iterator[str]]) -> None:
    """An app says whether data guarded by the `purpose` key exists: `probe()` yields samples of it
    (a sealed token, say), none when there is none. Registered from the app's `ready()`."""
    _probes[purpose] = probe


def _samples(spec: KeySpec) -> Iterator[str]:
    probe = _probes.get(spec.purpose)
    return probe() if probe is not None else iter(())


def _on_record(spec: KeySpec) -> set[str]:
    from qiwei_site.platform.models import KeyFingerprint

    try:
        return set(
            KeyFingerprint.objects.using("default").filter(purpose=spec.purpose).values_list("fingerprint", flat=True)
        )
    except DatabaseError:  # the registry not migrated yet (a first start): nothing on record
        return set()


def may_make(spec: KeySpec) -> bool:
    """Whether a new key may be made: none was ever recorded for this purpose."""
    return not _on_record(spec)


def fingerprints_record(spec: KeySpec, keys: Iterable[str]) -> None:
    from qiwei_site.platform.models import KeyFingerprint

    rows = [KeyFingerprint(purpose=spec.purpose, fingerprint=key_fingerprint(key)) for key in keys]
    try:
        KeyFingerprint.objects.using("default").bulk_create(rows, ignore_conflicts=True)
    except DatabaseError:
        logger.warning("%s: could not record the key's fingerprint (registry not migrated?)", spec.purpose)


# --- verification -------------------------------------------------------------------------------


def keys_verify(spec: KeySpec, *, opens: Callable[[tuple[str, ...], str], bool] | None = None) -> tuple[str, ...]:
    """The keys, checked for a start or a probe; `KeyUnavailable` names the first problem.

    Missing with keys on record or guarded data present; unreadable; not a key; readable by others;
    none of them on record while others are (or, with none on record, none opening the guarded data
    `opens(keys, sample)` is given). A trusted key set is recorded, so the next check knows it."""
    configured = configured_keys(spec)
    path = key_path(spec)
    if not configured and not path.exists() and any(True for _ in _samples(spec)):
        raise KeyUnavailable(spec, MISSING)  # an upgrade: nothing on record yet, but data it guarded
    keys = read_keys(spec)
    if not configured and _exposed(path):
        raise KeyUnavailable(spec, EXPOSED)
    recorded = _on_record(spec)
    current = {key_fingerprint(key) for key in keys}
    if recorded and not recorded & current:
        raise KeyUnavailable(spec, WRONG)
    if not recorded and opens is not None:
        for sample in _samples(spec):
            if not opens(keys, sample):
                raise KeyUnavailable(spec, WRONG)
            break
    if current - recorded:
        fingerprints_record(spec, keys)
    return keys


_specs: dict[str, Callable[[], tuple[str, ...]]] = {}


def verifier_register(purpose: str, verify: Callable[[], tuple[str, ...]]) -> None:
    """Each key's module registers how it is verified (its spec and how a sample is opened)."""
    _specs[purpose] = verify


def all_keys_verify() -> dict[str, KeyUnavailable | None]:
    """Every registered key checked: purpose -> None (usable) or what is wrong with it."""
    outcomes: dict[str, KeyUnavailable | None] = {}
    for purpose, verify in sorted(_specs.items()):
        try:
            verify()
            outcomes[purpose] = None
        except KeyUnavailable as exc:
            outcomes[purpose] = exc
    return outcomes


def startup_keys_check() -> None:
    """Refuse to start when a key is missing, unreadable, not a key, wrong or readable by others:
    raises `KeyUnavailable` with every problem named (the caller exits non-zero)."""
    problems = [problem.detail for problem in all_keys_verify().values() if problem is not None]
    if problems:
        logger.error("refusing to start: %s", "; ".join(problems))
        raise KeysRefused("\n".join(problems))


class KeysRefused(RuntimeError):
    """A process must not start: a key it needs fails closed (the message says which and why)."""
