"""Migration 0009 keeps what was already written: a recommendation's old one-line 客户反馈 becomes
the first entry of its feedback history."""

from __future__ import annotations

import pytest
from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from conversations.models import RecommendationFeedback
from qiwei_site.platform.tenancy import current_alias

BEFORE = [("conversations", "0008_alert_kind_and_cause")]
AFTER = [("conversations", "0009_business_state_writes_and_draft_prompt")]


def _migrate(connection, targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.mark.long
def test_migration_turns_the_old_feedback_into_the_first_history_entry(account):
    connection = connections[current_alias()]
    leaf = MigrationExecutor(connection).loader.graph.leaf_nodes()
    # given an account database at 0008 with a recommendation and its old feedback
    _migrate(connection, BEFORE)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO conversations_customer (conversation_id, display_name, session_mode, auto_send_whitelisted, "
            "created_at, updated_at) VALUES ('wm_zheng_009', '郑女士', 'assisted', 0, '2026-11-01', '2026-11-01')"
        )
        customer_id = cursor.lastrowid
        cursor.execute(
            "INSERT INTO conversations_recommendation (customer_id, text, feedback, created_at, updated_at) "
            "VALUES (%s, '推荐天通苑三居室', '太远了，不考虑', '2026-11-01', '2026-11-01'), "
            "(%s, '推荐立水桥两居室', '', '2026-11-01', '2026-11-01')",
            [customer_id, customer_id],
        )
    # when the database is migrated forward again
    _migrate(connection, AFTER)
    _migrate(connection, list(leaf))
    # then the old feedback is one customer entry of the first recommendation's history
    feedback = list(RecommendationFeedback.objects.values_list("recommendation__text", "source", "verdict", "comment"))
    assert feedback == [("推荐天通苑三居室", "customer", "neutral", "太远了，不考虑")]
