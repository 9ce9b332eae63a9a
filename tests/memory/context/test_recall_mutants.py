"""Recall's promises the mutation run of `memory/context/recall.py` found untested (issue 40): nothing
read when recall is off or there is nothing to answer, the scan window's edges, an older turn
recalled as it was, stored dates read against their day, the decoded cache's bound, and the
features written only for the messages they belong to."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from django.db import OperationalError, connections
from django.db.models import QuerySet
from django.test.utils import CaptureQueriesContext

from conversations.models import Message, MessageDirection
from memory.context.recall import (
    RECALL_COLUMNS,
    _DecodedCache,
    decoded_cache_clear,
    recall_features_backfill,
    recall_features_refresh,
    recall_features_store,
    recall_for,
    recall_from_rows,
)
from memory.models import MessageRecallFeatures
from qiwei_site.platform.tenancy import current_alias
from qiwei_site.reading.recall import FEATURE_VERSION, document, features, features_encode, text_fingerprint
from tests.factories import CustomerFactory, MessageFactory
from tests.memory.context.conftest import filler

IN, OUT = MessageDirection.INBOUND, MessageDirection.OUTBOUND
UTC = dt.UTC


def account_statements() -> CaptureQueriesContext:
    """The statements run on the selected account's database (where messages live)."""
    return CaptureQueriesContext(connections[current_alias()])


def test_recall_for_without_a_message_to_answer_recalls_nothing(customer, chat):
    # Given a customer with history but no message to answer (only our greeting so far)
    chat(customer, [(OUT, "您好，我是安居客服小安，请问想租哪个区域的房子？")])

    # When recalling for no message
    with account_statements() as statements:
        recalled = recall_for(customer, None)

    # Then nothing is recalled and nothing read
    assert recalled == []
    assert len(statements) == 0


def test_recall_for_with_recall_off_reads_no_history(customer, chat, settings):
    # Given recall switched off, and an old message the latest one is about
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 2
    settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT = 0
    old = chat(customer, [(IN, "我家有老人，不考虑顶楼"), *filler(6)])
    latest = chat(customer, [(IN, "这套是顶楼吗？")], start=old[-1].sent_at + dt.timedelta(hours=1))[0]

    # When recalling for the latest message
    with account_statements() as statements:
        recalled = recall_for(customer, latest)

    # Then nothing is recalled and the history is not even read
    assert recalled == []
    assert len(statements) == 0


def test_recall_for_a_message_without_words_reads_no_history(customer, chat):
    # Given an old statement, then a message with no words (a picture sent on its own)
    old = chat(customer, [(IN, "预算每月五千以内，想要朝南的两居室"), *filler(20)])
    latest = MessageFactory(customer=customer, text="  ", sent_at=old[-1].sent_at + dt.timedelta(hours=1))

    # When recalling for it
    with account_statements() as statements:
        recalled = recall_for(customer, latest)

    # Then nothing is recalled and nothing read
    assert recalled == []
    assert len(statements) == 0


def test_recall_for_with_a_scan_window_of_one_recalls_the_message_just_beyond_the_recent_window(
    customer, chat, settings
):
    # Given a scan window of one message beyond the two recent ones, and two old statements about
    # the same flat: one in that window, one beyond it
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 2
    settings.QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT = 1
    settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT = 3
    beyond, in_window, _small_talk, latest = chat(
        customer,
        [
            (IN, "栖霞路那套两居室朝南吗"),
            (IN, "栖霞路那套两居室我挺喜欢的"),
            (OUT, "好的，我看一下"),
            (IN, "栖霞路那套两居室还在吗"),
        ],
    )

    # When recalling for the latest message
    recalled = recall_for(customer, latest)

    # Then the one message of the scan window is recalled, and nothing beyond it
    assert [message.id for message in recalled] == [in_window.id]
    assert beyond.id not in [message.id for message in recalled]


def test_recall_for_an_earlier_message_never_recalls_what_came_after_it(customer, chat, settings):
    # Given the customer ruled out top floors, asked about one, and said more about it afterwards
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 2
    settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT = 3
    said = chat(
        customer,
        [
            (IN, "家里有老人，顶楼的房子不考虑"),
            *filler(4),
            (IN, "顶楼的房子还有别的吗"),
            (IN, "顶楼的房子真的不考虑，老人爬不动"),
            *filler(3),
        ],
    )
    asked = said[5]

    # When the turn of that earlier question is recalled again (no window given: recall reads it)
    recalled = recall_for(customer, asked)

    # Then only what came before the question is recalled, as it was at the time
    assert [message.id for message in recalled] == [said[0].id]
    assert all(message.sent_at < asked.sent_at for message in recalled)


def test_recall_for_reads_stored_dates_against_the_day_they_were_sent(customer, chat, settings):
    # Given the same words said on 2 and on 3 March (Shanghai), their features stored at ingest,
    # and a cold cache of decoded features
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 4
    settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT = 1
    said = chat(customer, [(IN, "昨天去看了那套一居，采光不错")], start=dt.datetime(2026, 3, 2, 2, 0, tzinfo=UTC))
    later = chat(customer, [(IN, "昨天去看了那套一居，采光不错")], start=dt.datetime(2026, 3, 3, 2, 0, tzinfo=UTC))
    small_talk = chat(customer, filler(6), start=dt.datetime(2026, 3, 5, 2, 0, tzinfo=UTC))
    latest = chat(customer, [(IN, "我3月1号看的那套怎么样来着")], start=dt.datetime(2026, 3, 10, 2, 0, tzinfo=UTC))[0]
    recall_features_store(messages=[*said, *later, *small_talk, latest])
    decoded_cache_clear()

    # When the customer asks about the flat seen on 1 March
    recalled = recall_for(customer, latest)

    # Then the stored 昨天 of the message sent on 2 March is read as 1 March, and that one is recalled
    assert [message.id for message in recalled] == [said[0].id]


def test_decoded_cache_keeps_the_most_recently_used_entries_within_its_size():
    # Given a cache of two entries holding two candidates' features, the first read again
    cache = _DecodedCache(2)
    first, second, third = (
        ("acme", pk, text, 3, f"fp{pk}", f"enc{pk}")
        for pk, text in enumerate(["预算八千左右", "不考虑顶楼", "想要朝南的两居室"], start=1)
    )
    cache.put_many([(first, (document(features(first[2])), False)), (second, (document(features(second[2])), False))])
    assert cache.get_many([first])[0] is not None

    # When a third candidate is added
    cache.put_many([(third, (document(features(third[2])), False))])

    # Then the least recently used one is gone, the newest two are kept
    assert len(cache) == 2
    assert cache.get_many([second])[0] is None
    assert cache.get_many([first])[0] == (document(features(first[2])), False)
    assert cache.get_many([third])[0] == (document(features(third[2])), False)


def test_recall_features_refresh_of_no_messages_writes_nothing(account):
    # Given no message to refresh
    # When their features are refreshed
    written = recall_features_refresh(message_ids=[])

    # Then nothing is written, and it says so
    assert written == 0
    assert not MessageRecallFeatures.objects.exists()


def test_recall_features_refresh_reads_the_messages_in_one_statement(customer, chat):
    # Given five messages whose text was scrubbed in place
    messages = chat(customer, [(IN, "我住在［已遗忘内容已移除］"), *filler(4)])
    connection = connections[current_alias()]

    # When the features of one, then of all five, are refreshed
    with CaptureQueriesContext(connection) as one:
        recall_features_refresh(message_ids=[messages[0].id])
    with CaptureQueriesContext(connection) as five:
        recall_features_refresh(message_ids=[message.id for message in messages])

    # Then five cost no more statements than one, and each has its features
    assert len(five) == len(one)
    assert MessageRecallFeatures.objects.filter(message__in=messages).count() == 5


def test_recall_features_store_refuses_features_that_do_not_line_up_with_the_messages(customer, chat):
    # Given two new messages and the features of only the first
    messages = chat(customer, [(IN, "想在浦东租个两居室"), (IN, "预算八千左右")])

    # When they are stored together
    with pytest.raises(ValueError):
        recall_features_store(messages=messages, computed=[features(messages[0].text)])

    # Then nothing is stored for either (no message gets another's features)
    assert not MessageRecallFeatures.objects.exists()


def test_recall_for_logs_how_many_messages_it_could_not_store_and_why(customer, chat, settings, monkeypatch, caplog):
    # Given five older messages without stored features, and a database that refuses the write
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 2
    old = chat(customer, [(IN, "不考虑顶楼，家里有老人"), *filler(5)])
    latest = chat(customer, [(IN, "顶楼的就别推荐了")], start=old[-1].sent_at + dt.timedelta(hours=1))[0]
    real_bulk_create = QuerySet.bulk_create

    def bulk_create(queryset, objs, *args, **kwargs):
        if queryset.model is MessageRecallFeatures:
            raise OperationalError("database is locked")
        return real_bulk_create(queryset, objs, *args, **kwargs)

    monkeypatch.setattr(QuerySet, "bulk_create", bulk_create)

    # When recalling
    with caplog.at_level(logging.WARNING, logger="memory.context.recall"):
        recalled = recall_for(customer, latest)

    # Then recall still answers, and the warning says how many messages were left unstored, and why
    assert [message.id for message in recalled] == [old[0].id]
    warnings = [record for record in caplog.records if record.name == "memory.context.recall"]
    assert len(warnings) == 1
    assert "5" in warnings[0].getMessage()
    assert warnings[0].exc_info is not None and warnings[0].exc_info[0] is OperationalError


@pytest.mark.parametrize(("query", "limit"), [("顶楼的就别推荐了", 0), ("  ", 3)])
def test_recall_from_rows_with_no_room_or_no_words_ranks_and_stores_nothing(customer, chat, query, limit):
    # Given older messages read with the recent window, none with stored features yet
    chat(customer, [(IN, "不考虑顶楼，家里有老人"), *filler(5)])
    rows = list(Message.objects.filter(customer=customer).order_by("sent_at", "id").values_list(*RECALL_COLUMNS))

    # When they are recalled with no room for a message, or for a message with no words
    recalled = recall_from_rows(query, rows, limit)

    # Then nothing is recalled, and no features are tokenised and written for it
    assert recalled == []
    assert not MessageRecallFeatures.objects.exists()


def test_recall_for_lists_what_it_recalls_in_the_order_it_was_said_with_who_said_it(customer, settings):
    # Given three old messages about the same flat, stored out of order (a late sync): the earliest
    # stored last, and two sent in the same second, our answer stored before the customer's words
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 2
    settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT = 4
    at = dt.datetime(2026, 11, 1, 2, 0, tzinfo=UTC)
    answer = MessageFactory(
        customer=customer,
        direction=OUT,
        sender="客服小安",
        text="栖霞路那套两居室押一付三",
        sent_at=at + dt.timedelta(minutes=5),
    )
    asked = MessageFactory(customer=customer, text="栖霞路那套两居室我想周六去看", sent_at=at + dt.timedelta(minutes=5))
    first = MessageFactory(customer=customer, text="栖霞路那套两居室朝南吗", sent_at=at)
    MessageFactory(customer=customer, text="好的，我看一下", sent_at=at + dt.timedelta(hours=1))
    MessageFactory(customer=customer, direction=OUT, sender="客服小安", text="嗯嗯", sent_at=at + dt.timedelta(hours=2))
    latest = MessageFactory(customer=customer, text="栖霞路那套两居室押金多少", sent_at=at + dt.timedelta(hours=3))

    # When recalling for the latest message
    recalled = recall_for(customer, latest)

    # Then they come in the order they were said (the same second: in the order stored), each with
    # its speaker and words, as the prompt quotes them
    assert [message.id for message in recalled] == [first.id, answer.id, asked.id]
    assert [(message.direction, message.sender, message.text) for message in recalled] == [
        (IN, "客户", "栖霞路那套两居室朝南吗"),
        (OUT, "客服小安", "栖霞路那套两居室押一付三"),
        (IN, "客户", "栖霞路那套两居室我想周六去看"),
    ]


def test_recall_for_over_the_window_the_builder_read_recalls_the_same_without_reading(customer, chat, settings):
    # Given an old statement beyond the scan window, a later one inside it, and the rows the builder
    # read with the recent window (newest first, the recent ones already left out)
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 2
    settings.QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT = 6
    old = chat(customer, [(IN, "家里有老人，不考虑顶楼"), *filler(8), (IN, "顶楼夏天太热了"), *filler(3)])
    latest = chat(customer, [(IN, "这套是顶楼吗？")], start=old[-1].sent_at + dt.timedelta(hours=1))[0]
    newest_first = list(
        Message.objects.filter(customer=customer).order_by("-sent_at", "-id").values_list(*RECALL_COLUMNS)
    )
    window = newest_first[2:]
    read_itself = recall_for(customer, latest)

    # When recalling over that window
    with account_statements() as statements:
        recalled = recall_for(customer, latest, window=window)

    # Then it recalls what it would have read itself, from the scan window only (the first
    # statement lies beyond it), reading no message (it only stores the features the rows lacked)
    assert recalled == read_itself
    assert [message.id for message in recalled] == [old[9].id]
    assert not [query for query in statements.captured_queries if query["sql"].lstrip().upper().startswith("SELECT")]


def test_recall_features_backfill_rewrites_features_of_another_version_and_counts_every_batch(account):
    # Given five messages: three without features, two with features of the previous version
    # (their text unchanged since)
    customer = CustomerFactory(conversation_id="wm_zhou")
    messages = [
        MessageFactory(customer=customer, text=text)
        for text in ["想在浦东租个两居室", "预算八千左右", "不考虑顶楼", "家里有老人", "周六上午能看房吗"]
    ]
    for message in messages[3:]:
        MessageRecallFeatures.objects.create(
            message=message,
            version=FEATURE_VERSION - 1,
            text_fingerprint=text_fingerprint(message.text),
            features=features_encode(features(message.text)),
        )

    # When the backfill runs in batches of two
    written = recall_features_backfill(batch_size=2)

    # Then all five are written at this version, and the count says five
    assert written == 5
    assert set(MessageRecallFeatures.objects.values_list("version", flat=True)) == {FEATURE_VERSION}
