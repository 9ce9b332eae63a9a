"""Model clients: the Claude Code CLI (against a fake executable), an OpenAI-compatible server, offline."""

from __future__ import annotations

import json
import uuid

import pytest

from sessions_epoch.clients import (
    ClaudeCodeClient,
    OfflineClient,
    OpenAICompatibleClient,
    SessionRef,
    get_client,
    parse_model_json,
)

PROMPT = "## 客户最新消息\n> 我想租地铁附近的两居室，预算4500\n\n## 输出要求\n只输出 JSON。"


def test_claude_client_runs_bare_read_only_with_session_id_then_resume(fake_claude, settings):
    # given the fake CLI and a new epoch session
    settings.CLAUDE_CODE_MAX_BUDGET_USD = 0.3
    session_id = str(uuid.uuid4())
    client = ClaudeCodeClient()

    # when the first turn runs and then a second in the same session
    first = client.generate(prompt=PROMPT, session=SessionRef(session_id, resume=False))
    second = client.generate(prompt=PROMPT, session=SessionRef(session_id, resume=True))

    # then both parsed the model's JSON answer out of the `result` field
    assert first.ok and second.ok
    assert first.output["reply"].startswith("王先生您好")
    assert first.output["confidence"] == 0.9
    assert first.cost_usd == pytest.approx(0.0123)
    assert first.usage["output_tokens"] == 80
    # and the CLI saw --bare, read-only tools, the budget, the prompt on stdin, --session-id then --resume
    calls = fake_claude.calls()
    first_argv, second_argv = calls[0]["argv"], calls[1]["argv"]
    assert first_argv[:2] == ["-p", "--bare"]
    assert first_argv[first_argv.index("--output-format") + 1] == "json"
    assert first_argv[first_argv.index("--allowedTools") + 1] == "Read,Grep,Glob"
    assert first_argv[first_argv.index("--max-budget-usd") + 1] == "0.3"
    assert first_argv[first_argv.index("--session-id") + 1] == session_id
    assert "--resume" not in first_argv
    assert second_argv[second_argv.index("--resume") + 1] == session_id
    assert "--session-id" not in second_argv
    assert calls[0]["stdin"] == PROMPT
    # its read-only tools see the knowledge base, nothing else of ours
    assert calls[0]["cwd"] == str(settings.QIWEI_KNOWLEDGE_DIR)
    assert not any(tool in " ".join(first_argv) for tool in ("Edit", "Write", "Bash"))


def test_claude_client_reports_unknown_session_as_invalid(fake_claude):
    # given a session the CLI has never seen
    client = ClaudeCodeClient()

    # when it is resumed
    result = client.generate(prompt=PROMPT, session=SessionRef(str(uuid.uuid4()), resume=True))

    # then the client says the session is invalid (so the pipeline rotates)
    assert result.session_invalid
    assert not result.ok and not result.budget_exceeded


def test_claude_client_reports_budget_overrun(fake_claude):
    # given a CLI run that exceeds --max-budget-usd
    fake_claude.behave(mode="budget")

    # when a turn runs
    result = ClaudeCodeClient().generate(prompt=PROMPT, session=SessionRef(str(uuid.uuid4())))

    # then the result flags the budget, with its cost
    assert result.budget_exceeded
    assert not result.session_invalid
    assert result.cost_usd == pytest.approx(0.51)
    assert "预算" in result.error


def test_claude_client_times_out(fake_claude, settings):
    # given a CLI that never answers and a limit of 0.3 s
    fake_claude.behave(mode="hang")
    settings.CLAUDE_CODE_TIMEOUT_SECONDS = 0.3

    # when a turn runs
    result = ClaudeCodeClient().generate(prompt=PROMPT, session=SessionRef(str(uuid.uuid4())))

    # then it is an error, not a hang
    assert not result.ok
    assert "超时" in result.error


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("crash", "退出码 2"), ("garbage", "不是 JSON"), ("error_json", "tool failed")],
)
def test_claude_client_turns_failures_into_errors(fake_claude, mode, expected):
    # given a CLI that crashes, prints garbage, or reports an execution error
    fake_claude.behave(mode=mode)

    # when a turn runs
    result = ClaudeCodeClient().generate(prompt=PROMPT, session=SessionRef(str(uuid.uuid4())))

    # then the error says what happened and nothing is flagged as session or budget trouble
    assert not result.ok
    assert expected in result.error
    assert not result.session_invalid and not result.budget_exceeded


def test_claude_client_reports_missing_binary(settings):
    # given a CLAUDE_CODE_BIN that does not exist
    settings.CLAUDE_CODE_BIN = "/nonexistent/claude"

    # when a turn runs
    result = ClaudeCodeClient().generate(prompt=PROMPT, session=SessionRef(str(uuid.uuid4())))

    # then it is a clear error, in Chinese, saying what to do
    assert "未找到 Claude Code 命令行工具" in result.error and "QIWEI_MODEL_CLIENT" in result.error


def test_claude_client_keeps_unparsable_answer_as_error(fake_claude):
    # given a model answer that is prose, not JSON
    fake_claude.behave(answer="好的，我来帮您看看房源。")

    # when a turn runs
    result = ClaudeCodeClient().generate(prompt=PROMPT, session=SessionRef(str(uuid.uuid4())))

    # then the raw text is kept and the error recorded
    assert result.raw_text == "好的，我来帮您看看房源。"
    assert result.output is None
    assert "JSON" in result.error


def test_parse_model_json_accepts_fences_and_prose():
    # given answers wrapped in a fence, or with prose around them
    fenced = '```json\n{"reply": "您好", "confidence": 0.5}\n```'
    prose = '这是回复：{"reply": "Hello", "confidence": 1} 以上。'

    # when parsed / then the object comes out
    assert parse_model_json(fenced)["reply"] == "您好"
    assert parse_model_json(prose)["confidence"] == 1
    with pytest.raises(ValueError):
        parse_model_json("[1, 2]")


def test_openai_client_posts_chat_completion_with_json_mode(json_server):
    # given a local OpenAI-compatible server
    answer = {"reply": "您好，张江地铁站附近有两居室。", "confidence": 0.8, "requiresHuman": False}
    json_server.routes[("POST", "/v1/chat/completions")] = (
        200,
        {
            "choices": [{"message": {"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)}}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 40},
        },
    )
    client = OpenAICompatibleClient(base_url=f"{json_server.url}/v1", model="qwen2.5-7b-instruct", api_key="k-test")

    # when a turn runs
    result = client.generate(prompt=PROMPT, session=SessionRef("s-1"))

    # then the answer was parsed and the request carried the model, the prompt and JSON mode
    assert result.ok
    assert result.output == answer
    assert result.usage["completion_tokens"] == 40
    method, path, body = json_server.requests[0]
    assert (method, path) == ("POST", "/v1/chat/completions")
    assert body["model"] == "qwen2.5-7b-instruct"
    assert body["messages"][-1]["content"] == PROMPT
    assert body["response_format"] == {"type": "json_object"}


def test_openai_client_retries_without_json_mode_when_unsupported(json_server):
    # given a server (an older vLLM, say) that rejects response_format
    def completions(body):
        if "response_format" in body:
            return 400, {"error": "response_format is not supported by this server"}
        return 200, {"choices": [{"message": {"content": '{"reply": "Hi", "confidence": 0.4, "requiresHuman": true}'}}]}

    json_server.routes[("POST", "/v1/chat/completions")] = completions
    client = OpenAICompatibleClient(base_url=f"{json_server.url}/v1")

    # when a turn runs
    result = client.generate(prompt=PROMPT, session=SessionRef("s-1"))

    # then it retried without JSON mode and got the answer
    assert result.ok
    assert result.output["reply"] == "Hi"
    assert len(json_server.requests) == 2
    assert "response_format" not in json_server.requests[1][2]


def test_openai_client_reports_http_errors_and_unreachable_server(json_server):
    # given a server answering 500, and an address where nothing listens
    json_server.routes[("POST", "/v1/chat/completions")] = (500, {"error": "model not loaded"})
    failing = OpenAICompatibleClient(base_url=f"{json_server.url}/v1")
    unreachable = OpenAICompatibleClient(base_url="http://127.0.0.1:9/v1", timeout=1)

    # when turns run / then both are errors with a reason
    assert "HTTP 500" in failing.generate(prompt=PROMPT, session=SessionRef("s")).error
    assert "无法连接模型服务" in unreachable.generate(prompt=PROMPT, session=SessionRef("s")).error


def test_offline_client_greets_by_preferred_name_and_asks_for_a_human():
    # given the offline client and what we know of the customer
    client = OfflineClient()

    # when it drafts for 王先生, for someone unnamed, and for an English speaker
    named = client.generate(prompt=PROMPT, session=SessionRef("s"), hints={"preferred_name": "王先生"})
    unnamed = client.generate(prompt=PROMPT, session=SessionRef("s"), hints={})
    english = client.generate(
        prompt=PROMPT,
        session=SessionRef("s"),
        hints={"preferred_name": "Mr. Smith", "latest_message": "Any two-bedroom flats near the metro?"},
    )

    # then it is a polite holding reply that always needs a human, with low confidence
    assert named.output["reply"] == "王先生您好，您的需求我们已经收到，稍后由顾问为您确认具体房源信息。"
    assert unnamed.output["reply"].startswith("您好，")
    assert english.output["reply"].startswith("Hello Mr. Smith,")
    for result in (named, unnamed, english):
        assert result.output["requiresHuman"] is True
        assert result.output["confidence"] < 0.5


def test_get_client_follows_the_setting(settings):
    # given each configured client name / then the matching client comes back
    for name, cls in (
        ("offline", OfflineClient),
        ("claude_code", ClaudeCodeClient),
        ("openai", OpenAICompatibleClient),
    ):
        settings.QIWEI_MODEL_CLIENT = name
        assert isinstance(get_client(), cls)
    with pytest.raises(ValueError):
        get_client("gpt-cloud")


@pytest.mark.parametrize(
    ("preferred_name", "greeting"),
    [("刘（姓）", "您好，"), ("刘女士（客户自称）", "刘女士您好，"), ("刘", "您好，"), ("老刘", "老刘您好，")],
)
def test_offline_client_greets_in_the_plain_form_of_address(preferred_name, greeting):
    # Given a form of address with the profile's annotation, or a bare surname
    result = OfflineClient().generate(prompt=PROMPT, session=SessionRef("s"), hints={"preferred_name": preferred_name})
    # Then the customer reads a plain greeting, never the annotation
    assert result.output["reply"].startswith(greeting) and "（" not in result.output["reply"]
