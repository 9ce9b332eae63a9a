"""Issue 39 item 2: a model's failure is said in Chinese — what failed, the status, a short reason —
and the server's or CLI's raw words travel apart, into the draft's trace only."""

from __future__ import annotations

import uuid

import pytest

from conversations.drafts import model_error_split
from conversations.selectors import customer_get
from sessions_epoch.clients import (
    CLI_ERROR_FALLBACK,
    CLI_ERROR_REASONS,
    ClaudeCodeClient,
    OpenAICompatibleClient,
    SessionRef,
    cli_error_reason,
    http_error_summary,
)
from sessions_epoch.pipeline import draft_generate

PROMPT = "## 客户最新消息\n> 我想租地铁附近的两居室，预算4500\n\n## 输出要求\n只输出 JSON。"
RAW_500 = {"error": {"message": "CUDA out of memory", "type": "server_error", "code": 500}}


@pytest.mark.parametrize(
    ("status", "summary"),
    [
        (500, "模型服务返回错误（HTTP 500）：服务器内部错误"),
        (429, "模型服务返回错误（HTTP 429）：请求过多或额度不足，请稍后重试"),
        (404, "模型服务返回错误（HTTP 404）：接口或模型不存在，请检查 QIWEI_OPENAI_BASE_URL 和 QIWEI_OPENAI_MODEL"),
        (418, "模型服务返回错误（HTTP 418）：请求被拒绝"),
        (507, "模型服务返回错误（HTTP 507）：服务器错误"),
    ],
)
def test_http_error_summary_names_the_status_and_a_short_reason(status, summary):
    # given a status from the model server / when it is summarised / then status and reason, in Chinese
    assert http_error_summary(status) == summary


@pytest.mark.parametrize(
    ("words", "row"),
    [
        ("Invalid API key · Please run /login", "auth"),
        ("API Error: 429 rate_limit_error: Number of request tokens has exceeded your rate limit", "rate_limit"),
        ("API Error: Connection error. (ECONNREFUSED)", "network"),
        ('API Error: 500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}', "server"),
    ],
)
def test_cli_error_reasons_read_each_rows_example(words, row):
    # given what the CLI said / when its reason is read / then it is the row's reason
    reasons = {name: reason for name, _pattern, reason in CLI_ERROR_REASONS}
    assert cli_error_reason(words) == reasons[row]


def test_cli_error_reason_falls_back_for_words_it_does_not_know():
    # given words no row reads / when read / then the fallback reason
    assert cli_error_reason("segmentation fault in renderer") == CLI_ERROR_FALLBACK


def test_openai_client_summarises_http_500_and_keeps_the_body_apart(json_server):
    # given a model server answering 500 with its own JSON
    json_server.routes[("POST", "/v1/chat/completions")] = (500, RAW_500)
    client = OpenAICompatibleClient(base_url=f"{json_server.url}/v1")

    # when a turn runs
    result = client.generate(prompt=PROMPT, session=SessionRef("s-1"))

    # then the summary says status and reason, without the body; the body is kept apart
    assert not result.ok
    assert result.error_summary == "模型服务返回错误（HTTP 500）：服务器内部错误"
    summary, detail = model_error_split(result.error)
    assert "{" not in summary and "CUDA out of memory" in detail


def test_openai_client_says_a_timeout_in_chinese(hanging_server):
    # given a server that never answers and a one-second limit
    client = OpenAICompatibleClient(base_url=f"{hanging_server.url}/v1", timeout=1)

    # when a turn runs / then it is a timeout, in Chinese, naming the limit
    assert client.generate(prompt=PROMPT, session=SessionRef("s-1")).error_summary.startswith(
        "模型服务超时：1 秒内没有响应"
    )


def test_claude_client_summarises_an_error_envelope(fake_claude):
    # given a CLI reporting an execution error in its JSON envelope
    fake_claude.behave(mode="error_json")

    # when a turn runs
    result = ClaudeCodeClient().generate(prompt=PROMPT, session=SessionRef(str(uuid.uuid4())))

    # then the summary is Chinese and short; the CLI's words are kept apart
    assert result.error_summary == f"Claude Code 返回错误：{CLI_ERROR_FALLBACK}"
    assert "tool failed" in model_error_split(result.error)[1]


def test_claude_client_unparsable_answer_is_an_invalid_output(fake_claude):
    # given a model answering prose instead of JSON
    fake_claude.behave(answer="好的，我来帮您看看房源。")

    # when a turn runs / then it is an invalid output, without the model's words in the summary
    result = ClaudeCodeClient().generate(prompt=PROMPT, session=SessionRef(str(uuid.uuid4())))
    assert result.error_summary == "模型输出格式不正确：不是有效的 JSON 对象"


def test_draft_from_http_500_shows_the_summary_and_keeps_the_body_in_its_trace(customer, provider, json_server):
    # given 王先生's conversation and a model server answering 500
    json_server.routes[("POST", "/v1/chat/completions")] = (500, RAW_500)
    client = OpenAICompatibleClient(base_url=f"{json_server.url}/v1")

    # when a draft is generated
    draft = draft_generate(customer=customer_get(customer.conversation_id), actor="pipeline", client=client)

    # then it failed with the Chinese summary only; the server's JSON is in the trace
    assert draft.status == "failed"
    assert draft.error == "模型服务返回错误（HTTP 500）：服务器内部错误"
    assert "CUDA out of memory" in draft.context_trace["model"]["error_detail"]
