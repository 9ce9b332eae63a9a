"""Our Claude Code client against the REAL `claude` CLI from the npm registry, with no credentials
(issue 12, item 9): the CLI must accept every flag we pass, and the client must turn its answer into
the "needs a human" path with a clear reason. `.ci/run` installs the pinned CLI and sets
QIWEI_CLAUDE_CLI; the success path stays covered by the fake executable in tests/sessions_epoch."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from sessions_epoch.clients import ClaudeCodeClient, SessionRef

pytestmark = pytest.mark.integration


@pytest.fixture
def claude_cli(tmp_path, monkeypatch) -> str:
    binary = os.environ.get("QIWEI_CLAUDE_CLI") or shutil.which("claude")
    if not binary or not Path(binary).exists():
        message = "the claude CLI is not installed (.ci/run installs it with npm and sets QIWEI_CLAUDE_CLI)"
        if os.environ.get("QIWEI_REQUIRE_INTEGRATION") == "1":
            pytest.fail(message)
        pytest.skip(message)
    # No credentials of this machine's user may leak into the check.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "CLAUDE_")):
            monkeypatch.delenv(name)
    return binary


def _client(binary: str, tmp_path: Path) -> ClaudeCodeClient:
    return ClaudeCodeClient(binary=binary, timeout=60, max_budget_usd=0.05, cwd=str(tmp_path))


def test_real_cli_accepts_our_flags_and_a_logged_out_answer_asks_for_a_human(claude_cli, tmp_path):
    # given our exact argv for a new session, and no credentials
    client = _client(claude_cli, tmp_path)
    session = SessionRef(str(uuid.uuid4()), resume=False)
    # when the real CLI answers
    result = client.generate(prompt="客户：你好，想租一套两居室，预算6000以内。请按约定输出 JSON。", session=session)
    # then no flag was refused (an unknown option would name itself), and the turn goes to a human
    assert not result.ok
    assert "unknown option" not in result.error.lower() and "error: option" not in result.error.lower()
    assert result.error.startswith("Claude Code"), result.error
    assert "login" in result.error.lower() or "api key" in result.error.lower(), result.error
    assert not result.session_invalid and not result.budget_exceeded


def test_real_cli_resume_of_an_unknown_session_reads_as_invalid(claude_cli, tmp_path):
    # given a session id the CLI has never seen, resumed as if it were ours
    client = _client(claude_cli, tmp_path)
    result = client.generate(prompt="你好", session=SessionRef(str(uuid.uuid4()), resume=True))
    # then the client reports an invalid session, so the pipeline rotates the epoch
    assert result.session_invalid, result.error


@pytest.mark.django_db
def test_real_cli_turn_produces_a_draft_that_needs_a_human(claude_cli, tmp_path, account, settings):
    from memory.capture.ingest import messages_ingest
    from sessions_epoch.pipeline import draft_generate

    # given a customer message
    settings.CLAUDE_CODE_BIN = claude_cli
    messages_ingest(
        conversation_id="wm_cli",
        messages=[{"external_id": "cli-1", "direction": "inbound", "text": "想租静安区的一居室", "sender": "周女士"}],
        actor="wecom",
    )
    from conversations.selectors import customer_get

    # when the turn runs through the real CLI
    draft = draft_generate(customer=customer_get("wm_cli"), actor="pipeline", client=_client(claude_cli, tmp_path))
    # then a draft exists, waits for a human, and says why
    assert draft.requires_human
    assert draft.error.startswith("Claude Code"), draft.error
