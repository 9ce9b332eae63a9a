"""Every malformed input to the API gets a JSON answer (issue 11 item 2): a 4xx `{"code", "detail"}`,
never Django's HTML page and never a 5xx, for every endpoint family (ingest, messages list and search,
memory, audit, context, drafts, profile, the Workbench APIs). HTML pages stay HTML."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from conversations.models import Customer, Message
from tests.factories import CustomerFactory, DraftFactory, MemoryItemFactory, MessageFactory

CID = "wm_table_wang"
ACCOUNT = "/api/accounts/acme"
CONVERSATION = f"{ACCOUNT}/conversations/{CID}"
WORKBENCH = "/workbench/api/accounts/acme"

# Endpoints that read a JSON body; `{item}` and `{draft}` are filled from the fixture.
WRITES = [
    ("ingest", "POST", f"{CONVERSATION}/messages/"),
    ("memory add", "POST", f"{CONVERSATION}/memory/"),
    ("memory edit", "PATCH", f"{CONVERSATION}/memory/{{item}}/"),
    ("memory confirm", "POST", f"{CONVERSATION}/memory/{{item}}/confirm/"),
    ("profile", "PATCH", f"{CONVERSATION}/profile/"),
    ("draft generate", "POST", f"{CONVERSATION}/drafts/"),
    ("draft approve", "POST", f"{ACCOUNT}/drafts/{{draft}}/approve/"),
]
# Conversation-scoped endpoints, `{cid}` replaced by a malformed conversation id.
CONVERSATION_PATHS = [
    ("ingest", "POST", f"{ACCOUNT}/conversations/{{cid}}/messages/"),
    ("messages list", "GET", f"{ACCOUNT}/conversations/{{cid}}/messages/"),
    ("messages search", "GET", f"{ACCOUNT}/conversations/{{cid}}/messages/?q=地铁"),
    ("memory list", "GET", f"{ACCOUNT}/conversations/{{cid}}/memory/"),
    ("snapshot", "GET", f"{ACCOUNT}/conversations/{{cid}}/snapshot/"),
    ("context", "GET", f"{ACCOUNT}/conversations/{{cid}}/context/"),
    ("drafts list", "GET", f"{ACCOUNT}/conversations/{{cid}}/drafts/"),
    ("draft generate", "POST", f"{ACCOUNT}/conversations/{{cid}}/drafts/"),
    ("epochs", "GET", f"{ACCOUNT}/conversations/{{cid}}/epochs/"),
    ("profile", "PATCH", f"{ACCOUNT}/conversations/{{cid}}/profile/"),
    ("workbench overview", "GET", f"{WORKBENCH}/conversations/{{cid}}/overview/"),
    ("workbench version", "GET", f"{WORKBENCH}/conversations/{{cid}}/version/"),
]
LISTS = [
    ("messages list", f"{CONVERSATION}/messages/"),
    ("memory list", f"{CONVERSATION}/memory/"),
    ("snapshots", f"{CONVERSATION}/snapshots/"),
    ("drafts list", f"{CONVERSATION}/drafts/"),
    ("epochs", f"{CONVERSATION}/epochs/"),
    ("audit", f"{ACCOUNT}/audit/"),
    ("customers", f"{ACCOUNT}/conversations/"),
]
QUERY_READS = [
    *LISTS,
    ("messages search", f"{CONVERSATION}/messages/?q=地铁"),
    ("account search", f"{ACCOUNT}/messages/?q=地铁"),
    ("context", f"{CONVERSATION}/context/"),
    ("workbench conversations", f"{WORKBENCH}/conversations/"),
    ("workbench overview", f"{WORKBENCH}/conversations/{CID}/overview/"),
    ("workbench accounts", "/workbench/api/accounts/"),
]


def _nested(depth: int, opener: str = "[", closer: str = "]") -> bytes:
    return (opener * depth + "1" + closer * depth).encode()


def _nested_objects(depth: int) -> bytes:
    return ('{"text":' * depth + '"预算五千"' + "}" * depth).encode()


# A body bad whatever the endpoint: (label, bytes, content type, expected status).
JSON = "application/json"
BIG = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1
BODIES: list[tuple[str, bytes, str, int]] = [
    ("lone surrogate in text", b'{"external_id": "wx_1", "text": "\\ud800 \xe9\xa2\x84\xe7\xae\x97"}', JSON, 400),
    ("lone surrogate in external_id", b'{"external_id": "wx_\\udfff", "text": "ok"}', JSON, 400),
    ("lone surrogate in sender", b'{"external_id": "wx_2", "text": "ok", "sender": "\\ud83d"}', JSON, 400),
    ("lone surrogate in content", b'{"content": "\\udc00", "reason": "\\ud800", "budget": "\\ud800"}', JSON, 400),
    ("invalid UTF-8", b'{"external_id": "wx_3", "text": "\xed\xa0\x80\xff"}', JSON, 400),
    ("array nested 5,000 deep", _nested(5_000), JSON, 400),
    ("array nested 50,000 deep", _nested(50_000), JSON, 400),
    ("object nested 5,000 deep", _nested_objects(5_000), JSON, 400),
    ("object nested 20,000 deep", _nested_objects(20_000), JSON, 400),
    ("NUL in external_id", b'{"external_id": "wx_\\u0000", "text": "ok"}', JSON, 400),
    ("NUL in a key", b'{"content\\u0000": "x", "reason": "r"}', JSON, 400),
    ("NUL in reason", b'{"content": "x", "reason": "\\u0000"}', JSON, 400),
    ("NaN", b'{"external_id": "wx_4", "text": NaN, "confidence": NaN}', JSON, 400),
    ("truncated JSON", b'{"external_id": "wx_5", "text": "', JSON, 400),
    ("body over the upload limit", b'{"text": "' + b"a" * BIG + b'"}', JSON, 413),
    ("form-encoded", "external_id=wx_6&text=预算五千".encode(), "application/x-www-form-urlencoded", 415),
    (
        "multipart",
        b"--x\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--x--",
        "multipart/form-data; boundary=x",
        415,
    ),
    ("plain text", "我想租两居室".encode(), "text/plain", 415),
    ("no content type", b'{"external_id": "wx_7", "text": "ok"}', "", 415),
]
BAD_CONVERSATION_IDS = [
    ("tab", "wm%09wang"),
    ("newline", "wm%0Awang"),
    ("carriage return", "wm%0Dwang"),
    ("U+202E right-to-left override", "wm%E2%80%AEgnaw"),
    ("U+200B zero-width space", "wm%E2%80%8Bwang"),
    ("dot-dot", "wm..wang"),
    ("backslash", "wm%5Cwang"),
    ("NUL", "wm%00wang"),
    ("129 characters", "w" * 129),
    # Not valid UTF-8 (a stray byte; an encoded surrogate): Django would keep them as "%FF" text.
    ("stray byte %FF", "wm%FFwang"),
    ("encoded surrogate", "wm%ED%A0%80wang"),
    ("overlong slash", "wm%C0%AFwang"),
]
BAD_QUERIES: list[tuple[str, str, int | None]] = [
    ("limit beyond 64 bits", "limit=99999999999999999999", 400),
    ("offset beyond 64 bits", "offset=99999999999999999999", 400),
    ("negative limit beyond 64 bits", "limit=-99999999999999999999", 400),
    ("NUL in a filter", "conversation_id=wm%00wang&action=%00&type=%00&direction=%00", 400),
    ("NUL in an unknown parameter", "x=%00", 400),
    ("control character", "q=%1B%5B2J", 400),
    # Not an integer parameter of any of these views: a plain answer, but never a 5xx.
    ("huge unknown number", "created_by=99999999999999999999&id=99999999999999999999", None),
]


@dataclass
class Rows:
    item_id: int
    draft_id: int


@pytest.fixture
def rows(account) -> Rows:
    customer = CustomerFactory(conversation_id=CID, display_name="王先生")
    MessageFactory(customer=customer, external_id="wang_001", text="我想找地铁附近的两居室，预算六千以内")
    item = MemoryItemFactory(customer=customer, content="不考虑顶楼")
    draft = DraftFactory(customer=customer)
    return Rows(item_id=item.pk, draft_id=draft.pk)


@pytest.fixture
def client(staff_client) -> APIClient:
    staff_client.raise_request_exception = False
    return staff_client


def _assert_json_answer(response: Any, expected: int | None, label: str) -> dict[str, Any]:
    """JSON and below 500 always; with `expected`, exactly that 4xx with `{"code", "detail"}`."""
    content_type = response.get("Content-Type", "")
    assert content_type.startswith("application/json"), (label, response.status_code, content_type)
    assert response.status_code < 500, (label, response.status_code, response.content[:300])
    body = json.loads(response.content)
    if expected is not None:
        assert response.status_code == expected, (label, response.status_code, body)
        assert set(body) >= {"code", "detail"}, (label, body)
    return body


@pytest.mark.parametrize(("family", "method", "path"), WRITES, ids=[w[0] for w in WRITES])
def test_api_malformed_body_answers_json_4xx(client, rows, family, method, path):
    # given an endpoint that reads a JSON body
    url = path.format(item=rows.item_id, draft=rows.draft_id)
    for label, body, content_type, expected in BODIES:
        # when it receives a malformed body
        response = client.generic(method, url, data=body, content_type=content_type)
        # then the answer is a JSON 4xx with a code
        _assert_json_answer(response, expected, f"{family}: {label}")
    # and nothing was stored by any of them
    assert Message.objects.count() == 1


def test_api_malformed_body_codes_name_the_problem(client, rows):
    # given the ingest endpoint
    url = f"{CONVERSATION}/messages/"
    expected = {
        "lone surrogate in text": "invalid_unicode",
        "invalid UTF-8": "invalid_unicode",
        "array nested 50,000 deep": "json_too_deep",
        "NUL in external_id": "invalid_characters",
        "body over the upload limit": "request_too_large",
        "form-encoded": "unsupported_media_type",
    }
    for label, body, content_type, _status in BODIES:
        if label not in expected:
            continue
        # when each malformed body arrives
        body_json = client.generic("POST", url, data=body, content_type=content_type).json()
        # then its code says what was wrong
        assert body_json["code"] == expected[label], (label, body_json)
    too_big = client.generic("POST", url, data=b"x" * BIG, content_type=JSON).json()
    assert str(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) in too_big["detail"]


@pytest.mark.parametrize(("family", "method", "path"), CONVERSATION_PATHS, ids=[p[0] for p in CONVERSATION_PATHS])
def test_api_malformed_conversation_id_answers_json_400(client, rows, family, method, path):
    # given a conversation-scoped endpoint
    for label, cid in BAD_CONVERSATION_IDS:
        # when the conversation id in its path is malformed
        url = path.format(cid=cid)
        body = json.dumps({"external_id": "wx_ok_1", "text": "周六上午能看房吗？"}) if method != "GET" else None
        response = client.generic(method, url, data=body or "", content_type=JSON)
        # then it is a JSON 400, and no customer was created for it
        _assert_json_answer(response, 400, f"{family}: {label}")
    assert list(Customer.objects.values_list("conversation_id", flat=True)) == [CID]


@pytest.mark.parametrize(("family", "path"), QUERY_READS, ids=[q[0] for q in QUERY_READS])
def test_api_malformed_query_answers_json_400(client, rows, family, path):
    # given a read endpoint
    for label, query, expected in BAD_QUERIES:
        # when a query parameter overflows 64 bits or carries NUL / control characters
        separator = "&" if "?" in path else "?"
        response = client.get(f"{path}{separator}{query}")
        # then the answer is a JSON 400
        _assert_json_answer(response, expected, f"{family}: {label}")


@pytest.mark.parametrize(("family", "path"), LISTS, ids=[item[0] for item in LISTS])
def test_api_list_pagination_is_bounded(client, rows, family, path):
    # given a paginated list
    # when the page size or offset is out of range
    for query in (
        "limit=99999999999999999999",
        "offset=99999999999999999999",
        "limit=9223372036854775808",
        "limit=-5",
        "offset=-1",
        "limit=abc",
        "limit=1e3",
    ):
        # then it is a JSON 400, not an overflowing query
        _assert_json_answer(client.get(f"{path}?{query}"), 400, f"{family}: {query}")
    # and a sensible page still works
    assert client.get(f"{path}?limit=10&offset=0").status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        f"{ACCOUNT}/drafts/99999999999999999999/",
        f"{ACCOUNT}/drafts/99999999999999999999/approve/",
        f"{CONVERSATION}/memory/99999999999999999999/",
        f"{CONVERSATION}/memory/99999999999999999999/history/",
    ],
)
def test_api_object_id_beyond_64_bits_is_json_404(client, rows, path):
    # given an object id that no database integer can hold
    # when it is addressed
    response = client.generic("POST" if path.endswith("approve/") else "GET", path, data="{}", content_type=JSON)
    # then it does not exist (JSON 404), rather than overflowing the query
    _assert_json_answer(response, 404, path)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", f"{CONVERSATION}/messages"),
        ("GET", f"{CONVERSATION}/messages"),
        ("POST", f"{CONVERSATION}/memory/{{item}}/confirm"),
        ("GET", f"{CONVERSATION}/memory"),
        ("POST", f"{ACCOUNT}/drafts/{{draft}}/approve"),
        ("GET", f"{WORKBENCH}/conversations/{CID}/overview"),
    ],
)
def test_api_path_without_trailing_slash_is_json_404_naming_the_right_path(client, rows, method, path):
    # given an API path written without its trailing slash
    url = path.format(item=rows.item_id, draft=rows.draft_id)
    payload = {"external_id": "wang_slash", "text": "预算六千以内", "reason": "客户确认"}
    # when it is requested (a POST with a body a redirect would have lost)
    response = client.generic(method, url, data=json.dumps(payload), content_type=JSON)
    # then it is a JSON 404 naming the path with its slash, not an HTML 301 to follow
    body = _assert_json_answer(response, 404, url)
    assert body["code"] == "not_found"
    assert f"请求路径应以 / 结尾：{url}/" in body["detail"], body
    assert not response.has_header("Location")
    # and nothing was written
    assert Message.objects.count() == 1


def test_api_unknown_path_without_slash_stays_a_plain_json_404(client, rows):
    # when a path that is no route with or without its slash is requested
    response = client.get(f"{ACCOUNT}/no-such-thing")
    # then it is the usual JSON 404, without a suggested path
    body = _assert_json_answer(response, 404, "unknown")
    assert "结尾" not in body["detail"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"external_id": True, "text": "预算五千"}, "external_id"),
        ({"external_id": 12345, "text": "预算五千"}, "external_id"),
        ({"external_id": 1.5, "text": "预算五千"}, "external_id"),
        ({"external_id": ["wx"], "text": "预算五千"}, "external_id"),
        ({"external_id": "wx\t1", "text": "预算五千"}, "external_id"),
        ({"external_id": "wx\u202e1", "text": "预算五千"}, "external_id"),
        ({"external_id": "../wx1", "text": "预算五千"}, "external_id"),
        ({"external_id": "wx/1", "text": "预算五千"}, "external_id"),
        ({"external_id": "w" * 129, "text": "预算五千"}, "external_id"),
        ({"external_id": "wx_1", "text": "预算五千", "sent_at": "2099-12-31T23:59:59+08:00"}, "sent_at"),
        ({"external_id": "wx_1", "text": "预算五千", "sent_at": 99999999999999999999}, "sent_at"),
        ({"external_id": "wx_1", "text": "预算五千", "sender": 42}, "sender"),
        ({"external_id": "wx_1", "text": 42}, "text"),
    ],
)
def test_ingest_loose_input_is_refused_with_the_field_named(client, rows, payload, field):
    # given a message whose field would have been coerced or stored as it is
    # when it is ingested
    response = client.post(f"{CONVERSATION}/messages/", payload, format="json")
    # then it is a 400 naming the field, and nothing was stored
    body = _assert_json_answer(response, 400, field)
    assert body["code"] == "invalid_message" and field in body["detail"], body
    assert Message.objects.count() == 1


def test_api_html_pages_stay_html(client, rows, staff_user):
    # given a signed-in supervisor
    browser = client
    browser.force_login(staff_user)
    # when they open the admin and a missing page outside the API
    admin = browser.get("/admin/")
    missing = browser.get("/no-such-page/")
    # then those answers are still HTML
    assert admin["Content-Type"].startswith("text/html")
    assert missing.status_code == 404 and missing["Content-Type"].startswith("text/html")
