"""Is a model connected? (issue 24, item 1.) The configured client named and checked, in Chinese, with
what to do: offline says plainly that drafts are placeholders; Claude Code is looked for and asked
its version; an OpenAI-compatible server is asked for its models. Shown at set-up, on `/readyz`
(a note, never a failure: memory and drafts still work) and as a banner in the Workbench.

The check is cached for a minute: the Workbench asks on every page load.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.core.cache import cache

CACHE_KEY = "qiwei:model-health"
CACHE_SECONDS = 60
PROBE_SECONDS = 3.0

OK, OFFLINE, MISSING, UNREACHABLE = "ok", "offline", "missing", "unreachable"


@dataclass(frozen=True)
class ModelHealth:
    client: str
    state: str
    title: str
    action: str = ""

    @property
    def ok(self) -> bool:
        return self.state == OK

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}

    def line(self) -> str:
        return f"{self.title}{'；' + self.action if self.action else ''}"


def _offline() -> ModelHealth:
    return ModelHealth(
        client="offline",
        state=OFFLINE,
        title="未连接模型（离线模式）：生成的草稿只是礼貌的暂缓回复，需要人工改写",
        action="在 .env 设置 QIWEI_MODEL_CLIENT=claude_code（本机 claude 命令行）或 openai（兼容 OpenAI 的服务）后重启",
    )


def _claude_code() -> ModelHealth:
    binary = shutil.which(settings.CLAUDE_CODE_BIN)
    if binary is None:
        return ModelHealth(
            client="claude_code",
            state=MISSING,
            title="未连接模型：找不到 Claude Code 命令行工具，草稿无法生成",
            action=f"安装 @anthropic-ai/claude-code，或用 CLAUDE_CODE_BIN 指向它（现为 {settings.CLAUDE_CODE_BIN}）",
        )
    try:
        completed = subprocess.run(
            [binary, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=PROBE_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return ModelHealth(
            client="claude_code",
            state=UNREACHABLE,
            title=f"未连接模型：Claude Code 无法运行（{exc.__class__.__name__}）",
            action="在终端运行 claude --version 查看原因",
        )
    version = (completed.stdout or "").strip().splitlines()[0:1]
    if completed.returncode != 0:
        return ModelHealth(
            client="claude_code",
            state=UNREACHABLE,
            title=f"未连接模型：Claude Code 退出码 {completed.returncode}",
            action="在终端运行 claude --version 查看原因",
        )
    label = version[0] if version else ""
    return ModelHealth(client="claude_code", state=OK, title=f"已连接模型：Claude Code {label}".strip())


def _shown(url: str) -> str:
    """The server as an operator may see it: scheme, host and port (no user, password or query)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{':' + str(parts.port) if parts.port else ''}"


def _openai() -> ModelHealth:
    base = settings.QIWEI_OPENAI_BASE_URL.rstrip("/")
    shown = _shown(base)
    headers = {"Authorization": f"Bearer {settings.QIWEI_OPENAI_API_KEY}"} if settings.QIWEI_OPENAI_API_KEY else {}
    try:
        # connect and each read bounded; the whole answer is read in at most PROBE_SECONDS
        with requests.get(f"{base}/models", headers=headers, timeout=PROBE_SECONDS, stream=True) as response:
            started = time.monotonic()
            for _chunk in response.iter_content(4096):
                if time.monotonic() - started > PROBE_SECONDS:
                    raise requests.Timeout("slow answer")
    except requests.RequestException as exc:
        return ModelHealth(
            client="openai",
            state=UNREACHABLE,
            title=f"未连接模型：无法连接模型服务 {shown}（{exc.__class__.__name__}）",
            action="确认模型服务已启动，或修改 QIWEI_OPENAI_BASE_URL",
        )
    if response.status_code >= 400:
        return ModelHealth(
            client="openai",
            state=UNREACHABLE,
            title=f"未连接模型：模型服务 {shown} 返回 HTTP {response.status_code}",
            action="检查 QIWEI_OPENAI_API_KEY 和服务地址",
        )
    return ModelHealth(client="openai", state=OK, title=f"已连接模型：{settings.QIWEI_OPENAI_MODEL}（{shown}）")


def model_health(*, fresh: bool = False) -> ModelHealth:
    """The configured model client's state (cached a minute unless `fresh`)."""
    if not fresh:
        cached = cache.get(CACHE_KEY)
        if isinstance(cached, dict) and cached.get("client") == settings.QIWEI_MODEL_CLIENT:
            return ModelHealth(cached["client"], cached["state"], cached["title"], cached.get("action", ""))
    checks = {"offline": _offline, "claude_code": _claude_code, "openai": _openai}
    health = checks.get(settings.QIWEI_MODEL_CLIENT, _offline)()
    cache.set(CACHE_KEY, {k: v for k, v in health.as_dict().items() if k != "ok"}, CACHE_SECONDS)
    return health


__all__ = ["MISSING", "OFFLINE", "OK", "UNREACHABLE", "ModelHealth", "model_health"]
