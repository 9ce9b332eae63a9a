"""What a context build reads (issue 13, item 4): a bounded number of queries, one for the recent
window and the recall candidates, and an answer cache that serves a context again only while
nothing it was built from has changed."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connections, transaction
from django.utils import timezone

from conversations.business import (
    alert_create,
    recommendation_create,
    recommendation_feedback_record,
    task_create,
    task_resolve,
)
from conversations.models import CustomerProfile, Message, MessageDirection, Task
from conversations.services import alert_resolve
from knowledge.services import knowledge_index
from memory.context import builder as builder_module
from memory.context import recall
from memory.context.builder import (
    BUSINESS_STATE,
    CORE_MEMORY,
    RECALLED_HISTORY,
    AgentContextBuilder,
    BuiltContext,
    context_cache_clear,
)
from memory.context.builder import build as build_module
from memory.governance.services import memory_item_add, memory_item_forget
from memory.models import MemoryCreatedBy, MemoryItem, MemorySnapshot, MemoryType
from memory.snapshots import snapshot_refresh
from qiwei_site.platform.tenancy import current_alias
from tests.factories import MemoryItemFactory, MessageFactory
from tests.memory.context.conftest import filler

IN, OUT = MessageDirection.INBOUND, MessageDirection.OUTBOUND

# Account database: the window (recent + recall candidates), the snapshot, its human-written
# items, the profile, open tasks, open alerts, open recommendations with their latest feedback.
ACCOUNT_QUERIES = 7
# Default database: none (the knowledge-index version's token is in Django's cache; it was one query,
# the version itself, before the fixed instructions were keyed on the token).
DEFAULT_QUERIES = 0
# A warm build: the context version (with the profile row) only.
WARM_ACCOUNT_QUERIES = 1
WARM_DEFAULT_QUERIES = 0


@pytest.fixture
def knowledge_copy(tmp_path, settings) -> Path:
    """The shipped knowledge base, copied so a test may edit it."""
    root = tmp_path / "kb"
    shutil.copytree(django_settings.QIWEI_KNOWLEDGE_DIR, root)
    settings.QIWEI_KNOWLEDGE_DIR = root
    knowledge_index()
    return root


@pytest.fixture
def sun(customer, chat, staff_user, knowledge_copy):
    """孙女士: a budget said long ago, small talk, a question; memory (one supervisor note), a
    profile, an open task, an open alert and a recommendation she declined."""
    old = chat(customer, [(IN, "我预算每月六千以内，想住望京附近"), (OUT, "好的孙女士，记下了"), *filler(30)])
    latest = chat(
        customer,
        [(OUT, "孙女士，望京有套两居室刚空出来"), (IN, "那套月租多少？还在六千以内吗？")],
        start=old[-1].sent_at + dt.timedelta(hours=2),
    )
    MemoryItemFactory(customer=customer, type=MemoryType.FACT, key="profile:budget", content="预算每月六千以内")
    MemoryItemFactory(
        customer=customer,
        type=MemoryType.PREFERENCE,
        key="preference:quiet",
        content="喜欢安静的小区",
        created_by=MemoryCreatedBy.HUMAN,
    )
    snapshot_refresh(customer=customer, reason="测试")
    CustomerProfile.objects.filter(customer=customer).update(district="望京", budget="6000元/月")
    task = task_create(customer=customer, title="周日下午带看望京两居室", actor=staff_user)
    alert = alert_create(customer=customer, text="客户对中介费敏感", actor=staff_user)
    recommendation = recommendation_create(customer=customer, text="推荐望京南湖东园两居室", actor=staff_user)
    recommendation_feedback_record(
        recommendation=recommendation, source="customer", verdict="declined", comment="离地铁太远", actor=staff_user
    )
    return {
        "customer": customer,
        "old": old,
        "latest": latest,
        "task": task,
        "alert": alert,
        "recommendation": recommendation,
    }


def build(customer, **kwargs) -> BuiltContext:
    return AgentContextBuilder().build(customer=customer, **kwargs)


def fresh(customer, **kwargs) -> BuiltContext:
    """A build computed from scratch (no cached answer)."""
    context_cache_clear()
    return build(customer, **kwargs)


def same(first: BuiltContext, second: BuiltContext) -> bool:
    return (
        first.prompt == second.prompt
        and first.trace == second.trace
        and [(s.name, s.text, s.chars) for s in first.sections] == [(s.name, s.text, s.chars) for s in second.sections]
    )


@pytest.fixture
def recall_calls(monkeypatch) -> list[int]:
    """Count the builds that rank history (a cached answer does not)."""
    calls: list[int] = []
    original = recall.recall_for

    def counting(customer, latest, **kwargs):
        calls.append(1)
        return original(customer, latest, **kwargs)

    monkeypatch.setattr(recall, "recall_for", counting)
    return calls


# --- queries -----------------------------------------------------------------------------------


def test_build_reads_everything_in_a_bounded_number_of_queries(
    sun, django_assert_max_num_queries, django_assert_num_queries
):
    # Given a customer with history, memory and business state in every section
    customer = sun["customer"]
    build(customer)  # the first build stores the candidates' recall features
    account = connections[current_alias()]
    # When the context is built from scratch
    context_cache_clear()
    with (
        django_assert_max_num_queries(ACCOUNT_QUERIES, connection=account),
        django_assert_num_queries(DEFAULT_QUERIES),
    ):
        built = build(customer)
    # Then every section is there, read with that many queries
    names = [s.name for s in built.sections]
    assert {CORE_MEMORY, RECALLED_HISTORY, BUSINESS_STATE} <= set(names)
    # And an unchanged conversation reads its context version and no more (issue 20: the answer
    # cache is keyed on the version; it was 7 account and 1 default query before)
    with (
        django_assert_max_num_queries(WARM_ACCOUNT_QUERIES, connection=account),
        django_assert_num_queries(WARM_DEFAULT_QUERIES),
    ):
        again = build(customer)
    assert same(built, again)


def test_build_reads_the_recent_window_and_the_recall_candidates_in_one_query(sun, settings):
    # Given a conversation longer than the recent window plus the recall scan
    customer = sun["customer"]
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 6
    settings.QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT = 10
    build(customer)
    context_cache_clear()
    # When the context is built
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connections[current_alias()]) as queries:
        built = build(customer)
    # Then exactly one query read messages, and the window it quoted is the newest 6 (latest included)
    message_reads = [q["sql"] for q in queries if 'FROM "conversations_message"' in q["sql"]]
    assert len(message_reads) == 1
    newest = list(Message.objects.filter(customer=customer).order_by("-sent_at", "-id").values_list("id", flat=True))
    assert built.trace["recent_message_ids"] == list(reversed(newest[1:6]))
    # and recall only picked among the 10 after those
    assert set(built.trace["recalled_message_ids"]) <= set(newest[6:16])


def test_build_finds_the_latest_inbound_message_behind_many_staff_replies(sun):
    # Given the customer's last message is followed by more staff messages than the builder reads ahead
    customer, latest = sun["customer"], sun["latest"][-1]
    start = latest.sent_at + dt.timedelta(minutes=1)
    for offset in range(builder_module.LATEST_SLACK + 3):
        MessageFactory(
            customer=customer,
            direction=OUT,
            sender="客服小安",
            text=f"孙女士，补充第{offset + 1}张房源照片",
            sent_at=start + dt.timedelta(minutes=offset),
        )
    # When the context is built for "the latest customer message"
    built = fresh(customer)
    # Then it answers that message, exactly as when it is named
    assert built.trace["latest_message_id"] == latest.id
    assert same(built, fresh(customer, latest_message=Message.objects.get(pk=latest.pk)))
    assert "补充第1张房源照片" not in built.prompt


def test_build_for_a_customer_with_only_staff_messages(customer, chat):
    # Given a conversation in which the customer has not written yet
    chat(customer, [(OUT, "您好，我是安居客服小安"), (OUT, "有租房需求随时联系我")])
    # When the context is built
    built = fresh(customer)
    # Then there is no latest message, and the staff messages are the recent conversation
    assert built.trace["latest_message_id"] is None
    assert len(built.trace["recent_message_ids"]) == 2


# --- the answer cache --------------------------------------------------------------------------


def test_build_serves_an_unchanged_conversation_from_the_cache(sun, recall_calls):
    # Given a built context (after a first build stored the messages' recall features)
    customer = sun["customer"]
    build(customer)
    first = fresh(customer)
    ranked = len(recall_calls)
    # When it is built again with nothing changed
    second = build(customer)
    # Then history was not ranked again and the context is the same
    assert len(recall_calls) == ranked
    assert same(first, second)


def test_build_cached_answers_are_independent_copies(sun):
    # Given a built context whose trace the caller then changes
    customer = sun["customer"]
    first = fresh(customer)
    first.trace["model"] = {"client": "offline"}
    first.trace["recent_message_ids"].append(-1)
    first.sections.clear()
    # When it is built again
    second = build(customer)
    # Then the cached answer was not touched
    assert "model" not in second.trace and -1 not in second.trace["recent_message_ids"]
    assert same(second, fresh(customer))


def _new_message(sun, staff_user, settings):
    MessageFactory(
        customer=sun["customer"],
        direction=IN,
        sender="客户",
        text="对了，能不能养猫？",
        sent_at=sun["latest"][-1].sent_at + dt.timedelta(minutes=5),
    )


def _message_scrubbed_in_place(sun, staff_user, settings):
    # governance's scrub rewrites a message's text with an UPDATE (no timestamp changes)
    Message.objects.filter(pk=sun["latest"][0].pk).update(text="孙女士，望京有套房源刚空出来")


def _old_message_scrubbed_in_place(sun, staff_user, settings):
    Message.objects.filter(pk=sun["old"][0].pk).update(text="（内容已按客户要求删除）")


def _memory_added(sun, staff_user, settings):
    memory_item_add(
        customer=sun["customer"],
        content="家里有一只猫",
        type=MemoryType.FACT,
        key="fact:cat",
        actor=staff_user,
        reason="客户电话中说明",
    )


def _memory_forgotten(sun, staff_user, settings):
    item = MemoryItem.objects.get(customer=sun["customer"], key="profile:budget")
    memory_item_forget(item=item, actor=staff_user, reason="客户要求删除预算")


def _snapshot_edited_in_place(sun, staff_user, settings):
    snapshot = MemorySnapshot.objects.filter(customer=sun["customer"]).order_by("-version").first()
    MemorySnapshot.objects.filter(pk=snapshot.pk).update(content=snapshot.content.replace("六千", "七千"))


def _item_becomes_a_supervisor_note(sun, staff_user, settings):
    MemoryItem.objects.filter(customer=sun["customer"], key="profile:budget").update(created_by=MemoryCreatedBy.HUMAN)


def _profile_scrubbed_in_place(sun, staff_user, settings):
    CustomerProfile.objects.filter(customer=sun["customer"]).update(budget="")


def _task_done(sun, staff_user, settings):
    task_resolve(task=sun["task"], actor=staff_user, reason="已带看")


def _task_scrubbed_in_place(sun, staff_user, settings):
    Task.objects.filter(pk=sun["task"].pk).update(title="周日下午带看")


def _alert_resolved(sun, staff_user, settings):
    alert_resolve(alert=sun["alert"], actor=staff_user, reason="已说明收费标准")


def _feedback_recorded(sun, staff_user, settings):
    recommendation_feedback_record(
        recommendation=sun["recommendation"],
        source="customer",
        verdict="interested",
        comment="如果能便宜五百可以考虑",
        actor=staff_user,
    )


def _knowledge_reindexed(sun, staff_user, settings):
    rules = Path(django_settings.QIWEI_KNOWLEDGE_DIR) / "rules.md"
    rules.write_text(
        rules.read_text(encoding="utf-8") + "\n\n## 新增规则\n\n看房前一天再次确认时间。\n", encoding="utf-8"
    )
    knowledge_index()


def _budget_changed(sun, staff_user, settings):
    settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES = 4


CHANGES: list[tuple[str, Callable[..., None]]] = [
    ("a new message", _new_message),
    ("a recent message scrubbed in place", _message_scrubbed_in_place),
    ("a recalled message scrubbed in place", _old_message_scrubbed_in_place),
    ("a memory item added", _memory_added),
    ("a memory item forgotten", _memory_forgotten),
    ("the snapshot edited in place", _snapshot_edited_in_place),
    ("an item now written by a supervisor", _item_becomes_a_supervisor_note),
    ("the profile scrubbed in place", _profile_scrubbed_in_place),
    ("a task done", _task_done),
    ("a task title scrubbed in place", _task_scrubbed_in_place),
    ("an alert resolved", _alert_resolved),
    ("new recommendation feedback", _feedback_recorded),
    ("the knowledge base reindexed", _knowledge_reindexed),
    ("a context setting changed", _budget_changed),
]


@pytest.mark.parametrize(("change", "apply"), CHANGES, ids=[name for name, _ in CHANGES])
def test_build_after_any_change_it_depends_on_is_never_stale(sun, staff_user, settings, change, apply):
    # Given a context built and cached
    customer = sun["customer"]
    before = fresh(customer)
    assert same(before, build(customer))
    # When something it was built from changes
    apply(sun, staff_user, settings)
    # Then the next build is the one computed from scratch, not the cached one
    after = build(customer)
    assert not same(after, before), change
    assert same(after, fresh(customer)), change


def test_build_without_a_snapshot_drops_an_item_once_it_expires(customer, chat, monkeypatch):
    # Given a new customer with no snapshot yet and a temporary fact that expires in an hour
    chat(customer, [(IN, "我这周在北京出差，想短租一个月"), (OUT, "好的，短租也可以安排")])
    now = timezone.now()
    MemoryItemFactory(
        customer=customer,
        type=MemoryType.EVENT,
        key="event:trip",
        content="本周在北京出差",
        expires_at=now + dt.timedelta(hours=1),
    )
    before = fresh(customer)
    assert "本周在北京出差" in before.prompt
    # When two hours pass with nothing written
    monkeypatch.setattr(timezone, "now", lambda: now + dt.timedelta(hours=2))
    after = build(customer)
    # Then the expired fact is no longer in the context, cached or not
    assert "本周在北京出差" not in after.prompt
    assert same(after, fresh(customer))


def test_build_after_a_failed_stage_is_not_cached(sun, monkeypatch):
    # Given a build whose recall failed
    customer = sun["customer"]
    context_cache_clear()
    original = recall.recall_for

    def broken(customer, latest, **kwargs):
        raise RuntimeError("召回索引损坏")

    monkeypatch.setattr(recall, "recall_for", broken)
    failed = build(customer)
    assert failed.trace["failures"] == [{"stage": "recall", "error": "RuntimeError"}]
    # When recall works again
    monkeypatch.setattr(recall, "recall_for", original)
    recovered = build(customer)
    # Then the context has its recalled history back
    assert recovered.trace["failures"] == []
    assert sun["old"][0].id in recovered.trace["recalled_message_ids"]


class _RolledBack(Exception):
    pass


def test_build_inside_a_rolled_back_transaction_is_never_served_later(customer, chat):
    # Given a context built inside a transaction that wrote a fact and was then rolled back (found
    # by a read-only review: the rolled-back version number is handed out again by the next write)
    chat(customer, [(IN, "想租两居室")])
    context_cache_clear()
    assert "猫" not in build(customer).prompt
    with pytest.raises(_RolledBack), transaction.atomic(using=current_alias()):
        MemoryItemFactory(customer=customer, type=MemoryType.FACT, key="fact:pet", content="有一只猫")
        assert "猫" in build(customer).prompt
        raise _RolledBack
    # When another fact is committed
    MemoryItemFactory(customer=customer, type=MemoryType.FACT, key="fact:car", content="有一辆车")
    served = build(customer)
    # Then the context is the committed truth: the car, never the rolled-back cat
    assert "有一辆车" in served.prompt and "有一只猫" not in served.prompt
    assert same(served, fresh(customer))


def test_build_with_the_cache_turned_off_computes_every_time(sun, settings, recall_calls):
    # Given the answer cache has no room
    settings.QIWEI_AGENT_CONTEXT_CACHE_BYTES = 0
    customer = sun["customer"]
    context_cache_clear()
    # When the same context is built twice
    first, second = build(customer), build(customer)
    # Then both ranked history, and they agree
    assert len(recall_calls) == 2
    assert same(first, second)


def test_build_cache_stays_within_its_byte_budget(customer_factory_pair, settings):
    # Given a budget with room for one answer and a half
    first_customer, second_customer = customer_factory_pair
    context_cache_clear()
    build(first_customer)
    one_answer = build_module._ANSWERS._bytes
    settings.QIWEI_AGENT_CONTEXT_CACHE_BYTES = one_answer * 3 // 2
    context_cache_clear()
    # When two customers' contexts are built in turn
    build(first_customer)
    build(second_customer)
    # Then the older answer made room for the newer one
    cached_customers = [key[4] for key in build_module._ANSWERS._entries]
    assert cached_customers == [second_customer.pk]
    assert build_module._ANSWERS._bytes <= settings.QIWEI_AGENT_CONTEXT_CACHE_BYTES


@pytest.fixture
def customer_factory_pair(account, chat, knowledge_copy):
    from tests.factories import CustomerFactory

    pair = []
    for conversation_id, name, question in (
        ("wm_zhou", "周先生", "亦庄那边有一居室吗？"),
        ("wm_wu", "吴女士", "通州的三居室月租多少？"),
    ):
        customer = CustomerFactory(conversation_id=conversation_id, display_name=name)
        chat(customer, [*filler(40), (IN, question)])
        pair.append(customer)
    return pair


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_build_on_postgres_reads_the_same_as_the_orm(postgres_account_url, staff_user):
    # Given a PostgreSQL account database with a conversation and business state
    from qiwei_site.platform.services import account_create
    from qiwei_site.platform.tenancy import use_account
    from tests.factories import CustomerFactory

    account_create(account_id=postgres_account_url, name="浦东门店")
    with use_account(postgres_account_url) as alias:
        assert connections[alias].vendor == "postgresql"
        customer = CustomerFactory(conversation_id="wm_qian", display_name="钱先生")
        base = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)
        for offset, (direction, text) in enumerate(
            [(IN, "我想在张江租两居室，预算七千"), (OUT, "好的钱先生"), *filler(20), (IN, "张江那套还在七千以内吗？")]
        ):
            MessageFactory(
                customer=customer, direction=direction, text=text, sent_at=base + dt.timedelta(minutes=offset)
            )
        task_create(customer=customer, title="周六带看张江两居室", actor=staff_user)
        # When the context is built, from scratch and again
        first = fresh(customer)
        second = build(customer)
        # Then the cached build agrees with the fresh one there too
        assert same(first, second)
        assert "周六带看张江两居室" in first.prompt
