"""Model clients behind one interface (DESIGN §9): the Claude Code CLI, an OpenAI-compatible HTTP
server for local models, and an offline client that drafts without a model and always asks for a human.

A client only turns a prompt into a result; the pipeline validates and grounds what comes back.
A failure is said in Chinese — what failed and a short reason (`http_error_summary`,
`CLI_ERROR_REASONS`) — with the server's or CLI's raw words after `MODEL_ERROR_DETAIL_MARK`;
`draft_create` shows the summary and keeps the raw words only in the draft's trace.
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

from conversations.drafts import model_error_split, model_error_text

logger = logging.getLogger(__name__)

READ_ONLY_TOOLS = "Read,Grep,Glob"

# What the CLI says when --resume names a session it does not have, or --session-id one it already has.
_SESSION_INVALID_RE = re.compile(
    r"no conversation found|session not found|session .{0,80}not found|already in use|invalid session",
    re.IGNORECASE,
)
_BUDGET_RE = re.compile(r"max[_ -]?budget|budget exceeded|exceeded .{0,20}budget", re.IGNORECASE)
_CJK_RE = re.compile(r"[\u3400-\u9fff]")

# An HTTP status from the model server, as an agent reads it. Unlisted: by class (4xx / 5xx).
HTTP_STATUS_REASONS: dict[int, str] = {
    400: "请求无效",
    401: "鉴权失败，请检查 QIWEI_OPENAI_API_KEY",
    403: "无权访问该模型",
    404: "接口或模型不存在，请检查 QIWEI_OPENAI_BASE_URL 和 QIWEI_OPENAI_MODEL",
    408: "请求超时",
    413: "请求过大（提示词过长）",
    422: "请求参数无效",
    429: "请求过多或额度不足，请稍后重试",
    500: "服务器内部错误",
    502: "网关错误，模型服务可能未启动",
    503: "服务暂不可用，模型可能正在加载",
    504: "网关超时",
}

# What a CLI error says, read in order (the first match wins: the order is the precedence). Each
# row: a name, what the CLI's words match, and the reason an agent reads.
CLI_ERROR_REASONS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "auth",
        re.compile(r"not logged in|/login|\blogin\b|api[ _-]?key|authenticat|unauthori[sz]ed|\b40[13]\b", re.I),
        "未登录或 API 密钥无效，请在服务器上登录 Claude Code 或设置 ANTHROPIC_API_KEY",
    ),
    (
        "rate_limit",
        re.compile(r"rate[ _-]?limit|too many requests|overloaded|\b429\b|\b529\b", re.I),
        "请求过多或服务繁忙，请稍后重试",
    ),
    (
        "network",
        re.compile(
            r"ECONNREFUSED|ENOTFOUND|ETIMEDOUT|ECONNRESET|fetch failed|network|connection (?:refused|reset)", re.I
        ),
        "无法连接模型服务，请检查网络",
    ),
    ("server", re.compile(r"internal server error|api error|\b5\d\d\b", re.I), "模型服务内部错误"),
)
CLI_ERROR_FALLBACK = "模型调用失败"


def http_error_summary(status: int) -> str:
    """「模型服务返回错误（HTTP 500）：服务器内部错误」: the status and a short reason, never the body."""
    reason = HTTP_STATUS_REASONS.get(status) or ("服务器错误" if status >= 500 else "请求被拒绝")
    return f"模型服务返回错误（HTTP {status}）：{reason}"


def cli_error_reason(text: str) -> str:
    """The short reason for a CLI's error words (`CLI_ERROR_REASONS`, first match)."""
    for _name, pattern, reason in CLI_ERROR_REASONS:
        if pattern.search(text or ""):
            return reason
    return CLI_ERROR_FALLBACK


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

    def fail(self, summary: str, detail: str = "") -> ModelResult:
        """Record a failure: the Chinese summary, and the raw words (kept only in the draft's trace)."""
        self.error = model_error_text(summary, detail)
        return self

    @property
    def error_summary(self) -> str:
        """What an agent reads of the error (without the raw words)."""
        return model_error_split(self.error)[0]


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
        # The parser's words only: the model's own text may quote the customer (kept in raw_text).
        result.fail("模型输出格式不正确：不是有效的 JSON 对象", str(exc))
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
            return result.fail(f"Claude Code 超时：{self.timeout:g} 秒内没有完成 (timed out).")
        except FileNotFoundError:
            return result.fail(
                "未找到 Claude Code 命令行工具，没有连接模型：请安装 @anthropic-ai/claude-code，"
                "或用 CLAUDE_CODE_BIN 指向它，或改用 QIWEI_MODEL_CLIENT=openai / offline。",
                self.binary,
            )
        except OSError as exc:
            return result.fail(f"无法运行 Claude Code（{exc.__class__.__name__}），没有连接模型。", str(exc))
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
                return result.fail("Claude Code 本轮预算超限 (max budget exceeded).", stdout)
            if envelope.get("is_error") or subtype.startswith("error"):
                result.session_invalid = bool(_SESSION_INVALID_RE.search(text_for_checks))
                detail = str(envelope.get("result") or subtype or "error")
                return result.fail(f"Claude Code 返回错误：{cli_error_reason(detail)}", detail)
            if completed.returncode == 0:
                return _with_parsed(result, str(envelope.get("result") or ""))
        tail = (stderr.strip() or stdout.strip())[-1000:]
        if _SESSION_INVALID_RE.search(text_for_checks):
            result.session_invalid = True
            result.fail("Claude Code 会话无效 (session not found).", tail)
        elif _BUDGET_RE.search(text_for_checks):
            result.budget_exceeded = True
            result.fail("Claude Code 本轮预算超限 (max budget exceeded).", tail)
        elif completed.returncode != 0:
            result.fail(f"Claude Code 异常退出（退出码 {completed.returncode}）：{cli_error_reason(tail)}", tail)
        else:
            result.fail("Claude Code 输出格式不正确：不是 JSON (unexpected output format).", stdout)
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
        except requests.Timeout as exc:
            return result.fail(f"模型服务超时：{self.timeout:g} 秒内没有响应 (timed out).", str(exc))
        except requests.ConnectionError as exc:
            return result.fail(
                f"无法连接模型服务（{self.base_url}）：请确认服务已启动，或修改 QIWEI_OPENAI_BASE_URL。", str(exc)
            )
        except requests.RequestException as exc:
            return result.fail(f"无法连接模型服务：请求出错（{exc.__class__.__name__}）", str(exc))
        if response.status_code >= 400:
            return result.fail(http_error_summary(response.status_code), response.text)
        try:
            payload = response.json()
            content = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            result.raw_text = response.text[:2000]
            return result.fail("模型服务响应格式不正确：缺少回复内容 (unexpected response shape).", response.text)
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
