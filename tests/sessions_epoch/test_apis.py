"""Draft, review, send and epoch endpoints (DESIGN §12)."""

from __future__ import annotations

import pytest

from conversations.gateway import LoopbackGateway
from conversations.models import AuditEvent, Draft
from tests.conftest import client_for
from tests.factories import StaffUserFactory

BASE = "/api/accounts/acme"


@pytest.fixture
def generated(agent_client, customer, provider):
    response = agent_client.post(f"{BASE}/conversations/{customer.conversation_id}/drafts/", {}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_generate_draft_returns_the_full_draft(generated, customer):
    # given a customer with messages / when an agent generates a draft (fixture)
    # then the answer carries the reply, flags, grounding, trace and session, with no delivery yet
    assert generated["status"] == "pending"
    assert generated["reply"] == "王先生您好，您的需求我们已经收到，稍后由顾问为您确认具体房源信息。"
    assert generated["requires_human"] is True
    assert generated["client"] == "offline"
    assert generated["conversation_id"] == customer.conversation_id
    assert generated["context_trace"]["snapshot_version"] == 3
    assert generated["delivery"] is None
    for key in ("final_text", "confidence", "reasons", "profile_updates", "dropped_updates", "error", "session_id"):
        assert key in generated
    assert AuditEvent.objects.get(action="draft_generated").actor_name.startswith("agent")


def test_draft_list_detail_and_status_filter(agent_client, generated, customer):
    # given one pending draft
    url = f"{BASE}/conversations/{customer.conversation_id}/drafts/"

    # when listed, filtered and read
    listed = agent_client.get(url).json()
    pending = agent_client.get(url, {"status": "pending"}).json()
    sent = agent_client.get(url, {"status": "sent"}).json()
    detail = agent_client.get(f"{BASE}/drafts/{generated['id']}/").json()

    # then the filters apply and the detail is the same draft
    assert [item["id"] for item in listed["results"]] == [generated["id"]]
    assert len(pending["results"]) == 1 and sent["results"] == []
    assert detail["id"] == generated["id"]


def test_approve_with_text_then_send_twice_gives_one_delivery(agent_client, generated):
    # given a generated draft
    draft_url = f"{BASE}/drafts/{generated['id']}"

    # when the agent edits and approves it, then sends twice
    approved = agent_client.post(
        f"{draft_url}/approve/",
        {"text": "王先生您好，周六上午可以带您看张江两居室。", "reason": "补充时间"},
        format="json",
    )
    first = agent_client.post(f"{draft_url}/send/", {}, format="json")
    second = agent_client.post(f"{draft_url}/send/", {}, format="json")

    # then both sends answer 200 with the same delivery, and one message went out
    assert approved.status_code == 200
    assert approved.json()["final_text"] == "王先生您好，周六上午可以带您看张江两居室。"
    assert (first.status_code, second.status_code) == (200, 200)
    assert first.json()["id"] == second.json()["id"]
    assert first.json()["status"] == "sent"
    assert len(LoopbackGateway.sent_records()) == 1
    detail = agent_client.get(f"{draft_url}/").json()
    assert detail["status"] == "sent" and detail["delivery"]["id"] == first.json()["id"]


def test_send_before_approval_is_409_and_reject_blocks_sending(agent_client, generated):
    # given a pending draft
    draft_url = f"{BASE}/drafts/{generated['id']}"

    # when it is sent unapproved, then rejected, then sent again
    early = agent_client.post(f"{draft_url}/send/", {}, format="json")
    rejected = agent_client.post(f"{draft_url}/reject/", {"reason": "房源信息不准确"}, format="json")
    late = agent_client.post(f"{draft_url}/send/", {}, format="json")

    # then both sends are refused with a reason and nothing left
    assert early.status_code == 409 and early.json()["code"] == "draft_not_approved"
    assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"
    assert late.status_code == 409 and late.json()["code"] == "draft_rejected"
    assert LoopbackGateway.sent_records() == []


def test_send_with_upstream_down_is_503_with_a_reason(agent_client, generated, settings):
    # given an approved draft and an unreachable upstream
    draft_url = f"{BASE}/drafts/{generated['id']}"
    agent_client.post(f"{draft_url}/approve/", {}, format="json")
    settings.QIWEI_UPSTREAM_URL = "http://127.0.0.1:9"

    # when it is sent
    response = agent_client.post(f"{draft_url}/send/", {}, format="json")

    # then it is refused with 503 and a Chinese reason, and the draft is still approved
    assert response.status_code == 503
    assert response.json()["code"] == "upstream_unavailable"
    assert "企微上游不可用" in response.json()["detail"]
    assert Draft.objects.get(pk=generated["id"]).status == "approved"


def test_local_work_continues_while_upstream_is_down(agent_client, customer, provider, settings):
    # given an unreachable upstream
    settings.QIWEI_UPSTREAM_URL = "http://127.0.0.1:9"

    # when a draft is generated and reviewed
    created = agent_client.post(f"{BASE}/conversations/{customer.conversation_id}/drafts/", {}, format="json")
    approved = agent_client.post(f"{BASE}/drafts/{created.json()['id']}/approve/", {}, format="json")

    # then both work
    assert created.status_code == 201 and approved.status_code == 200


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("conversations/nobody/drafts/", {}, 404, "conversation_not_found"),
        ("drafts/999999/approve/", {}, 404, "draft_not_found"),
        ("drafts/{id}/approve/", {"text": "x" * 5000}, 400, "invalid"),
        ("drafts/{id}/approve/", {"text": "  "}, 400, "empty_text"),
        ("drafts/{id}/approve/", ["not", "an", "object"], 400, "invalid"),
        ("drafts/{id}/reject/", {"reason": "r" * 400}, 400, "invalid"),
    ],
)
def test_bad_requests_are_4xx_with_a_reason(agent_client, generated, path, body, status, code):
    # given a draft / when a bad request comes / then a 4xx with a code and a detail
    response = agent_client.post(f"{BASE}/{path.format(id=generated['id'])}", body, format="json")
    assert response.status_code == status, response.content
    assert response.json()["code"] == code
    assert response.json()["detail"]


def test_unknown_status_filter_is_400(agent_client, customer):
    response = agent_client.get(f"{BASE}/conversations/{customer.conversation_id}/drafts/", {"status": "lost"})
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_status"


def test_epochs_endpoint_lists_sessions_newest_first(agent_client, customer, provider):
    # given three generated drafts with a 2-turn epoch limit
    from django.test import override_settings

    with override_settings(CLAUDE_CODE_SESSION_MAX_TURNS=2):
        for _ in range(3):
            agent_client.post(f"{BASE}/conversations/{customer.conversation_id}/drafts/", {}, format="json")

    # when the epochs are listed
    epochs = agent_client.get(f"{BASE}/conversations/{customer.conversation_id}/epochs/").json()["results"]

    # then the newest (open) epoch comes first, with its parent the closed one
    assert len(epochs) == 2
    assert epochs[0]["closed_at"] is None and epochs[0]["turns"] == 1
    assert epochs[1]["close_reason"] == "max_turns" and epochs[1]["turns"] == 2
    assert epochs[0]["parent_session_id"] == epochs[1]["session_id"]


def test_staff_of_another_account_gets_404(customer, generated, other_account):
    # given a staff user who is a member of globex only
    from qiwei_site.platform.services import membership_grant

    outsider = StaffUserFactory()
    membership_grant(user=outsider, account=other_account)

    # when they read acme's draft / then acme does not exist for them
    response = client_for(outsider).get(f"{BASE}/drafts/{generated['id']}/")
    assert response.status_code == 404


def test_schema_documents_the_draft_endpoints(staff_client):
    # given the OpenAPI document / then our paths are there
    schema = staff_client.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert "/api/accounts/{account_id}/conversations/{conversation_id}/drafts/" in paths
    assert "/api/accounts/{account_id}/drafts/{draft_id}/send/" in paths
    assert "/api/status" in paths
