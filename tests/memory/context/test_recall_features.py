"""Recall features computed once at ingest and stored (issue 13 item 3): recall reads them, computes
and stores the missing or stale ones, the migration and the command backfill them, and erasure
leaves none behind."""

from __future__ import annotations

import datetime as dt
import importlib
import io
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.db import OperationalError, connections
from django.db.migrations.loader import MigrationLoader
from django.db.models import QuerySet

from conversations.models import Message, MessageDirection
from memory.capture.ingest import messages_ingest
from memory.context import recall as recall_module
from memory.context.recall import (
    recall_features_backfill,
    recall_features_refresh,
    recall_for,
)
from memory.governance.erasure import customer_erase
from memory.models import MessageRecallFeatures
from qiwei_site.platform.services import account_create
from qiwei_site.platform.tenancy import current_alias, use_account
from qiwei_site.reading.recall import FEATURE_VERSION, features, features_decode, features_encode, text_fingerprint
from tests.factories import BASE_TIME, CustomerFactory, MessageFactory
from tests.memory.context.conftest import FILLER

IN, OUT = MessageDirection.INBOUND, MessageDirection.OUTBOUND
MIGRATION = "memory.migrations.0007_message_recall_features"

CONVERSATION = [
    (IN, "您好，我想在浦东租个两居室，预算八千左右"),
    (OUT, "好的，请问对楼层有要求吗"),
    (IN, "不考虑顶楼，家里有老人"),
    (IN, "我家里养了一只布偶猫，房东得同意才行"),
]


def ingest(conversation_id: str, turns, *, start: dt.datetime = BASE_TIME, prefix: str = "wx") -> list[Message]:
    payload = [
        {
            "external_id": f"{prefix}_{index}",
            "direction": direction,
            "text": text,
            "sender": "客户" if direction == IN else "客服小安",
            "sent_at": (start + dt.timedelta(minutes=index)).isoformat(),
        }
        for index, (direction, text) in enumerate(turns)
    ]
    return messages_ingest(conversation_id=conversation_id, messages=payload, actor="wecom").created


def long_history() -> list[tuple[str, str]]:
    small_talk = [(OUT if i % 2 else IN, FILLER[i % len(FILLER)]) for i in range(40)]
    return [*CONVERSATION, *small_talk]


@pytest.fixture
def tokenised(monkeypatch) -> list[str]:
    """The texts recall tokenises (the stored features spare the history)."""
    seen: list[str] = []
    real = recall_module.features

    def spy(text: str):
        seen.append(text)
        return real(text)

    monkeypatch.setattr(recall_module, "features", spy)
    return seen


def test_features_encode_and_decode_round_trip():
    # Given the features of a message with repeated terms and an amount
    original = features("地铁地铁，预算8k，不要顶楼 near the metro")
    # When stored as text and read back
    encoded = features_encode(original)
    # Then they are the same features
    assert features_decode(encoded) == original
    assert "*2" in encoded


def test_ingest_stores_recall_features_for_each_new_message(account):
    # When a conversation is ingested
    created = ingest("wm_zhao", CONVERSATION)
    # Then every new message has its features stored, of this version and of its text
    rows = {row.message_id: row for row in MessageRecallFeatures.objects.all()}
    assert set(rows) == {m.pk for m in created}
    for message in created:
        row = rows[message.pk]
        assert row.version == FEATURE_VERSION
        assert row.text_fingerprint == text_fingerprint(message.text)
        assert features_decode(row.features) == features(message.text)


def test_ingest_of_a_duplicate_writes_no_new_features(account):
    # Given an ingested conversation
    ingest("wm_zhao", CONVERSATION)
    before = MessageRecallFeatures.objects.count()
    # When the same messages arrive again
    assert ingest("wm_zhao", CONVERSATION) == []
    # Then no feature row is added
    assert MessageRecallFeatures.objects.count() == before


def test_recall_for_reads_stored_features_instead_of_tokenising_history(
    account, settings, tokenised, django_assert_num_queries
):
    # Given a long conversation stored through ingest
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 12
    created = ingest("wm_zhao", long_history())
    latest = ingest("wm_zhao", [(IN, "顶楼的就别推荐了")], start=BASE_TIME + dt.timedelta(days=1), prefix="new")[0]
    customer = latest.customer
    tokenised.clear()
    # When recalling
    with django_assert_num_queries(1, connection=connections[current_alias()]):
        recalled = recall_for(customer, latest)
    # Then the old statement is found, only the question was tokenised, and one query read it all
    assert [m.id for m in recalled] == [created[2].id]
    assert tokenised == [latest.text]


def test_recall_for_stores_features_for_messages_written_without_them(customer, chat, settings, tokenised):
    # Given messages written by a path that stores no features (a delivered reply, old data)
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 12
    old = chat(customer, long_history())
    latest = chat(customer, [(IN, "顶楼的就别推荐了")], start=old[-1].sent_at + dt.timedelta(hours=1))[0]
    assert not MessageRecallFeatures.objects.exists()
    # When recalling twice
    first = recall_for(customer, latest)
    tokenised.clear()
    second = recall_for(customer, latest)
    # Then the first call stores the candidates' features and the second reads them
    candidates = old[: len(old) + 1 - 12]
    assert set(MessageRecallFeatures.objects.values_list("message_id", flat=True)) == {m.pk for m in candidates}
    assert first == second and [m.id for m in first] == [old[2].id]
    assert tokenised == [latest.text]


def test_recall_for_recomputes_features_of_another_version(customer, chat, settings, tokenised):
    # Given stored features of an older tokeniser version
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 12
    old = chat(customer, long_history())
    latest = chat(customer, [(IN, "八千的两居还有吗")], start=old[-1].sent_at + dt.timedelta(hours=1))[0]
    recall_for(customer, latest)
    MessageRecallFeatures.objects.update(version=FEATURE_VERSION - 1, features="b:旧版")
    tokenised.clear()
    # When recalling
    recalled = recall_for(customer, latest)
    # Then they are tokenised again, stored as this version, and the budget is found by its value
    assert old[0].text in tokenised
    assert set(MessageRecallFeatures.objects.values_list("version", flat=True)) == {FEATURE_VERSION}
    assert old[0].id in [m.id for m in recalled]


def test_recall_for_does_not_recall_by_words_a_scrubbed_text_no_longer_holds(account, settings):
    # Given an old message with stored features naming a street
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 12
    turns = [(IN, "我现在住徐汇田林路那边，想换个大点的"), *long_history()[4:]]
    created = ingest("wm_zhao", turns)
    question = "田林路附近还有房子吗"
    latest = ingest("wm_zhao", [(IN, question)], start=BASE_TIME + dt.timedelta(days=1), prefix="new")[0]
    assert [m.id for m in recall_for(latest.customer, latest)] == [created[0].id]
    # When its text is scrubbed in place (a forget replacing the quoted words)
    Message.objects.filter(pk=created[0].pk).update(text="我现在住［已遗忘内容已移除］那边，想换个大点的")
    # Then recall no longer finds it by the street, and the stored row no longer spells it
    assert recall_for(latest.customer, latest) == []
    row = MessageRecallFeatures.objects.get(message_id=created[0].pk)
    assert "b:田林" not in row.features and "b:林路" not in row.features


def test_recall_features_refresh_rewrites_the_features_of_a_scrubbed_message(account):
    # Given a stored message whose text is then scrubbed in place
    created = ingest("wm_zhao", [(IN, "我住在徐汇田林路88弄")])
    Message.objects.filter(pk=created[0].pk).update(text="我住在［已遗忘内容已移除］")
    # When governance refreshes its features
    written = recall_features_refresh(message_ids=[created[0].pk])
    # Then the stored features are those of the new text
    row = MessageRecallFeatures.objects.get(message_id=created[0].pk)
    assert written == 1
    assert row.text_fingerprint == text_fingerprint("我住在［已遗忘内容已移除］")
    assert "b:田林" not in row.features and "n:88" not in row.features


def test_recall_for_still_recalls_when_features_cannot_be_stored(customer, chat, settings, monkeypatch):
    # Given messages without features, and a database that refuses the write (locked)
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 12
    old = chat(customer, long_history())
    latest = chat(customer, [(IN, "顶楼的就别推荐了")], start=old[-1].sent_at + dt.timedelta(hours=1))[0]

    real_bulk_create = QuerySet.bulk_create

    def bulk_create(queryset, objs, *args, **kwargs):
        if queryset.model is MessageRecallFeatures:
            raise OperationalError("database is locked")
        return real_bulk_create(queryset, objs, *args, **kwargs)

    monkeypatch.setattr(QuerySet, "bulk_create", bulk_create)
    # When recalling
    recalled = recall_for(customer, latest)
    # Then recall works from features computed on the spot
    assert [m.id for m in recalled] == [old[2].id]
    assert not MessageRecallFeatures.objects.exists()


def test_customer_erase_leaves_no_recall_features(account, staff_user):
    # Given two customers with stored features
    erased = ingest("wm_zhao", CONVERSATION)
    kept = ingest("wm_qian", [(IN, "想看看徐汇的一居室")], prefix="qian")
    # When one is erased
    customer_erase(customer=erased[0].customer, actor=staff_user, reason="客户要求删除全部数据")
    # Then none of their messages' features is left, and the other customer's are kept
    assert not MessageRecallFeatures.objects.filter(message_id__in=[m.pk for m in erased]).exists()
    assert MessageRecallFeatures.objects.filter(message_id=kept[0].pk).exists()
    with connections[current_alias()].cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {MessageRecallFeatures._meta.db_table}")
        assert cursor.fetchone()[0] == 1


def test_migration_backfill_stores_features_in_batches(account, monkeypatch):
    # Given messages stored before features existed (or by a path that stores none)
    customer = CustomerFactory(conversation_id="wm_zhao")
    messages = [MessageFactory(customer=customer, text=text) for _direction, text in long_history()[:7]]
    migration = importlib.import_module(MIGRATION)
    monkeypatch.setattr(migration, "BATCH_SIZE", 3)
    alias = current_alias()
    state = MigrationLoader(connections[alias]).project_state(("memory", "0007_message_recall_features"))
    # When the migration's backfill runs with its historical models, in batches smaller than the table
    migration.backfill(state.apps, SimpleNamespace(connection=connections[alias]))
    # Then every message has the features of its text
    stored = dict(MessageRecallFeatures.objects.values_list("message_id", "features"))
    assert stored == {m.pk: features_encode(features(m.text)) for m in messages}
    # And a second run has nothing to do
    assert recall_features_backfill(batch_size=3) == 0


def test_migrate_creates_and_backfills_the_features_table_on_sqlite(account):
    # Given an account database holding messages, migrated back to before the features table
    customer = CustomerFactory(conversation_id="wm_zhao")
    messages = [MessageFactory(customer=customer, text=text) for _direction, text in CONVERSATION]
    alias = current_alias()
    call_command("migrate", "memory", "0006", database=alias, verbosity=0)
    assert MessageRecallFeatures._meta.db_table not in connections[alias].introspection.table_names()
    # When it is migrated forward
    call_command("migrate", "memory", database=alias, verbosity=0)
    # Then every existing message has its features
    stored = dict(MessageRecallFeatures.objects.values_list("message_id", "features"))
    assert stored == {m.pk: features_encode(features(m.text)) for m in messages}


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_migrate_creates_and_backfills_the_features_table_on_postgres(postgres_account_url):
    # Given a PostgreSQL account database holding messages, migrated back to before the features table
    account_create(account_id=postgres_account_url, name="浦东门店")
    with use_account(postgres_account_url) as alias:
        assert connections[alias].vendor == "postgresql"
        customer = CustomerFactory(conversation_id="wm_zhao")
        messages = [MessageFactory(customer=customer, text=text) for _direction, text in CONVERSATION]
        call_command("migrate", "memory", "0006", database=alias, verbosity=0)
        # When it is migrated forward
        call_command("migrate", "memory", database=alias, verbosity=0)
        # Then every existing message has its features, and the upsert path works there too
        stored = dict(MessageRecallFeatures.objects.values_list("message_id", "features"))
        assert stored == {m.pk: features_encode(features(m.text)) for m in messages}
        Message.objects.filter(pk=messages[0].pk).update(text="不考虑一楼")
        assert recall_features_refresh(message_ids=[messages[0].pk]) == 1
        assert MessageRecallFeatures.objects.get(pk=messages[0].pk).text_fingerprint == text_fingerprint("不考虑一楼")


def test_recall_features_backfill_command_fills_missing_and_stale_rows(account):
    # Given one message without features and one with features of an older version
    customer = CustomerFactory(conversation_id="wm_zhao")
    first = MessageFactory(customer=customer, text="预算八千左右")
    second = MessageFactory(customer=customer, text="不考虑顶楼")
    MessageRecallFeatures.objects.create(message=second, version=FEATURE_VERSION - 1, text_fingerprint="0", features="")
    # When the command runs twice
    out = io.StringIO()
    call_command("recall_features_backfill", account=account.id, stdout=out)
    call_command("recall_features_backfill", account=account.id, stdout=out)
    # Then the first run wrote both rows, the second nothing
    assert "written=2" in out.getvalue() and out.getvalue().rstrip().endswith(f"version={FEATURE_VERSION})")
    assert "accounts=1 written=0" in out.getvalue()
    rows = dict(MessageRecallFeatures.objects.values_list("message_id", "version"))
    assert rows == {first.pk: FEATURE_VERSION, second.pk: FEATURE_VERSION}


def test_recall_features_backfill_command_refuses_an_unknown_account(account):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="不存在"):
        call_command("recall_features_backfill", account="nosuch", stdout=io.StringIO())
