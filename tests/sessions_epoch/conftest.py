"""Fixtures for model turns: a recording memory provider and the fake `claude` CLI.

The local HTTP servers (`json_server`, `hanging_server`) are in tests/conftest.py; the status-cache reset
and 王先生's conversation (`customer`) come from tests/conversations/conftest.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memory.providers import CaptureTurn, LocalMemoryProvider, PrefetchRequest, ProfileGrounding
from sessions_epoch import pipeline
from tests.conversations.conftest import _clear_shared_cache, customer  # noqa: F401 - shared fixtures

FAKE_CLAUDE = Path(__file__).parent / "bin" / "claude"


@dataclass
class RecordingProvider:
    """Stands in for memory.providers.get_provider(): a fixed context; captures are recorded; grounding is real."""

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

    def ground_profile_updates(self, **kwargs: Any) -> ProfileGrounding:
        """Grounding is memory's real reading of the customer's messages, never stubbed."""
        return LocalMemoryProvider().ground_profile_updates(**kwargs)


@pytest.fixture
def provider(monkeypatch) -> RecordingProvider:
    recording = RecordingProvider()
    monkeypatch.setattr(pipeline, "get_provider", lambda: recording)
    return recording


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
