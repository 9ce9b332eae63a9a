"""The upstream WeCom gateway (spec §9): its login/subscription status, cached so the Workbench reads
it at once, and the one place a reply leaves the building.

`LoopbackGateway` (no `QIWEI_UPSTREAM_URL`) is always online and records sends locally;
`HttpGateway` talks to a real gateway; WeCom itself (the `wecom` app, issue 37) registers a
resolver that answers for the accounts connected to a WeCom kf account, so this layer never imports
it. When the upstream is unreachable only sending stops; when it refuses one reply (WeCom's 48-hour
window, its 5-message quota) only that reply stops, and the draft says why.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import requests
from django.conf import settings
from django.core.cache import caches
from django.utils import timezone

from qiwei_site.platform.tenancy import current_account

PROBE_TIMEOUT_CAP_SECONDS = 2.5
SEND_TIMEOUT_SECONDS = 10.0
STATUS_CACHE_ALIAS = "shared"
STATUS_CACHE_KEY = "qiwei:upstream_status"
# The beat refreshes every 30 s; older than this the cached answer is flagged stale.
STATUS_STALE_AFTER_SECONDS = 120


class UpstreamError(Exception):
    """The upstream could not be reached or refused; the message is shown to people (Chinese)."""


class UpstreamRefused(UpstreamError):
    """The upstream is up but will not deliver this reply (outside WeCom's 48-hour window, past its
    5-message quota, a customer it does not know): the draft says why; sending to others goes on."""

    def __init__(self, message: str, *, code: str = "upstream_refused") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class UpstreamStatus:
    online: bool | None
    logged_in: bool | None
    subscription: str | None
    checked_at: dt.datetime | None
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["checked_at"] = self.checked_at.isoformat() if self.checked_at else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UpstreamStatus:
        checked = data.get("checked_at")
        return cls(
            online=data.get("online"),
            logged_in=data.get("logged_in"),
            subscription=data.get("subscription"),
            checked_at=dt.datetime.fromisoformat(checked) if checked else None,
            detail=data.get("detail") or "",
        )

    @classmethod
    def unknown(cls) -> UpstreamStatus:
        return cls(online=None, logged_in=None, subscription=None, checked_at=None, detail="尚未探测上游状态")

    def is_stale(self, now: dt.datetime | None = None) -> bool:
        if self.checked_at is None:
            return True
        age = (now or timezone.now()) - self.checked_at
        return age > dt.timedelta(seconds=STATUS_STALE_AFTER_SECONDS)


class UpstreamGateway(ABC):
    name = ""
    # Whose status this gateway reports: "" for the one shared upstream, an account id for an
    # account's own (its WeCom kf connection).
    status_scope = ""

    def send_refusal(self, conversation_id: str, text: str | None = None) -> str | None:
        """Why a reply (`text`, when known) to this conversation cannot be sent now (Chinese), known
        before trying; None: nothing known against it. Checked before a send, by the auto-send gate
        and on the draft's card."""
        return None

    @abstractmethod
    def probe(self, timeout: float) -> UpstreamStatus:
        """Ask the upstream for its status; never raises, never waits past `timeout` (capped at 2.5 s)."""

    @abstractmethod
    def send(self, *, conversation_id: str, text: str, idempotency_key: str) -> str:
        """Deliver `text`; returns the upstream message id or raises UpstreamError."""


class LoopbackGateway(UpstreamGateway):
    """The embedded default: no real WeCom connection; sends are appended to a local outbox file."""

    name = "loopback"

    @staticmethod
    def outbox_path() -> Path:
        return Path(settings.QIWEI_DATA_DIR) / "upstream-loopback" / "sent.jsonl"

    def probe(self, timeout: float) -> UpstreamStatus:
        return UpstreamStatus(
            online=True, logged_in=True, subscription="local", checked_at=timezone.now(), detail="本地回环网关"
        )

    def send(self, *, conversation_id: str, text: str, idempotency_key: str) -> str:
        upstream_id = f"loopback-{uuid.uuid4().hex[:16]}"
        record = {
            "upstream_id": upstream_id,
            "conversation_id": conversation_id,
            "idempotency_key": idempotency_key,
            "text": text,
            "sent_at": timezone.now().isoformat(),
        }
        path = self.outbox_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return upstream_id

    @classmethod
    def outbox_scrub(
        cls, *, conversation_id: str, drop: bool = False, redact: Callable[[str], str] | None = None
    ) -> int:
        """Rewrite the outbox without a conversation's lines (`drop`, for an erased customer) or with
        their texts passed through `redact` (a forgotten quote); returns the lines changed.

        Rewritten in place under the same lock `send` takes, so a concurrent send is neither lost
        nor written into a replaced file; the file is truncated, so no old byte stays past its end.
        """
        path = cls.outbox_path()
        if not path.exists() or not (drop or redact):
            return 0
        with open(path, "r+", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                kept: list[str] = []
                changed = 0
                for line in handle.read().splitlines():
                    if not line.strip():
                        continue
                    record = json.loads(line)
                    if record.get("conversation_id") != conversation_id:
                        kept.append(line + "\n")
                        continue
                    if drop:
                        changed += 1
                        continue
                    if redact is not None and isinstance(record.get("text"), str):
                        text = redact(record["text"])
                        if text != record["text"]:
                            record["text"] = text
                            line = json.dumps(record, ensure_ascii=False)
                            changed += 1
                    kept.append(line + "\n")
                if changed:
                    handle.seek(0)
                    handle.write("".join(kept))
                    handle.truncate()
                    handle.flush()
                    os.fsync(handle.fileno())
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return changed

    @classmethod
    def sent_records(cls) -> list[dict[str, Any]]:
        path = cls.outbox_path()
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class HttpGateway(UpstreamGateway):
    """A gateway answering `GET <url>/status` and `POST <url>/send` with JSON."""

    name = "http"

    def __init__(self, url: str, *, send_timeout: float = SEND_TIMEOUT_SECONDS) -> None:
        self.url = url.rstrip("/")
        self.send_timeout = send_timeout

    def probe(self, timeout: float) -> UpstreamStatus:
        timeout = min(max(timeout, 0.05), PROBE_TIMEOUT_CAP_SECONDS)
        now = timezone.now
        try:
            response = requests.get(f"{self.url}/status", timeout=timeout)
        except requests.Timeout:
            return UpstreamStatus(False, None, None, now(), f"上游网关 {timeout:g} 秒内无响应 (timed out)")
        except requests.RequestException as exc:
            return UpstreamStatus(False, None, None, now(), f"无法连接上游网关：{exc.__class__.__name__}")
        if response.status_code >= 400:
            return UpstreamStatus(False, None, None, now(), f"上游网关返回 HTTP {response.status_code}")
        try:
            body = response.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        logged_in = body.get("logged_in")
        subscription = body.get("subscription")
        return UpstreamStatus(
            online=True,
            logged_in=logged_in if isinstance(logged_in, bool) else None,
            subscription=str(subscription) if subscription is not None else None,
            checked_at=now(),
            detail=str(body.get("detail") or "")[:200],
        )

    def send(self, *, conversation_id: str, text: str, idempotency_key: str) -> str:
        try:
            response = requests.post(
                f"{self.url}/send",
                json={"conversation_id": conversation_id, "text": text, "idempotency_key": idempotency_key},
                headers={"Idempotency-Key": idempotency_key},
                timeout=self.send_timeout,
            )
        except requests.Timeout:
            raise UpstreamError(f"上游网关 {self.send_timeout:g} 秒内无响应") from None
        except requests.RequestException as exc:
            raise UpstreamError(f"无法连接上游网关（{exc.__class__.__name__}）") from None
        if response.status_code >= 400:
            raise UpstreamError(f"上游网关拒绝发送（HTTP {response.status_code}）")
        try:
            body = response.json()
        except ValueError:
            body = {}
        upstream_id = body.get("upstream_id") if isinstance(body, dict) else None
        return str(upstream_id or "")[:100]


GatewayResolver = Callable[[str | None], "UpstreamGateway | None"]
_resolvers: list[GatewayResolver] = []


def gateway_resolver_register(resolver: GatewayResolver) -> None:
    """An app that is an upstream of its own (WeCom) answers for the accounts it serves; called from
    its AppConfig.ready, so this layer never imports it."""
    if resolver not in _resolvers:
        _resolvers.append(resolver)


def default_gateway() -> UpstreamGateway:
    """The shared upstream: `QIWEI_UPSTREAM` (loopback or http), or by `QIWEI_UPSTREAM_URL` alone."""
    url = settings.QIWEI_UPSTREAM_URL
    if settings.QIWEI_UPSTREAM == "loopback" or not url:
        return LoopbackGateway()
    return HttpGateway(url)


def get_gateway(account_id: str | None = None) -> UpstreamGateway:
    """The upstream of `account_id` (default: the selected account, if any)."""
    if account_id is None:
        account_id = current_account()
    for resolver in _resolvers:
        gateway = resolver(account_id)
        if gateway is not None:
            return gateway
    return default_gateway()


# --- the cached status ------------------------------------------------------------------------


def _cache() -> Any:
    return caches[STATUS_CACHE_ALIAS]


def _status_key(scope: str) -> str:
    return f"{STATUS_CACHE_KEY}:{scope}" if scope else STATUS_CACHE_KEY


def upstream_status_cached(account_id: str | None = None) -> UpstreamStatus | None:
    """The last probed status of `account_id`'s upstream (the shared one when it has none of its
    own), shared by web and worker processes; never probes."""
    try:
        scope = get_gateway(account_id).status_scope if account_id else ""
        data = _cache().get(_status_key(scope))
    except Exception:  # a broken cache must not break the fast path
        return None
    if not isinstance(data, dict):
        return None
    try:
        return UpstreamStatus.from_dict(data)
    except (TypeError, ValueError):
        return None


def upstream_status_store(status: UpstreamStatus, scope: str = "") -> None:
    _cache().set(_status_key(scope), status.as_dict(), timeout=None)


def upstream_status_refresh(*, gateway: UpstreamGateway | None = None, account_id: str | None = None) -> UpstreamStatus:
    """Probe (within QIWEI_UPSTREAM_PROBE_TIMEOUT_SECONDS, ≤ 2.5 s) and cache the answer."""
    gateway = gateway or (get_gateway(account_id) if account_id else default_gateway())
    timeout = min(settings.QIWEI_UPSTREAM_PROBE_TIMEOUT_SECONDS, PROBE_TIMEOUT_CAP_SECONDS)
    status = gateway.probe(timeout)
    upstream_status_store(status, gateway.status_scope)
    return status


def upstream_mark_unreachable(detail: str, *, scope: str = "") -> None:
    """A failed send is news about the upstream: record it so the Workbench disables sending at once."""
    try:
        previous = UpstreamStatus.from_dict(_cache().get(_status_key(scope)) or {})
    except (TypeError, ValueError):
        previous = None
    upstream_status_store(
        UpstreamStatus(
            online=False,
            logged_in=previous.logged_in if previous else None,
            subscription=previous.subscription if previous else None,
            checked_at=timezone.now(),
            detail=detail[:200],
        ),
        scope,
    )
