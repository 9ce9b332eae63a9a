"""A draft's exact prompt (issue 12, item 6): the turn keeps the prompt exactly as the model received
it; the API and the admin show it split into its sections, with chars, budgets, what was trimmed and
the memory items and messages it quotes."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from conversations.business import task_create
from conversations.models import Draft, Message
from conversations.selectors import draft_prompt_view
from memory.context.builder import CORE_MEMORY, LATEST_MESSAGE, OUTPUT_CONTRACT, TITLES
from memory.governance.services import memory_item_add
from memory.snapshots import snapshot_refresh
from sessions_epoch.clients import OpenAICompatibleClient
from sessions_epoch.pipeline import draft_generate
from tests.factories import DraftFactory

API = "/api/accounts/acme"


@pytest.fixture
def model_server(json_server):
    """A local OpenAI-compatible model: it records what it was sent and answers with a reply."""
    answer = {"reply": "王先生您好，张江地铁站附近有两套两居室，周六可以看。", "confidence": 0.6, "requiresHuman": True}
    json_server.routes[("POST", "/v1/chat/completions")] = (
        200,
        {"choices": [{"message": {"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)}}]},
    )
    return json_server


@pytest.fixture
def drafted(customer, staff_user, model_server):
    """王先生's turn, with a supervisor's note in memory and an open task, through the real builder."""
    note = memory_item_add(
        customer=customer, content="周末才方便看房，工作日晚上八点后联系", actor=staff_user, reason="主管电话回访"
    )
    snapshot_refresh(customer=customer, reason="测试")
    task = task_create(customer=customer, title="周六上午带看张江两居室", actor=staff_user)
    client = OpenAICompatibleClient(base_url=f"{model_server.url}/v1", model="qwen2.5-7b-instruct", api_key="k-test")
    draft = draft_generate(customer=customer, actor=staff_user, client=client)
    return draft, note, task


def test_draft_keeps_the_prompt_exactly_as_the_model_received_it(drafted, model_server):
    draft, note, _task = drafted
    # then the stored prompt is byte for byte what the model server was sent
    sent = model_server.requests[0][2]["messages"][-1]["content"]
    stored = Draft.objects.get(pk=draft.pk).prompt
    assert stored.encode() == sent.encode()
    assert note.content in stored
    # and it is not copied into the draft's history
    assert "prompt" not in {field.name for field in Draft.history.model._meta.get_fields()}


def test_prompt_view_splits_the_prompt_into_its_sections_with_their_quotes(drafted):
    draft, note, task = drafted
    view = draft_prompt_view(Draft.objects.select_related("customer").get(pk=draft.pk))
    # then the sections tile the prompt with their titles and budgets
    assert view.available and not view.fallback and not view.redacted
    assert "\n\n".join(text for _section, text in view.section_texts()) == view.prompt
    assert all(text.startswith(f"===== {section.title} =====") for section, text in view.section_texts())
    assert {s.key for s in view.sections} >= {CORE_MEMORY, LATEST_MESSAGE, OUTPUT_CONTRACT}
    # and the note, the task and the customer's latest message are named where they appear
    assert (note.pk, "fact", CORE_MEMORY) in {(m.id, m.type, m.section) for m in view.memory_items}
    assert (task.pk, "task") in {(b.id, b.kind) for b in view.business}
    latest = Message.objects.get(pk=draft.reply_to_id)
    assert (latest.pk, "inbound", LATEST_MESSAGE) in {(m.id, m.direction, m.section) for m in view.messages}


def test_prompt_api_answers_the_prompt_and_its_sections(drafted, agent_client):
    draft, note, _task = drafted
    response = agent_client.get(f"{API}/drafts/{draft.pk}/prompt/")
    assert response.status_code == 200
    body = response.json()
    assert (body["draft_id"], body["conversation_id"], body["available"]) == (draft.pk, "wm_wang_001", True)
    assert body["prompt_chars"] == len(body["prompt"]) and body["fallback"] is False
    for section in body["sections"]:
        text = body["prompt"][section["start"] : section["end"]]
        assert len(text) == section["chars"] and text.startswith(f"===== {section['title']} =====")
        assert set(section) >= {"key", "title", "chars", "budget", "trimmed", "start", "end"}
    core = next(s for s in body["sections"] if s["key"] == CORE_MEMORY)
    assert core["title"] == TITLES[CORE_MEMORY] and core["budget"] > 0 and core["trimmed"] is False
    assert {"id": note.pk, "type": "fact", "type_label": "事实", "section": CORE_MEMORY} in body["memory_items"]
    assert any(m["section"] == LATEST_MESSAGE and m["direction"] == "inbound" for m in body["messages"])
    # and the draft itself says a prompt is there to see
    assert agent_client.get(f"{API}/drafts/{draft.pk}/").json()["prompt_available"] is True
    listed = agent_client.get(f"{API}/conversations/wm_wang_001/drafts/").json()["results"]
    assert [d["prompt_available"] for d in listed] == [True]


def test_prompt_api_for_an_old_draft_says_it_is_not_available(customer, agent_client):
    # given a draft made before prompts were kept
    old = DraftFactory(customer=customer, context_trace={"sections": {"latest_message": 120}})
    body = agent_client.get(f"{API}/drafts/{old.pk}/prompt/").json()
    assert (body["available"], body["prompt"], body["sections"], body["memory_items"]) == (False, "", [], [])
    assert agent_client.get(f"{API}/drafts/999999/prompt/").json()["code"] == "draft_not_found"


def test_admin_prompt_page_shows_each_section_with_its_budget_and_links(drafted, admin_client):
    draft, note, task = drafted
    change = admin_client.get(reverse("admin:conversations_draft_change", args=[draft.pk])).content.decode()
    prompt_url = reverse("admin:conversations_draft_prompt", args=[draft.pk])
    assert prompt_url in change and "查看模型收到的提示词" in change
    # when the supervisor opens it
    page = admin_client.get(prompt_url)
    body = page.content.decode()
    # then every section is there with its chars and budget, and the quoted rows link to their pages
    assert page.status_code == 200 and "模型收到的提示词" in body
    for title in (TITLES[CORE_MEMORY], TITLES[LATEST_MESSAGE], TITLES[OUTPUT_CONTRACT]):
        assert title[2:] in body  # (its number depends on the sections before it)
    assert "预算" in body and note.content in body
    assert reverse("admin:memory_memoryitem_change", args=[note.pk]) in body and f"记忆条目 #{note.pk}（事实）" in body
    assert reverse("admin:conversations_task_change", args=[task.pk]) in body
    assert reverse("admin:conversations_message_change", args=[draft.reply_to_id]) in body


def test_admin_prompt_page_of_an_old_draft_says_so(customer, admin_client):
    old = DraftFactory(customer=customer)
    body = admin_client.get(reverse("admin:conversations_draft_prompt", args=[old.pk])).content.decode()
    assert "尚未保存提示词" in body
