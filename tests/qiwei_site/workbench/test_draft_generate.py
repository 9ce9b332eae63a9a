"""The Workbench's 生成草稿 / 重新生成 (issue 39 item 2): the page gets a 生成中 draft at once, the
turn fills that same draft in the background, a regenerated draft replaces the failed one."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.utils import timezone

from conversations.drafts import draft_generation_start
from conversations.models import AuditEvent, Draft, DraftStatus
from qiwei_site.platform.services import membership_grant
from qiwei_site.workbench import apis as workbench_apis
from qiwei_site.workbench import tasks as workbench_tasks
from qiwei_site.workbench.views import page_config
from tests.conftest import client_for
from tests.factories import DraftFactory, UserFactory

GENERATE = "/workbench/api/accounts/acme/conversations/wm_wang_001/drafts/"
OVERVIEW = "/workbench/api/accounts/acme/conversations/wm_wang_001/overview/"
DRAFTS_API = "/api/accounts/acme/conversations/wm_wang_001/drafts/"
RAW_500 = {"error": {"message": "CUDA out of memory", "type": "server_error", "code": 500}}


@pytest.fixture
def queued(monkeypatch) -> list[tuple]:
    """The generation task is only recorded (no worker picks it up)."""
    calls: list[tuple] = []
    monkeypatch.setattr(
        workbench_apis.workbench_draft_generate_task, "delay", lambda *args, **kwargs: calls.append((args, kwargs))
    )
    return calls


def _failed(customer) -> Draft:
    return DraftFactory(
        customer=customer,
        reply="",
        status=DraftStatus.FAILED,
        error="模型服务返回错误（HTTP 500）：服务器内部错误",
        requires_human=True,
    )


def test_workbench_generate_answers_at_once_with_a_generating_draft(agent_client, agent_user, renting_customer, queued):
    # given 王先生's conversation and no worker yet
    # when the agent clicks 生成草稿
    response = agent_client.post(GENERATE, {}, format="json")

    # then the answer is the 生成中 draft, and the turn is queued for it
    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["status"], body["status_label"]) == ("generating", "生成中")
    assert queued == [
        (("acme", body["id"]), {"regenerate": False, "reason": "客服生成回复草稿", "user_id": agent_user.pk})
    ]
    # and the overview shows it among the drafts (a reload finds it)
    drafts = agent_client.get(OVERVIEW).json()["drafts"]
    assert drafts[0]["id"] == body["id"] and drafts[0]["status"] == "generating"


def test_workbench_generate_fills_the_same_draft_in_the_background(agent_client, renting_customer):
    # given the worker runs the queued turn (eager in tests)
    # when the agent clicks 生成草稿
    response = agent_client.post(GENERATE, {}, format="json")

    # then the draft it was given is the one the turn filled (offline client: a holding reply)
    draft = Draft.objects.get(pk=response.json()["id"])
    assert draft.status == DraftStatus.PENDING and "稍后由顾问为您确认" in draft.reply
    assert Draft.objects.filter(customer=renting_customer, status=DraftStatus.GENERATING).count() == 0


def test_workbench_regenerate_replaces_the_failed_draft(agent_client, renting_customer, agent_user):
    # given a failed draft for 王先生's latest message
    failed = _failed(renting_customer)

    # when the agent clicks 重新生成
    response = agent_client.post(GENERATE, {"regenerate": True}, format="json")

    # then the failed draft is replaced by the new one, no longer among the cards
    assert response.status_code == 202
    failed.refresh_from_db()
    assert (failed.status, failed.replaced_by_id) == (DraftStatus.SUPERSEDED, response.json()["id"])
    shown = [draft["id"] for draft in agent_client.get(OVERVIEW).json()["drafts"]]
    assert failed.pk not in shown and response.json()["id"] in shown
    # and it is still reachable through the API, and on record with who asked
    kept = agent_client.get(DRAFTS_API, {"status": "superseded"}).json()["results"]
    assert [draft["id"] for draft in kept] == [failed.pk]
    event = AuditEvent.objects.filter(action="draft_generated", payload__generating=True).get()
    assert event.actor_id == agent_user.pk and event.payload["replaces"] == [failed.pk]


def test_workbench_generate_refuses_a_second_draft_while_one_is_generating(agent_client, renting_customer, queued):
    # given a draft being generated
    first = agent_client.post(GENERATE, {}, format="json").json()

    # when 生成草稿 is clicked again (another tab)
    response = agent_client.post(GENERATE, {}, format="json")

    # then it is a JSON 409 naming the running draft
    assert response.status_code == 409
    assert response.json()["code"] == "draft_generating" and response.json()["draft_id"] == first["id"]


def test_workbench_generate_fails_the_draft_when_the_turn_raises(agent_client, renting_customer, monkeypatch):
    # given a turn that breaks
    def broken(**kwargs):
        raise RuntimeError("database is locked")

    monkeypatch.setattr(workbench_tasks, "draft_generate", broken)

    # when the agent clicks 生成草稿
    draft_id = agent_client.post(GENERATE, {}, format="json").json()["id"]

    # then the draft failed with a Chinese reason (never stays 生成中), without the exception's words
    draft = Draft.objects.get(pk=draft_id)
    assert draft.status == DraftStatus.FAILED
    assert draft.error == "生成草稿时出错（RuntimeError），请重新生成"


def test_workbench_generate_with_a_failing_model_shows_only_the_summary(
    agent_client, renting_customer, settings, json_server
):
    # given an OpenAI-compatible model server answering 500 with its JSON
    json_server.routes[("POST", "/v1/chat/completions")] = (500, RAW_500)
    settings.QIWEI_MODEL_CLIENT = "openai"
    settings.QIWEI_OPENAI_BASE_URL = f"{json_server.url}/v1"

    # when the agent clicks 生成草稿
    draft_id = agent_client.post(GENERATE, {}, format="json").json()["id"]

    # then the Workbench and the API detail show the Chinese summary, never the server's JSON
    card = next(draft for draft in agent_client.get(OVERVIEW).json()["drafts"] if draft["id"] == draft_id)
    detail = agent_client.get(f"/api/accounts/acme/drafts/{draft_id}/").json()
    for shown in (card, detail):
        assert shown["status"] == "failed"
        assert shown["error"] == "模型服务返回错误（HTTP 500）：服务器内部错误"
    # and the server's words are kept in the draft's trace
    assert "CUDA out of memory" in Draft.objects.get(pk=draft_id).context_trace["model"]["error_detail"]


def test_workbench_generate_is_for_members_only(renting_customer, other_account):
    # given a user of another account only
    stranger = UserFactory(username="globex_agent")
    membership_grant(user=stranger, account=other_account)

    # when they ask for a draft in acme / then acme does not exist for them
    assert client_for(stranger).post(GENERATE, {}, format="json").status_code == 404
    assert Client().post(GENERATE, {}, content_type="application/json").status_code in (401, 403)


def test_page_config_tells_the_page_when_a_generating_draft_counts_as_interrupted(agent_user, settings):
    # given model timeouts of 120 s (CLI) and 60 s (server)
    settings.CLAUDE_CODE_TIMEOUT_SECONDS, settings.QIWEI_OPENAI_TIMEOUT_SECONDS = 120, 60

    # when the page's configuration is built / then two of the longest turn and a margin
    assert page_config(agent_user)["draft_stale_seconds"] == 300


def test_workbench_generate_after_a_generating_draft_was_abandoned(agent_client, renting_customer, agent_user, queued):
    # given a draft that was 生成中 long past any model timeout
    abandoned = draft_generation_start(customer=renting_customer, actor=agent_user, reason="客服生成回复草稿")
    Draft.objects.filter(pk=abandoned.pk).update(created_at=timezone.now() - dt.timedelta(hours=1))

    # when the agent clicks 重新生成 on it
    response = agent_client.post(GENERATE, {"regenerate": True}, format="json")

    # then a new generation starts and the abandoned one is replaced
    assert response.status_code == 202
    abandoned.refresh_from_db()
    assert abandoned.status == DraftStatus.SUPERSEDED
