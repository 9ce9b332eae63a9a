"""The version the Workbench polls, and the ETag/304 answers of its list and overview (issue 12, item 7)."""

from __future__ import annotations

import pytest
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext

from conversations.drafts import draft_approve
from conversations.models import Draft
from memory.capture.ingest import messages_ingest
from memory.governance.services import memory_item_add, memory_item_reject
from memory.models import MemoryItem
from qiwei_site.platform import tenancy
from tests.factories import CustomerFactory, DraftFactory, MemoryItemFactory, MessageFactory

VERSION = "/workbench/api/accounts/{account}/conversations/{cid}/version/"
LIST_VERSION = "/workbench/api/accounts/{account}/version/"
OVERVIEW = "/workbench/api/accounts/{account}/conversations/{cid}/overview/"
CONVERSATIONS = "/workbench/api/accounts/{account}/conversations/"
WANG = VERSION.format(account="acme", cid="wm_wang_001")


def _poll(client, url, etag=None):
    return client.get(url, HTTP_IF_NONE_MATCH=etag) if etag else client.get(url)


def _ingest(conversation_id: str, external_id: str, text: str) -> None:
    messages_ingest(
        conversation_id=conversation_id,
        messages=[{"external_id": external_id, "direction": "inbound", "text": text, "sender": "王先生"}],
        actor="wecom",
    )


def test_version_unchanged_answers_304_without_body(agent_client, renting_customer):
    # given the page has read the version once
    first = _poll(agent_client, WANG)
    assert first.status_code == 200
    etag = first["ETag"]
    # when it polls again with that ETag and nothing changed
    again = _poll(agent_client, WANG, etag)
    # then the answer is a body-less 304 that repeats the ETag and must be revalidated
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == etag
    assert again["Cache-Control"] == "private, no-cache"


def test_version_body_names_each_part_and_its_etag(agent_client, renting_customer):
    # given an open conversation
    # when the version is read
    response = _poll(agent_client, WANG)
    # then the body names the list's and the conversation's tokens, and the ETag is the combined one
    data = response.json()
    assert response["ETag"] == f'"{data["version"]}"'
    assert data["conversation_id"] == "wm_wang_001"
    assert data["conversations"] and data["conversation"]
    assert len({data["version"], data["conversations"], data["conversation"]}) == 3


def test_version_tokens_equal_the_etags_of_list_and_overview(agent_client, renting_customer):
    # given the version of 王先生's conversation
    data = _poll(agent_client, WANG).json()
    # when the page reads the list and the overview
    listing = agent_client.get(CONVERSATIONS.format(account="acme"))
    overview = agent_client.get(OVERVIEW.format(account="acme", cid="wm_wang_001"))
    # then their ETags are the tokens the version named, so the page knows what it holds
    assert listing["ETag"] == f'"{data["conversations"]}"'
    assert overview["ETag"] == f'"{data["conversation"]}"'


def test_overview_answers_304_to_its_own_etag(agent_client, renting_customer):
    # given the page holds the overview
    url = OVERVIEW.format(account="acme", cid="wm_wang_001")
    etag = agent_client.get(url)["ETag"]
    # when it revalidates the overview and the list
    overview = agent_client.get(url, HTTP_IF_NONE_MATCH=etag)
    list_etag = agent_client.get(CONVERSATIONS.format(account="acme"))["ETag"]
    listing = agent_client.get(CONVERSATIONS.format(account="acme"), HTTP_IF_NONE_MATCH=list_etag)
    # then both are 304 with no body
    assert overview.status_code == 304
    assert overview.content == b""
    assert listing.status_code == 304


def test_version_changes_after_a_new_customer_message(agent_client, renting_customer):
    # given the page holds the current version
    before = _poll(agent_client, WANG)
    # when 王先生 writes again through ingest
    _ingest("wm_wang_001", "wang_new_001", "请问周日下午也可以看房吗？")
    after = _poll(agent_client, WANG, before["ETag"])
    # then the poll is a 200 with a new ETag, and both the list and the conversation changed
    assert after.status_code == 200
    assert after["ETag"] != before["ETag"]
    assert after.json()["conversation"] != before.json()["conversation"]
    assert after.json()["conversations"] != before.json()["conversations"]


def test_version_changes_after_a_new_draft_and_its_approval(agent_client, renting_customer):
    # given the page holds the current version
    first = _poll(agent_client, WANG)
    # when a draft is generated for 王先生's latest message
    generated = agent_client.post("/api/accounts/acme/conversations/wm_wang_001/drafts/", {}, format="json")
    assert generated.status_code == 201
    second = _poll(agent_client, WANG, first["ETag"])
    # and then approved
    draft_approve(draft=Draft.objects.get(pk=generated.json()["id"]), actor="客服小李", reason="内容无误")
    third = _poll(agent_client, WANG, second["ETag"])
    # then each step gives a new version
    assert second.status_code == 200
    assert third.status_code == 200
    assert len({first["ETag"], second["ETag"], third["ETag"]}) == 3


def test_version_changes_after_memory_changes(agent_client, renting_customer, staff_user):
    # given the page holds the current version
    first = _poll(agent_client, WANG)
    # when a supervisor adds a memory item, then rejects an automatic one
    memory_item_add(customer=renting_customer, content="客户养了一只猫", actor=staff_user, reason="电话中得知")
    second = _poll(agent_client, WANG, first["ETag"])
    automatic = MemoryItem.objects.get(customer=renting_customer, key="preference:metro")
    memory_item_reject(item=automatic, actor=staff_user, reason="客户已改为不限地铁")
    third = _poll(agent_client, WANG, second["ETag"])
    # then each change is a new version of the conversation
    assert second.status_code == 200
    assert third.status_code == 200
    assert len({first.json()["conversation"], second.json()["conversation"], third.json()["conversation"]}) == 3


def test_version_of_one_conversation_ignores_another_customer(agent_client, renting_customer):
    # given a second customer and the page's version of 王先生's conversation
    CustomerFactory(conversation_id="wm_chen_002", display_name="陈小姐")
    before = _poll(agent_client, WANG).json()
    # when 陈小姐 writes
    _ingest("wm_chen_002", "chen_001", "你好，想了解一下徐汇的一居室")
    after = _poll(agent_client, WANG).json()
    # then 王先生's conversation is unchanged, only the list (which shows 陈小姐) changed
    assert after["conversation"] == before["conversation"]
    assert after["conversations"] != before["conversations"]


def test_version_reading_the_page_does_not_change_it(agent_client, renting_customer):
    # given the current version
    etag = _poll(agent_client, WANG)["ETag"]
    # when the page reads everything it shows
    agent_client.get(OVERVIEW.format(account="acme", cid="wm_wang_001"))
    agent_client.get(CONVERSATIONS.format(account="acme"))
    # then the version is still the same
    assert _poll(agent_client, WANG, etag).status_code == 304


def test_version_without_a_conversation_covers_the_list(agent_client, renting_customer):
    # given the page has no conversation open and holds the account's version
    url = LIST_VERSION.format(account="acme")
    before = _poll(agent_client, url)
    assert before.json()["conversation_id"] is None
    assert before.json()["conversation"] is None
    # when a new customer writes for the first time
    _ingest("wm_zhou_003", "zhou_001", "您好，我想租静安寺附近的房子")
    after = _poll(agent_client, url, before["ETag"])
    # then the list's version changed
    assert after.status_code == 200
    assert after.json()["conversations"] != before.json()["conversations"]


def test_version_etag_of_one_account_never_matches_another(db, staff_user, account, other_account):
    # given acme and globex hold the same conversation id with the same (empty) data
    from qiwei_site.platform.services import membership_grant

    membership_grant(user=staff_user, account=other_account)
    CustomerFactory(conversation_id="wm_same_001", display_name="王先生")
    with tenancy.use_account(other_account.id):
        CustomerFactory(conversation_id="wm_same_001", display_name="王先生")
    client = Client()
    client.force_login(staff_user)
    acme = client.get(VERSION.format(account="acme", cid="wm_same_001"))
    # when acme's ETag is offered to globex
    globex = client.get(VERSION.format(account="globex", cid="wm_same_001"), HTTP_IF_NONE_MATCH=acme["ETag"])
    # then globex answers with its own version
    assert acme.status_code == 200
    assert globex.status_code == 200
    assert globex["ETag"] != acme["ETag"]


def test_version_etag_of_one_conversation_never_matches_another(agent_client, renting_customer):
    # given two customers with no messages yet
    CustomerFactory(conversation_id="wm_empty_a", display_name="林女士")
    CustomerFactory(conversation_id="wm_empty_b", display_name="林女士")
    first = _poll(agent_client, VERSION.format(account="acme", cid="wm_empty_a"))
    # when the first one's ETag is offered for the second
    second = _poll(agent_client, VERSION.format(account="acme", cid="wm_empty_b"), first["ETag"])
    # then it does not match
    assert second.status_code == 200
    assert second.json()["conversation"] != first.json()["conversation"]


@pytest.mark.parametrize("header", ['W/"{token}"', '"other", "{token}"', "*"])
def test_version_if_none_match_is_compared_weakly(agent_client, renting_customer, header):
    # given the current version, offered weak, in a list, or as a wildcard
    token = _poll(agent_client, WANG).json()["version"]
    # when the page polls with it
    response = _poll(agent_client, WANG, header.format(token=token))
    # then it is still unchanged
    assert response.status_code == 304


@pytest.mark.parametrize("header", ['"not-a-version"', "garbage without quotes", '""'])
def test_version_foreign_if_none_match_gets_the_full_answer(agent_client, renting_customer, header):
    # when the page polls with an ETag that is not ours
    response = _poll(agent_client, WANG, header)
    # then it gets the version, never an error
    assert response.status_code == 200
    assert response.json()["conversation_id"] == "wm_wang_001"


def test_version_requires_authentication(renting_customer):
    # when an anonymous client polls
    response = Client().get(WANG)
    # then it is refused in the error format
    assert response.status_code in (401, 403)
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] in ("not_authenticated", "permission_denied")


def test_version_of_unknown_conversation_is_404_with_code(agent_client, account):
    # when a conversation that does not exist is polled (for instance after an erasure)
    response = _poll(agent_client, VERSION.format(account="acme", cid="wm_nobody"))
    # then it is a JSON 404 the page can act on
    assert response.status_code == 404
    assert response.json()["code"] == "conversation_not_found"


def test_version_of_malformed_conversation_id_is_400(agent_client, account):
    # when the conversation id carries a zero-width character
    response = _poll(agent_client, VERSION.format(account="acme", cid="wm_wang\u200b001"))
    # then it is refused as JSON, never a 500
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_conversation_id"


@pytest.mark.parametrize("account_id", ["globex", "NOT-VALID"])
def test_version_of_invisible_account_is_404(agent_client, renting_customer, other_account, account_id):
    # when an acme agent polls globex or an invalid account
    response = _poll(agent_client, VERSION.format(account=account_id, cid="wm_wang_001"))
    # then the account does not exist for them
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def _poll_queries(client, etag: str) -> int:
    with CaptureQueriesContext(connections["acct_acme"]) as queries:
        assert _poll(client, WANG, etag).status_code == 304
    return len(queries.captured_queries)


def test_version_query_count_does_not_grow_with_data(agent_client, renting_customer):
    # given the account-database queries of an unchanged poll for 王先生's 35 messages
    small = _poll_queries(agent_client, _poll(agent_client, WANG)["ETag"])
    # when the account grows by 40 messages, drafts and memory items across two customers
    other = CustomerFactory(conversation_id="wm_busy_009", display_name="周先生")
    for index in range(20):
        for customer in (renting_customer, other):
            MessageFactory(customer=customer, text=f"第{index}次追问：房子还在吗？")
            DraftFactory(customer=customer, reply="您好，房子还在，欢迎看房。")
            MemoryItemFactory(customer=customer, key=f"preference:poll{index}")
    large = _poll_queries(agent_client, _poll(agent_client, WANG)["ETag"])
    # then an unchanged poll costs the same few aggregate queries: one for the customer, five for the list
    assert large == small
    assert large <= 6
