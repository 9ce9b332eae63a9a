"""The §8 promises checked by their property (issue 40 item 3), not by a named case: each check runs
over a handful of cases drawn from a seeded `random.Random`, so the same run every time, and a
regression nobody wrote a step for still trips it. The same properties as the property tests
(tests/memory/context/test_builder_property.py, tests/memory/governance/test_forget_property.py,
tests/memory/test_decisions_paths_property.py), small enough to keep the smoke within seconds.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import random
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from django.db import connections
from django.test.utils import override_settings
from django.utils import timezone

from conversations.models import Customer, CustomerProfile, Message, MessageDirection, Task
from conversations.services import customer_get_or_create
from memory.capture.backfill import Totals, customer_backfill
from memory.capture.services import capture_message
from memory.context.builder import (
    BUSINESS_STATE,
    CORE_MEMORY,
    INSTRUCTIONS,
    LATEST_MESSAGE,
    OUTPUT_CONTRACT,
    RECALLED_HISTORY,
    RECENT_CONVERSATION,
    build_context,
)
from memory.context.search import search_messages
from memory.governance.messages import message_forget
from memory.governance.services import memory_item_add, memory_item_forget, memory_item_reject
from memory.models import MemoryItem, MemoryStatus, MessageRecallFeatures
from memory.snapshots import snapshot_current
from qiwei_site.operations.smoke_support import ACTOR, ScriptedClient, check, customer_of, ingest
from qiwei_site.platform.tenancy import current_alias
from qiwei_site.reading.fields import profile_item_value
from qiwei_site.reading.meaning import meaning
from sessions_epoch.clients import ModelClient, ModelResult, SessionRef
from sessions_epoch.pipeline import draft_generate

SEED = 4003  # issue 40, item 3: the same cases every run
CASES = 6

# --- context: budgets, the latest message, the order, recall's window (spec §4) -------------------

SPEC_ORDER = [
    INSTRUCTIONS,
    CORE_MEMORY,
    RECALLED_HISTORY,
    BUSINESS_STATE,
    RECENT_CONVERSATION,
    LATEST_MESSAGE,
    OUTPUT_CONTRACT,
]
CONVERSATION = (RECALLED_HISTORY, RECENT_CONVERSATION, LATEST_MESSAGE)
# The old message the latest one asks after; nothing else shares a character with the two.
NEEDLE = "栖霞路77弄那套朝南的我很喜欢"
QUERY = "栖霞路77弄那套还在吗"
PAD = "嗯"
WORDS = "的一是了我不人在他有这个上们来到时大地为子中你说生国年着就和要她出也得里后自以会家可下而过天去能对小多然于"


def _words(rng: random.Random, low: int, high: int) -> str:
    return "".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def _context_case(rng: random.Random, n: int) -> tuple[dict[str, int], Customer, Message, int | None]:
    """Settings in their allowed ranges and a history for them; every other case has a long latest
    message and a long business state, and the needle sits at an edge of the scan window or in it."""
    recent, scan = rng.randint(1, 8), rng.randint(1, 16)
    limits = {
        "QIWEI_AGENT_CONTEXT_CHAR_LIMIT": rng.randint(500, 20_000),
        "QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT": rng.randint(500, 8000),
        "QIWEI_AGENT_STATE_CHAR_LIMIT": rng.randint(200, 2000),
        "QIWEI_AGENT_CONVERSATION_CHAR_LIMIT": rng.randint(500, 8000),
        "QIWEI_AGENT_PROMPT_CHAR_LIMIT": rng.randint(2000, 30_000),
        "QIWEI_AGENT_MEMORY_RECALL_LIMIT": rng.randint(1, 6),
        "QIWEI_AGENT_MEMORY_RECENT_MESSAGES": recent,
        "QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT": scan,
    }
    long = n % 2 == 1
    needle_at = (recent + scan - 1, recent, rng.randint(recent, recent + scan - 1), None)[n % 4]
    size = max(recent + scan + 3, rng.randint(4, 30))
    turns = [
        (rng.choice([MessageDirection.INBOUND, MessageDirection.OUTBOUND]), _words(rng, 1, 40)) for _ in range(size)
    ]
    if rng.random() < 0.3:
        turns[rng.randrange(size)] = (MessageDirection.INBOUND, _words(rng, 500, 2000))
    if needle_at is not None:
        turns[size - needle_at] = (MessageDirection.INBOUND, NEEDLE)
    customer, _ = customer_get_or_create(conversation_id=f"smoke_ctx_{n}", actor=ACTOR)
    start = timezone.now() - dt.timedelta(days=2)
    padding = rng.randint(1200, 5000) if long else rng.randint(0, 60)
    made = Message.objects.bulk_create(
        Message(
            customer=customer,
            external_id=f"smoke_ctx_{n}_{i}",
            direction=direction,
            sender="客户" if direction == MessageDirection.INBOUND else "顾问",
            text=text,
            sent_at=start + dt.timedelta(minutes=i),
        )
        for i, (direction, text) in enumerate([*turns, (MessageDirection.INBOUND, QUERY + PAD * padding)])
    )
    for _ in range(rng.randint(2, 5) if long else rng.randint(0, 2)):
        Task.objects.create(customer=customer, title=_words(rng, 100, 190) if long else _words(rng, 2, 20))
    for i in range(rng.randint(0, 3)):
        memory_item_add(customer=customer, content=f"第{i}条备注：{_words(rng, 5, 300)}", actor=ACTOR, reason="检查")
    return limits, customer, made[-1], needle_at


def context_promises_hold(cases: int = CASES) -> str:
    """For random histories and budgets: every section within its budget, the whole within the
    prompt limit, the sections in the spec's order, the latest customer message present (whole,
    or cut no shorter than the room kept for it)."""
    rng = random.Random(SEED)
    truncated = 0
    for n in range(cases):
        limits, customer, latest, _needle_at = _context_case(rng, n)
        with override_settings(**limits):
            built = build_context(customer=customer)
        chars = {section.name: section.chars for section in built.sections}
        names = [section.name for section in built.sections]
        texts = {section.name: section.text for section in built.sections}
        where = f"（第 {n} 例，设置 {limits}）"
        check(built.trace.get("failures") == [], f"上下文构建失败 {built.trace.get('failures')}{where}")
        check(names == [name for name in SPEC_ORDER if name in names], f"章节顺序不符合规格: {names}{where}")
        check(INSTRUCTIONS in names and OUTPUT_CONTRACT in names, f"指令或输出约束缺失: {names}{where}")
        over = {
            name: (chars.get(name, 0), limits[setting])
            for name, setting in (
                (INSTRUCTIONS, "QIWEI_AGENT_CONTEXT_CHAR_LIMIT"),
                (CORE_MEMORY, "QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT"),
                (BUSINESS_STATE, "QIWEI_AGENT_STATE_CHAR_LIMIT"),
            )
            if chars.get(name, 0) > limits[setting]
        }
        conversation = sum(chars.get(name, 0) for name in CONVERSATION)
        if conversation > limits["QIWEI_AGENT_CONVERSATION_CHAR_LIMIT"]:
            over["conversation"] = (conversation, limits["QIWEI_AGENT_CONVERSATION_CHAR_LIMIT"])
        if len(built.prompt) > limits["QIWEI_AGENT_PROMPT_CHAR_LIMIT"]:
            over["prompt"] = (len(built.prompt), limits["QIWEI_AGENT_PROMPT_CHAR_LIMIT"])
        check(not over, f"章节超过预算 {over}{where}")
        check(
            built.trace.get("latest_message_id") == latest.pk and LATEST_MESSAGE in names,
            f"最新客户消息 {latest.pk} 不在上下文中{where}",
        )
        shown = texts[LATEST_MESSAGE]
        if built.trace.get("latest_message_truncated"):
            truncated += 1
            check(QUERY in shown and len(shown) >= 300, f"最新客户消息被截得过短（{len(shown)} 字）{where}")
        else:
            check(latest.text in shown, f"最新客户消息未完整保留{where}")
    return f"{cases} random contexts: sections within budgets, spec order, latest kept ({truncated} cut)"


def recall_window_holds(cases: int = CASES) -> str:
    """For random histories and windows: recall at most its limit, only from the scan window beyond
    the recent one, and the one relevant old message recalled wherever it sits in that window."""
    rng = random.Random(SEED + 1)
    for n in range(cases):
        limits, customer, _latest, needle_at = _context_case(rng, n + 100)
        with override_settings(**limits):
            built = build_context(customer=customer)
        recent, scan = limits["QIWEI_AGENT_MEMORY_RECENT_MESSAGES"], limits["QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT"]
        newest_first = list(
            Message.objects.filter(customer=customer).order_by("-sent_at", "-pk").values_list("pk", flat=True)
        )
        trace = built.trace
        chosen = set(trace["recalled_message_ids"]) | set(trace["trimmed"][RECALLED_HISTORY])
        where = f"（第 {n} 例，近期 {recent}、扫描 {scan}、相关消息位于倒数第 {needle_at} 条之前）"
        check(len(chosen) <= limits["QIWEI_AGENT_MEMORY_RECALL_LIMIT"], f"召回 {len(chosen)} 条超过上限{where}")
        check(chosen <= set(newest_first[recent : recent + scan]), f"召回了扫描窗口内之外的消息 {chosen}{where}")
        if needle_at is not None:
            needle = newest_first[needle_at]
            check(needle in chosen, f"扫描窗口内的相关消息 {needle} 未被召回（召回 {sorted(chosen)}）{where}")
    return f"{cases} random windows: recall within its limit and window, the relevant message found at any place"


# --- forgetting: no forgotten word anywhere (spec §8, 人工遗忘) ------------------------------------

STREET_RE = re.compile(r"[\u3400-\u4dbf]{2}路\d+弄")
SAYINGS = ("想在{}附近找房，最好两居室", "我喜欢{}那一带的老小区", "最好离{}近一点，上班方便")


class QuotingClient(ModelClient):
    """A model quoting, in its reasons and reply, every street its prompt shows."""

    name = "quoting"

    def generate(self, *, prompt: str, session: SessionRef, hints: Mapping[str, str] | None = None) -> ModelResult:
        streets = sorted(set(STREET_RE.findall(prompt)))
        output = {
            "reply": "您好，" + ("、".join(streets) + "附近的房源我整理一下" if streets else "我整理一下房源"),
            "confidence": 0.3,
            "requiresHuman": True,
            "profileUpdates": {},
            "reasons": [f"客户提到{street}" for street in streets] or ["客户在问房源"],
        }
        return ModelResult(client=self.name, raw_text=str(output), output=output, session_id=session.session_id)


def _dump_tables() -> str:
    """Every value of every table of the account database, JSON read as text too."""
    connection = connections[current_alias()]
    parts: list[str] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f'SELECT * FROM "{table}"')
            for row in cursor.fetchall():
                for value in row:
                    parts.append(str(value))
                    if isinstance(value, str) and value[:1] in '[{"':
                        with contextlib.suppress(ValueError):
                            parts.append(json.dumps(json.loads(value), ensure_ascii=False))
    return "\n".join(parts)


def _database_bytes() -> Iterator[bytes]:
    """The account database's files (SQLite: the file, its WAL and shared memory)."""
    connection = connections[current_alias()]
    if connection.vendor != "sqlite":
        return
    name = Path(str(connection.settings_dict["NAME"]))
    for path in (name, name.with_name(name.name + "-wal"), name.with_name(name.name + "-shm")):
        if path.is_file():
            yield path.read_bytes()


def forgotten_words_nowhere(cases: int = 3) -> str:
    """Customers name made-up streets, supervisors note others, the model quotes them; then some
    notes, automatic items and messages are forgotten at random. No forgotten street is left in any
    table, the search, the recall features or the database's bytes; the streets still carried are."""
    rng = random.Random(SEED + 2)
    gone: set[str] = set()
    live: set[str] = set()
    contents: set[str] = set()
    for n in range(cases):
        cid = f"smoke_forget_{n}"
        base = 0x3400 + 40 * n
        streets = [f"{chr(base + 2 * i)}{chr(base + 2 * i + 1)}路{10 + i}弄" for i in range(4)]
        said = ingest(cid, [("inbound", rng.choice(SAYINGS).format(street)) for street in streets[:2]])
        customer = customer_of(cid)
        notes = [
            memory_item_add(
                customer=customer, content=f"客户的亲戚住在{street}", actor=ACTOR, reason=f"电话得知{street}"
            )
            for street in streets[2:]
        ]
        draft_generate(customer=customer, actor=ACTOR, client=QuotingClient(), regenerate=True)
        note = rng.choice(notes)
        memory_item_forget(item=note, actor=ACTOR, reason=f"客户要求删除「{note.content}」")
        gone.add(streets[2 + notes.index(note)])
        automatic = [i for i in MemoryItem.objects.filter(customer=customer) if STREET_RE.search(i.content)]
        automatic = [i for i in automatic if i.pk not in {x.pk for x in notes}]
        if automatic:
            item = rng.choice(automatic)
            memory_item_forget(item=item, actor=ACTOR, reason=f"删除「{item.content}」")
            contents.add(item.content)
        message = rng.choice(said)
        message_forget(message=message, actor=ACTOR, reason=f"客户要求删除：{message.text}")
        forgotten_street = next(s for s in streets[:2] if s in message.text)
        gone.add(forgotten_street)
        live |= {s for s in streets if s not in gone}
    dump = _dump_tables()
    blobs = list(_database_bytes())
    features = "\n".join(MessageRecallFeatures.objects.values_list("features", flat=True))
    for street in sorted(gone):
        check(street not in dump and street[:3] not in dump, f"遗忘的内容仍在数据库表中: {street}")
        check(not search_messages(query=street, conversation_id=None), f"遗忘的内容仍在全文检索中: {street}")
        check(f"b:{street[:2]}" not in features, f"遗忘的内容仍在召回特征中: {street}")
        for needle in (street.encode(), json.dumps(street)[1:-1].encode("ascii")):
            check(not any(needle in blob for blob in blobs), f"遗忘的内容仍在数据库文件字节中: {street}")
    for content in sorted(contents):
        items = " ".join(MemoryItem.objects.values_list("content", flat=True))
        check(content not in items, f"遗忘的内容仍在记忆条目中: {content}")
    # the control: the same scans find what is still carried
    for street in sorted(live):
        check(street in dump, f"检查失灵：仍保留的 {street} 在表中找不到")
    return f"{len(gone)} forgotten streets in no table, search, feature or byte; {len(live)} kept ones found"


# --- decisions: a rejected or forgotten value never comes back on any automatic path -------------

BUDGETS = (("7500", "七千五"), ("8000", "八千", "8k"), ("6000元", "六千元"))
HUNCH = ("家里有只猫，房东让养吗", "pet", "可能养猫，需要确认房东是否允许")


def _turn(updates: dict[str, str], hypotheses: list[dict[str, Any]]) -> ScriptedClient:
    return ScriptedClient(
        {
            "reply": "好的，已记下",
            "confidence": 0.5,
            "requiresHuman": True,
            "profileUpdates": updates,
            "reasons": ["客户原话"],
            "hypotheses": hypotheses,
        }
    )


def _decided_values_stay_out(customer: Customer, banned: set[str], hunches: set[str], path: str) -> None:
    standing = MemoryItem.objects.filter(customer=customer, status__in=[MemoryStatus.ACTIVE, MemoryStatus.PROPOSED])
    for item in standing:
        if item.key == "profile:budget":
            value = meaning(profile_item_value("budget", item.content), today=None)
            check(value not in banned, f"自动路径「{path}」写回了被拒绝或遗忘的值: {item.content}")
        check(item.content not in hunches, f"自动路径「{path}」写回了被拒绝或遗忘的推断: {item.content}")
    budget = CustomerProfile.objects.get(customer=customer).budget
    check(
        not budget or meaning(budget, today=None) not in banned,
        f"自动路径「{path}」把被拒绝或遗忘的值写回画像: {budget}",
    )
    snapshot = snapshot_current(customer)
    check(
        snapshot is None or not any(h in snapshot.content for h in hunches),
        f"自动路径「{path}」把被拒绝或遗忘的推断写回快照",
    )


def decisions_hold_on_every_path(cases: int = 2) -> str:
    """A supervisor rejects or forgets a value the customer said and a hypothesis the model read;
    then every automatic path runs (capture of new words in another spelling, re-capture, backfill,
    the model's profile update and its hypothesis): neither comes back, in memory, profile or snapshot."""
    rng = random.Random(SEED + 3)
    paths = 0
    for n in range(cases):
        cid = f"smoke_decisions_{n}"
        spellings = rng.choice(BUDGETS)
        first = ingest(cid, [("inbound", f"预算{spellings[0]}以内")])[0]
        cat = ingest(cid, [("inbound", HUNCH[0])], start=timezone.now() - dt.timedelta(minutes=50))[0]
        customer = customer_of(cid)
        item = MemoryItem.objects.get(customer=customer, key="profile:budget", status=MemoryStatus.ACTIVE)
        hypothesis = [{"text": HUNCH[2], "key": HUNCH[1], "confidence": 0.6, "messageIds": [cat.pk]}]
        draft_generate(customer=customer, actor=ACTOR, client=_turn({}, hypothesis), regenerate=True)
        hunch = MemoryItem.objects.get(customer=customer, key=f"hypothesis:{HUNCH[1]}", status=MemoryStatus.ACTIVE)
        banned = {meaning(profile_item_value("budget", item.content), today=None)}
        hunches = {hunch.content}
        for decided in (item, hunch):
            if rng.random() < 0.5:
                memory_item_reject(item=decided, actor=ACTOR, reason="不对")
            else:
                memory_item_forget(item=decided, actor=ACTOR, reason="客户要求删除")
        spelling = rng.choice(spellings)
        again = ingest(cid, [("inbound", f"预算{spelling}以内")], start=timezone.now() - dt.timedelta(minutes=40))[0]
        _decided_values_stay_out(customer, banned, hunches, "捕获")
        capture_message(message=Message.objects.get(pk=first.pk))
        _decided_values_stay_out(customer, banned, hunches, "重新捕获")
        customer_backfill(customer=customer, totals=Totals())
        _decided_values_stay_out(customer, banned, hunches, "回填")
        stated = f"{spelling}以内"
        draft_generate(customer=customer, actor=ACTOR, client=_turn({"budget": stated}, []), regenerate=True)
        _decided_values_stay_out(customer, banned, hunches, "模型画像更新")
        hypothesis[0]["messageIds"] = [cat.pk]
        draft_generate(customer=customer, actor=ACTOR, client=_turn({}, hypothesis), regenerate=True)
        _decided_values_stay_out(customer, banned, hunches, "模型推断")
        check(Message.objects.filter(pk=again.pk).exists(), "检查失灵：客户的新消息不见了")
        paths += 5
    return f"{paths} automatic-path runs after a rejection or forget: no decided value came back"
