"""Is a model connected (issue 24, item 1): each client checked for real — the offline default says
drafts are placeholders, the Claude Code CLI is looked for and asked its version, an OpenAI-compatible
server is asked for its models — shown by the API, on /readyz as a note, never as a failure."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from sessions_epoch.health import MISSING, OFFLINE, OK, UNREACHABLE, model_health


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.delete("qiwei:model-health")


def test_model_health_offline_says_drafts_are_placeholders(settings):
    settings.QIWEI_MODEL_CLIENT = "offline"
    health = model_health()
    assert health.state == OFFLINE and not health.ok
    assert "暂缓回复" in health.title and "QIWEI_MODEL_CLIENT" in health.action


def test_model_health_claude_code_missing_says_what_to_install(settings, tmp_path):
    settings.QIWEI_MODEL_CLIENT = "claude_code"
    settings.CLAUDE_CODE_BIN = str(tmp_path / "no-such-claude")
    health = model_health()
    assert health.state == MISSING and "@anthropic-ai/claude-code" in health.action


def test_model_health_claude_code_present_names_its_version(settings, fake_claude):
    settings.QIWEI_MODEL_CLIENT = "claude_code"
    health = model_health()
    assert health.state == OK and health.title == "已连接模型：Claude Code 2.1.332 (Claude Code)"


def test_model_health_openai_server_answering_its_models(settings, json_server):
    server = json_server
    server.routes[("GET", "/v1/models")] = (200, {"data": [{"id": "qwen2.5-7b-instruct"}]})
    settings.QIWEI_MODEL_CLIENT = "openai"
    settings.QIWEI_OPENAI_BASE_URL = server.url + "/v1"
    health = model_health()
    assert health.state == OK and "qwen2.5-7b-instruct" in health.title


def test_model_health_openai_nothing_listening_is_unreachable(settings):
    settings.QIWEI_MODEL_CLIENT = "openai"
    settings.QIWEI_OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # discard port: refused
    health = model_health()
    assert health.state == UNREACHABLE and "QIWEI_OPENAI_BASE_URL" in health.action


def test_model_status_api_answers_for_a_signed_in_user(agent_client, settings):
    settings.QIWEI_MODEL_CLIENT = "offline"
    body = agent_client.get("/api/model-status").json()
    assert body["client"] == "offline" and body["ok"] is False and body["state"] == "offline"


def test_model_status_api_needs_a_sign_in(client):
    assert client.get("/api/model-status").status_code in (401, 403)
