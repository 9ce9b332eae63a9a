"""Context build time against history size: p50/p95 of AgentContextBuilder.build for customers
with 1k, 10k and 100k stored messages, and the 100k/1k ratio (it should stay near 1: recall
scans a bounded window through the (customer, sent_at, id) index, never the whole history).

    .venv/bin/python benchmarks/context_build.py [--runs 50] [--sizes 1000,10000,100000] [--postgres]

Runs in a throw-away data dir; with --postgres the account database goes to
QIWEI_ACCOUNT_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/qiwei_bench_{account})
and is dropped afterwards.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

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


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="AgentContextBuilder build time vs history size")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--postgres", action="store_true", help="put the account database on PostgreSQL")
    parser.add_argument("--seed", type=int, default=20261101)
    return parser.parse_args()


def configure(postgres: bool) -> str:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qiwei_site.settings.local")
    os.environ["QIWEI_DATA_DIR"] = tempfile.mkdtemp(prefix="qiwei-bench-context-")
    os.environ.setdefault("DJANGO_LOG_LEVEL", "WARNING")
    os.environ.pop("DATABASE_URL", None)
    if postgres:
        os.environ.setdefault("QIWEI_ACCOUNT_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qiwei_bench_{account}")
    else:
        os.environ.pop("QIWEI_ACCOUNT_DATABASE_URL", None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    return f"bench{uuid.uuid4().hex[:6]}"


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


def fill(customer, count: int, rng: random.Random) -> None:  # type: ignore[no-untyped-def]
    from conversations.models import Message, MessageDirection

    start = dt.datetime(2024, 1, 1, 9, 0, tzinfo=dt.UTC)
    batch: list[Message] = []
    for n in range(count):
        inbound = n % 2 == 0
        batch.append(
            Message(
                customer=customer,
                external_id=f"m{n:07d}",
                direction=MessageDirection.INBOUND if inbound else MessageDirection.OUTBOUND,
                sender="客户" if inbound else "客服小安",
                text=message_text(rng, inbound),
                sent_at=start + dt.timedelta(minutes=7 * n),
            )
        )
        if len(batch) == 5000:
            Message.objects.bulk_create(batch)
            batch = []
    if batch:
        Message.objects.bulk_create(batch)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def drop_postgres(account_id: str) -> None:
    from django.conf import settings

    from qiwei_site import tenancy

    template = settings.QIWEI_ACCOUNT_DATABASE_URL
    if not template:
        return
    import environ
    import psycopg
    from psycopg import sql

    tenancy.unregister_account_database(account_id)
    config = environ.Env.db_url_config(template.replace("{account}", account_id))
    with psycopg.connect(
        host=config.get("HOST") or "127.0.0.1",
        port=config.get("PORT") or 5432,
        user=config.get("USER") or "postgres",
        dbname="postgres",
        autocommit=True,
    ) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(config["NAME"])))


def main() -> int:
    args = parse_args()
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    account_id = configure(args.postgres)
    from django.db import connections

    from conversations.services import account_create, customer_get_or_create
    from memory.context import AgentContextBuilder
    from memory.items import memory_item_put
    from memory.models import MemoryType
    from qiwei_site.tenancy import use_account

    rng = random.Random(args.seed)
    account_create(account_id=account_id, name="基准测试门店")
    results: dict[int, tuple[float, float, float, int]] = {}
    try:
        with use_account(account_id) as alias:
            vendor = connections[alias].vendor
            for size in sizes:
                customer, _ = customer_get_or_create(conversation_id=f"wm_bench_{size}", display_name="王先生")
                started = time.perf_counter()
                fill(customer, size, rng)
                filled = time.perf_counter() - started
                if vendor == "sqlite":
                    # Steady state: a bulk load leaves a large WAL that readers would have to consult.
                    with connections[alias].cursor() as cursor:
                        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                else:
                    with connections[alias].cursor() as cursor:
                        cursor.execute("ANALYZE conversations_message")
                for key, content in [("constraint:顶楼", "不考虑顶楼"), ("preference:地铁", "更喜欢地铁附近")]:
                    memory_item_put(
                        customer=customer,
                        type=MemoryType.CONSTRAINT if key.startswith("constraint") else MemoryType.PREFERENCE,
                        key=key,
                        content=content,
                        source_message_ids=[],
                        actor="benchmark",
                        reason="基准数据",
                    )
                builder = AgentContextBuilder()
                builder.build(customer=customer)  # warm-up: knowledge index, caches
                timings = []
                chars = 0
                for _ in range(args.runs):
                    started = time.perf_counter()
                    built = builder.build(customer=customer)
                    timings.append((time.perf_counter() - started) * 1000)
                    chars = len(built.prompt)
                results[size] = (percentile(timings, 0.5), percentile(timings, 0.95), filled, chars)
    finally:
        if args.postgres:
            drop_postgres(account_id)

    print(f"AgentContextBuilder.build on {vendor} ({args.runs} runs per size)")
    print(f"{'messages':>9} | {'p50 ms':>8} {'p95 ms':>8} | {'prompt chars':>12} | {'fill s':>7}")
    for size, (p50, p95, filled, chars) in results.items():
        print(f"{size:>9} | {p50:>8.1f} {p95:>8.1f} | {chars:>12} | {filled:>7.1f}")
    if len(sizes) >= 2:
        small, large = results[sizes[0]], results[sizes[-1]]
        print(
            f"ratio {sizes[-1]}/{sizes[0]}: p50 {large[0] / small[0]:.2f}×, p95 {large[1] / small[1]:.2f}×"
            f" (median of all runs {statistics.median([r[0] for r in results.values()]):.1f} ms)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
