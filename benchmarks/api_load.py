"""API throughput and p95 latency for the context and ingest endpoints under 8 and 32 concurrent
clients, against gunicorn on loopback, on SQLite and on PostgreSQL (several workers), beside
`/healthz` under the same load (the server's floor: routing, middleware, no database).

    .venv/bin/python benchmarks/api_load.py [--seconds 10] [--clients 8 32] [--backends sqlite postgres]
        [--workers 4] [--json out.json]

The load generator runs in separate processes (so the client does not share the server's GIL)
and only talks to 127.0.0.1. The server uses the embedded filesystem broker with no worker, so
ingest pays for queueing its capture jobs but not for running them.

Many accounts (issue 13): the context endpoint with clients going round-robin over 1, 200, 500
accounts, each account its own database, on SQLite, on PostgreSQL and on PostgreSQL through
PgBouncer (transaction pooling), with the account connection pool (`capped`, the shipped
default) beside `legacy` (`QIWEI_ACCOUNT_CONN_CAP=0`: Django's connection per thread per account,
kept 60 s, the behaviour before). It reports errors, req/s, p95 and the peak number of server
connections (pg_stat_activity, sampled every 20 ms), and `migrate_accounts` over every account
(exit code, seconds, peak connections). PostgreSQL is a private cluster made for the run
(initdb in a temporary folder, `max_connections = 100`, a free port), so running a server out of
connections disturbs nobody; PgBouncer is Debian's, in front of it.

    .venv/bin/python benchmarks/api_load.py --accounts 1 200 [500] [--backends sqlite postgres pgbouncer]
        [--modes legacy capped] [--seconds 15] [--clients 32] [--workers 4] [--cap 8] [--json out.json]

Each phase also reads the load generator's own CPU per request ("load ms"): it runs on the same
cores, so on a 2-core machine what it spends caps how far req/s ratios can follow CPU ratios.

Beside other revisions (issue 13: context req/s ≥ 2.5× b40be73's at 8 clients; issue 38: a real turn
≥ 2.5× b40be73's in req/s and in the server's CPU per turn): `--compare REV [REV ...]` exports each
REV with `git archive` into a temporary directory, prepares one data dir with this checkout's code
and one with each REV's (each by its own code in a process of its own: same data, same seed),
starts one gunicorn on each tree (same venv, same settings, workers never recycled), all up at
once, and times every phase in turn, the order rotated every round, for each of `--kinds`
(healthz as the floor, context; turn — one new inbound message POSTed, then that conversation's
context GET, as a real turn has, timed as one request pair — and ingest, which add messages, after
every read phase). Each phase also reads the server's CPU (gunicorn's process tree, /proc) before
and after. Prints per variant the median req/s, p50, p95 and CPU per request over the rounds,
errors, and per REV the ratios ours/REV of req/s and REV/ours of CPU, with their spread over the
rounds and a verdict for context and turn against the 2.5× target.

    .venv/bin/python benchmarks/api_load.py --compare b40be73 [5804d3c] [--backends sqlite] [--clients 8] [--seconds 10]
        [--rounds 3] [--kinds healthz context [turn] [ingest]] [--workers 4] [--json out.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    ROOT,
    bench_environment,
    drop_pg_databases,
    free_port,
    percentile,
    postgres_available,
    revision_tree,
    setup_django,
    start_gunicorn,
    stop_process,
)

ACCOUNT = "bench"
BACKENDS = ["sqlite", "postgres", "postgres-persistent"]
CUSTOMERS = 20
MESSAGES_PER_CUSTOMER = 300
TEXTS = [
    "我预算{n}元，想要地铁附近的两居室",
    "周末可以看房吗？最好是上午",
    "不考虑顶楼，夏天太热了",
    "小区安静一点比较好，我家有小孩",
    "押一付三可以吗？能不能月付",
    "离{n}号线地铁站步行多久",
    "I prefer somewhere near Line {n}, budget around 8000",
]


def prepare(env: dict[str, str], root: Path | None = None) -> str:
    """Migrate, create the account with customers and history, and return a staff token; `root` is
    the source tree whose models, migrations and services do it (this checkout by default)."""
    setup_django(env, root=root)
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    try:
        from qiwei_site.platform.services import account_create, membership_grant
    except ImportError:  # an older revision's tree: the registry's services were in conversations
        from conversations.services import account_create, membership_grant  # type: ignore[no-redef]
    from qiwei_site.platform.tenancy import use_account

    account = account_create(account_id=ACCOUNT, name="压测账号")
    user = get_user_model().objects.create_user("bench", password="bench-pass", is_staff=True)
    membership_grant(user=user, account=account)
    with use_account(ACCOUNT):
        seed_history(CUSTOMERS, MESSAGES_PER_CUSTOMER)
        recall_features_store_all()
    return Token.objects.create(user=user).key


def seed_history(customers: int, messages: int) -> None:
    """`customers` customers of the selected account, each with `messages` alternating messages
    over the last 60 days (the same texts and seed every time)."""
    from django.utils import timezone

    from conversations.models import Customer, CustomerProfile, Message

    rng = random.Random(7)
    start = timezone.now() - dt.timedelta(days=60)
    for c in range(customers):
        customer = Customer.objects.create(conversation_id=f"wm_bench_{c}", display_name=f"客户{c}")
        CustomerProfile.objects.create(customer=customer)
        Message.objects.bulk_create(
            Message(
                customer=customer,
                external_id=f"seed-{c}-{i}",
                direction="inbound" if i % 2 == 0 else "outbound",
                sender="客户",
                text=rng.choice(TEXTS).format(n=rng.randint(1, 12) * 1000 if i % 3 else rng.randint(1, 18)),
                sent_at=start + dt.timedelta(minutes=i),
            )
            for i in range(messages)
        )


def recall_features_store_all() -> None:
    """Store every message's recall features, as ingest does for the messages it stores, on code
    that keeps them (MessageRecallFeatures); before it (b40be73) recall tokenised when it ranked."""
    try:
        from memory.context.recall import recall_features_backfill  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return
    recall_features_backfill()


def client_process(args: tuple[str, str, int, float, str, int]) -> list[tuple[float, int]]:
    base, token, threads, seconds, kind, seed = args
    import requests

    results: list[tuple[float, int]] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def loop(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        session = requests.Session()
        session.headers["Authorization"] = f"Token {token}"
        counter = 0
        local: list[tuple[float, int]] = []
        while time.monotonic() < stop_at:
            cid = f"wm_bench_{rng.randrange(CUSTOMERS)}"
            url = f"{base}/api/accounts/{ACCOUNT}/conversations/{cid}/"
            t0 = time.perf_counter()
            if kind == "healthz":
                response = session.get(f"{base}/healthz", timeout=30)
            elif kind == "context":
                response = session.get(url + "context/", timeout=30)
            elif kind == "turn":
                # A real turn: the customer's new message arrives, then its context is asked for
                # (so the context answer cache never holds the answer).
                counter += 1
                body = {
                    "external_id": f"turn-{seed}-{n}-{counter}",
                    "direction": "inbound",
                    "sender": "客户",
                    "text": rng.choice(TEXTS).format(n=rng.randint(1, 12) * 1000),
                }
                posted = session.post(url + "messages/", json=body, timeout=30)
                response = session.get(url + "context/", timeout=30)
                if posted.status_code >= 400:
                    response = posted
            else:
                counter += 1
                body = {
                    "external_id": f"load-{seed}-{n}-{counter}",
                    "direction": "inbound",
                    "sender": "客户",
                    "text": rng.choice(TEXTS).format(n=rng.randint(1, 12) * 1000),
                }
                response = session.post(url + "messages/", json=body, timeout=30)
            local.append((time.perf_counter() - t0, response.status_code))
        with lock:
            results.extend(local)

    workers = [threading.Thread(target=loop, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return results


def client_process_timed(args: tuple[str, str, int, float, str, int]) -> tuple[list[tuple[float, int]], float]:
    """`client_process`, and the CPU seconds the load generator's process spent on it (all its threads)."""
    started = time.process_time()
    samples = client_process(args)
    return samples, time.process_time() - started


def run_load(base: str, token: str, clients: int, seconds: float, kind: str) -> dict:
    processes = 2 if clients >= 2 else 1
    per = [clients // processes + (1 if i < clients % processes else 0) for i in range(processes)]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        chunks = pool.map(client_process_timed, [(base, token, per[i], seconds, kind, i) for i in range(processes)])
    samples = [s for chunk, _cpu in chunks for s in chunk]
    ok = [latency for latency, status in samples if status < 400]
    errors = sum(1 for _, status in samples if status >= 400)
    return {
        "kind": kind,
        "clients": clients,
        "requests": len(samples),
        "errors": errors,
        "rps": len(ok) / seconds,
        "p50_ms": percentile(ok, 50) * 1000,
        "p95_ms": percentile(ok, 95) * 1000,
        # The load generator shares the machine's cores with the server: what it spends per request
        # is CPU the server could not use (on 2 cores it caps req/s ratios below CPU ratios).
        "client_cpu_ms": sum(cpu for _chunk, cpu in chunks) * 1000 / len(samples) if samples else float("nan"),
    }


def bench_backend(backend: str, clients: list[int], seconds: float, workers: int) -> list[dict]:
    # `postgres`: connections closed after every request (QIWEI_DB_CONN_MAX_AGE=0), the baseline;
    # `postgres-persistent`: the shipped default, connections kept open for 60 s.
    persistent = backend == "postgres-persistent"
    env = bench_environment(
        postgres=backend.startswith("postgres"), tag=f"api-{backend}", conn_max_age=60 if persistent else 0
    )
    token = prepare(env)
    from django.db import connections

    connections.close_all()
    server, base = start_gunicorn(env, workers=workers, log_path=Path(env["QIWEI_DATA_DIR"]) / "gunicorn.log")
    try:
        rows = []
        for kind in ("healthz", "context", "ingest"):
            run_load(base, token, 2, 2, kind)  # warm up every worker
            for n in clients:
                row = run_load(base, token, n, seconds, kind)
                row.update(backend=backend, workers=workers)
                rows.append(row)
                print(
                    f"  {backend:8s} {kind:7s} {n:3d} clients: {row['rps']:7.1f} req/s  "
                    f"p50 {row['p50_ms']:6.1f} ms  p95 {row['p95_ms']:7.1f} ms  errors {row['errors']}"
                )
        return rows
    finally:
        stop_process(server)
        drop_pg_databases(env)


# --- beside another revision (--compare REV) -------------------------------------------------

KINDS = ["healthz", "context", "ingest", "turn"]
CONTEXT_TARGET = 2.5  # issue 13: context req/s ≥ 2.5× b40be73's at 8 clients; issue 38: a turn, req/s and CPU
TARGET_REVISION = "b40be73"  # the release the targets are set against


def prepare_in_tree(env: dict[str, str], root: Path) -> str:
    """`prepare` run by the code at `root` in a process of its own (a revision's models and
    migrations may differ from ours); returns the token. The data dir is the caller's to remove."""
    command = [sys.executable, str(Path(__file__).resolve()), "--prepare-only", json.dumps(env)]
    command += ["--code-root", str(root)]
    out = subprocess.run(command, cwd=root, env={**os.environ, "QIWEI_BENCH_KEEP": "1"}, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"prepare on {root} failed:\n{out.stderr[-4000:]}")
    return out.stdout.strip().splitlines()[-1].removeprefix("TOKEN ")


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of `pid` and every process below it, from /proc: the gunicorn
    master and its workers, not the load generator. Children that exited are not counted (workers
    are never recycled here)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(times.get(p, 0.0) for p in tree)


def compare_backend(backend: str, args: argparse.Namespace, revisions: dict[str, Path]) -> list[dict]:
    """Every server up at once; every phase timed in turn, ours and each revision, the order
    rotated every round, so drift on a shared machine falls on all alike. Each phase also reads
    the server's CPU (its process tree, /proc) before and after: CPU per request."""
    persistent = backend == "postgres-persistent"
    variants = {"ours": ROOT, **revisions}
    envs: dict[str, dict[str, str]] = {}
    tokens: dict[str, str] = {}
    servers: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    rows: list[dict] = []
    try:
        for name, root in variants.items():
            tag = f"api-compare-{backend}-{'ours' if name == 'ours' else 'rev'}"
            envs[name] = bench_environment(
                postgres=backend.startswith("postgres"), tag=tag, conn_max_age=60 if persistent else 0
            )
            started = time.perf_counter()
            tokens[name] = prepare_in_tree(envs[name], root)
            print(f"  {backend}: {name} prepared by its own code in {time.perf_counter() - started:.1f} s", flush=True)
        for name, root in variants.items():
            log = Path(envs[name]["QIWEI_DATA_DIR"]) / "gunicorn.log"
            servers[name] = start_gunicorn(envs[name], root=root, workers=args.workers, log_path=log)
        writes = ("turn", "ingest")
        read_kinds = [kind for kind in args.kinds if kind not in writes]
        # Ingest and turns add messages, so they run after every read phase: the reads see the
        # prepared data.
        schedule = [(round_, kind) for round_ in range(args.rounds) for kind in read_kinds]
        for kind in writes:
            if kind in args.kinds:
                schedule += [(round_, kind) for round_ in range(args.rounds)]
        for kind in args.kinds:
            for name in variants:
                run_load(servers[name][1], tokens[name], 2, 2, kind)  # warm up every worker
        names = list(variants)
        for round_, kind in schedule:
            shift = round_ % len(names)
            order = names[shift:] + names[:shift]
            for n in args.clients:
                for name in order:
                    before = process_tree_cpu(servers[name][0].pid)
                    row = run_load(servers[name][1], tokens[name], n, args.seconds, kind)
                    spent = process_tree_cpu(servers[name][0].pid) - before
                    row.update(backend=backend, workers=args.workers, variant=name, round=round_ + 1)
                    row["revision"] = "working tree" if name == "ours" else name
                    row["cpu_ms"] = spent * 1000 / row["requests"] if row["requests"] else float("nan")
                    rows.append(row)
                    print(
                        f"  round {round_ + 1}/{args.rounds} {backend:8s} {kind:7s} {n:3d} clients {name:8s}: "
                        f"{row['rps']:7.1f} req/s  p50 {row['p50_ms']:6.1f} ms  p95 {row['p95_ms']:7.1f} ms  "
                        f"CPU {row['cpu_ms']:6.1f} ms/req (load generator {row['client_cpu_ms']:4.1f})  "
                        f"errors {row['errors']}",
                        flush=True,
                    )
        return rows + [s for revision in revisions for s in compare_summary(rows, backend, args, revision)]
    finally:
        for server, _base in servers.values():
            stop_process(server)
        for env in envs.values():
            drop_pg_databases(env)
            if os.environ.get("QIWEI_BENCH_KEEP") != "1":
                shutil.rmtree(env["QIWEI_DATA_DIR"], ignore_errors=True)


def compare_summary(rows: list[dict], backend: str, args: argparse.Namespace, revision: str) -> list[dict]:
    """Per kind and client count: each variant's medians over the rounds, and ours/REV of req/s."""
    summary: list[dict] = []
    print(
        f"\n  {backend}: ours (working tree) beside {revision}, gunicorn {args.workers} workers × 4 threads each, "
        f"{args.seconds:g} s per phase, {args.rounds} rounds alternating (median of the rounds; errors summed)"
    )
    header = f"{'req/s':>9s}{'p50 ms':>9s}{'p95 ms':>9s}{'CPU ms':>9s}{'load ms':>9s}{'errors':>8s}"
    print(f"  {'kind':8s}{'clients':>8s}  {'variant':9s}{header}  rounds req/s")
    for kind in args.kinds:
        for n in args.clients:
            medians: dict[str, dict] = {}
            for name in (revision, "ours"):
                mine = [r for r in rows if r["kind"] == kind and r["clients"] == n and r["variant"] == name]
                medians[name] = {
                    "kind": kind,
                    "clients": n,
                    "backend": backend,
                    "workers": args.workers,
                    "variant": name,
                    "summary": "median",
                    "rounds": len(mine),
                    "rps": statistics.median(r["rps"] for r in mine),
                    "p50_ms": statistics.median(r["p50_ms"] for r in mine),
                    "p95_ms": statistics.median(r["p95_ms"] for r in mine),
                    "cpu_ms": statistics.median(r["cpu_ms"] for r in mine),
                    "client_cpu_ms": statistics.median(r.get("client_cpu_ms", float("nan")) for r in mine),
                    "errors": sum(r["errors"] for r in mine),
                    "requests": sum(r["requests"] for r in mine),
                    "rounds_rps": [r["rps"] for r in mine],
                }
                m = medians[name]
                print(
                    f"  {kind:8s}{n:8d}  {name:9s}{m['rps']:9.1f}{m['p50_ms']:9.1f}{m['p95_ms']:9.1f}"
                    f"{m['cpu_ms']:9.1f}{m['client_cpu_ms']:9.1f}{m['errors']:8d}  "
                    + ", ".join(f"{v:.1f}" for v in m["rounds_rps"])
                )
            ratio = medians["ours"]["rps"] / medians[revision]["rps"] if medians[revision]["rps"] else float("nan")
            cpu_ratio = (
                medians[revision]["cpu_ms"] / medians["ours"]["cpu_ms"] if medians["ours"]["cpu_ms"] else float("nan")
            )
            spread_rps, spread_cpu = _round_ratios(rows, kind, n, revision)
            verdict = ""
            if kind in ("context", "turn") and revision == TARGET_REVISION:
                met = ratio >= CONTEXT_TARGET and cpu_ratio >= CONTEXT_TARGET
                verdict = f"  ({'meets' if met else 'below'} the ≥ {CONTEXT_TARGET}× target on both)"
            print(
                f"  {kind:8s}{n:8d}  ours/{revision}: req/s {ratio:.2f}× (rounds {spread_rps}), "
                f"CPU per request {cpu_ratio:.2f}× less (rounds {spread_cpu}){verdict}"
            )
            summary += [*medians.values()]
            summary.append(
                {
                    "kind": kind,
                    "clients": n,
                    "backend": backend,
                    "workers": args.workers,
                    "variant": "ratio",
                    "summary": f"ours/{revision}",
                    "ratio": ratio,
                    "cpu_ratio": cpu_ratio,
                    "target": CONTEXT_TARGET if verdict else None,
                    "meets": (ratio >= CONTEXT_TARGET and cpu_ratio >= CONTEXT_TARGET) if verdict else None,
                }
            )
    return summary


def _round_ratios(rows: list[dict], kind: str, clients: int, revision: str) -> tuple[str, str]:
    """The spread: ours/revision of req/s and revision/ours of CPU per request, round by round."""
    by_round: dict[int, dict[str, dict]] = {}
    for row in rows:
        if row.get("kind") == kind and row.get("clients") == clients and "round" in row:
            by_round.setdefault(row["round"], {})[row["variant"]] = row
    rps, cpu = [], []
    for pair in by_round.values():
        if "ours" in pair and revision in pair and pair[revision]["rps"] and pair["ours"]["cpu_ms"]:
            rps.append(pair["ours"]["rps"] / pair[revision]["rps"])
            cpu.append(pair[revision]["cpu_ms"] / pair["ours"]["cpu_ms"])
    if not rps:
        return "-", "-"
    return f"{min(rps):.2f}–{max(rps):.2f}×", f"{min(cpu):.2f}–{max(cpu):.2f}×"


def compare_main(args: argparse.Namespace) -> None:
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="qiwei-api-compare-"))
    rows: list[dict] = []
    try:
        revisions = {rev: revision_tree(rev, tmp / rev.replace("/", "_")) for rev in args.compare}
        for backend in args.backends:
            if backend.startswith("postgres") and not postgres_available():
                print(f"  {backend}: not reachable at 127.0.0.1:5432, skipped")
                continue
            rows.extend(compare_backend(backend, args, revisions))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, ensure_ascii=False, indent=1))


# --- many accounts (issue 13) --------------------------------------------------------------

MULTI_BACKENDS = ["sqlite", "postgres", "pgbouncer"]
MULTI_MODES = ["legacy", "capped"]
MULTI_CUSTOMERS = 5
MULTI_MESSAGES = 100
PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _as_postgres_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


class PrivatePostgres:
    """A throw-away PostgreSQL cluster on a free port with max_connections = 100."""

    def __init__(self) -> None:
        import tempfile

        self.folder = Path(tempfile.mkdtemp(prefix="qiwei-bench-pg-"))
        self.port = free_port()
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")

    def start(self) -> None:
        data = self.folder / "data"
        subprocess.run(
            _as_postgres_user(
                [str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]
            ),
            check=True,
            capture_output=True,
        )
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.folder} "
        options += "-c max_connections=100"
        subprocess.run(
            _as_postgres_user(
                [str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(self.folder / "log"), "-o", options, "-w", "start"]
            ),
            check=True,
            capture_output=True,
        )

    def stop(self) -> None:
        subprocess.run(
            _as_postgres_user([str(PG_BIN / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "immediate", "stop"]),
            capture_output=True,
        )
        shutil.rmtree(self.folder, ignore_errors=True)

    def connect(self, dbname: str = "postgres"):
        import psycopg

        return psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", dbname=dbname, autocommit=True)


def shipped_reset_query() -> str:
    """deploy/pgbouncer.ini's `server_reset_query` (what every transaction's server connection is
    reset with; QIWEI_BENCH_PGBOUNCER_RESET overrides it to compare another)."""
    override = os.environ.get("QIWEI_BENCH_PGBOUNCER_RESET")
    if override:
        return override
    for line in (ROOT / "deploy" / "pgbouncer.ini").read_text().splitlines():
        name, equals, value = line.partition("=")
        if equals and name.strip() == "server_reset_query":
            return value.strip()
    raise RuntimeError("deploy/pgbouncer.ini sets no server_reset_query")


class PgBouncer:
    """Debian's pgbouncer in transaction pooling in front of `server`."""

    def __init__(
        self,
        server_port: int,
        server_connections: int,
        users: tuple[str, ...] = ("postgres",),
        pools: dict[str, int] | None = None,
        idle_timeout: int | None = 10,
    ) -> None:
        """`pools`: a server-connection pool size per database (`pool_size`), for a database every
        account shares (the schema layout: deploy/pgbouncer.ini's formula); others keep 2 each.
        The reset after every transaction is deploy/pgbouncer.ini's (issue 36). `idle_timeout`:
        `server_idle_timeout` (10 s frees a database per account's idle server connections for the
        next; None: PgBouncer's default, 600 s, as deploy/pgbouncer.ini leaves it)."""
        import tempfile

        self.folder = Path(tempfile.mkdtemp(prefix="qiwei-bench-pgbouncer-"))
        self.folder.chmod(0o755)
        self.port = free_port()
        (self.folder / "userlist.txt").write_text("".join(f'"{user}" ""\n' for user in users))
        lines = [
            "[databases]",
            *(f"{name} = host=127.0.0.1 port={server_port} pool_size={size}" for name, size in (pools or {}).items()),
            f"* = host=127.0.0.1 port={server_port}",
            "[pgbouncer]",
            "listen_addr = 127.0.0.1",
            f"listen_port = {self.port}",
            "unix_socket_dir =",
            "auth_type = trust",
            f"auth_file = {self.folder / 'userlist.txt'}",
            "pool_mode = transaction",
            "max_client_conn = 5000",
            "default_pool_size = 2",
            f"max_user_connections = {server_connections}",
            *([f"server_idle_timeout = {idle_timeout}"] if idle_timeout is not None else []),
            f"server_reset_query = {shipped_reset_query()}",
            "server_reset_query_always = 1",
            "ignore_startup_parameters = extra_float_digits",
        ] + (["user = postgres"] if os.geteuid() == 0 else [])
        (self.folder / "pgbouncer.ini").write_text("\n".join(lines) + "\n")
        for path in self.folder.iterdir():
            path.chmod(0o644)
        self.log = open(self.folder / "log", "wb")  # noqa: SIM115
        binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
        self.process = subprocess.Popen([binary, str(self.folder / "pgbouncer.ini")], stdout=self.log, stderr=self.log)
        for _ in range(100):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"pgbouncer did not start; see {self.folder / 'log'}")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=20)
        self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


class ConnectionSampler:
    """Peak client connections on the private server (all of them: default and account
    databases, direct or from PgBouncer), sampled every 20 ms."""

    def __init__(self, server: PrivatePostgres) -> None:
        self.server = server
        self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def count(self, conn: Any) -> int:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchone()
        return int(row[0])

    def start(self) -> None:
        self.peak = 0
        self._stop.clear()

        def run() -> None:
            with self.server.connect() as conn:
                while not self._stop.is_set():
                    self.peak = max(self.peak, self.count(conn))
                    self._stop.wait(0.02)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def stop(self) -> int:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        return self.peak

    def wait_quiet(self, timeout: float = 90.0) -> None:
        """Until the previous phase's connections are gone (a killed server's backends exit)."""
        deadline = time.monotonic() + timeout
        with self.server.connect() as conn:
            while self.count(conn) > 0 and time.monotonic() < deadline:
                time.sleep(0.2)


def multi_prepare(env: dict[str, str], backend: str, count: int, server: PrivatePostgres | None) -> str:
    """`count` accounts with the same customers and history: the first made and filled the normal way,
    the others copied from it (a file copy or CREATE DATABASE … TEMPLATE), then registered."""
    os.environ.update(env)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connections
    from rest_framework.authtoken.models import Token

    try:
        from qiwei_site.platform.services import account_create
    except ImportError:  # an older revision's tree: the registry's services were in conversations
        from conversations.services import account_create  # type: ignore[no-redef]
    from qiwei_site.platform.tenancy import account_connections_close, account_database_config, use_account

    call_command("migrate", verbosity=0, interactive=False)
    first = "bench000"
    account_create(account_id=first, name="压测账号0")
    with use_account(first):
        seed_history(MULTI_CUSTOMERS, MULTI_MESSAGES)
    account_connections_close(first)
    connections.close_all()
    ids = [f"bench{n:03d}" for n in range(1, count)]
    if backend == "sqlite":
        source = Path(account_database_config(first)["NAME"])
        for account_id in ids:
            shutil.copyfile(source, Path(account_database_config(account_id)["NAME"]))
    else:
        assert server is not None
        from psycopg import sql

        with server.connect() as conn:
            # PgBouncer may still keep a server connection to the source: a copy needs it alone.
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                [account_database_config(first)["NAME"]],
            )
            for account_id in ids:
                target = account_database_config(account_id)["NAME"]
                template = account_database_config(first)["NAME"]
                conn.execute(
                    sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(target), sql.Identifier(template))
                )
    for account_id in ids:
        account_create(account_id=account_id, name=f"压测账号{account_id}")
        account_connections_close(account_id)
    user = get_user_model().objects.create_user("bench", password="bench-pass", is_staff=True, is_superuser=True)
    token = Token.objects.create(user=user).key
    connections.close_all()
    return token


def multi_client_process(args: tuple[str, str, int, float, list[str], int]) -> list[tuple[float, int]]:
    base, token, threads, seconds, accounts, seed = args
    import requests

    results: list[tuple[float, int]] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def loop(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        session = requests.Session()
        session.headers["Authorization"] = f"Token {token}"
        position = (seed * threads + n) * max(1, len(accounts) // (threads * 2))
        local: list[tuple[float, int]] = []
        while time.monotonic() < stop_at:
            account = accounts[position % len(accounts)]
            position += 1
            url = f"{base}/api/accounts/{account}/conversations/wm_bench_{rng.randrange(MULTI_CUSTOMERS)}/context/"
            t0 = time.perf_counter()
            try:
                status = session.get(url, timeout=30).status_code
            except requests.RequestException:
                status = 0  # refused, reset or timed out: an error like any 5xx
            local.append((time.perf_counter() - t0, status))
        with lock:
            results.extend(local)

    workers = [threading.Thread(target=loop, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return results


def multi_load(base: str, token: str, clients: int, seconds: float, accounts: list[str]) -> dict[str, Any]:
    processes = 2
    per = [clients // processes + (1 if i < clients % processes else 0) for i in range(processes)]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        chunks = pool.map(multi_client_process, [(base, token, per[i], seconds, accounts, i) for i in range(processes)])
    samples = [sample for chunk in chunks for sample in chunk]
    ok = [latency for latency, status in samples if 0 < status < 400]
    return {
        "requests": len(samples),
        "errors": sum(1 for _, status in samples if not 0 < status < 400),
        "rps": len(ok) / seconds,
        "p50_ms": percentile(ok, 50) * 1000,
        "p95_ms": percentile(ok, 95) * 1000,
    }


def multi_backend(
    backend: str, account_counts: list[int], modes: list[str], seconds: float, clients: int, workers: int, cap: int
) -> list[dict[str, Any]]:
    import tempfile

    server = PrivatePostgres() if backend != "sqlite" else None
    bouncer: PgBouncer | None = None
    data_dir = tempfile.mkdtemp(prefix=f"qiwei-bench-accounts-{backend}-")
    rows: list[dict[str, Any]] = []
    try:
        env = {"DJANGO_SETTINGS_MODULE": "qiwei_site.settings.local", "QIWEI_DATA_DIR": data_dir}
        env["DJANGO_LOG_LEVEL"] = "WARNING"
        sampler = None
        if server is not None:
            server.start()
            with server.connect() as conn:
                conn.execute("CREATE DATABASE qiwei_bench_default")
            port = server.port
            if backend == "pgbouncer":
                bouncer = PgBouncer(server.port, server_connections=80)
                port = bouncer.port
                env["QIWEI_PGBOUNCER"] = "1"
            env["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:{port}/qiwei_bench_default"
            env["QIWEI_ACCOUNT_DATABASE_URL"] = f"postgres://postgres@127.0.0.1:{port}/qiwei_bench_{{account}}"
            env["QIWEI_DB_CONN_MAX_AGE"] = "60"
            sampler = ConnectionSampler(server)
        env["QIWEI_ACCOUNT_CONN_CAP"] = str(cap)
        token = multi_prepare(env, backend, max(account_counts), server)
        accounts = [f"bench{n:03d}" for n in range(max(account_counts))]
        for mode in modes:
            mode_env = {**env, "QIWEI_ACCOUNT_CONN_CAP": "0" if mode == "legacy" else str(cap)}
            for count in account_counts:
                if sampler is not None:
                    sampler.wait_quiet()
                log_path = Path(env["QIWEI_DATA_DIR"]) / "gunicorn.log"
                gunicorn, base = start_gunicorn(mode_env, workers=workers, log_path=log_path)
                try:
                    multi_load(base, token, 4, 2, accounts[:1])  # warm up every worker on one account
                    if sampler is not None:
                        sampler.start()
                    row = multi_load(base, token, clients, seconds, accounts[:count])
                    peak = sampler.stop() if sampler is not None else None
                finally:
                    stop_process(gunicorn)
                row.update(
                    backend=backend, mode=mode, accounts=count, clients=clients, workers=workers, peak_connections=peak
                )
                rows.append(row)
                shown = "-" if peak is None else peak
                print(
                    f"  {backend:9s} {mode:6s} {count:3d} accounts: {row['rps']:7.1f} req/s  "
                    f"p95 {row['p95_ms']:7.1f} ms  errors {row['errors']:5d}/{row['requests']:<6d} "
                    f"peak server connections {shown}",
                    flush=True,
                )
            rows.append(multi_migrate(mode_env, backend, mode, max(account_counts), sampler))
        return rows
    finally:
        if bouncer is not None:
            bouncer.stop()
        if server is not None:
            server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def multi_migrate(
    env: dict[str, str], backend: str, mode: str, count: int, sampler: ConnectionSampler | None
) -> dict[str, Any]:
    """`migrate_accounts` over every account, as a deploy runs it."""
    if sampler is not None:
        sampler.wait_quiet()
        sampler.start()
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "manage.py", "migrate_accounts"],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    peak = sampler.stop() if sampler is not None else None
    failed = out.stderr.count("迁移失败")
    print(
        f"  {backend:9s} {mode:6s} migrate_accounts over {count} accounts: exit {out.returncode}, {failed} failed, "
        f"{seconds:.1f} s, peak server connections {peak if peak is not None else '-'}",
        flush=True,
    )
    return {
        "backend": backend,
        "mode": mode,
        "kind": "migrate_accounts",
        "accounts": count,
        "exit": out.returncode,
        "failed": failed,
        "seconds": seconds,
        "peak_connections": peak,
    }


def multi_main(args: argparse.Namespace) -> None:
    rows: list[dict[str, Any]] = []
    for backend in args.backends:
        if backend != "sqlite" and not (PG_BIN / "initdb").exists():
            print(f"  {backend}: PostgreSQL binaries not found in {PG_BIN}, skipped")
            continue
        if backend == "pgbouncer" and not (shutil.which("pgbouncer") or Path("/usr/sbin/pgbouncer").exists()):
            print("  pgbouncer: not installed (Debian package `pgbouncer`), skipped")
            continue
        cmd = [
            sys.executable,
            __file__,
            "--multi-one",
            backend,
            "--seconds",
            str(args.seconds),
            "--clients",
            str(args.clients[0]),
        ]
        cmd += ["--workers", str(args.workers), "--cap", str(args.cap), "--accounts", *map(str, args.accounts)]
        cmd += ["--modes", *args.modes]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        sys.stdout.write("".join(line for line in out.stdout.splitlines(keepends=True) if not line.startswith("ROWS ")))
        if out.returncode != 0:
            sys.stderr.write(out.stderr[-4000:])
            continue
        rows.extend(json.loads(out.stdout.strip().splitlines()[-1].removeprefix("ROWS ")))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, ensure_ascii=False, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, nargs="+", default=[8, 32])
    parser.add_argument(
        "--backends",
        nargs="+",
        choices=BACKENDS + MULTI_BACKENDS[2:],
        default=["sqlite", "postgres"],
        help="postgres: connections closed per request (baseline); postgres-persistent: the default, kept 60 s",
    )
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--json", help="write the rows here as JSON")
    parser.add_argument(
        "--accounts", type=int, nargs="+", help="many-accounts mode: round-robin over this many accounts"
    )
    parser.add_argument("--modes", nargs="+", choices=MULTI_MODES, default=MULTI_MODES)
    parser.add_argument("--cap", type=int, default=8, help="QIWEI_ACCOUNT_CONN_CAP of the capped mode")
    parser.add_argument(
        "--compare",
        metavar="REV",
        nargs="+",
        help="single-account mode beside each REV's code (git archive), every server up at once",
    )
    parser.add_argument("--rounds", type=int, default=3, help="--compare: alternating rounds per kind")
    parser.add_argument(
        "--kinds", nargs="+", choices=KINDS, default=["healthz", "context"], help="--compare: the phases timed"
    )
    args, _ = parser.parse_known_args()
    if args.accounts:
        if args.backends == ["sqlite", "postgres"]:
            args.backends = MULTI_BACKENDS
        if args.clients == [8, 32]:
            args.clients = [32]
        multi_main(args)
        return
    args = parser.parse_args()
    if args.compare:
        compare_main(args)
        return
    rows: list[dict] = []
    for backend in args.backends:
        if backend.startswith("postgres") and not postgres_available():
            print("  postgres: not reachable at 127.0.0.1:5432, skipped")
            continue
        # Each backend in its own process: Django is configured once per process.
        cmd = [
            sys.executable,
            __file__,
            "--one",
            backend,
            "--seconds",
            str(args.seconds),
            "--workers",
            str(args.workers),
            "--clients",
            *map(str, args.clients),
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        sys.stdout.write("".join(line for line in out.stdout.splitlines(keepends=True) if not line.startswith("ROWS ")))
        if out.returncode != 0:
            sys.stderr.write(out.stderr[-4000:])
            continue
        rows.extend(json.loads(out.stdout.strip().splitlines()[-1].removeprefix("ROWS ")))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    if "--prepare-only" in sys.argv:
        parser = argparse.ArgumentParser()
        parser.add_argument("--prepare-only", required=True, help="the environment, as JSON")
        parser.add_argument("--code-root", type=Path, default=ROOT)
        one = parser.parse_args()
        print("TOKEN " + prepare(json.loads(one.prepare_only), root=one.code_root))
    elif "--multi-one" in sys.argv:
        idx = sys.argv.index("--multi-one")
        backend = sys.argv[idx + 1]
        del sys.argv[idx : idx + 2]
        parser = argparse.ArgumentParser()
        parser.add_argument("--seconds", type=float)
        parser.add_argument("--clients", type=int)
        parser.add_argument("--workers", type=int)
        parser.add_argument("--cap", type=int)
        parser.add_argument("--accounts", type=int, nargs="+")
        parser.add_argument("--modes", nargs="+")
        one = parser.parse_args()
        result = multi_backend(backend, one.accounts, one.modes, one.seconds, one.clients, one.workers, one.cap)
        print("ROWS " + json.dumps(result))
    elif "--one" in sys.argv:
        idx = sys.argv.index("--one")
        backend = sys.argv[idx + 1]
        del sys.argv[idx : idx + 2]
        parser = argparse.ArgumentParser()
        parser.add_argument("--seconds", type=float)
        parser.add_argument("--clients", type=int, nargs="+")
        parser.add_argument("--workers", type=int)
        one = parser.parse_args()
        result = bench_backend(backend, one.clients, one.seconds, one.workers)
        print("ROWS " + json.dumps(result))
    else:
        main()
