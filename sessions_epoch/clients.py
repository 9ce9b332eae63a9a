"""Model clients behind one interface (DESIGN §9): the Claude Code CLI, an OpenAI-compatible HTTP
server for local models, and an offline client that drafts without a model and always asks for a human.

A client only turns a prompt into a result; the pipeline validates and grounds what comes back.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import requests
from django.conf import settings

logger = logging.getLogger(__name__)

READ_ONLY_TOOLS = "Read,Grep,Glob"

# What the CLI says when --resume names a session it does not have, or --session-id one it already has.
_SESSION_INVALID_RE = re.compile(
    r"no conversation found|session not found|session .{0,80}not found|already in use|invalid session",
    re.IGNORECASE,
)
_BUDGET_RE = re.compile(r"max[_ -]?budget|budget exceeded|exceeded .{0,20}budget", re.IGNORECASE)
_CJK_RE = re.compile(r"[\u3400-\u9fff]")
_LATIN_RE = re.compile(r"[A-Za-z]")


@dataclass(frozen=True)
class SessionRef:
    """The epoch's model session: `resume` is true once a turn has already created it."""

    session_id: str
    resume: bool = False


@dataclass
class ModelResult:
    client: str
    raw_text: str = ""
    output: dict[str, Any] | None = None
    error: str = ""
    session_invalid: bool = False
    budget_exceeded: bool = False
    session_id: str = ""
    cost_usd: float | None = None
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.error and self.output is not None


def parse_model_json(text: str) -> dict[str, Any]:
    """The JSON object in a model's answer, tolerating code fences and prose around it."""
    candidate = (text or "").strip()
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", candidate, re.DOTALL)
    if fenced:
        candidate = fenced.group(1)
    start, end = candidate.find("{"), candidate.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("模型输出中没有 JSON 对象 (no JSON object in the model output).")
    value = json.loads(candidate[start : end + 1])
    if not isinstance(value, dict):
        raise ValueError("模型输出不是 JSON 对象 (model output is not a JSON object).")
    return value


def _with_parsed(result: ModelResult, text: str) -> ModelResult:
    result.raw_text = text
    try:
        result.output = parse_model_json(text)
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        result.error = f"模型输出无法解析为 JSON：{exc}"
    return result


class ModelClient(ABC):
    name: str = ""

    @abstractmethod
    def generate(self, *, prompt: str, session: SessionRef, hints: Mapping[str, str] | None = None) -> ModelResult:
        """Run one turn. `hints` carries plain facts (称呼, the latest message) for clients without a model."""


class ClaudeCodeClient(ModelClient):
    """`claude -p --bare` with read-only tools: no hooks, no auto-memory, no writes (spec §6)."""

    name = "claude_code"

    def __init__(
        self,
        *,
        binary: str | None = None,
        timeout: float | None = None,
        max_budget_usd: float | None = None,
        cwd: str | None = None,
    ) -> None:
        self.binary = binary or settings.CLAUDE_CODE_BIN
        self.timeout = timeout or settings.CLAUDE_CODE_TIMEOUT_SECONDS
        self.max_budget_usd = max_budget_usd or settings.CLAUDE_CODE_MAX_BUDGET_USD
        # Read-only tools see the knowledge base, nothing else of ours.
        self.cwd = cwd or str(settings.QIWEI_KNOWLEDGE_DIR)

    def argv(self, session: SessionRef) -> list[str]:
        args = [
            self.binary,
            "-p",
            "--bare",
            "--output-format",
            "json",
            "--allowedTools",
            READ_ONLY_TOOLS,
            "--max-budget-usd",
            f"{self.max_budget_usd:g}",
        ]
        args += ["--resume", session.session_id] if session.resume else ["--session-id", session.session_id]
        return args

    def generate(self, *, prompt: str, session: SessionRef, hints: Mapping[str, str] | None = None) -> ModelResult:
        result = ModelResult(client=self.name, session_id=session.session_id)
        try:
            completed = subprocess.run(
                self.argv(session),
                input=prompt,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                cwd=self.cwd if _is_dir(self.cwd) else None,
                check=False,
            )
        except subprocess.TimeoutExpired:
            result.error = f"Claude Code 超时（{self.timeout:g} 秒）(timed out)."
            return result
        except FileNotFoundError:
            result.error = (
                "未找到 Claude Code 命令行工具，没有连接模型：请安装 @anthropic-ai/claude-code，"
                "或用 CLAUDE_CODE_BIN 指向它，或改用 QIWEI_MODEL_CLIENT=openai / offline。"
            )
            return result
        except OSError as exc:
            result.error = f"无法运行 Claude Code（{exc.__class__.__name__}），没有连接模型。"
            return result
        stdout, stderr = completed.stdout or "", completed.stderr or ""
        envelope: dict[str, Any] | None = None
        try:
            loaded = json.loads(stdout) if stdout.strip() else None
            envelope = loaded if isinstance(loaded, dict) else None
        except json.JSONDecodeError:
            envelope = None
        text_for_checks = f"{stdout}\n{stderr}"
        if envelope is not None:
            result.session_id = str(envelope.get("session_id") or session.session_id)
            cost = envelope.get("total_cost_usd")
            result.cost_usd = float(cost) if isinstance(cost, int | float) else None
            usage = envelope.get("usage")
            result.usage = usage if isinstance(usage, dict) else {}
            subtype = str(envelope.get("subtype") or "")
            if subtype == "error_max_budget_usd" or (envelope.get("is_error") and _BUDGET_RE.search(subtype)):
                result.budget_exceeded = True
                result.error = "Claude Code 本轮预算超限 (max budget exceeded)."
                return result
            if envelope.get("is_error") or subtype.startswith("error"):
                result.session_invalid = bool(_SESSION_INVALID_RE.search(text_for_checks))
                detail = str(envelope.get("result") or subtype or "error")[:300]
                result.error = f"Claude Code 返回错误：{detail}"
                return result
            if completed.returncode == 0:
                return _with_parsed(result, str(envelope.get("result") or ""))
        if _SESSION_INVALID_RE.search(text_for_checks):
            result.session_invalid = True
            result.error = "Claude Code 会话无效 (session not found)."
        elif _BUDGET_RE.search(text_for_checks):
            result.budget_exceeded = True
            result.error = "Claude Code 本轮预算超限 (max budget exceeded)."
        elif completed.returncode != 0:
            tail = (stderr.strip() or stdout.strip())[-300:]
            result.error = f"Claude Code 退出码 {completed.returncode}：{tail}"
        else:
            result.error = "Claude Code 输出不是 JSON (unexpected output format)."
            result.raw_text = stdout[:2000]
        return result


def _is_dir(path: str) -> bool:
    from pathlib import Path

    return Path(path).is_dir()


class OpenAICompatibleClient(ModelClient):
    """`/v1/chat/completions` of vLLM, Ollama or any compatible server; stateless per turn."""

    name = "openai"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self.base_url = (base_url or settings.QIWEI_OPENAI_BASE_URL).rstrip("/")
        self.model = model or settings.QIWEI_OPENAI_MODEL
        self.api_key = api_key if api_key is not None else settings.QIWEI_OPENAI_API_KEY
        self.timeout = timeout or settings.QIWEI_OPENAI_TIMEOUT_SECONDS

    def _post(self, body: dict[str, Any]) -> requests.Response:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return requests.post(f"{self.base_url}/chat/completions", json=body, headers=headers, timeout=self.timeout)

    def generate(self, *, prompt: str, session: SessionRef, hints: Mapping[str, str] | None = None) -> ModelResult:
        result = ModelResult(client=self.name, session_id=session.session_id)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0.2,
            "response_format": {"type": "json_object"},
        }
        try:
            response = self._post(body)
            if response.status_code in (400, 422) and "response_format" in response.text:
                # Some servers reject JSON mode; the prompt's output contract still asks for JSON.
                body.pop("response_format")
                response = self._post(body)
        except requests.Timeout:
            result.error = f"模型服务超时（{self.timeout:g} 秒）(timed out)."
            return result
        except requests.ConnectionError:
            result.error = f"无法连接模型服务（{self.base_url}）：请确认服务已启动，或修改 QIWEI_OPENAI_BASE_URL。"
            return result
        except requests.RequestException as exc:
            result.error = f"无法连接模型服务：{exc.__class__.__name__}"
            return result
        if response.status_code >= 400:
            result.error = f"模型服务返回 HTTP {response.status_code}：{response.text[:200]}"
            return result
        try:
            payload = response.json()
            content = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            result.error = "模型服务响应格式不正确 (unexpected response shape)."
            result.raw_text = response.text[:2000]
            return result
        usage = payload.get("usage")
        result.usage = usage if isinstance(usage, dict) else {}
        return _with_parsed(result, str(content or ""))


def plain_address(value: str) -> str:
    """The form of address as a customer may read it: the profile's annotation goes ("刘（姓）" →
    ""), and a bare surname is no form of address on its own (so the greeting is a plain 您好)."""
    plain = re.sub(r"[（(][^）)]*[）)]", "", value).strip()
    return "" if len(plain) <= 1 and _CJK_RE.search(plain or "a") else plain


class OfflineClient(ModelClient):
    """The embedded default: a polite holding reply, no model, always for a human to review."""

    name = "offline"
    confidence = 0.2

    def generate(self, *, prompt: str, session: SessionRef, hints: Mapping[str, str] | None = None) -> ModelResult:
        hints = hints or {}
        name = plain_address(hints.get("preferred_name") or "")
        latest = hints.get("latest_message") or ""
        if latest and _LATIN_RE.search(latest) and not _CJK_RE.search(latest):
            greeting = f"Hello {name}, " if name else "Hello, "
            reply = f"{greeting}we have received your request. An adviser will confirm the details with you shortly."
        else:
            greeting = f"{name}您好，" if name else "您好，"
            reply = f"{greeting}您的需求我们已经收到，稍后由顾问为您确认具体房源信息。"
        output = {
            "reply": reply,
            "confidence": self.confidence,
            "requiresHuman": True,
            "profileUpdates": {},
            "reasons": ["离线模式：未调用模型，仅生成礼貌的暂缓回复，需人工确认"],
        }
        return ModelResult(
            client=self.name,
            raw_text=json.dumps(output, ensure_ascii=False),
            output=output,
            session_id=session.session_id,
        )


CLIENTS: dict[str, type[ModelClient]] = {
    OfflineClient.name: OfflineClient,
    ClaudeCodeClient.name: ClaudeCodeClient,
    OpenAICompatibleClient.name: OpenAICompatibleClient,
}


def get_client(name: str | None = None) -> ModelClient:
    """The configured client (`QIWEI_MODEL_CLIENT`: offline, claude_code or openai)."""
    key = name or settings.QIWEI_MODEL_CLIENT
    try:
        return CLIENTS[key]()
    except KeyError:
        raise ValueError(f"unknown model client {key!r}; choose one of {sorted(CLIENTS)}") from None
