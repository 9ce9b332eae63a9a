"""Context build latency and prompt size against history size, in an account of 1M messages:
AgentContextBuilder.build for customers with 1k, 10k and 100k messages, warm (the context
answer cache hit) and cold (caches cleared before every build), beside today's builder (the
code at --today, run in its own process over the same data), the realistic recent-window prompt
(the newest messages that fit the same conversation budget) and the naive prompt (every message).

    .venv/bin/python benchmarks/context_build.py [--backend sqlite|postgres] [--total 1000000]
        [--sizes 1000,10000,100000] [--rounds 40] [--naive-rounds 6] [--today b40be73]
        [--builder-file LABEL=PATH] [--json out.json]

Fair timing: every variant and history size is timed in one round-robin loop (the order shuffled
each round), so machine noise falls on all of them alike; each build is timed inside its worker
process, which does nothing else meanwhile. The flat/linear verdict is computed from the 100k/1k
p50 ratio: flat up to 1.3, linear from half the size ratio, growing in between.

Workers: "ours" runs this checkout; "today" runs `git archive <ref>` extracted to a temporary
directory (read-only for the repository), each with its own throw-away data dir and the same data
(same seed). Other customers (1,000 messages each) fill the account up to --total, every
customer's messages interleaved in time; the bulk load bypasses the ORM (`executemany` on SQLite,
`COPY` on PostgreSQL), then the recall features are backfilled as ingest would have stored them.
`--builder-file` loads another builder module into the "ours" worker (e.g. a copy of the file
before a change) as one more variant, and checks its prompts against ours.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ACCOUNT = "bench"
FILLER_SIZE = 1000
BATCH = 50_000
FLAT_RATIO = 1.3

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


def verdict(ratio: float, size_ratio: float) -> str:
    """How a latency grows from the smallest to the largest history, from the p50 ratio."""
    if ratio <= FLAT_RATIO:
        return "flat"
    if ratio >= size_ratio / 2:
        return "linear"
    return "growing"


# --- data (runs in a worker, against whichever tree it imported) --------------------------------


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
    created = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
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
            created,
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
    return loaded


def settle(alias: str) -> None:
    """Steady state for the planner and readers: statistics, no large WAL left to consult, and a
    fresh connection, configured as the project configures it (the load's 256 MiB page cache
    would flatter every build)."""
    from django.db import connections

    connection = connections[alias]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("VACUUM ANALYZE")
        else:
            cursor.execute("ANALYZE")
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()


def backfill_features(customers: list[Any]) -> int:
    """Store the measured customers' recall features, as ingest does (a tree without them: 0)."""
    try:
        from memory.context.recall import recall_features_store
    except ImportError:
        return 0
    from conversations.models import Message

    written = 0
    for customer in customers:
        messages = Message.objects.filter(customer=customer).only("id", "text").order_by("id")
        written += recall_features_store(messages=messages.iterator(chunk_size=5000))
    return written


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


# --- the baselines ------------------------------------------------------------------------------


def _instructions_text() -> str:
    from knowledge import context as knowledge_context

    cached = getattr(knowledge_context, "project_context_cached", knowledge_context.project_context)
    return cached().text


def naive_prompt(customer: Any) -> str:
    """Instructions, then every effective message of the customer, then the output contract."""
    from conversations.models import Message
    from memory.context.builder import QUOTE_END, QUOTE_NOTICE, output_contract, quote_line

    lines = [
        quote_line(direction=m.direction, sender=m.sender, text=m.text, sent_at=m.sent_at)
        for m in Message.objects.filter(customer=customer, is_effective=True).order_by("sent_at", "id")
    ]
    return "\n\n".join([_instructions_text(), "\n".join([QUOTE_NOTICE, *lines, QUOTE_END]), output_contract()])


def recent_window_prompt(customer: Any) -> str:
    """The realistic alternative: instructions, the newest messages that fit the conversation
    budget (QIWEI_AGENT_CONVERSATION_CHAR_LIMIT, as ours), oldest first, then the contract."""
    from django.conf import settings

    from conversations.models import Message
    from memory.context.builder import QUOTE_END, QUOTE_NOTICE, output_contract, quote_line

    budget = settings.QIWEI_AGENT_CONVERSATION_CHAR_LIMIT - len(QUOTE_NOTICE) - len(QUOTE_END) - 2
    newest = Message.objects.filter(customer=customer, is_effective=True).order_by("-sent_at", "-id")
    lines: list[str] = []
    used, offset, page = 0, 0, 100
    full = False
    while not full:
        batch = list(newest.values_list("direction", "sender", "text", "sent_at")[offset : offset + page])
        for direction, sender, text, sent_at in batch:
            line = quote_line(direction=direction, sender=sender, text=text, sent_at=sent_at)
            if used + len(line) + 1 > budget:
                full = True
                break
            lines.append(line)
            used += len(line) + 1
        if len(batch) < page:
            break
        offset += page
    lines.reverse()
    return "\n\n".join([_instructions_text(), "\n".join([QUOTE_NOTICE, *lines, QUOTE_END]), output_contract()])


# --- a worker -----------------------------------------------------------------------------------


def _clear_caches(builder_module: Any) -> None:
    """What a cold build must not find: the context answer cache, recall's decoded candidates and
    its query-side caches (today's tokenisation cache included). The knowledge cache stays: it is one per index version,
    shared by every customer."""
    from memory.context import recall

    clear = getattr(builder_module, "context_cache_clear", None)
    if clear is not None:
        clear()
    decoded_clear = getattr(recall, "decoded_cache_clear", None)  # the decoded candidates (issue 38)
    if decoded_clear is not None:
        decoded_clear()
    for name in ("features", "_cn_value_cached", "_tokens"):
        function = getattr(recall, name, None)
        if hasattr(function, "cache_clear"):
            function.cache_clear()


def _load_builder(label: str, path: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"bench_builder_{label}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


STAGE_METHODS = [
    "_gather",
    "_instructions",
    "_core_memory",
    "_core_read",
    "_window",
    "_recent",
    "_business_state",
    "_business_read",
    "_assemble",
]


# `_gather` is the whole section step in both builders: reads and computation before 13, the
# computation only (recall ranking, quoting) after.
STAGE_LABELS = {"_gather": "gather (incl. recall)"}


def _stage_split(module: Any, customer: Any, runs: int) -> dict[str, float]:
    """p50 ms of each step of cold builds, timed by wrapping the builder's methods (by name, so
    today's and ours are split alike); recall and the latest-message read are wrapped too."""
    from benchmarks_common import percentile  # type: ignore[import-not-found]

    from memory.context import recall

    timings: dict[str, list[float]] = {}
    builder_class = module.AgentContextBuilder
    originals: list[tuple[Any, str, Any]] = []

    def wrap(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                timings.setdefault(label, []).append(time.perf_counter() - started)

        originals.append((owner, name, original))
        setattr(owner, name, timed)

    for name in STAGE_METHODS:
        if name in vars(builder_class):
            wrap(builder_class, name, STAGE_LABELS.get(name, name.strip("_")))
    wrap(recall, "recall_for", "recall")
    if hasattr(module, "message_latest_inbound"):
        wrap(module, "message_latest_inbound", "latest_message")
    totals: list[float] = []
    try:
        for _ in range(runs):
            _clear_caches(module)
            started = time.perf_counter()
            builder_class().build(customer=customer)
            totals.append(time.perf_counter() - started)
    finally:
        for owner, name, original in reversed(originals):
            setattr(owner, name, original)
    split = {label: percentile(values, 50) * 1000 for label, values in timings.items()}
    split["total"] = percentile(totals, 50) * 1000
    return split


def _queries(module: Any, customer: Any, alias: str, cold: bool) -> dict[str, int]:
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    builder = module.AgentContextBuilder()
    builder.build(customer=customer)
    if cold:
        _clear_caches(module)
    with CaptureQueriesContext(connections[alias]) as account, CaptureQueriesContext(connections["default"]) as default:
        builder.build(customer=customer)
    return {"account": len(account), "default": len(default)}


def worker(args: argparse.Namespace) -> int:
    """Load the data into a fresh installation of the tree at --root (or, with --attach, use the
    installation another worker of the same tree loaded), then time what the controller asks
    for, one JSON line per command on stdin."""
    root = Path(args.root).resolve()
    sys.path.insert(0, str(root))
    reply = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    sys.stdout = sys.stderr  # nothing but replies on the pipe
    common = _load_common()
    attached = args.attach is not None
    if attached:
        env = {**json.loads(args.attach), "QIWEI_BENCH_KEEP": "1"}  # the loading worker cleans up
        env.pop("QIWEI_BENCH_RUN", None)
    else:
        env = common.bench_environment(postgres=args.backend == "postgres", tag=f"context-{args.label}")
    common.setup_django(env, root=root, fresh=not attached)
    from django.conf import settings
    from django.db import connections

    from conversations.models import Customer

    try:
        from qiwei_site.platform.services import account_create
    except ImportError:  # an older revision's tree: the registry's services were in conversations
        from conversations.services import account_create  # type: ignore[no-redef]
    from qiwei_site.platform.tenancy import use_account

    sizes = sorted(int(size) for size in args.sizes.split(","))
    modules: dict[str, Any] = {}
    info: dict[str, Any] = {}
    try:
        if not attached:
            account_create(account_id=ACCOUNT, name="基准测试门店")
        with use_account(ACCOUNT) as alias:
            if attached:
                targets = {size: Customer.objects.get(conversation_id=f"wm_target_{size}") for size in sizes}
            else:
                targets, counts = create_customers(sizes, args.total)
                started = time.perf_counter()
                loaded = bulk_load(alias, message_rows(counts, random.Random(args.seed)))
                features = backfill_features(list(targets.values()))
                for customer in targets.values():
                    give_memory(customer)
                settle(alias)
                load_seconds = time.perf_counter() - started
                print(f"[{args.label}] loaded {loaded:,} messages in {load_seconds:.0f} s", flush=True)
                info = {"loaded": loaded, "customers": len(counts), "load_seconds": load_seconds, "features": features}
            modules["builder"] = importlib.import_module("memory.context.builder")
            print(f"[{args.label}] builder from {modules['builder'].__file__}", flush=True)
            for spec in args.builder_file or []:
                label, path = spec.split("=", 1)
                modules[label] = _load_builder(label, path)
            for module in modules.values():  # warm-up: knowledge index, compiled reads, page cache
                for customer in targets.values():
                    module.AgentContextBuilder().build(customer=customer)
            info.update(
                {
                    "ready": True,
                    "env": {k: v for k, v in env.items() if k != "QIWEI_BENCH_KEEP"},
                    "vendor": connections[alias].vendor,
                    "variants": list(modules),
                    "prompt_char_limit": settings.QIWEI_AGENT_PROMPT_CHAR_LIMIT,
                    "conversation_char_limit": settings.QIWEI_AGENT_CONVERSATION_CHAR_LIMIT,
                }
            )
            reply.write(json.dumps(info) + "\n")
            for line in sys.stdin:
                command = json.loads(line)
                if command["op"] == "quit":
                    break
                reply.write(json.dumps(_serve(command, modules, targets, alias)) + "\n")
    finally:
        if not attached:
            common.drop_pg_databases(env)
    return 0


def _serve(command: dict[str, Any], modules: dict[str, Any], targets: dict[int, Any], alias: str) -> dict[str, Any]:
    customer = targets[command.get("size", min(targets))]
    op = command["op"]
    if op == "build":
        module = modules[command.get("module", "builder")]
        if command["cold"]:
            _clear_caches(module)
        started = time.perf_counter()
        built = module.AgentContextBuilder().build(customer=customer)
        return {"seconds": time.perf_counter() - started, "chars": len(built.prompt), "prompt": built.prompt}
    if op in ("naive", "recent"):
        make: Callable[[Any], str] = naive_prompt if op == "naive" else recent_window_prompt
        started = time.perf_counter()
        prompt = make(customer)
        return {"seconds": time.perf_counter() - started, "chars": len(prompt)}
    if op == "queries":
        module = modules[command.get("module", "builder")]
        return {"warm": _queries(module, customer, alias, False), "cold": _queries(module, customer, alias, True)}
    if op == "stages":
        return {"stages": _stage_split(modules[command.get("module", "builder")], customer, command["runs"])}
    raise ValueError(f"unknown command {op}")


def _load_common() -> Any:
    """This checkout's benchmarks/common.py, whichever tree the worker imports its apps from."""
    spec = importlib.util.spec_from_file_location("benchmarks_common", HERE / "common.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks_common"] = module
    spec.loader.exec_module(module)
    return module


# --- the controller -----------------------------------------------------------------------------


class Worker:
    """A worker process and its command pipe."""

    def __init__(
        self,
        label: str,
        root: Path,
        args: argparse.Namespace,
        builder_files: list[str],
        attach: dict[str, str] | None = None,
    ) -> None:
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--root", str(root)]
        if attach is not None:
            command += ["--attach", json.dumps(attach)]
        command += ["--label", label, "--backend", args.backend, "--total", str(args.total), "--sizes", args.sizes]
        command += ["--seed", str(args.seed)]
        for spec in builder_files:
            command += ["--builder-file", spec]
        self.label = label
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8", cwd=root
        )
        self.info: dict[str, Any] = {}

    def wait_ready(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.label} exited before it was ready")
        self.info = json.loads(line)
        return self.info

    def ask(self, **command: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.label} died")
        return json.loads(line)

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.process.stdin.close()
                self.process.wait(timeout=120)
            except Exception:
                self.process.kill()


def _wait_ready(workers: list[Worker]) -> None:
    """Wait for workers loading in parallel; a worker that failed stops the run."""
    failures: list[str] = []

    def wait(w: Worker) -> None:
        try:
            w.wait_ready()
        except Exception as exc:
            failures.append(f"{w.label}: {exc}")

    threads = [threading.Thread(target=wait, args=(w,)) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError("; ".join(failures))


def _today_tree(ref: str) -> Path:
    """The code at `ref`, extracted with `git archive` (reads the repository, changes nothing)."""
    target = Path(tempfile.mkdtemp(prefix="qiwei-bench-today-"))
    archive = subprocess.run(["git", "archive", ref], cwd=HERE.parent, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def controller(args: argparse.Namespace) -> int:
    from benchmarks_common import machine_line, percentile, write_json  # type: ignore[import-not-found]

    sizes = sorted(int(size) for size in args.sizes.split(","))
    if sum(sizes) > args.total:
        print(f"--total ({args.total}) 必须不小于各客户消息数之和 ({sum(sizes)}).", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    today_root = _today_tree(args.today) if args.today else None
    roots = {"ours": HERE.parent, **({"today": today_root} if today_root is not None else {})}
    builder_files = args.builder_file or []
    # A warm and a cold worker per tree, the cold one attached to the warm one's data: clearing
    # caches for a cold build must not empty the caches the warm builds are timed with.
    workers: dict[str, Worker] = {}
    middle = sizes[len(sizes) // 2]
    try:
        for name, root in roots.items():
            workers[name] = Worker(name, root, args, builder_files if name == "ours" else [])
        _wait_ready(list(workers.values()))
        for name, root in roots.items():
            files = builder_files if name == "ours" else []
            workers[f"{name}_cold"] = Worker(f"{name}_cold", root, args, files, attach=workers[name].info["env"])
        _wait_ready([w for label, w in workers.items() if label.endswith("_cold")])
        ours, ours_cold = workers["ours"], workers["ours_cold"]
        extra = [name for name in ours.info["variants"] if name != "builder"]
        # (variant label, worker, command): every one timed in the same loop
        variants: list[tuple[str, Worker, dict[str, Any]]] = [
            ("ours_warm", ours, {"op": "build", "cold": False}),
            ("ours_cold", ours_cold, {"op": "build", "cold": True}),
            ("recent_window", ours, {"op": "recent"}),
        ]
        for name in extra:
            variants += [
                (f"{name}_warm", ours, {"op": "build", "cold": False, "module": name}),
                (f"{name}_cold", ours_cold, {"op": "build", "cold": True, "module": name}),
            ]
        if "today" in workers:
            variants += [
                ("today_warm", workers["today"], {"op": "build", "cold": False}),
                ("today_cold", workers["today_cold"], {"op": "build", "cold": True}),
            ]
        timings: dict[str, dict[int, list[float]]] = {}
        chars: dict[str, dict[int, int]] = {}
        prompts: dict[tuple[str, int], str] = {}
        plan = [(label, w, c, size) for label, w, c in variants for size in sizes]
        naive = [("naive", ours, {"op": "naive"}, size) for size in sizes]
        started = time.perf_counter()
        for round_ in range(args.rounds):
            order = plan + (naive if round_ < args.naive_rounds else [])
            rng.shuffle(order)
            for label, w, command, size in order:
                answer = w.ask(**command, size=size)
                timings.setdefault(label, {}).setdefault(size, []).append(answer["seconds"])
                chars.setdefault(label, {})[size] = answer["chars"]
                if "prompt" in answer:
                    prompts[(label, size)] = answer["prompt"]
            if round_ % 10 == 9:
                print(f"  round {round_ + 1}/{args.rounds} ({time.perf_counter() - started:.0f} s)", flush=True)
        queries, stages = {}, {}
        for name in ["builder", *extra]:
            label = "ours" if name == "builder" else name
            queries[label] = ours.ask(op="queries", size=middle, module=name)
            stages[label] = ours_cold.ask(op="stages", size=middle, runs=args.stage_runs, module=name)["stages"]
        if "today" in workers:
            queries["today"] = workers["today"].ask(op="queries", size=middle)
            stages["today"] = workers["today_cold"].ask(op="stages", size=middle, runs=args.stage_runs)["stages"]
    finally:
        for label in sorted(workers, key=lambda label: not label.endswith("_cold")):  # attached ones first
            workers[label].close()
        if today_root is not None:
            shutil.rmtree(today_root, ignore_errors=True)

    size_ratio = sizes[-1] / sizes[0]
    latency = {
        label: {
            str(size): {
                "p50_ms": percentile(values, 50) * 1000,
                "p95_ms": percentile(values, 95) * 1000,
                "n": len(values),
            }
            for size, values in by_size.items()
        }
        for label, by_size in timings.items()
    }
    ratios = {}
    for label, by_size in latency.items():
        small, large = by_size[str(sizes[0])], by_size[str(sizes[-1])]
        p50, p95 = large["p50_ms"] / small["p50_ms"], large["p95_ms"] / small["p95_ms"]
        ratios[label] = {"p50": p50, "p95": p95, "verdict": verdict(p50, size_ratio)}
    identical = {
        name: all(prompts.get((f"{name}_warm", s)) == prompts.get(("ours_warm", s)) for s in sizes) for name in extra
    }
    result = {
        "backend": args.backend,
        "vendor": ours.info["vendor"],
        "total_messages": ours.info["loaded"],
        "customers": ours.info["customers"],
        "load_seconds": ours.info["load_seconds"],
        "rounds": args.rounds,
        "naive_rounds": args.naive_rounds,
        "sizes": sizes,
        "today_ref": args.today,
        "extra_variants": extra,
        "identical_prompts": identical,
        "latency": latency,
        "ratios": ratios,
        "flat_ratio": FLAT_RATIO,
        "chars": {label: {str(size): n for size, n in by_size.items()} for label, by_size in chars.items()},
        "queries": queries,
        "stages": stages,
        "stage_size": sizes[len(sizes) // 2],
        "prompt_char_limit": ours.info["prompt_char_limit"],
        "conversation_char_limit": ours.info["conversation_char_limit"],
        "machine": machine_line(),
    }
    _print(result)
    write_json(args.json, result)
    return 0


def _print(result: dict[str, Any]) -> None:
    sizes = result["sizes"]
    print(f"{result['vendor']}: {result['total_messages']:,} messages, {result['rounds']} round-robin rounds")
    for label, by_size in result["latency"].items():
        cells = " | ".join(
            f"{size:>7,}: p50 {by_size[str(size)]['p50_ms']:8.2f} p95 {by_size[str(size)]['p95_ms']:8.2f} ms"
            for size in sizes
        )
        ratio = result["ratios"][label]
        print(f"  {label:<16} {cells} | {sizes[-1]:,}/{sizes[0]:,} p50 {ratio['p50']:.2f}× ({ratio['verdict']})")
    for label, counts in result["queries"].items():
        print(f"  queries {label}: warm {counts['warm']} cold {counts['cold']}")
    for label, split in result["stages"].items():
        print(
            f"  stages {label} (cold, {result['stage_size']:,}): " + ", ".join(f"{k} {v:.2f}" for k, v in split.items())
        )
    for name, same in result["identical_prompts"].items():
        print(f"  prompts identical to {name}: {same}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--total", type=int, default=1_000_000, help="messages in the account")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=40, help="round-robin rounds (one build of each variant each)")
    parser.add_argument("--naive-rounds", type=int, default=6, help="rounds that include the naive prompt")
    parser.add_argument("--stage-runs", type=int, default=30, help="cold builds for the stage split")
    parser.add_argument("--today", default="b40be73", help="git ref of today's code; '' to skip")
    parser.add_argument("--builder-file", action="append", help="LABEL=PATH: another builder module as a variant")
    parser.add_argument("--seed", type=int, default=20261101)
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--label", default="ours", help=argparse.SUPPRESS)
    parser.add_argument("--attach", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    sys.path.insert(0, str(HERE))
    _load_common()
    return controller(args)


if __name__ == "__main__":
    raise SystemExit(main())
