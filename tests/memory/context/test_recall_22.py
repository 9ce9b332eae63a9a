"""Recall over a customer's history (issue 22 item 6): relative dates read against the local day
each message was sent, the answer before a repeated question, and features stored by an older
version still ranking (recomputed when read)."""

from __future__ import annotations

import datetime as dt

from conversations.models import MessageDirection
from memory.context.recall import recall_features_store, recall_for
from memory.models import MessageRecallFeatures
from qiwei_site.reading.recall import FEATURE_VERSION, features, features_encode
from tests.memory.context.conftest import filler

IN, OUT = MessageDirection.INBOUND, MessageDirection.OUTBOUND
UTC = dt.UTC


def test_recall_for_reads_yesterday_against_the_local_day_it_was_sent(customer, chat, settings):
    # given the same words said twice: at 01:30 on 3 March in Shanghai (17:30 UTC on 2 March), so of
    # 2 March there; and at 02:00 on 4 March in Shanghai (18:00 UTC on 3 March), so of 3 March there
    # (of 2 March in UTC, and newer: it would win were days read in UTC)
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 4
    settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT = 1
    said = chat(customer, [(IN, "昨天去看了那套一居，采光不错")], start=dt.datetime(2026, 3, 2, 17, 30, tzinfo=UTC))
    chat(customer, [(IN, "昨天去看了那套一居，采光不错")], start=dt.datetime(2026, 3, 3, 18, 0, tzinfo=UTC))
    chat(customer, filler(6), start=dt.datetime(2026, 3, 5, 2, 0, tzinfo=UTC))
    # when the customer asks about 3月2号 a week later
    latest = chat(customer, [(IN, "我3月2号看的那套怎么样来着")], start=dt.datetime(2026, 3, 10, 2, 0, tzinfo=UTC))[0]
    # then the message of 2 March, local time, is recalled
    assert [message.id for message in recall_for(customer, latest)] == [said[0].id]


def test_recall_for_reads_yesterday_in_the_query_against_the_day_it_is_asked(customer, chat, settings):
    # given a date named ahead of time, among other plans
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 4
    settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT = 1
    named = chat(
        customer,
        [(IN, "我3月2号下午有空"), (OUT, "好的，那就约那天下午两点")],
        start=dt.datetime(2026, 2, 26, 2, tzinfo=UTC),
    )
    chat(customer, [(IN, "周末我要加班"), *filler(6)], start=dt.datetime(2026, 2, 27, 2, tzinfo=UTC))
    # when the customer asks about "yesterday" on 3 March
    latest = chat(customer, [(IN, "昨天是约的几点")], start=dt.datetime(2026, 3, 3, 2, tzinfo=UTC))[0]
    # then the turn naming 2 March is recalled
    assert [message.id for message in recall_for(customer, latest)] == [named[0].id]


def test_recall_for_prefers_the_answer_to_a_repeated_question(customer, chat, settings):
    # given the customer asked about the deposit long ago and was answered
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 6
    settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT = 1
    old = chat(customer, [(IN, "押金是多少？"), (OUT, "押一付三，押金一个月房租"), *filler(10)])
    # when the customer asks the same again
    latest = chat(customer, [(IN, "押金是多少啊？")], start=old[-1].sent_at + dt.timedelta(hours=1))[0]
    # then the answer is recalled, not the earlier question
    assert [message.id for message in recall_for(customer, latest)] == [old[1].id]


def test_recall_for_ranks_features_stored_by_an_older_version(customer, chat, settings):
    # given features stored by the previous version (no dates, no question marker)
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 4
    settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT = 1
    said = chat(customer, [(IN, "昨天去看了那套一居，采光不错")], start=dt.datetime(2026, 3, 3, 2, tzinfo=UTC))
    rest = chat(customer, [(IN, "周末想去看那套房"), *filler(6)], start=dt.datetime(2026, 3, 4, 2, tzinfo=UTC))
    recall_features_store(messages=[*said, *rest])
    for row in MessageRecallFeatures.objects.all():
        text = row.message.text
        older = [feature for feature in features(text) if feature[0][0] not in "tq"]
        row.version, row.features = FEATURE_VERSION - 1, features_encode(older)
        row.save(update_fields=["version", "features"])
    # when recalling for a question about 3月2号
    latest = chat(customer, [(IN, "我3月2号看的那套房怎么样")], start=dt.datetime(2026, 3, 10, 2, tzinfo=UTC))[0]
    recalled = recall_for(customer, latest)
    # then the older rows are read again, the date matched, and stored at this version
    assert [message.id for message in recalled] == [said[0].id]
    stored = MessageRecallFeatures.objects.get(message=said[0])
    assert stored.version == FEATURE_VERSION
    assert "t:d-1" in stored.features
