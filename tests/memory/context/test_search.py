"""Session search: 2-character Chinese words, trigram terms, per-customer vs account scope, API."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connections

from conversations.models import Message, MessageDirection
from memory.context.search import FTS5, FTS_TABLE, LIKE, PG_INDEX, search_index_kind, search_messages
from qiwei_site.platform.errors import NotFound, ValidationFailed
from qiwei_site.platform.services import account_create
from qiwei_site.platform.tenancy import current_alias, use_account
from tests.factories import CustomerFactory

IN, OUT = MessageDirection.INBOUND, MessageDirection.OUTBOUND


@pytest.fixture
def two_customers(customer, chat):
    li = CustomerFactory(conversation_id="wm_li", display_name="李女士")
    wang = chat(
        customer,
        [
            (IN, "想找地铁附近的两居室，预算5000"),
            (OUT, "好的，望京地铁站附近有两套"),
            (IN, "不考虑顶楼，谢谢"),
        ],
    )
    li_messages = chat(li, [(IN, "我想买学区房，离地铁远点也没关系"), (IN, "周末可以看房吗")])
    return wang, li_messages


def texts(messages):
    return [m.text for m in messages]


def test_search_finds_a_two_character_chinese_word_per_customer(two_customers):
    wang, _li = two_customers
    found = search_messages(query="地铁", conversation_id="wm_wang")
    # Newest first, only this customer's messages
    assert found == [wang[1], wang[0]]
    assert texts(found) == ["好的，望京地铁站附近有两套", "想找地铁附近的两居室，预算5000"]


def test_search_account_wide_covers_every_customer(two_customers):
    found = search_messages(query="地铁", conversation_id=None)
    assert len(found) == 3
    assert {m.customer.conversation_id for m in found} == {"wm_wang", "wm_li"}
    assert [m.sent_at for m in found] == sorted((m.sent_at for m in found), reverse=True)


def test_search_finds_a_three_character_term_through_the_trigram_index(two_customers):
    assert texts(search_messages(query="两居室", conversation_id=None)) == ["想找地铁附近的两居室，预算5000"]
    assert texts(search_messages(query="学区房", conversation_id="wm_wang")) == []
    assert texts(search_messages(query="学区房", conversation_id="wm_li")) == ["我想买学区房，离地铁远点也没关系"]
    tables = connections[current_alias()].introspection.table_names(include_views=True)
    assert FTS_TABLE in tables


def test_search_terms_combine_and_are_case_insensitive(customer, chat):
    chat(customer, [(IN, "Is the Apartment near the metro?"), (IN, "apartment with balcony"), (IN, "地铁 apartment")])
    assert len(search_messages(query="APARTMENT", conversation_id=None)) == 3
    assert texts(search_messages(query="apartment 地铁", conversation_id=None)) == ["地铁 apartment"]


def test_search_index_follows_new_edited_and_deleted_messages(customer, chat):
    # Given the index exists already
    first = chat(customer, [(IN, "想看看朝阳公园附近")])[0]
    assert search_messages(query="朝阳公园", conversation_id=None) == [first]
    # When a message is added, edited and deleted
    later = chat(customer, [(IN, "朝阳公园南门那套")])[0]
    Message.objects.filter(pk=first.pk).update(text="想看看望京附近")
    assert texts(search_messages(query="朝阳公园", conversation_id=None)) == ["朝阳公园南门那套"]
    later.delete()
    assert search_messages(query="朝阳公园", conversation_id=None) == []
    assert texts(search_messages(query="望京附近", conversation_id=None)) == ["想看看望京附近"]


def test_search_treats_fts_syntax_and_like_wildcards_as_text(customer, chat):
    chat(customer, [(IN, "预算 100% 确定"), (IN, 'he said "OR" NOT near'), (IN, "普通消息")])
    assert texts(search_messages(query="%", conversation_id=None)) == ["预算 100% 确定"]
    assert texts(search_messages(query='"OR"', conversation_id=None)) == ['he said "OR" NOT near']
    assert search_messages(query="_", conversation_id=None) == []


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"query": "   "}, ValidationFailed),
        ({"query": "地" * 201}, ValidationFailed),
        ({"query": "地铁", "limit": 0}, ValidationFailed),
        ({"query": "地铁", "conversation_id": "wm_nobody"}, NotFound),
    ],
)
def test_search_refuses_bad_input(account, kwargs, error):
    with pytest.raises(error):
        search_messages(**({"conversation_id": None} | kwargs))


def test_search_api_account_wide(agent_client, two_customers):
    response = agent_client.get("/api/accounts/acme/messages/", {"q": "地铁"})
    assert response.status_code == 200
    results = response.json()["results"]
    assert len(results) == 3 and {"id", "conversation_id", "text", "sent_at", "direction"} <= set(results[0])


def test_search_api_bad_query_is_a_400_with_a_reason(agent_client, account):
    response = agent_client.get("/api/accounts/acme/messages/", {"q": ""})
    assert response.status_code == 400 and response.json()["code"] == "invalid"
    response = agent_client.get("/api/accounts/acme/messages/", {"q": "地铁", "limit": "many"})
    assert response.status_code == 400


def test_search_api_other_account_is_404(agent_client, other_account):
    assert agent_client.get("/api/accounts/globex/messages/", {"q": "地铁"}).status_code == 404


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_search_on_postgres_uses_pg_trgm(postgres_account_url):
    # Given an account whose database is on PostgreSQL
    account_create(account_id=postgres_account_url, name="浦东门店")
    with use_account(postgres_account_url) as alias:
        assert connections[alias].vendor == "postgresql"
        wang = CustomerFactory(conversation_id="wm_wang")
        li = CustomerFactory(conversation_id="wm_li")
        Message.objects.create(
            customer=wang, external_id="1", direction=IN, text="想找地铁附近的两居室", sent_at="2026-11-01T09:00Z"
        )
        Message.objects.create(
            customer=li, external_id="2", direction=IN, text="学区房，地铁远点没关系", sent_at="2026-11-01T10:00Z"
        )
        # When searching a 2-character word and a 3-character term, per customer and account-wide
        assert texts(search_messages(query="地铁", conversation_id=None)) == [
            "学区房，地铁远点没关系",
            "想找地铁附近的两居室",
        ]
        assert texts(search_messages(query="地铁", conversation_id="wm_wang")) == ["想找地铁附近的两居室"]
        assert texts(search_messages(query="两居室", conversation_id=None)) == ["想找地铁附近的两居室"]
        # Then the trigram index exists
        with connections[alias].cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM pg_indexes WHERE indexname = %s AND schemaname = current_schema()", [PG_INDEX]
            )
            assert cursor.fetchone() is not None
            cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
            assert cursor.fetchone() is not None


def _sqlite_objects() -> set[str]:
    with connections[current_alias()].cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE name LIKE %s", [f"{FTS_TABLE}%"])
        return {row[0] for row in cursor.fetchall()}


def test_search_index_is_made_by_the_migration_not_by_the_first_search(account):
    # Given a new account database on which nothing has been searched yet
    # Then the FTS5 table and its three triggers are already there
    assert {FTS_TABLE, f"{FTS_TABLE}_ai", f"{FTS_TABLE}_ad", f"{FTS_TABLE}_au"} <= _sqlite_objects()
    assert search_index_kind() == FTS5


def test_search_migration_backfills_existing_messages(customer, chat):
    # Given messages written while the index did not exist
    alias = current_alias()
    call_command("migrate", "memory", "0003", database=alias, verbosity=0)
    assert FTS_TABLE not in _sqlite_objects()
    chat(customer, [(IN, "想看看朝阳公园附近")])
    # When the migration runs
    call_command("migrate", "memory", database=alias, verbosity=0)
    # Then the old messages are found through the index
    assert search_index_kind() == FTS5
    assert texts(search_messages(query="朝阳公园", conversation_id=None)) == ["想看看朝阳公园附近"]


def test_search_without_a_complete_index_falls_back_to_like(customer, chat):
    # Given a message table whose FTS triggers were lost (e.g. a later migration rebuilt the table)
    chat(customer, [(IN, "想找地铁附近的两居室")])
    with connections[current_alias()].cursor() as cursor:
        cursor.execute(f"DROP TRIGGER {FTS_TABLE}_au")
    Message.objects.filter(customer=customer).update(text="想找地铁附近的三居室")
    # When searching a trigram term
    # Then LIKE answers, and the stale index is not used
    assert search_index_kind() == LIKE
    assert texts(search_messages(query="三居室", conversation_id=None)) == ["想找地铁附近的三居室"]
    assert search_messages(query="两居室", conversation_id=None) == []


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_postgres_search_index_is_made_by_the_migration(postgres_account_url):
    # Given a new PostgreSQL account on which nothing has been searched yet
    account_create(account_id=postgres_account_url, name="浦东门店")
    with use_account(postgres_account_url) as alias, connections[alias].cursor() as cursor:
        # Then the migration already made the trigram index
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [PG_INDEX])
        (definition,) = cursor.fetchone()
        assert "gin" in definition and "gin_trgm_ops" in definition
        assert search_index_kind() == "pg_trgm"
