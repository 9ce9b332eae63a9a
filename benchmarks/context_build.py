"""Context build latency and prompt size against history size, in an account of 1M messages:
AgentContextBuilder.build for customers with 1k, 10k and 100k messages, beside the naive prompt
built from the customer's whole history (every message quoted), for the same customers.

    .venv/bin/python benchmarks/context_build.py [--backend sqlite|postgres] [--total 1000000]
        [--sizes 1000,10000,100000] [--runs 40] [--naive-runs 8] [--json out.json]

Other customers (1,000 messages each) fill the account up to --total; every customer's messages
are interleaved in time, as in a real account. The bulk load bypasses the ORM (`executemany` in
one transaction on SQLite, `COPY` on PostgreSQL). Runs in a throw-away data dir; PostgreSQL
databases are dropped afterwards.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    bench_environment,
    drop_pg_databases,
    machine_line,
    percentile,
    setup_django,
    write_json,
)

ACCOUNT = "bench"
FILLER_SIZE = 1000
BATCH = 50_000

DISTRICTS = ["朝阳区", "海淀区", "望京", "通州", "亦庄", "回龙观", "天通苑", "丰台", "西二旗", "双井"]
LINES = ["2号线", "4号线", "10号线", "13号线", "14号线", "6号线"]
LAYOUTS = ["一居室", "两居室", "三居室", "开间", "复式"]
CUSTOMER_TEMPLATES = [
    "我想在{district}租一套{layout}，预算{budget}元一个月",
    "最好离地铁{line}近一点，步行十分钟以内",
    "不考虑顶楼，家里有老人，最好有电梯",
    "周{day}下午方便看房吗？",
    "这套房子朝南吗？采光怎么样？",
    "押一付三可以吗？中介费怎么算？",
    "我更喜欢安静一点的小区，{district}那边有吗",
    "能养猫吗？房东同意吗？",
    "上次看的那套{layout}还在吗",
    "预算可以再加{extra}，但一定要近地铁",
]
STAFF_TEMPLATES = [
    "好的，{district}这边有两套{layout}，我发您看看",
    "这套在{line}附近，步行大概8分钟",
    "周{day}下午三点可以看房，我帮您预约",
    "这套是{floor}楼，有电梯，朝南",
    "中介费按合同约定，我先帮您确认一下",
    "收到，我跟房东确认后回复您",
]


def message_text(rng: random.Random, inbound: bool) -> str:
    template = rng.choice(CUSTOMER_TEMPLATES if inbound else STAFF_TEMPLATES)
    return template.format(
        district=rng.choice(DISTRICTS),
        layout=rng.choice(LAYOUTS),
        budget=rng.choice([3500, 4500, 5000, 6000, 7500, 8000]),
        line=rng.choice(LINES),
        day=rng.choice("一二三四五六日"),
        extra=rng.choice([500, 800, 1000]),
        floor=rng.randint(2, 28),
    )


def create_customers(sizes: list[int], total: int) -> tuple[dict[int, Any], list[tuple[int, int]]]:
    """The measured customers (through the service, with profiles) and the fillers (bulk).
    Returns the measured customers by size and (customer pk, message count) for everyone."""
    from conversations.models import Customer
    from conversations.services import customer_get_or_create

    targets = {}
    for size in sizes:
        targets[size], _ = customer_get_or_create(conversation_id=f"wm_target_{size}", display_name="王先生")
    rest = max(total - sum(sizes), 0)
    fillers = [FILLER_SIZE] * (rest // FILLER_SIZE) + ([rest % FILLER_SIZE] if rest % FILLER_SIZE else [])
    created = Customer.objects.bulk_create(
        [Customer(conversation_id=f"wm_fill_{n:05d}", display_name=f"客户{n}") for n in range(len(fillers))],
        batch_size=2000,
    )
    counts = [(targets[size].pk, size) for size in sizes] + [(c.pk, n) for c, n in zip(created, fillers, strict=True)]
    return targets, counts


def message_rows(counts: list[tuple[int, int]], rng: random.Random) -> Iterator[tuple[Any, ...]]:
    """Every customer's messages interleaved in time (20 s apart account-wide), in time order."""
    owners = [pk for pk, count in counts for _ in range(count)]
    rng.shuffle(owners)
    pool_in = [message_text(rng, True) for _ in range(4000)]
    pool_out = [message_text(rng, False) for _ in range(4000)]
    seen: dict[int, int] = {}
    start = dt.datetime(2024, 1, 1, 1, 0, tzinfo=dt.UTC)
    now = dt.datetime.now(dt.UTC)
    for i, pk in enumerate(owners):
        n = seen.get(pk, 0)
        seen[pk] = n + 1
        inbound = n % 2 == 0
        yield (
            pk,
            f"m{n:07d}",
            "inbound" if inbound else "outbound",
            "客户" if inbound else "客服小安",
            rng.choice(pool_in if inbound else pool_out),
            start + dt.timedelta(seconds=20 * i),
            True,
            now,
        )


COLUMNS = "customer_id, external_id, direction, sender, text, sent_at, is_effective, created_at"


def bulk_load(alias: str, rows: Iterator[tuple[Any, ...]]) -> int:
    from django.db import connections, transaction

    connection = connections[alias]
    loaded = 0
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY conversations_message ({COLUMNS}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
                    loaded += 1
        else:
            cursor.execute("PRAGMA cache_size = -262144")  # 256 MiB: the index inserts are random
            adapt = connection.ops.adapt_datetimefield_value
            sql = f"INSERT INTO conversations_message ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
            batch: list[tuple[Any, ...]] = []
            for row in rows:
                batch.append((*row[:5], adapt(row[5]), row[6], adapt(row[7])))
                if len(batch) == BATCH:
                    cursor.executemany(sql, batch)
                    loaded += len(batch)
                    batch = []
            if batch:
                cursor.executemany(sql, batch)
                loaded += len(batch)
    # Steady state for the planner and readers: statistics, and no large WAL left to consult.
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("VACUUM ANALYZE conversations_message")
        else:
            cursor.execute("ANALYZE")
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return loaded


def give_memory(customer: Any) -> None:
    """What a served customer has: memory items, a snapshot, a profile and an open task."""
    from conversations.models import Customer, Task
    from memory.items import memory_item_put
    from memory.models import MemoryType
    from memory.snapshots import snapshot_refresh

    items = [
        (MemoryType.CONSTRAINT, "constraint:顶楼", "不考虑顶楼，家里有老人"),
        (MemoryType.PREFERENCE, "preference:地铁", "离地铁近，步行十分钟以内"),
        (MemoryType.FACT, "profile:budget", "预算6000元/月"),
        (MemoryType.FACT, "profile:district", "望京"),
    ]
    for type_, key, content in items:
        memory_item_put(customer=customer, type=type_, key=key, content=content, actor="benchmark", reason="基准数据")
    snapshot_refresh(customer=customer, reason="基准数据")
    Task.objects.create(customer=customer, title="周六下午带王先生看望京两居室")
    last = customer.messages.order_by("-sent_at").values_list("sent_at", flat=True).first()
    Customer.objects.filter(pk=customer.pk).update(last_message_at=last)


def naive_prompt(customer: Any) -> str:
    """The baseline: instructions, then every effective message of the customer, then the contract."""
    from conversations.models import Message
    from knowledge.context import project_context
    from memory.context.builder import QUOTE_END, QUOTE_NOTICE, output_contract, quote_line

    lines = [
        quote_line(direction=m.direction, sender=m.sender, text=m.text, sent_at=m.sent_at)
        for m in Message.objects.filter(customer=customer, is_effective=True).order_by("sent_at", "id")
    ]
    return "\n\n".join([project_context().text, "\n".join([QUOTE_NOTICE, *lines, QUOTE_END]), output_contract()])


def time_runs(func: Any, runs: int) -> tuple[list[float], int]:
    func()  # warm-up: knowledge index, caches, the page cache
    timings, chars = [], 0
    for _ in range(runs):
        started = time.perf_counter()
        chars = func()
        timings.append(time.perf_counter() - started)
    return timings, chars


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--total", type=int, default=1_000_000, help="messages in the account")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--naive-runs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=20261101)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(",") if size.strip())
    if sum(sizes) > args.total:
        print(f"--total ({args.total}) 必须不小于各客户消息数之和 ({sum(sizes)}).", file=sys.stderr)
        return 2

    env = bench_environment(postgres=args.backend == "postgres", tag="context")
    setup_django(env)
    from django.db import connections

    from conversations.services import account_create
    from memory.context.builder import AgentContextBuilder
    from qiwei_site.platform.tenancy import use_account

    rng = random.Random(args.seed)
    rows: list[dict[str, Any]] = []
    try:
        account_create(account_id=ACCOUNT, name="基准测试门店")
        with use_account(ACCOUNT) as alias:
            targets, counts = create_customers(sizes, args.total)
            started = time.perf_counter()
            loaded = bulk_load(alias, message_rows(counts, rng))
            load_seconds = time.perf_counter() - started
            print(f"{args.backend}: loaded {loaded:,} messages for {len(counts):,} customers in {load_seconds:.0f} s")
            builder = AgentContextBuilder()
            for size in sizes:
                customer = targets[size]
                give_memory(customer)
                ours, ours_chars = time_runs(lambda c=customer: len(builder.build(customer=c).prompt), args.runs)
                naive, naive_chars = time_runs(lambda c=customer: len(naive_prompt(c)), args.naive_runs)
                row = {
                    "messages": size,
                    "ours_p50_ms": percentile(ours, 50) * 1000,
                    "ours_p95_ms": percentile(ours, 95) * 1000,
                    "naive_p50_ms": percentile(naive, 50) * 1000,
                    "naive_p95_ms": percentile(naive, 95) * 1000,
                    "ours_chars": ours_chars,
                    "naive_chars": naive_chars,
                    "saved_share": 1 - ours_chars / naive_chars,
                }
                rows.append(row)
                print(
                    f"  {size:>7} messages: ours p50 {row['ours_p50_ms']:7.1f} ms p95 {row['ours_p95_ms']:7.1f} ms"
                    f" {ours_chars:>8,} chars | naive p50 {row['naive_p50_ms']:8.1f} ms"
                    f" p95 {row['naive_p95_ms']:8.1f} ms {naive_chars:>10,} chars",
                    flush=True,
                )
            vendor = connections[alias].vendor
    finally:
        drop_pg_databases(env)

    small, large = rows[0], rows[-1]
    result = {
        "backend": args.backend,
        "vendor": vendor,
        "total_messages": loaded,
        "customers": len(counts),
        "load_seconds": load_seconds,
        "runs": args.runs,
        "naive_runs": args.naive_runs,
        "rows": rows,
        "ratio_p50": large["ours_p50_ms"] / small["ours_p50_ms"],
        "ratio_p95": large["ours_p95_ms"] / small["ours_p95_ms"],
        "naive_ratio_p50": large["naive_p50_ms"] / small["naive_p50_ms"],
        "prompt_char_limit": _prompt_limit(),
        "machine": machine_line(),
    }
    print(
        f"  ratio {large['messages']}/{small['messages']}: ours p50 {result['ratio_p50']:.2f}×"
        f" p95 {result['ratio_p95']:.2f}× · naive p50 {result['naive_ratio_p50']:.1f}×"
    )
    write_json(args.json, result)
    return 0


def _prompt_limit() -> int:
    from django.conf import settings

    return int(settings.QIWEI_AGENT_PROMPT_CHAR_LIMIT)


if __name__ == "__main__":
    raise SystemExit(main())
