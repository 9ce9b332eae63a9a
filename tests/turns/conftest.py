"""Fixtures for model turns: a recording memory provider, the fake `claude` CLI, local HTTP servers."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.cache import caches

from conversations.gateway import STATUS_CACHE_ALIAS
from conversations.models import CustomerProfile, MessageDirection
from memory.providers import CaptureTurn, PrefetchRequest
from sessions_epoch import pipeline
from tests.factories import BASE_TIME, CustomerFactory, MessageFactory

FAKE_CLAUDE = Path(__file__).parent / "bin" / "claude"


@dataclass
class RecordingProvider:
    """Stands in for memory.providers.get_provider(): a fixed context; captures are recorded."""

    prompt: str = "## 客户最新消息\n> 我想租地铁附近的两居室，预算4500\n\n## 输出要求\n只输出 JSON。"
    prefetched: list[PrefetchRequest] = field(default_factory=list)
    captured: list[CaptureTurn] = field(default_factory=list)

    def prefetch(self, request: PrefetchRequest) -> Any:
        self.prefetched.append(request)
        sections = [SimpleNamespace(name="latest", text=self.prompt, chars=len(self.prompt))]
        return SimpleNamespace(
            prompt=self.prompt,
            sections=sections,
            trace={"sections": {"latest": len(self.prompt)}, "snapshot_version": 3},
        )

    def capture(self, turn: CaptureTurn) -> None:
        self.captured.append(turn)


@pytest.fixture(autouse=True)
def _clear_shared_cache() -> Iterator[None]:
    caches[STATUS_CACHE_ALIAS].clear()
    yield
    caches[STATUS_CACHE_ALIAS].clear()


@pytest.fixture
def provider(monkeypatch) -> RecordingProvider:
    recording = RecordingProvider()
    monkeypatch.setattr(pipeline, "get_provider", lambda: recording)
    return recording


@pytest.fixture
def customer(account):
    """王先生, looking to rent a two-bedroom flat near the metro, with his own words on record."""
    customer = CustomerFactory(conversation_id="wm_wang_001", display_name="王先生")
    CustomerProfile.objects.filter(customer=customer).update(preferred_name="王先生")
    customer.refresh_from_db()
    MessageFactory(customer=customer, text="你好，我想在浦东租一套两居室", sent_at=BASE_TIME)
    MessageFactory(
        customer=customer,
        direction=MessageDirection.OUTBOUND,
        sender="顾问小李",
        text="好的王先生，请问预算大概多少？您是想要张江还是陆家嘴？",
        sent_at=BASE_TIME + dt.timedelta(minutes=1),
    )
    MessageFactory(
        customer=customer,
        text="预算４，５００左右，最好离地铁近一点，不考虑顶楼",
        sent_at=BASE_TIME + dt.timedelta(minutes=2),
    )
    return customer


@pytest.fixture
def fake_claude(tmp_path, settings, monkeypatch) -> SimpleNamespace:
    """The fake CLI selected through settings.CLAUDE_CODE_BIN; `behave(...)` sets its next answers."""
    state = tmp_path / "fake-claude"
    state.mkdir()
    monkeypatch.setenv("FAKE_CLAUDE_DIR", str(state))
    settings.CLAUDE_CODE_BIN = str(FAKE_CLAUDE)

    def behave(**behaviour: Any) -> None:
        (state / "behaviour.json").write_text(json.dumps(behaviour, ensure_ascii=False), encoding="utf-8")

    def calls() -> list[dict[str, Any]]:
        path = state / "calls.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    def forget_sessions() -> None:
        (state / "sessions.txt").unlink(missing_ok=True)

    return SimpleNamespace(dir=state, behave=behave, calls=calls, forget_sessions=forget_sessions)


class _JsonHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _reply(self, status: int, body: Any) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method: str, payload: Any) -> None:
        server: Any = self.server
        server.requests.append((method, self.path, payload))
        route = server.routes.get((method, self.path), (404, {"error": "not found"}))
        status, body = route(payload) if callable(route) else route
        self._reply(status, body)

    def do_GET(self) -> None:
        self._route("GET", None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._route("POST", json.loads(self.rfile.read(length) or b"{}"))


@pytest.fixture
def json_server() -> Iterator[Any]:
    """A JSON HTTP server on 127.0.0.1 (random port): `server.routes[(method, path)]` is
    `(status, body)` or a function of the request body returning one; `server.requests` records calls."""
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _JsonHandler)
    server.routes = {}
    server.requests = []
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


class HangingServer:
    """Accepts connections and never answers; counts what it was sent."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections: list[socket.socket] = []
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(0.5)
            self.connections.append(conn)
            with contextlib.suppress(OSError):
                self.received.append(conn.recv(4096))

    def close(self) -> None:
        self._stop.set()
        self.thread.join(timeout=2)
        for conn in self.connections:
            conn.close()
        self.sock.close()


@pytest.fixture
def hanging_server() -> Iterator[HangingServer]:
    server = HangingServer()
    yield server
    server.close()
