"""The connection floor of many accounts (issue 13), without Django's request path: what one
context build costs the database server when the request finds a warm backend, and when it has to
open a new one, as round-robin over more account databases than the server can hold backends for
(DESIGN §4: one database per account; `max_connections = 100`) makes almost every request do.

    .venv/bin/python benchmarks/connection_floor.py [--requests 2000] [--clients 1 8] [--accounts 200]
        [--pool 32] [--bouncer-cap 40] [--batch-seconds 1] [--max-seconds 120] [--json out.json]

Set-up: a private cluster (api_load's PrivatePostgres: initdb, a free port, max_connections = 100);
one account made the normal way (Django, this project's migrations) with a customer of ~300
messages, memory items, a snapshot and a task; one context build (the API view's path:
`PrefetchRequest.for_conversation` then the provider's `prefetch`, i.e. AgentContextBuilder) run
inside `use_account` under `CaptureQueriesContext` on the account connection, which records the
SQL exactly as psycopg's client-side binding sent it; then `--accounts - 1` copies of that
database (CREATE DATABASE … TEMPLATE), each opened once so no timed request is a database's first.

One "request" replays those statements with psycopg (a ClientCursor in autocommit, as Django's
backend runs them; a new connection also gets Django's `set_config('TimeZone', 'UTC')` when the
server's zone differs). Variants, timed in one loop, interleaved in fixed-length batches in an order
shuffled every round:

    a  1 database, one held connection per client (the single-account figure, the baseline)
    b  round-robin over every database, a new connection per request, closed after
    c  the same through PgBouncer (transaction pooling, server connections capped at --bouncer-cap)
    d  round-robin over every database through an LRU pool of --pool held connections (shared)
    e  1 database, a new connection per request (the connection cost without the database switch)

For each: ms per request (p50/p95), requests/s, the ratio to (a), CPU per request (the cluster's
processes from /proc — live ones by schedstat, exited backends by the postmaster's cutime/cstime —,
PgBouncer's, and this client's) and the new server sessions per request (pg_stat_database).
Beside it, `connect + SELECT 1 + close` to the same database again and again (warm) against
round-robin over all of them (cold), through PgBouncer, and a held connection's `SELECT 1`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import os
import random
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import bench_environment, machine_line, percentile, setup_django, write_json

ACCOUNT = "bench000"
CUSTOMER = "wm_floor_0"
OTHER_CUSTOMERS = 4  # the account's other customers: table sizes like a served account's
MESSAGES = 300
VARIANTS = {
    "a": "1 db, held connection",
    "b": "N dbs round-robin, new connection",
    "c": "N dbs round-robin, PgBouncer",
    "d": "N dbs round-robin, LRU pool",
    "e": "1 db, new connection",
}
Connect = Callable[[str], Any]


# --- the account and its captured build --------------------------------------------------------


def seed_account() -> None:
    from django.utils import timezone

    from benchmarks.api_load import TEXTS  # the same conversation texts as the API load
    from conversations.models import Customer, CustomerProfile, Message, Task
    from memory.context.recall import recall_features_store
    from memory.items import memory_item_put
    from memory.models import MemoryType
    from memory.snapshots import snapshot_refresh

    try:
        from qiwei_site.platform.services import account_create
    except ImportError:  # an older revision's tree: the registry's services were in conversations
        from conversations.services import account_create  # type: ignore[no-redef]
    from qiwei_site.platform.tenancy import use_account

    account_create(account_id=ACCOUNT, name="连接压测")
    rng = random.Random(7)
    start = timezone.now() - dt.timedelta(days=60)
    with use_account(ACCOUNT):
        for c in range(1 + OTHER_CUSTOMERS):
            customer = Customer.objects.create(conversation_id=f"wm_floor_{c}", display_name=f"客户{c}")
            CustomerProfile.objects.create(customer=customer)
            Message.objects.bulk_create(
                Message(
                    customer=customer,
                    external_id=f"seed-{c}-{i}",
                    direction="inbound" if i % 2 == 0 else "outbound",
                    sender="客户" if i % 2 == 0 else "顾问",
                    text=rng.choice(TEXTS).format(n=rng.randint(1, 12) * 1000 if i % 3 else rng.randint(1, 18)),
                    sent_at=start + dt.timedelta(minutes=7 * i),
                )
                for i in range(MESSAGES)
            )
            recall_features_store(messages=Message.objects.filter(customer=customer).only("id", "text").order_by("id"))
            items = [
                (MemoryType.CONSTRAINT, "constraint:顶楼", "不考虑顶楼，家里有老人"),
                (MemoryType.PREFERENCE, "preference:地铁", "离地铁近，步行十分钟以内"),
                (MemoryType.FACT, "profile:budget", "预算6000元/月"),
                (MemoryType.FACT, "profile:district", "望京"),
                (MemoryType.EVENT, "event:viewing", "上周六看过望京两居室，嫌采光差"),
            ]
            for type_, key, content in items:
                memory_item_put(
                    customer=customer, type=type_, key=key, content=content, actor="benchmark", reason="基准数据"
                )
            snapshot_refresh(customer=customer, reason="基准数据")
            Task.objects.create(customer=customer, title="周六下午带客户看望京两居室")
            last = customer.messages.order_by("-sent_at").values_list("sent_at", flat=True).first()
            Customer.objects.filter(pk=customer.pk).update(last_message_at=last)


def capture_build() -> tuple[list[str], list[int], int, int]:
    """The account-database SQL of one context build as sent, each statement's row count (to check
    the replay), the prompt's length and the build's queries on the default database (not replayed)."""
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    from memory.context import builder
    from memory.providers import PrefetchRequest, get_provider
    from qiwei_site.platform.tenancy import use_account

    def build() -> Any:
        return get_provider().prefetch(PrefetchRequest.for_conversation(CUSTOMER))

    with use_account(ACCOUNT) as alias:
        build()  # a first build writes what was missing (recall features); the captured one only reads
        clear = getattr(builder, "context_cache_clear", None)
        if clear is not None:
            clear()
        counts: list[int] = []

        def count_rows(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
            result = execute(sql, params, many, context)
            counts.append(context["cursor"].rowcount)
            return result

        account = connections[alias]
        with (
            CaptureQueriesContext(account) as captured,
            CaptureQueriesContext(connections["default"]) as default,
            account.execute_wrapper(count_rows),
        ):
            built = build()
    statements = [query["sql"] for query in captured.captured_queries]
    return statements, counts, len(built.as_dict()["prompt"]), len(default.captured_queries)


def copy_databases(server: Any, source: str, targets: list[str], workers: int = 2) -> int:
    """CREATE DATABASE … TEMPLATE `source` for every target, two at a time, with fsync off meanwhile
    (a throw-away cluster; the timed phases are read-only and run with it back on). Returns the size."""
    from psycopg import sql

    with server.connect() as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [source],
        )
        conn.execute("ALTER SYSTEM SET fsync = off")
        conn.execute("SELECT pg_reload_conf()")
        failures: list[BaseException] = []

        def work(names: list[str]) -> None:
            try:
                with server.connect() as own:
                    for name in names:
                        statement = sql.SQL("CREATE DATABASE {} TEMPLATE {}")
                        own.execute(statement.format(sql.Identifier(name), sql.Identifier(source)))
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=work, args=(targets[i::workers],)) for i in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        conn.execute("ALTER SYSTEM RESET fsync")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute("CHECKPOINT")
        if failures:
            raise RuntimeError(f"a copy failed: {failures[0]!r}") from failures[0]
        return int(conn.execute("SELECT pg_database_size(%s)", [source]).fetchone()[0])


# --- replaying it ------------------------------------------------------------------------------


def make_connect(port: int) -> Connect:
    import psycopg

    def connect(dbname: str) -> Any:
        conn = psycopg.connect(
            host="127.0.0.1",
            port=port,
            user="postgres",
            dbname=dbname,
            autocommit=True,
            client_encoding="UTF8",
            cursor_factory=psycopg.ClientCursor,
            prepare_threshold=None,
        )
        if conn.info.parameter_status("TimeZone") != "UTC":  # Django's _configure_timezone (USE_TZ)
            conn.execute("SELECT set_config('TimeZone', %s, false)", ["UTC"])
        return conn

    return connect


def replay(conn: Any, statements: Sequence[str]) -> list[int]:
    rows = []
    with conn.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)
            rows.append(len(cursor.fetchall()) if cursor.description else cursor.rowcount)
    return rows


class LruPool:
    """Held connections over many databases, at most `capacity`, least recently used closed first;
    like qiwei_site.platform.connections' pool (which checks a connection without a query)."""

    def __init__(self, capacity: int, connect: Connect) -> None:
        self.capacity = capacity
        self.connect = connect
        self.lock = threading.Lock()
        self.idle: OrderedDict[int, tuple[str, Any]] = OrderedDict()
        self.by_db: dict[str, list[int]] = {}
        self.open = 0
        self.hits = 0
        self.misses = 0

    def checkout(self, dbname: str) -> Any:
        victim = None
        with self.lock:
            waiting = self.by_db.get(dbname)
            if waiting:
                self.hits += 1
                return self.idle.pop(waiting.pop())[1]
            self.misses += 1
            if self.open >= self.capacity and self.idle:
                ident, (old_db, victim) = self.idle.popitem(last=False)
                self.by_db[old_db].remove(ident)
            else:
                self.open += 1
        if victim is not None:
            victim.close()
        return self.connect(dbname)

    def checkin(self, dbname: str, conn: Any) -> None:
        with self.lock:
            self.idle[id(conn)] = (dbname, conn)
            self.by_db.setdefault(dbname, []).append(id(conn))

    def close(self) -> None:
        with self.lock:
            for _db, conn in self.idle.values():
                conn.close()
            self.idle.clear()
            self.by_db.clear()


# --- CPU and sessions ----------------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def _schedstat(pid: int) -> float:
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


def _reaped(pid: int) -> float:
    """CPU of the children `pid` has waited for (the backends that exited), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / TICK  # cutime, cstime (fields 16, 17 of stat)


def cluster_cpu(postmaster: int) -> float:
    total = _reaped(postmaster) + _schedstat(postmaster)
    children = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()
    for child in children:
        # One that exited in between is counted in the postmaster's cutime from now on.
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            total += _schedstat(int(child))
    return total


class Meter:
    """CPU seconds of the cluster, PgBouncer and this process, and the server's sessions so far."""

    def __init__(self, postmaster: int, bouncer_pid: int | None, monitor: Any) -> None:
        self.postmaster = postmaster
        self.bouncer_pid = bouncer_pid
        self.monitor = monitor

    def sessions(self) -> int:
        return int(self.monitor.execute("SELECT sum(sessions) FROM pg_stat_database").fetchone()[0] or 0)

    def read(self) -> tuple[float, float, float]:
        """The cluster's CPU, PgBouncer's and the postmaster's own (forking a backend is charged to it)."""
        bouncer = _schedstat(self.bouncer_pid) if self.bouncer_pid else 0.0
        return cluster_cpu(self.postmaster), bouncer, _schedstat(self.postmaster)


@dataclasses.dataclass
class Tally:
    latencies: list[float] = dataclasses.field(default_factory=list)
    wall: float = 0.0
    server_cpu: float = 0.0
    bouncer_cpu: float = 0.0
    postmaster_cpu: float = 0.0
    client_cpu: float = 0.0
    sessions: int = 0

    def row(self, name: str, base: Tally | None) -> dict[str, Any]:
        n = len(self.latencies)
        rps = n / self.wall if self.wall else float("nan")
        row = {
            "variant": name,
            "requests": n,
            "p50_ms": percentile(self.latencies, 50) * 1000,
            "p95_ms": percentile(self.latencies, 95) * 1000,
            "rps": rps,
            "server_cpu_ms": self.server_cpu / n * 1000 if n else float("nan"),
            "bouncer_cpu_ms": self.bouncer_cpu / n * 1000 if n else float("nan"),
            "postmaster_cpu_ms": self.postmaster_cpu / n * 1000 if n else float("nan"),
            "client_cpu_ms": self.client_cpu / n * 1000 if n else float("nan"),
            "sessions_per_request": self.sessions / n if n else float("nan"),
        }
        if base is not None:
            row["ratio"] = rps / (len(base.latencies) / base.wall)
        return row


# --- the timed loop ------------------------------------------------------------------------------


class Client:
    """One client's request of every variant: its own position in each variant's round-robin (so
    each variant sees a strictly cyclic sequence) and its held connection for (a)."""

    def __init__(self, index: int, clients: int, dbs: list[str], env: dict[str, Any]) -> None:
        self.dbs = dbs
        self.env = env
        # Spread the clients over the round-robin, as api_load's load generator does.
        start = index * max(1, len(dbs) // (clients * 2))
        self.positions = {"b": start, "c": start, "d": start}
        self.held = env["direct"](dbs[0])

    def next_db(self, variant: str) -> str:
        dbname = self.dbs[self.positions[variant] % len(self.dbs)]
        self.positions[variant] += 1
        return dbname

    def request(self, variant: str) -> None:
        statements = self.env["statements"]
        if variant == "a":
            replay(self.held, statements)
        elif variant in ("b", "c", "e"):
            dbname = self.dbs[0] if variant == "e" else self.next_db(variant)
            conn = self.env["bouncer" if variant == "c" else "direct"](dbname)
            try:
                replay(conn, statements)
            finally:
                conn.close()
        else:
            dbname = self.next_db(variant)
            pool: LruPool = self.env["pool"]
            conn = pool.checkout(dbname)
            try:
                replay(conn, statements)
            finally:
                pool.checkin(dbname, conn)

    def close(self) -> None:
        self.held.close()


def run_variants(
    clients: int,
    variants: list[str],
    env: dict[str, Any],
    meter: Meter,
    *,
    requests: int,
    batch_seconds: float,
    max_seconds: float,
    seed: int,
) -> dict[str, Tally]:
    dbs: list[str] = env["dbs"]
    workers = [Client(i, clients, dbs, env) for i in range(clients)]
    tallies = {v: Tally() for v in variants}
    start_gate = threading.Barrier(clients + 1)
    end_gate = threading.Barrier(clients + 1)
    box: dict[str, Any] = {"variant": None, "deadline": 0.0, "stop": False}
    errors: list[BaseException] = []

    def loop(worker: Client) -> None:
        while True:
            start_gate.wait()
            if box["stop"]:
                return
            variant, deadline = box["variant"], box["deadline"]
            local = []
            try:
                while time.perf_counter() < deadline:
                    t0 = time.perf_counter()
                    worker.request(variant)
                    local.append(time.perf_counter() - t0)
            except BaseException as exc:  # a failed request ends the run: report it, not a figure
                errors.append(exc)
            box.setdefault("results", []).append(local)
            end_gate.wait()

    threads = [threading.Thread(target=loop, args=(w,), daemon=True) for w in workers]
    for thread in threads:
        thread.start()
    rng = random.Random(seed)
    started = time.monotonic()
    rounds = 0
    try:
        while not errors:
            # A variant with enough requests sits out the later rounds, but for the baseline (a),
            # which stays in every round so every figure has one measured beside it.
            order = [v for v in variants if v == "a" or len(tallies[v].latencies) < requests] or list(variants)
            rng.shuffle(order)
            for variant in order:
                sessions0 = meter.sessions()
                server0, bouncer0, postmaster0 = meter.read()
                client0 = time.process_time()
                box.update(variant=variant, results=[])
                t0 = time.perf_counter()
                box["deadline"] = t0 + batch_seconds
                start_gate.wait()
                end_gate.wait()
                wall = time.perf_counter() - t0
                client1 = time.process_time()
                server1, bouncer1, postmaster1 = meter.read()
                tally = tallies[variant]
                for local in box["results"]:
                    tally.latencies.extend(local)
                tally.wall += wall
                tally.client_cpu += client1 - client0
                tally.server_cpu += server1 - server0
                tally.bouncer_cpu += bouncer1 - bouncer0
                tally.postmaster_cpu += postmaster1 - postmaster0
                tally.sessions += meter.sessions() - sessions0
            rounds += 1
            done = min(len(t.latencies) for t in tallies.values()) >= requests
            if done or time.monotonic() - started > max_seconds:
                break
    finally:
        box["stop"] = True
        start_gate.wait()
        for thread in threads:
            thread.join()
        for worker in workers:
            worker.close()
    if errors:
        raise RuntimeError(f"a request failed: {errors[0]!r}") from errors[0]
    elapsed = time.monotonic() - started
    print(f"  ({clients} client(s): {rounds} rounds of {batch_seconds:g} s batches, {elapsed:.0f} s)", flush=True)
    return tallies


def connection_costs(env: dict[str, Any], meter: Meter, reps: int, seed: int) -> dict[str, Tally]:
    """connect + SELECT 1 + close: the same database each time (warm), round-robin over all (cold),
    round-robin through PgBouncer; and SELECT 1 on a held connection."""
    import psycopg

    dbs: list[str] = env["dbs"]
    ports = {"direct": env["port"], "bouncer": env["bouncer_port"]}

    def bare(kind: str, dbname: str) -> None:
        conn = psycopg.connect(host="127.0.0.1", port=ports[kind], user="postgres", dbname=dbname, autocommit=True)
        conn.execute("SELECT 1").fetchone()
        conn.close()

    held = psycopg.connect(host="127.0.0.1", port=env["port"], user="postgres", dbname=dbs[0], autocommit=True)

    def held_select() -> None:
        held.execute("SELECT 1").fetchone()

    positions = {"direct": 0, "bouncer": 0}

    def next_db(kind: str) -> str:
        positions[kind] += 1
        return dbs[positions[kind] % len(dbs)]

    kinds: dict[str, Callable[[], None]] = {
        "SELECT 1 on a held connection": held_select,
        "connect+SELECT 1+close, same db (warm)": lambda: bare("direct", dbs[0]),
        "connect+SELECT 1+close, round-robin (cold db)": lambda: bare("direct", next_db("direct")),
        "the same via PgBouncer, round-robin": lambda: bare("bouncer", next_db("bouncer")),
    }
    tallies = {k: Tally() for k in kinds}
    rng = random.Random(seed)
    per_batch = 25
    for _ in range(max(1, reps // per_batch)):
        order = list(kinds)
        rng.shuffle(order)
        for kind in order:
            sessions0 = meter.sessions()
            server0, bouncer0, postmaster0 = meter.read()
            client0 = time.process_time()
            t0 = time.perf_counter()
            for _ in range(per_batch):
                s = time.perf_counter()
                kinds[kind]()
                tallies[kind].latencies.append(time.perf_counter() - s)
            tally = tallies[kind]
            tally.wall += time.perf_counter() - t0
            tally.client_cpu += time.process_time() - client0
            server1, bouncer1, postmaster1 = meter.read()
            tally.server_cpu += server1 - server0
            tally.bouncer_cpu += bouncer1 - bouncer0
            tally.postmaster_cpu += postmaster1 - postmaster0
            tally.sessions += meter.sessions() - sessions0
    held.close()
    return tallies


# --- output ----------------------------------------------------------------------------------------


def print_table(title: str, rows: list[dict[str, Any]], *, ratio: bool = True) -> None:
    print(f"\n{title}")
    head = f"  {'variant':48s} {'n':>6s} {'p50 ms':>7s} {'p95 ms':>7s} {'req/s':>7s}"
    head += f" {'×(a)':>5s}" if ratio else ""
    head += f" {'srv CPU':>8s} {'(fork)':>7s} {'pgb CPU':>8s} {'cli CPU':>8s} {'sess/req':>8s}"
    print(head + "   (CPU: ms per request; fork: the postmaster's share of srv)")
    for row in rows:
        line = (
            f"  {row['variant']:48s} {row['requests']:6d} {row['p50_ms']:7.2f} {row['p95_ms']:7.2f} {row['rps']:7.1f}"
        )
        line += f" {row.get('ratio', float('nan')):5.2f}" if ratio else ""
        line += f" {row['server_cpu_ms']:8.2f} {row['postmaster_cpu_ms']:7.2f}"
        line += f" {row['bouncer_cpu_ms']:8.2f} {row['client_cpu_ms']:8.2f}"
        print(line + f" {row['sessions_per_request']:8.2f}")


def cpu_ms(row: dict[str, Any]) -> float:
    return float(row["server_cpu_ms"] + row["bouncer_cpu_ms"] + row["client_cpu_ms"])


def reading(rows: list[dict[str, Any]], accounts: int, django_rps: float) -> dict[str, float]:
    """What the figures imply for the 0.8× target: the extra CPU of a request that opens a backend,
    how many requests may do so, and the same against the Django request's own CPU (`django_rps`,
    the single-account context throughput api_load measured on this machine, all cores busy)."""
    clients = max(row["clients"] for row in rows)
    by_key = {row["key"]: row for row in rows if row["clients"] == clients}
    if "a" not in by_key or "b" not in by_key:
        return {}
    base, cold = cpu_ms(by_key["a"]), cpu_ms(by_key["b"])
    extra = cold - base
    cores = os.cpu_count() or 1
    django = cores * 1000 / django_rps
    allowed = 0.25 * django  # C / (C + m·Δ) ≥ 0.8  ⇔  m·Δ ≤ C / 4
    out = {
        "clients": clients,
        "replay_cpu_ms_warm": base,
        "replay_cpu_ms_cold": cold,
        "extra_cpu_ms_per_new_backend": extra,
        "replay_max_new_backend_share": min(1.0, 0.25 * base / extra),
        "django_cpu_ms_per_request": django,
        "django_ratio_if_every_request_opens_one": django / (django + extra),
        "django_allowed_extra_ms": allowed,
        "django_max_new_backend_share": min(1.0, allowed / extra),
    }
    share = out["django_max_new_backend_share"]
    print(f"\nreading ({clients} clients, CPU of the cluster + PgBouncer + client per request):")
    print(
        f"  a request that opens a backend costs {extra:.1f} ms CPU more than on a held one "
        f"({cold:.1f} vs {base:.1f} ms); the replay alone reaches 0.8× only if ≤ "
        f"{out['replay_max_new_backend_share'] * 100:.0f}% of requests open one"
    )
    print(
        f"  the Django request: {cores} cores / {django_rps:g} req/s = {django:.1f} ms CPU; + {extra:.1f} ms on every "
        f"request → ≤ {out['django_ratio_if_every_request_opens_one']:.2f}×; 0.8× allows {allowed:.1f} ms per "
        f"request, i.e. ≤ {share * 100:.0f}% of requests opening a backend (or a backend start ≤ {allowed:.1f} ms)"
    )
    print(
        f"  strict round-robin over {accounts} accounts through an LRU pool of P < {accounts} hits never; uniform "
        f"random access hits P/{accounts}: {share * 100:.0f}% misses needs P ≥ {accounts * (1 - share):.0f} held "
        f"backends (max_connections = 100)"
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000, help="at least this many of each variant")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--accounts", type=int, default=200, help="account databases in the round-robin")
    parser.add_argument("--pool", type=int, default=32, help="held connections of variant d")
    parser.add_argument("--bouncer-cap", type=int, default=40, help="PgBouncer's server connections (< 100)")
    parser.add_argument("--batch-seconds", type=float, default=1.0)
    parser.add_argument("--max-seconds", type=float, default=120.0, help="per client count, whatever --requests")
    parser.add_argument("--connect-reps", type=int, default=300)
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument(
        "--django-rps", type=float, default=142.0, help="single-account context req/s through Django (api_load)"
    )
    parser.add_argument("--json", help="write the rows here as JSON")
    args = parser.parse_args()

    from benchmarks.api_load import PgBouncer, PrivatePostgres

    held_max = max(args.clients) * 2 + args.pool + args.bouncer_cap + 4  # a, transient b/e, d, c, monitor
    if held_max > 100:
        parser.error(f"{held_max} server connections could be open at once; max_connections is 100")
    began = time.monotonic()
    print(f"connection floor — {machine_line()}", flush=True)
    server = PrivatePostgres()
    bouncer = None
    try:
        server.start()
        with server.connect() as conn:
            conn.execute("CREATE DATABASE qiwei_bench_default")
            version = conn.execute("SHOW server_version").fetchone()[0]
            settings_line = ", ".join(
                f"{name} {conn.execute(f'SHOW {name}').fetchone()[0]}" for name in ("max_connections", "shared_buffers")
            )
        env = bench_environment(postgres=False, tag="connection-floor")
        env["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:{server.port}/qiwei_bench_default"
        env["QIWEI_ACCOUNT_DATABASE_URL"] = f"postgres://postgres@127.0.0.1:{server.port}/qiwei_bench_{{account}}"
        env["QIWEI_DB_CONN_MAX_AGE"] = "60"
        setup_django(env, fresh=False)
        seed_account()
        statements, counts, prompt_chars, default_queries = capture_build()
        from django.db import connections

        from qiwei_site.platform.tenancy import account_connections_close, account_database_config

        source = account_database_config(ACCOUNT)["NAME"]
        account_connections_close(ACCOUNT)
        connections.close_all()
        print(
            f"PostgreSQL {version} ({settings_line}); one context build = {len(statements)} statements on the "
            f"account database (+{default_queries} on default, not replayed), prompt {prompt_chars} chars",
            flush=True,
        )
        for sql, n in zip(statements, counts, strict=True):
            print(f"    {n:4d} rows  {' '.join(sql.split())[:110]}")

        t0 = time.perf_counter()
        dbs = [source] + [f"qiwei_floor_{n:03d}" for n in range(1, args.accounts)]
        size = copy_databases(server, source, dbs[1:])
        print(f"{len(dbs) - 1} copies of {size / 1e6:.1f} MB made in {time.perf_counter() - t0:.1f} s", flush=True)

        direct = make_connect(server.port)
        first_connects = []
        for name in dbs:  # every database opened and read once: no timed request is its first
            s = time.perf_counter()
            conn = direct(name)
            conn.execute("SELECT 1").fetchone()
            first_connects.append(time.perf_counter() - s)
            read = replay(conn, statements)
            conn.close()
            if read != counts:
                raise RuntimeError(f"replay on {name} read {read} rows, the build {counts}")
        print(
            f"first connection ever to a database (+SELECT 1): p50 {percentile(first_connects[1:], 50) * 1000:.1f} ms, "
            f"p95 {percentile(first_connects[1:], 95) * 1000:.1f} ms over {len(dbs) - 1} new copies; "
            "replayed row counts match the build on every database",
            flush=True,
        )

        bouncer = PgBouncer(server.port, server_connections=args.bouncer_cap)
        postmaster = int((server.folder / "data" / "postmaster.pid").read_text().split()[0])
        monitor = server.connect()
        meter = Meter(postmaster, bouncer.process.pid, monitor)
        shared = {
            "dbs": dbs,
            "statements": statements,
            "direct": direct,
            "bouncer": make_connect(bouncer.port),
            "port": server.port,
            "bouncer_port": bouncer.port,
        }
        out: dict[str, Any] = {"statements": len(statements), "accounts": len(dbs), "rows": []}

        costs = connection_costs(shared, meter, args.connect_reps, seed=11)
        cost_rows = [tally.row(kind, None) for kind, tally in costs.items()]
        print_table("connection cost alone (1 client)", cost_rows, ratio=False)
        out["connection_costs"] = cost_rows

        for clients in args.clients:
            pool = LruPool(args.pool, direct)
            tallies = run_variants(
                clients,
                args.variants,
                {**shared, "pool": pool},
                meter,
                requests=args.requests,
                batch_seconds=args.batch_seconds,
                max_seconds=args.max_seconds,
                seed=clients,
            )
            pool_line = f"LRU pool of {args.pool}: {pool.hits} hits, {pool.misses} misses"
            pool.close()
            base = tallies.get("a")
            rows = []
            for key in args.variants:
                label = VARIANTS[key].replace("N dbs", f"{len(dbs)} dbs")
                if key == "c":
                    label += f" (≤{args.bouncer_cap} srv)"
                if key == "d":
                    label = label.replace("LRU pool", f"LRU pool {args.pool}")
                row = tallies[key].row(f"({key}) {label}", base)
                row.update(key=key, clients=clients)
                rows.append(row)
            print_table(f"one context build replayed, {clients} concurrent client(s)", rows)
            print(f"  {pool_line}", flush=True)
            out["rows"].extend(rows)
        monitor.close()
        out["reading"] = reading(out["rows"], len(dbs), args.django_rps)
        write_json(args.json, out)
    finally:
        if bouncer is not None:
            bouncer.stop()
        server.stop()
    print(f"\ntotal {time.monotonic() - began:.0f} s (set-up and teardown included)", flush=True)


if __name__ == "__main__":
    main()
