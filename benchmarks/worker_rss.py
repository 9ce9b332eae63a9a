"""Resident memory of one gunicorn worker over 10,000 context requests across 1,000 customers
(issue 13: growth ≤ 20% from request 1,000 to request 10,000), beside the same run on another
revision's code (`--compare`, default b40be73: the recall tokenisation cache grew with the history
it had scored; now a message's recall features are stored with it, MessageRecallFeatures).

One gunicorn master with one gthread worker (GUNICORN_WORKERS=1, GUNICORN_THREADS=4, never
recycled) on SQLite; an account of `--customers` customers, each with about `--messages` messages
of distinct text (CrossWOZ user turns and LoCoMo turns from `--data`, each used once and then
varied with a generated clause of places and numbers, so every message's features differ), the
last one the customer's. Then `--requests` GET …/context/ from `--clients` client threads, each
for a customer drawn at random (seeded: both revisions get the same data and the same sequence),
sent in batches between which nothing is in flight: the worker's VmRSS (/proc/<pid>/status, the
worker found as the master's only child) is read after request 1 and after every `--every`.

Each revision's data dir is prepared by its own code in a process of its own (REV's models and
migrations are REV's; ours stores the recall features, as ingest does), and served by gunicorn
from its own tree (`git archive REV`, same venv, same settings). Both run at once by default, each
its own server and client threads (`--sequential`: ours, then REV). `--budget` is the whole run's
seconds: if REV's requests would not fit in what is left of it, REV stops at the last checkpoint
that does and says so (`--rev-requests` sets a smaller count outright); ours always runs them all.

    .venv/bin/python benchmarks/worker_rss.py [--compare b40be73 | --compare none] [--customers 1000]
        [--messages 40] [--requests 10000] [--every 1000] [--clients 8] [--budget 570]
        [--rev-requests N] [--data ../shared/datasets] [--json out.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    ROOT,
    bench_environment,
    child_pids,
    datasets_dir,
    machine_line,
    percentile,
    revision_tree,
    setup_django,
    start_gunicorn,
    stop_process,
    vm_rss_kib,
    write_json,
)

ACCOUNT = "bench"
TARGET = 0.20  # issue 13: RSS growth from request 1,000 to request 10,000 at most 20%
DATA = datasets_dir()  # $QIWEI_DATASETS_DIR or shared/datasets beside the project (common.py)
PLACES = [
    "浦东", "徐汇", "静安", "闵行", "杨浦", "长宁", "普陀", "虹口", "宝山", "嘉定", "松江", "青浦",
    "朝阳", "海淀", "丰台", "通州", "望京", "中关村", "西二旗", "回龙观", "天通苑", "亦庄", "南山",
    "福田", "罗湖", "宝安", "龙华", "天河", "越秀", "番禺", "西湖", "滨江", "余杭", "萧山",
]  # fmt: skip
EN_PLACES = [
    "Riverside", "Old Town", "the harbour", "Maple Street", "the university", "Central Park", "the station",
    "Hill Road", "the market", "Lakeview", "the airport", "West End", "Kings Cross", "Greenwich",
]  # fmt: skip
ZH_CLAUSES = [
    "预算{n}元左右，最好在{place}附近",
    "{place}那边有没有{k}号线地铁口的房子",
    "离{place}步行{m}分钟以内的{r}居室",
    "{place}的{r}室一厅，月租不超过{n}",
    "想在{place}住{m}个月，{k}楼以下",
    "第{m}套看过了，{place}的再约一下",
]
EN_CLAUSES = [
    "around {n} a month near {place}",
    "a {r}-bedroom flat close to {place}, floor {k} or lower",
    "within {m} minutes of {place}",
    "viewing number {m} near {place}, budget {n}",
]


# --- the data -----------------------------------------------------------------------------


def sentence_pool(data: Path) -> tuple[list[str], list[str]]:
    """Chinese user turns (CrossWOZ) and English turns (LoCoMo), in file order; empty when absent."""
    chinese: list[str] = []
    english: list[str] = []
    crosswoz = data / "crosswoz-dev" / "user_turns.jsonl"
    if crosswoz.exists():
        for line in crosswoz.read_text(encoding="utf-8").splitlines():
            text = json.loads(line).get("text", "").strip()
            if text:
                chinese.append(text)
    for path in sorted((data / "locomo-dev").glob("*.json")):
        conversation = json.loads(path.read_text(encoding="utf-8"))
        for key in sorted(conversation, key=lambda k: (len(k), k)):
            if key.startswith("session_") and isinstance(conversation[key], list):
                english += [turn["text"].strip() for turn in conversation[key] if turn.get("text", "").strip()]
    return chinese, english


def clause(rng: random.Random, chinese: bool) -> str:
    template = rng.choice(ZH_CLAUSES if chinese else EN_CLAUSES)
    return template.format(
        n=rng.randint(15, 300) * 100,
        place=rng.choice(PLACES if chinese else EN_PLACES),
        k=rng.randint(1, 30),
        m=rng.randint(2, 90),
        r=rng.randint(1, 4),
    )


def histories(customers: int, messages: int, data: Path, seed: int) -> list[list[str]]:
    """Per customer about `messages` texts (±10%), every text distinct across the account: a turn
    of the pool the first time it is drawn, the same turn with a generated clause after that (or
    only generated clauses, when the data sets are absent). Two in three are Chinese."""
    rng = random.Random(seed)
    chinese, english = sentence_pool(data)
    used: set[str] = set()
    out: list[list[str]] = []
    spread = max(1, messages // 10)
    for _ in range(customers):
        texts: list[str] = []
        for _ in range(rng.randint(messages - spread, messages + spread)):
            zh = rng.random() < 2 / 3
            pool = chinese if zh else english
            text = rng.choice(pool) if pool else clause(rng, zh)
            while text in used:
                text = f"{text}{'，' if zh else ', '}{clause(rng, zh)}"
            used.add(text)
            texts.append(text)
        out.append(texts)
    return out


def prepare(env: dict[str, str], root: Path, history_file: Path) -> str:
    """Migrate, create the account and its customers with their histories (by the code at `root`),
    store the recall features where that code keeps them, and return a staff token."""
    setup_django(env, root=root)
    from django.contrib.auth import get_user_model
    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    from conversations.models import Customer, CustomerProfile, Message

    try:
        from qiwei_site.platform.services import account_create, membership_grant
    except ImportError:  # an older revision's tree: the registry's services were in conversations
        from conversations.services import account_create, membership_grant  # type: ignore[no-redef]
    from qiwei_site.platform.tenancy import account_atomic, use_account

    history = json.loads(history_file.read_text(encoding="utf-8"))
    account = account_create(account_id=ACCOUNT, name="内存压测账号")
    user = get_user_model().objects.create_user("bench", password="bench-pass", is_staff=True)
    membership_grant(user=user, account=account)
    start = timezone.now() - dt.timedelta(days=60)
    with use_account(ACCOUNT):
        with account_atomic():
            customers = Customer.objects.bulk_create(
                Customer(conversation_id=f"wm_rss_{c}", display_name=f"客户{c}") for c in range(len(history))
            )
            CustomerProfile.objects.bulk_create(CustomerProfile(customer=customer) for customer in customers)
            for c, (customer, texts) in enumerate(zip(customers, history, strict=True)):
                last = len(texts) - 1
                Message.objects.bulk_create(
                    Message(
                        customer=customer,
                        external_id=f"seed-{c}-{i}",
                        # The customer speaks last: the context is built for that message.
                        direction="inbound" if (last - i) % 2 == 0 else "outbound",
                        sender=f"客户{c}" if (last - i) % 2 == 0 else "顾问",
                        text=text,
                        sent_at=start + dt.timedelta(minutes=30 * i, seconds=c),
                    )
                    for i, text in enumerate(texts)
                )
        try:
            from memory.context.recall import recall_features_backfill  # type: ignore[attr-defined,unused-ignore]
        except ImportError:  # before MessageRecallFeatures: recall tokenises as it ranks
            pass
        else:
            recall_features_backfill()
    return Token.objects.create(user=user).key


def prepare_in_tree(env: dict[str, str], root: Path, history_file: Path) -> str:
    command = [sys.executable, str(Path(__file__).resolve()), "--prepare-only", json.dumps(env)]
    command += ["--code-root", str(root), "--history", str(history_file)]
    out = subprocess.run(command, cwd=root, env={**os.environ, "QIWEI_BENCH_KEEP": "1"}, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"prepare on {root} failed:\n{out.stderr[-4000:]}")
    return out.stdout.strip().splitlines()[-1].removeprefix("TOKEN ")


# --- the run ------------------------------------------------------------------------------


class Client:
    """`threads` client threads with a keep-alive session each, sending one batch at a time."""

    def __init__(self, base: str, token: str, threads: int) -> None:
        self.base = base
        self.token = token
        self.local = threading.local()
        self.pool = ThreadPoolExecutor(max_workers=threads)

    def _get(self, customer: int) -> tuple[float, int]:
        import requests

        session = getattr(self.local, "session", None)
        if session is None:
            session = self.local.session = requests.Session()
            session.headers["Authorization"] = f"Token {self.token}"
        url = f"{self.base}/api/accounts/{ACCOUNT}/conversations/wm_rss_{customer}/context/"
        started = time.perf_counter()
        try:
            status = session.get(url, timeout=60).status_code
        except requests.RequestException:
            status = 0
        return time.perf_counter() - started, status

    def batch(self, customers: list[int]) -> list[tuple[float, int]]:
        return list(self.pool.map(self._get, customers))

    def close(self) -> None:
        self.pool.shutdown()


def checkpoints(total: int, every: int) -> list[int]:
    return [1, *range(every, total + 1, every)] if total >= every else [1, total]


def run_variant(
    name: str, root: Path, history_file: Path, args: argparse.Namespace, total: int, deadline: float | None
) -> dict[str, Any]:
    env = bench_environment(postgres=False, tag=f"rss-{'ours' if name == 'ours' else 'rev'}")
    data_dir = Path(env["QIWEI_DATA_DIR"])
    server: subprocess.Popen[bytes] | None = None
    client: Client | None = None
    try:
        started = time.perf_counter()
        token = prepare_in_tree(env, root, history_file)
        prepared = time.perf_counter() - started
        server, base = start_gunicorn(env, root=root, workers=1, threads=4, log_path=data_dir / "gunicorn.log")
        workers = child_pids(server.pid)
        if len(workers) != 1:
            raise RuntimeError(f"expected one gunicorn worker under {server.pid}, found {workers}")
        worker = workers[0]
        rng = random.Random(args.seed + 1)
        plan = [rng.randrange(args.customers) for _ in range(total)]
        client = Client(base, token, args.clients)
        series = [{"requests": 0, "rss_kib": vm_rss_kib(worker), "seconds": 0.0}]  # after boot and /healthz
        print(f"  {name}: prepared in {prepared:.0f} s; worker pid {worker}, {series[0]['rss_kib'] / 1024:.1f} MiB")
        latencies: list[float] = []
        errors = 0
        done = 0
        stopped = ""
        load_started = time.perf_counter()
        for point in checkpoints(total, args.every):
            if deadline is not None and done >= args.every:  # project from whole batches, not the first request
                elapsed = time.perf_counter() - load_started
                projected = elapsed / done * point
                if load_started + projected > deadline:
                    stopped = (
                        f"stopped at {done:,} of {total:,} requests: {point:,} would take ~{projected:.0f} s, "
                        f"past the {args.budget:.0f} s budget of the whole run"
                    )
                    break
            results = client.batch(plan[done:point])
            done = point
            latencies += [latency for latency, status in results if 0 < status < 400]
            errors += sum(1 for _latency, status in results if not 0 < status < 400)
            if child_pids(server.pid) != [worker]:
                raise RuntimeError(f"{name}: the gunicorn worker {worker} was replaced (see {data_dir}/gunicorn.log)")
            rss = vm_rss_kib(worker)
            seconds = time.perf_counter() - load_started
            series.append({"requests": done, "rss_kib": rss, "seconds": seconds})
            print(f"  {name}: {done:6,d} requests  VmRSS {rss / 1024:7.1f} MiB  {seconds:6.1f} s", flush=True)
        hwm = _vm_hwm_kib(worker)
        seconds = time.perf_counter() - load_started
        return {
            "variant": name,
            "requests": done,
            "planned": total,
            "stopped": stopped,
            "series": series,
            "vm_hwm_kib": hwm,
            "errors": errors,
            "rps": done / seconds if seconds else 0.0,
            "p50_ms": percentile(latencies, 50) * 1000,
            "p95_ms": percentile(latencies, 95) * 1000,
            "growth_1k": _growth(series, args.every),
            "growth_from_1": _growth(series, 1),
        }
    finally:
        if client is not None:
            client.close()
        if server is not None:
            stop_process(server)
        if os.environ.get("QIWEI_BENCH_KEEP") != "1":
            shutil.rmtree(data_dir, ignore_errors=True)


def _vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _growth(series: list[dict[str, Any]], start: int) -> dict[str, Any] | None:
    """Growth from the sample at `start` requests to the last one, as a fraction."""
    first = next((point for point in series if point["requests"] == start), None)
    last = series[-1]
    if first is None or last["requests"] <= start:
        return None
    return {"from": start, "to": last["requests"], "fraction": last["rss_kib"] / first["rss_kib"] - 1}


# --- report ---------------------------------------------------------------------------------


def report(runs: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    lines = [
        f"Worker RSS: one gunicorn worker (gthread, 4 threads, never recycled), SQLite; {args.customers:,} customers "
        f"× ~{args.messages} distinct messages; GET …/context/ for a random customer from {args.clients} "
        f"client threads; VmRSS after request 1 and every {args.every:,} (nothing in flight). {machine_line()}",
        "",
    ]
    names = [run["variant"] for run in runs]
    header = f"  {'requests':>9s}" + "".join(f"{name + ' MiB':>16s}" for name in names)
    lines.append(header)
    points = sorted({point["requests"] for run in runs for point in run["series"]})
    for requests in points:
        cells = []
        for run in runs:
            point = next((p for p in run["series"] if p["requests"] == requests), None)
            cells.append(f"{point['rss_kib'] / 1024:16.1f}" if point else f"{'—':>16s}")
        label = "boot" if requests == 0 else f"{requests:,}"
        lines.append(f"  {label:>9s}" + "".join(cells))
    lines.append("")
    ours_requests = runs[0]["requests"]
    for run in runs:
        growth = run["growth_1k"]
        window = f"{growth['from']:,} → {growth['to']:,}" if growth else "—"
        shown = f"{growth['fraction'] * 100:+.1f}%" if growth else "n/a"
        from_1 = run["growth_from_1"]
        first = f"{from_1['fraction'] * 100:+.1f}% (to {from_1['to']:,})" if from_1 else "n/a"
        peak = run["vm_hwm_kib"] / 1024
        lines.append(
            f"  {run['variant']:10s} growth {window}: {shown:>7s};  from request 1 {first};  peak {peak:.1f} MiB"
        )
        lines.append(
            f"  {'':10s} {run['requests']:,} requests, {run['errors']} errors, {run['rps']:.1f} req/s, "
            f"p50 {run['p50_ms']:.1f} ms, p95 {run['p95_ms']:.1f} ms"
        )
        if run["stopped"]:
            lines.append(f"  {'':10s} NOTE: {run['stopped']}; its count reduced, ours ran {ours_requests:,}")
        elif run["planned"] != args.requests:
            lines.append(f"  {'':10s} NOTE: {run['planned']:,} requests (--rev-requests), ours ran {ours_requests:,}")
    ours = next(run for run in runs if run["variant"] == "ours")
    growth = ours["growth_1k"]
    if growth is None or ours["errors"]:
        lines.append("  verdict: no verdict (the run did not reach its checkpoints, or had errors)")
    else:
        meets = growth["fraction"] <= TARGET
        lines.append(
            f"  verdict: ours grew {growth['fraction'] * 100:+.1f}% from request {growth['from']:,} to "
            f"{growth['to']:,}: {'meets' if meets else 'misses'} the ≤ {TARGET * 100:.0f}% target"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--compare", default="b40be73", help="the revision beside ours ('none': ours alone)")
    parser.add_argument("--customers", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=40, help="messages per customer (±10%%)")
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=1000, help="requests between RSS samples")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rev-requests", type=int, help="REV's request count, when it is too slow for --requests")
    parser.add_argument(
        "--budget", type=float, default=570, help="seconds for the whole run; REV stops short to fit (0: no limit)"
    )
    parser.add_argument("--data", type=Path, default=DATA, help="folder with crosswoz-dev/ and locomo-dev/")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--sequential", action="store_true", help="ours first, then REV (default: both at once)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="qiwei-worker-rss-"))
    runs: list[dict[str, Any]] = []
    try:
        history_file = tmp / "histories.json"
        history = histories(args.customers, args.messages, args.data, args.seed)
        history_file.write_text(json.dumps(history, ensure_ascii=False), encoding="utf-8")
        count = sum(len(texts) for texts in history)
        distinct = len({text for texts in history for text in texts})
        print(f"  data: {args.customers:,} customers, {count:,} messages, {distinct:,} distinct texts", flush=True)
        deadline = started + args.budget if args.budget else None
        plans = [("ours", ROOT, args.requests)]
        if args.compare and args.compare != "none":
            plans.append((args.compare, revision_tree(args.compare, tmp / "tree"), args.rev_requests or args.requests))
        if args.sequential:
            runs = [run_variant(name, root, history_file, args, total, deadline) for name, root, total in plans]
        else:
            # Both at once (each its own server and client threads): a worker's RSS is its own,
            # and two single-worker servers use the machine's two cores.
            with ThreadPoolExecutor(max_workers=len(plans)) as pool:
                futures = [
                    pool.submit(run_variant, name, root, history_file, args, total, deadline)
                    for name, root, total in plans
                ]
                runs = [future.result() for future in futures]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines = report(runs, args)
    print()
    for line in lines:
        print(line)
    write_json(args.json, {"target": TARGET, "runs": runs, "lines": lines})
    return 0


if __name__ == "__main__":
    if "--prepare-only" in sys.argv:
        one = argparse.ArgumentParser()
        one.add_argument("--prepare-only", required=True, help="the environment, as JSON")
        one.add_argument("--code-root", type=Path, default=ROOT)
        one.add_argument("--history", type=Path, required=True)
        options = one.parse_args()
        print("TOKEN " + prepare(json.loads(options.prepare_only), options.code_root, options.history))
        raise SystemExit(0)
    raise SystemExit(main())
