"""GET .../conversations/{id}/context/ (DESIGN §12)."""

from __future__ import annotations

from conversations.models import MessageDirection

IN = MessageDirection.INBOUND
URL = "/api/accounts/acme/conversations/wm_wang/context/"


def test_context_api_returns_sections_prompt_and_trace(agent_client, customer, chat):
    first, latest = chat(customer, [(IN, "不考虑顶楼"), (IN, "想找地铁附近的两居室")])
    response = agent_client.get(URL)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"sections", "prompt", "trace"}
    assert body["prompt"] == "\n\n".join(s["text"] for s in body["sections"])
    assert all(set(s) == {"name", "text", "chars"} for s in body["sections"])
    assert body["trace"]["latest_message_id"] == latest.id
    # An earlier message can be asked for explicitly
    earlier = agent_client.get(URL, {"message_id": first.id}).json()
    assert earlier["trace"]["latest_message_id"] == first.id


def test_context_api_bad_input_is_a_4xx_with_a_reason(agent_client, customer):
    response = agent_client.get(URL, {"message_id": "abc"})
    assert response.status_code == 400 and response.json()["code"] == "invalid"
    response = agent_client.get(URL, {"message_id": 999_999})
    assert response.status_code == 404 and response.json()["code"] == "message_not_found"
    response = agent_client.get("/api/accounts/acme/conversations/wm_nobody/context/")
    assert response.status_code == 404 and response.json()["code"] == "conversation_not_found"


def test_context_api_needs_authentication_and_membership(client, customer, other_account, agent_client):
    assert client.get(URL).status_code in (401, 403)
    assert agent_client.get("/api/accounts/globex/conversations/wm_wang/context/").status_code == 404


def test_context_and_search_paths_are_in_the_openapi_schema(agent_client):
    response = agent_client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert "/api/accounts/{account_id}/conversations/{conversation_id}/context/" in paths
    assert "/api/accounts/{account_id}/messages/" in paths
