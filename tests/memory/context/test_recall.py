"""memory.context.recall: the ranking function and recall over a customer's older history."""

from __future__ import annotations

from conversations.models import MessageDirection
from conversations.selectors import message_latest_inbound
from memory.context.recall import recall_for
from memory.recall import rank
from tests.memory.context.conftest import filler

IN, OUT = MessageDirection.INBOUND, MessageDirection.OUTBOUND


def test_rank_prefers_documents_sharing_chinese_bigrams():
    # Given messages about different topics
    documents = ["我想看看朝阳区的两居室", "最好离地铁近一点，步行十分钟以内", "周末可以看房吗"]
    # When asking about the metro
    best = rank("地铁附近有房子吗", documents, 3)
    # Then the metro message comes first
    assert best[0] == 1


def test_rank_matches_english_words_across_plurals_and_tenses():
    documents = ["We visited two apartments yesterday", "My budget is flexible", "The kids loved the park"]
    assert rank("Which apartment did they visit?", documents, 1) == [0]
    assert rank("kid park", documents, 1) == [2]


def test_rank_matches_numbers_however_they_are_written():
    # Given a budget written in Chinese numerals, one in digits, and unrelated messages
    documents = [
        "预算大概三千左右",
        "月租3000以内可以接受",
        "想要朝南的房间",
        "周六上午可以看房",
        "不要一楼",
        "好的谢谢",
    ]
    # When asking with the number in digits
    best = rank("3000的还有吗", documents, 6)
    # Then both budget messages match, and nothing else
    assert sorted(best) == [0, 1]


def test_rank_floor_leaves_out_unrelated_documents():
    # Given documents that share nothing meaningful with the query
    documents = ["好的，谢谢", "嗯嗯", "The weather is nice"]
    # Then nothing is returned, rather than noise
    assert rank("不考虑顶楼", documents, 6) == []
    assert rank("", documents, 6) == []
    assert rank("顶楼", [], 6) == []
    assert rank("顶楼", ["顶楼"], 0) == []


def test_rank_long_message_does_not_win_by_size():
    # Given one short focused message and one long message that mentions the term once among much else
    long = "我们家三口人，" + "孩子在附近上学，平时周末会去公园，老人偶尔过来住几天，" * 8 + "最好有电梯"
    documents = [long, "一定要有电梯"]
    assert rank("有电梯吗", documents, 2)[0] == 1


def test_rank_equal_scores_favour_the_later_document():
    assert rank("看房时间", ["看房时间", "看房时间"], 2) == [1, 0]


def test_rank_is_deterministic():
    documents = ["两居室", "地铁两居室", "地铁附近", "预算5000"] * 3
    assert rank("地铁两居室 5000", documents, 6) == rank("地铁两居室 5000", documents, 6)


def test_recall_for_finds_an_old_chinese_message_beyond_the_recent_window(customer, chat, settings):
    # Given the customer ruled out top floors long ago, followed by a lot of small talk
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 12
    old = chat(customer, [(IN, "我家有老人，不考虑顶楼，也不要没有电梯的房子"), *filler(30)])
    latest = chat(customer, [(IN, "这套是顶楼吗？有没有电梯？")], start=old[-1].sent_at.replace(hour=23))[0]
    # When recalling for the latest message
    recalled = recall_for(customer, latest)
    # Then the old statement is recalled, quoted with its id and time
    assert [m.id for m in recalled] == [old[0].id]
    assert recalled[0].direction == IN
    assert message_latest_inbound(customer) == latest


def test_recall_for_finds_an_old_english_message(customer, chat):
    old = chat(customer, [(IN, "I can only do viewings on Saturday mornings"), *filler(20)])
    latest = chat(customer, [(IN, "Can we schedule a viewing this Saturday?")], start=old[-1].sent_at.replace(hour=23))[
        0
    ]
    assert [m.id for m in recall_for(customer, latest)] == [old[0].id]


def test_recall_for_never_returns_recent_window_messages(customer, chat, settings):
    # Given the relevant statement is among the recent messages
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 12
    messages = chat(customer, [*filler(20), (IN, "不考虑顶楼"), *filler(3), (IN, "顶楼的房子就别推荐了")])
    # Then it is not recalled (the recent window carries it already)
    assert recall_for(customer, messages[-1]) == []


def test_recall_for_respects_scan_and_recall_limits(customer, chat, settings):
    # Given many older relevant messages
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 2
    settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT = 3
    settings.QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT = 5
    messages = chat(customer, [(IN, f"地铁{i}号线附近的两居室") for i in range(10)] + [(IN, "地铁两居室")])
    # When recalling
    recalled = recall_for(customer, messages[-1])
    # Then at most 3, only from the 5 newest candidates outside the recent window, in time order
    scanned = {m.id for m in messages[-7:-2]}
    assert len(recalled) == 3
    assert {m.id for m in recalled} <= scanned
    assert [m.sent_at for m in recalled] == sorted(m.sent_at for m in recalled)


def test_recall_for_skips_ineffective_messages(customer, chat):
    old = chat(customer, [(IN, "不考虑顶楼"), *filler(20), (IN, "顶楼可以吗")])
    old[0].is_effective = False
    old[0].save()
    assert recall_for(customer, old[-1]) == []


def test_rank_is_importable_without_a_configured_django():
    # Given a fresh interpreter with no Django settings (how benchmarks and tools use it)
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    code = (
        "import sys; from memory.recall import rank; "
        "print(rank('地铁附近', ['朝阳区两居室', '离地铁近一点'], 2), 'django.db' in sys.modules)"
    )
    # When the public entry point is imported and called
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[3], env=env, capture_output=True, text=True
    )
    # Then it ranks, without touching the ORM
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[1] False"
