"""Regressions for what the schemathesis run found (fast, no live server): the OpenAPI schema
documents every answer the API really gives, and unmatched /api/ URLs answer JSON."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from drf_spectacular.generators import SchemaGenerator

from tests.factories import MessageFactory

HTTP_METHODS = {"get", "post", "patch", "put", "delete"}


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(openapi: dict[str, Any]):
    for path, item in openapi["paths"].items():
        for method, operation in item.items():
            if method in HTTP_METHODS:
                yield path, method, operation


def test_schema_generates_without_warnings_or_errors(tmp_path):
    # given the project's views and serializers
    # when the schema is generated the way CI would, failing on any warning
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    # then it was written (a warning or error would have raised)
    assert (tmp_path / "schema.yaml").read_text(encoding="utf-8").startswith("openapi:")


def test_schema_every_operation_documents_its_error_answers(openapi):
    # given every operation of the schema
    for path, method, operation in operations(openapi):
        responses = operation["responses"]
        # then 400 and 401 are always documented, with the {"code", "detail"} body
        for code in ("400", "401"):
            assert responses[code]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/ErrorOutput"
            }, (method, path, code)
        # and account-scoped operations document 404, governance writes 403, writes 409
        if "{account_id}" in path:
            assert "404" in responses, (method, path)
        if method in ("post", "patch", "delete") and "{account_id}" in path:
            assert "409" in responses, (method, path)
    error = openapi["components"]["schemas"]["ErrorOutput"]
    assert set(error["required"]) == {"code", "detail"}


def test_schema_governance_writes_document_403_and_reads_do_not(openapi):
    memory = openapi["paths"]["/api/accounts/{account_id}/conversations/{conversation_id}/memory/"]
    assert "403" in memory["post"]["responses"]
    assert "403" not in memory["get"]["responses"]


def test_schema_lists_document_the_page_they_return(openapi):
    # given list endpoints that answer {"count", "next", "previous", "results"}
    for path in (
        "/api/accounts/{account_id}/audit/",
        "/api/accounts/{account_id}/conversations/",
        "/api/accounts/{account_id}/conversations/{conversation_id}/memory/",
        "/api/accounts/{account_id}/conversations/{conversation_id}/messages/",
        "/api/accounts/{account_id}/conversations/{conversation_id}/drafts/",
        "/api/accounts/{account_id}/conversations/{conversation_id}/epochs/",
        "/api/accounts/{account_id}/conversations/{conversation_id}/snapshots/",
        "/api/accounts/{account_id}/conversations/{conversation_id}/memory/{item_id}/history/",
    ):
        operation = openapi["paths"][path]["get"]
        ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        page = openapi["components"]["schemas"][ref.rsplit("/", 1)[1]]
        # then the schema is that page (not a bare array), with limit/offset parameters
        assert {"count", "results"} <= set(page["required"]), path
        assert {"limit", "offset"} <= {p["name"] for p in operation["parameters"]}, path


def test_schema_forget_documents_its_200_body(openapi):
    # drf-spectacular assumes 204 for DELETE; forgetting answers 200 with what was redacted
    operation = openapi["paths"]["/api/accounts/{account_id}/conversations/{conversation_id}/memory/{item_id}/"]
    assert set(operation["delete"]["responses"]) >= {"200", "404"}
    assert "204" not in operation["delete"]["responses"]


def test_schema_inputs_that_refuse_unknown_fields_say_so(openapi):
    schemas = openapi["components"]["schemas"]
    assert schemas["GovernanceReasonInputRequest"]["additionalProperties"] is False
    assert schemas["MemoryItemAddInputRequest"]["additionalProperties"] is False
    assert schemas["PatchedProfileUpdateInputRequest"]["additionalProperties"] is False


def test_schema_send_documents_upstream_unavailable(openapi):
    responses = openapi["paths"]["/api/accounts/{account_id}/drafts/{draft_id}/send/"]["post"]["responses"]
    assert responses["503"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOutput")


def test_api_unmatched_url_answers_json_404(staff_client):
    # given a draft id that is not an integer (the route wants <int:draft_id>)
    # when it is requested
    response = staff_client.get("/api/accounts/acme/drafts/null,null/")
    # then the answer is the API's JSON 404, not Django's HTML page
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "not_found"


def test_non_api_unmatched_url_keeps_the_html_404(staff_client):
    response = staff_client.get("/no-such-page/")
    assert response.status_code == 404
    assert not response["Content-Type"].startswith("application/json")


def test_message_search_answers_in_the_page_shape(agent_client, account):
    # given a customer who asked about 看房
    message = MessageFactory(text="周六上午可以去看房吗？", sender="王先生")
    url = f"/api/accounts/acme/conversations/{message.customer.conversation_id}/messages/"
    # when the messages are searched
    body = agent_client.get(url, {"q": "看房"}).json()
    # then the answer has the same shape as the plain list, as the schema documents
    assert body["count"] == len(body["results"]) == 1
    assert body["next"] is None and body["previous"] is None
