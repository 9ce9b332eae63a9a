"""Many accounts on one PostgreSQL (issue 23): a schema per account behind one shared pool beside a
database per account, in the same run, on the same private cluster (`max_connections = 100`).

    .venv/bin/python benchmarks/schema_layout.py [--accounts 200] [--clients 8 32] [--seconds 8]
        [--rounds 2] [--workers 4] [--cap 8] [--routes direct pgbouncer] [--history 260]
        [--shared-buffers 1GB] [--json out.json]

Set-up (untimed): a private cluster (api_load's PrivatePostgres), a login role `qiwei_bench`
(NOSUPERUSER NOINHERIT CREATEROLE) owning the schema layout's one database; each layout gets its own
registry (`default`) and data dir. Every account of both layouts is made as production makes it:
`onboard_accounts` (what `accounts_onboard` runs, two processes), each account from the migrated
template and verified against it (the count made from the template is printed); nothing is copied by
hand. Each account's 5 customers then get `--history` messages each (default 260), written through
the ORM on the account's own connection (the same rows in every account), their recall features
stored as ingest stores them. Both layouts are vacuumed and analysed before timing (the schema
layout's one database, each account database), and again after each warm-up, as a long-running
server's would be: no autovacuum catching up inside a timed phase. `--shared-buffers` sizes the
cluster's buffer cache (initdb's 128MB unless given; 200 accounts' schemas with these histories
take ~850 MB, so at 128MB the all-accounts phases read much of their data from the OS page cache).

A fair baseline (issue 38, item 5): both phases must build contexts of the same size. Every turn
stores a message, so a phase's customers grow: one account's phase puts all of its turns on 5
customers (~100 messages each per 12 s phase here), an all-accounts phase spreads them over 1,000.
Before, the one-account phase always used the first account, which grew to a full window while the
others' stayed small, so the baseline did more work than the phase it was compared with. Two things
make them equal. Histories start at least a full window deep (the builder reads the 12 recent and
240 scanned messages, 252; `--history` 260), and histories only grow, so every context request of
every phase reads a full window whatever the writes: the window, which is what a build reads and
scores, is the same by construction. And the one-account phase rotates: each takes the next account
(bench000, bench001, ...), which starts from the history every account has, rather than one
account's ever-growing one; the customer history then differs only by what the phase itself writes
(printed). Rotation rather than a reset: the product removes messages only by a forget (audited,
scrubbed), not a path to time between phases, and a reset would not stop the growth inside a phase;
rather than bounded writes: a turn must store a message, or its context would come from the cache.
The load generator tallies each customer's messages (the seeded history plus every message a turn
stored), replays each phase's turns in the order their messages were stored, and prints the phase's
mean window (messages in the context window: the history, up to the window's size) and mean history
as its requests saw them; after the phases the tally is checked against the database for the
accounts used alone.

Timed: for each route (direct to PostgreSQL, through PgBouncer in transaction pooling) one gunicorn
per layout (`--workers` workers, 4 threads, QIWEI_ACCOUNT_CONN_CAP=`--cap`), warmed up over every
account (16 clients for `--warm-seconds`, default max(8, accounts / 10) s, so each worker has met
nearly every account, as a long-running server has); then, for each client count, the phases one
account / all accounts, layout by layout, alternated for `--rounds` rounds (the order reversed every
other round; the one account a different one each time, as above). In every phase each client
thread, in turn over its accounts, POSTs one new customer message and then GETs that conversation's
context (the context is never served from a cache); the context GET is what is timed. Printed per
phase: context req/s, p95, errors, the peak of server client connections (pg_stat_activity every
20 ms) and the account stores' server sessions it opened (pg_stat_database), the share of the phase
an autovacuum worker ran, the CPU per turn of the PostgreSQL server (postmaster and backends) and of
gunicorn (master and workers), from /proc, and the mean window and history; per layout: the ratio of
all accounts to one account (median over rounds, each round's beside it, and both phases' mean
window and history) — the issue's target is ≥ 0.8 — and `migrate_accounts` over every account (exit,
s), with current fingerprints and with `--force`. `--layouts schema --only-all` times only the
all-accounts phase (a soak: errors, peak connections; the account store's connections counted
apart).

`--day-seconds S` then runs a realistic day on the schema layout (one gunicorn and a real Celery
worker capturing): open-loop Poisson arrivals at `--day-rate` turns per second, ten times that for
a tenth of the day from 40 % in, each turn one customer's message in, its context, a draft; once over
one account and once over all (`--day-rounds N`: N of each, alternated, medians compared); prints
errors per kind and the context p50/p95 (target: all accounts' p95 within 1.5× of one account's).
`--day-only` skips the timed phases and `migrate_accounts` (the day alone, after the warm-up).

    .venv/bin/python benchmarks/schema_layout.py --accounts 500 --layouts schema --only-all \
        --clients 32 --seconds 60 --rounds 1 --day-seconds 90
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.api_load import (
    MULTI_CUSTOMERS,
    PG_BIN,
    TEXTS,
    ConnectionSampler,
    PgBouncer,
    PrivatePostgres,
    _as_postgres_user,
    recall_features_store_all,
    seed_history,
)
from benchmarks.common import ROOT, machine_line, percentile, start_gunicorn, stop_process, tree_cpu_seconds

LOGIN = "qiwei_bench"
SCHEMA_DB = "qiwei_bench_accounts"
TARGET = 0.8


class AccountConnectionSampler(ConnectionSampler):
    """Peak client connections, all of them and those to account stores (the schema layout's one
    database, or the account databases), sampled every 20 ms; and the share of samples in which an
    autovacuum worker ran (its CPU is the server's, counted in the phase's CPU per turn)."""

    peak_accounts = 0
    samples = 0
    autovacuum_samples = 0

    def count(self, conn: Any) -> int:
        row = conn.execute(
            "SELECT count(*) FILTER (WHERE backend_type = 'client backend'),"
            " count(*) FILTER (WHERE backend_type = 'client backend'"
            " AND (datname = %s OR datname LIKE 'qiwei_bench_bench%%')),"
            " count(*) FILTER (WHERE backend_type = 'autovacuum worker')"
            " FROM pg_stat_activity WHERE pid <> pg_backend_pid()",
            [SCHEMA_DB],
        ).fetchone()
        self.peak_accounts = max(self.peak_accounts, int(row[1]))
        self.samples += 1
        self.autovacuum_samples += 1 if row[2] else 0
        return int(row[0])

    def start(self) -> None:
        self.peak_accounts = self.samples = self.autovacuum_samples = 0
        super().start()

    def autovacuum_share(self) -> float:
        return self.autovacuum_samples / self.samples if self.samples else 0.0


def _env(layout: str, port: int, data_dir: str, cap: int, pgbouncer: bool) -> dict[str, str]:
    max_age = os.environ.get("QIWEI_DB_CONN_MAX_AGE", "60")  # the shipped default unless set
    env = {
        "DJANGO_SETTINGS_MODULE": "qiwei_site.settings.local",
        "QIWEI_DATA_DIR": data_dir,
        "DJANGO_LOG_LEVEL": "WARNING",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{port}/qiwei_bench_default_{layout}",
        "QIWEI_DB_CONN_MAX_AGE": max_age,
        "QIWEI_ACCOUNT_CONN_CAP": str(cap),
        "QIWEI_PG_SCHEMAS_PER_CONNECTION": os.environ.get("QIWEI_PG_SCHEMAS_PER_CONNECTION", "50"),
    }
    if layout == "schema":
        env["QIWEI_ACCOUNT_DATABASE_URL"] = f"postgres://{LOGIN}@127.0.0.1:{port}/{SCHEMA_DB}"
    else:
        env["QIWEI_ACCOUNT_DATABASE_URL"] = f"postgres://postgres@127.0.0.1:{port}/qiwei_bench_{{account}}"
    if pgbouncer:
        env["QIWEI_PGBOUNCER"] = "1"
    return env


def _seed_accounts(args: tuple[dict[str, str], list[str], int, int]) -> None:
    """A child process: each account's customers and their histories, written through the ORM on
    the account's own connection (the same rows in every account: `seed_history` is seeded), then
    their recall features stored, as ingest stores them."""
    env, ids, customers, messages = args
    os.environ.update(env)
    import django

    django.setup()
    from qiwei_site.platform.tenancy import account_connections_close, use_account

    for account_id in ids:
        with use_account(account_id):
            seed_history(customers, messages)
            recall_features_store_all()
        account_connections_close(account_id)


def prepare(layout: str, env: dict[str, str], count: int, history: int, server: PrivatePostgres) -> tuple[str, int]:
    """Runs in a process of its own (Django set up once per layout): every account onboarded from
    the migrated template (`onboard_accounts`, as `accounts_onboard` does), its histories seeded.
    Returns a staff token and the context window's size in messages (recent + scanned)."""
    os.environ.update(env)
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connections
    from rest_framework.authtoken.models import Token

    from qiwei_site.platform.account_migrations import CREATED, NewAccount, onboard_accounts
    from qiwei_site.platform.tenancy import TEMPLATE

    call_command("migrate", verbosity=0, interactive=False)
    ids = [f"bench{n:03d}" for n in range(count)]
    new = [NewAccount(account_id, f"压测账号{account_id}", actor="benchmarks/schema_layout.py") for account_id in ids]
    results = list(onboard_accounts(new, jobs=2))
    failed = [r for r in results if r.outcome != CREATED]
    if failed:
        raise RuntimeError(f"{len(failed)} accounts not created: {failed[:3]}")
    print(
        f"  {layout} layout: {sum(r.made_by == TEMPLATE for r in results)} of {count} accounts made from the"
        f" verified template, histories of {MULTI_CUSTOMERS} customers x {history} messages each",
        flush=True,
    )
    connections.close_all()
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_seed_accounts, [(env, ids[i::2], MULTI_CUSTOMERS, history) for i in range(2)])
    settle(server, layout, ids)
    user = get_user_model().objects.create_user("bench", password="bench-pass", is_staff=True, is_superuser=True)
    token = Token.objects.create(user=user).key
    connections.close_all()
    window = settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES
    if settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT > 0:
        window += settings.QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT
    return token, window


def settle(server: PrivatePostgres, layout: str, accounts: list[str]) -> None:
    """Vacuumed and analysed, as a long-running server's would be: no autovacuum catching up inside
    a timed phase (after the seeding, and again after each warm-up's writes)."""
    names = {SCHEMA_DB} if layout == "schema" else {f"qiwei_bench_{account}" for account in accounts}
    for name in sorted(names):
        with server.connect(name) as conn:
            conn.execute("VACUUM ANALYZE")


def _histories_in_database(server: PrivatePostgres, layout: str, accounts: list[str]) -> dict[tuple[str, int], int]:
    """Messages per customer as the database holds them (the tally's check), read as the superuser."""
    found: dict[tuple[str, int], int] = {}
    for account in accounts:
        dbname, schema = (SCHEMA_DB, f"acct_{account}") if layout == "schema" else (f"qiwei_bench_{account}", "public")
        with server.connect(dbname) as conn:
            rows = conn.execute(
                f'SELECT c.conversation_id, count(m.id) FROM "{schema}".conversations_customer c'
                f' JOIN "{schema}".conversations_message m ON m.customer_id = c.id GROUP BY 1'
            ).fetchall()
        for conversation_id, messages in rows:
            found[(account, int(str(conversation_id).rsplit("_", 1)[1]))] = int(messages)
    return found


def _cpu(server: PrivatePostgres, gunicorn: subprocess.Popen[bytes]) -> tuple[float, float]:
    """CPU seconds so far of the PostgreSQL server (postmaster and backends) and of gunicorn."""
    postmaster = int((server.folder / "data" / "postmaster.pid").read_text().split()[0])
    return tree_cpu_seconds(postmaster), tree_cpu_seconds(gunicorn.pid)


def _set_shared_buffers(server: PrivatePostgres, size: str) -> None:
    """The private cluster's shared_buffers (initdb's default is 128MB), set and restarted."""
    with server.connect() as conn:
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{size}'")
    # Its output to the cluster's log, as at start: a pipe held open by the postmaster never ends.
    command = [str(PG_BIN / "pg_ctl"), "-D", str(server.folder / "data"), "-l", str(server.folder / "log")]
    command += ["-w", "restart"]
    subprocess.run(_as_postgres_user(command), check=True, capture_output=True)


def _account_sessions(server: PrivatePostgres) -> int:
    """Server sessions ever opened to the account stores (pg_stat_database): how many backends a
    phase started, each with a cold catalogue (a connection renewed past its schemas or its age)."""
    with server.connect() as conn:
        row = conn.execute(
            "SELECT COALESCE(sum(sessions), 0) FROM pg_stat_database WHERE datname = %s"
            " OR datname LIKE 'qiwei_bench_bench%%'",
            [SCHEMA_DB],
        ).fetchone()
    return int(row[0])


def _cpu_per_request(before: tuple[float, float], after: tuple[float, float], row: dict[str, Any]) -> dict[str, float]:
    """CPU per timed turn (one POST and one context GET) of the server and of the app, in ms."""
    turns = max(row["requests"], 1)
    return {
        "pg_cpu_ms": (after[0] - before[0]) * 1000 / turns,
        "app_cpu_ms": (after[1] - before[1]) * 1000 / turns,
    }


# One timed turn: the context GET's latency and status, its account and customer, and when its
# message was stored (0 when the POST failed: no message to count).
Turn = tuple[float, int, str, int, float]


def _client(args: tuple[str, str, int, float, list[str], int]) -> list[Turn]:
    base, token, threads, seconds, accounts, seed = args
    import requests

    results: list[Turn] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def loop(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        session = requests.Session()
        session.headers["Authorization"] = f"Token {token}"
        position = rng.randrange(len(accounts))
        counter = 0
        local: list[Turn] = []
        while time.monotonic() < stop_at:
            account = accounts[position % len(accounts)]
            position += 1
            counter += 1
            customer = rng.randrange(MULTI_CUSTOMERS)
            url = f"{base}/api/accounts/{account}/conversations/wm_bench_{customer}/"
            body = {
                "external_id": f"turn-{seed}-{n}-{counter}-{time.monotonic_ns()}",
                "direction": "inbound",
                "sender": "客户",
                "text": rng.choice(TEXTS).format(n=rng.randint(1, 12) * 1000),
            }
            stored_at = 0.0
            try:
                posted = session.post(url + "messages/", json=body, timeout=30).status_code
                stored_at = time.time() if posted < 400 else 0.0
                t0 = time.perf_counter()
                status = session.get(url + "context/", timeout=30).status_code
                elapsed = time.perf_counter() - t0
                if posted >= 400:
                    status = posted
            except requests.RequestException:
                elapsed, status = 0.0, 0
            local.append((elapsed, status, account, customer, stored_at))
        with lock:
            results.extend(local)

    workers = [threading.Thread(target=loop, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return results


class Histories:
    """Messages per customer (account, customer index), kept by the load generator: the seeded
    history plus every message a turn stored. Each context request saw its customer's history as it
    stood when its own message was stored (the turns replayed in the order their messages were);
    its window is that history up to the window's size (the builder reads no more)."""

    def __init__(self, accounts: list[str], seeded: int, window: int) -> None:
        self.counts = {(account, c): seeded for account in accounts for c in range(MULTI_CUSTOMERS)}
        self.window = window

    def replay(self, turns: list[Turn]) -> dict[str, float]:
        seen: list[int] = []
        for _latency, status, account, customer, stored_at in sorted(turns, key=lambda turn: turn[4]):
            if stored_at:
                self.counts[(account, customer)] += 1
            if 0 < status < 400:
                seen.append(self.counts[(account, customer)])
        if not seen:
            return {"mean_history": 0.0, "mean_window": 0.0}
        return {
            "mean_history": statistics.fmean(seen),
            "mean_window": statistics.fmean(min(history, self.window) for history in seen),
        }


def load(
    base: str, token: str, clients: int, seconds: float, accounts: list[str], histories: Histories | None = None
) -> dict[str, Any]:
    per = [clients // 2 + (1 if i < clients % 2 else 0) for i in range(2)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        chunks = pool.map(_client, [(base, token, per[i], seconds, accounts, i) for i in range(2)])
    samples = [sample for chunk in chunks for sample in chunk]
    ok = [sample[0] for sample in samples if 0 < sample[1] < 400]
    row = {
        "requests": len(samples),
        "errors": sum(1 for sample in samples if not 0 < sample[1] < 400),
        "rps": len(ok) / seconds,
        "p95_ms": percentile(ok, 95) * 1000 if ok else 0.0,
    }
    if histories is not None:
        row.update(histories.replay(samples))
    return row


def _arrivals(rate: float, seconds: float, burst_at: float, burst_seconds: float, seed: int) -> list[float]:
    """Poisson arrival times (s from the start): `rate` per second, ten times that in the burst."""
    rng = random.Random(seed)
    times, now = [], 0.0
    while True:
        in_burst = burst_at <= now < burst_at + burst_seconds
        now += rng.expovariate(rate * (10 if in_burst else 1))
        if now >= seconds:
            return times
        times.append(now)


def _day_client(args: tuple[str, str, list[str], list[float], float, int]) -> list[tuple[str, float, int]]:
    """Open loop: each arrival, at its time whatever the earlier ones are doing, is a turn of one
    account's customer: the message in (ingest, capture queued for the worker), its context, a draft."""
    base, token, accounts, times, start_at, seed = args
    from concurrent.futures import ThreadPoolExecutor

    import requests

    records: list[tuple[str, float, int]] = []
    lock = threading.Lock()
    local = threading.local()

    def turn(n: int) -> None:
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = requests.Session()
            session.headers["Authorization"] = f"Token {token}"
        rng = random.Random(seed * 100_000 + n)
        account = accounts[rng.randrange(len(accounts))]
        url = f"{base}/api/accounts/{account}/conversations/wm_bench_{rng.randrange(MULTI_CUSTOMERS)}/"
        body = {
            "external_id": f"day-{seed}-{n}-{time.monotonic_ns()}",
            "direction": "inbound",
            "sender": "客户",
            "text": rng.choice(TEXTS).format(n=rng.randint(1, 12) * 1000),
        }
        done: list[tuple[str, float, int]] = []
        for kind, call in (
            ("ingest", lambda: session.post(url + "messages/", json=body, timeout=60)),
            ("context", lambda: session.get(url + "context/", timeout=60)),
            ("draft", lambda: session.post(url + "drafts/", json={}, timeout=60)),
        ):
            t0 = time.perf_counter()
            try:
                status = call().status_code
            except requests.RequestException:
                status = 0
            done.append((kind, time.perf_counter() - t0, status))
        with lock:
            records.extend(done)

    with ThreadPoolExecutor(max_workers=48) as pool:
        for n, at in enumerate(times):
            delay = start_at + at - time.time()
            if delay > 0:
                time.sleep(delay)
            pool.submit(turn, n)
    return records


def day(base: str, token: str, accounts: list[str], args: argparse.Namespace) -> dict[str, Any]:
    arrivals = _arrivals(args.day_rate, args.day_seconds, args.day_seconds * 0.4, args.day_seconds * 0.1, seed=23)
    start_at = time.time() + 3
    shares = [(base, token, accounts, arrivals[i::2], start_at, i) for i in range(2)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        chunks = pool.map(_day_client, shares)
    records = [record for chunk in chunks for record in chunk]
    context = [latency for kind, latency, status in records if kind == "context" and 0 < status < 400]
    return {
        "turns": len(arrivals),
        "errors": sum(1 for _, _, status in records if not 0 < status < 400),
        "errors_by_kind": {
            kind: sum(1 for k, _, status in records if k == kind and not 0 < status < 400)
            for kind in ("ingest", "context", "draft")
        },
        "context_p50_ms": percentile(context, 50) * 1000 if context else 0.0,
        "context_p95_ms": percentile(context, 95) * 1000 if context else 0.0,
    }


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A real Celery worker on the layout's broker: capture runs as in production."""
    with open(log, "ab") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "qiwei_site", "worker", "--concurrency=2", "--loglevel=WARNING"],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=handle,
            stderr=handle,
        )


def migrate_all(env: dict[str, str], *, force: bool = False) -> dict[str, Any]:
    started = time.perf_counter()
    command = [sys.executable, "manage.py", "migrate_accounts", *(["--force"] if force else [])]
    out = subprocess.run(command, cwd=ROOT, env={**os.environ, **env}, capture_output=True)
    return {"exit": out.returncode, "seconds": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--accounts", type=int, default=200)
    parser.add_argument("--clients", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--cap", type=int, default=8)
    parser.add_argument("--routes", nargs="+", choices=["direct", "pgbouncer"], default=["direct", "pgbouncer"])
    parser.add_argument("--layouts", nargs="+", choices=["database", "schema"], default=["database", "schema"])
    parser.add_argument(
        "--only-all", action="store_true", help="time only the all-accounts phase (a soak: errors and connections)"
    )
    parser.add_argument(
        "--day-seconds", type=float, default=0, help="a realistic day this long, schema layout, after the phases"
    )
    parser.add_argument("--day-rate", type=float, default=1.0, help="turns per second (ten times that in the burst)")
    parser.add_argument(
        "--day-rounds", type=int, default=1, help="days over one account and over all, alternated (medians reported)"
    )
    parser.add_argument(
        "--day-only", action="store_true", help="skip the timed phases and migrate_accounts: only the day"
    )
    parser.add_argument(
        "--warm-seconds",
        type=float,
        help="warm-up of each server over every account (default max(8, accounts / 10)); with long-lived"
        " connections (QIWEI_DB_CONN_MAX_AGE=600) the server's CPU per turn settles over minutes",
    )
    parser.add_argument(
        "--history",
        type=int,
        default=260,
        help="messages seeded per customer (5 per account); at least the context window (12 recent + 240"
        " scanned = 252), so every context request of every phase reads a full window",
    )
    parser.add_argument(
        "--shared-buffers",
        help="the private cluster's shared_buffers (e.g. 1GB; default initdb's 128MB, less than 200"
        " accounts' data: the all-accounts phases then read from the OS page cache)",
    )
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.day_rounds < 1:
        parser.error("--day-rounds must be at least 1")
    if args.day_only and not args.day_seconds:
        parser.error("--day-only needs --day-seconds (the day is all it runs)")
    print(machine_line(), flush=True)
    server = PrivatePostgres()
    server.start()
    layouts = ["schema"] if args.day_only else list(args.layouts)  # the day runs on the schema layout
    data_dirs = {layout: tempfile.mkdtemp(prefix=f"qiwei-bench-{layout}-") for layout in layouts}
    rows: list[dict[str, Any]] = []
    bouncer: PgBouncer | None = None
    try:
        if args.shared_buffers:
            _set_shared_buffers(server, args.shared_buffers)
        with server.connect() as conn:
            print(f"private cluster: shared_buffers {conn.execute('SHOW shared_buffers').fetchone()[0]}", flush=True)
            conn.execute(f"CREATE ROLE {LOGIN} LOGIN NOSUPERUSER NOINHERIT CREATEROLE")
            conn.execute(f"CREATE DATABASE {SCHEMA_DB} OWNER {LOGIN}")
            for layout in layouts:
                conn.execute(f"CREATE DATABASE qiwei_bench_default_{layout}")
        tokens: dict[str, str] = {}
        histories: dict[str, Histories] = {}
        accounts = [f"bench{n:03d}" for n in range(args.accounts)]
        for layout in layouts:
            started = time.perf_counter()
            env = _env(layout, server.port, data_dirs[layout], args.cap, pgbouncer=False)
            # Not a Pool: its daemonic worker could not start the schema layout's two creators.
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as executor:
                tokens[layout], window = executor.submit(
                    prepare, layout, env, args.accounts, args.history, server
                ).result()
            histories[layout] = Histories(accounts, args.history, window)
            seconds = time.perf_counter() - started
            print(f"prepared {args.accounts} accounts, {layout} layout: {seconds:.0f} s", flush=True)
        if args.history < window:
            print(f"  note: histories of {args.history} messages are below the window ({window}): windows grow")
        # The one-account phase takes the next account each time (rotation), so its customers start
        # from the history every account has, not from one account's ever-growing history.
        ones = {layout: 0 for layout in layouts}
        warm_seconds = args.warm_seconds or max(8.0, args.accounts / 10)
        sampler = AccountConnectionSampler(server)
        for route in [] if args.day_only else args.routes:
            port = server.port
            if route == "pgbouncer":
                # The schema database's pool sized as deploy/pgbouncer.ini says: every process's
                # account connection cap (gunicorn workers here) — with PgBouncer's default of 2 it
                # queued every phase on two server connections (issue 38, item 4).
                bouncer = PgBouncer(
                    server.port,
                    server_connections=80,
                    users=("postgres", LOGIN),
                    pools={SCHEMA_DB: args.workers * args.cap},
                    # The schema layout alone: idle server connections kept as deploy/pgbouncer.ini
                    # keeps them (PgBouncer's 600 s); 10 s closed a backend that had read every
                    # account's catalogue whenever a phase needed fewer, and a busier phase then
                    # opened cold ones (all accounts: 200 schemas each to read, one account: one).
                    idle_timeout=None if layouts == ["schema"] else 10,
                )
                port = bouncer.port
            servers: dict[str, tuple[Any, str]] = {}
            try:
                for layout in layouts:
                    env = _env(layout, port, data_dirs[layout], args.cap, pgbouncer=route == "pgbouncer")
                    log = Path(data_dirs[layout]) / f"gunicorn-{route}.log"
                    servers[layout] = start_gunicorn(env, workers=args.workers, log_path=log)
                    # Warm: every worker meets (nearly) every account once before any phase is timed,
                    # as a long-running server has (each process's first use of an account checks
                    # its migrations and registers it).
                    load(servers[layout][1], tokens[layout], 16, warm_seconds, accounts, histories[layout])
                    # The warm-up's writes (16 clients for warm_seconds over every account) cross
                    # autovacuum's thresholds in many tables at once: settled again, or a worker
                    # catches up inside the first timed phases (run D of RESULTS §22: 40 % of one
                    # all-accounts phase, the server's CPU per turn 45 ms against 10).
                    settle(server, layout, accounts)
                for clients in args.clients:
                    for round_ in range(args.rounds):
                        counts = (len(accounts),) if args.only_all else (1, len(accounts))
                        order = [(lay, n) for lay in layouts for n in counts]
                        if round_ % 2:
                            order.reverse()
                        for layout, count in order:
                            subset = accounts
                            if count == 1:
                                subset = [accounts[ones[layout] % len(accounts)]]
                                ones[layout] += 1
                            sessions_before = _account_sessions(server)
                            sampler.start()
                            cpu_before = _cpu(server, servers[layout][0])
                            row = load(
                                servers[layout][1], tokens[layout], clients, args.seconds, subset, histories[layout]
                            )
                            row.update(_cpu_per_request(cpu_before, _cpu(server, servers[layout][0]), row))
                            row.update(
                                route=route,
                                layout=layout,
                                accounts=count,
                                account=subset[0] if count == 1 else "",
                                clients=clients,
                                round=round_,
                                peak_connections=sampler.stop(),
                                peak_account_connections=sampler.peak_accounts,
                                new_account_sessions=_account_sessions(server) - sessions_before,
                                autovacuum_share=sampler.autovacuum_share(),
                            )
                            rows.append(row)
                            print(
                                f"  {route:9s} {layout:8s} {clients:2d} clients {count:3d} accounts"
                                f" {row['account'] or '':8s}: {row['rps']:6.1f} req/s  p95 {row['p95_ms']:6.1f} ms  "
                                f"window {row['mean_window']:5.1f} (history {row['mean_history']:5.1f})  "
                                f"errors {row['errors']}/{row['requests']}  peak connections {row['peak_connections']}"
                                f" (accounts {row['peak_account_connections']}, {row['new_account_sessions']} opened)"
                                "  CPU per turn: server"
                                f" {row['pg_cpu_ms']:.1f} ms, app {row['app_cpu_ms']:.1f} ms"
                                f"  autovacuum {row['autovacuum_share']:.0%} of the phase",
                                flush=True,
                            )
            finally:
                for process, _ in servers.values():
                    stop_process(process)
                if bouncer is not None:
                    bouncer.stop()
                    bouncer = None
        if args.day_seconds and "schema" in layouts:
            env = _env("schema", server.port, data_dirs["schema"], args.cap, pgbouncer=False)
            gunicorn, base = start_gunicorn(env, workers=args.workers, log_path=Path(data_dirs["schema"]) / "day.log")
            worker = start_worker(env, Path(data_dirs["schema"]) / "worker.log")
            try:
                load(base, tokens["schema"], 16, warm_seconds, accounts)  # warm, as above
                print(
                    f"\na day of {args.day_seconds:.0f} s, Poisson arrivals at {args.day_rate}/s, ten times that for"
                    f" {args.day_seconds * 0.1:.0f} s from {args.day_seconds * 0.4:.0f} s (a turn: ingest, context,"
                    " draft; a Celery worker capturing):",
                    flush=True,
                )
                labels = {"one account": accounts[:1], f"{len(accounts)} accounts": accounts}
                p95s: dict[str, list[float]] = {label: [] for label in labels}
                for round_ in range(args.day_rounds):
                    order = list(labels.items())
                    if round_ % 2:
                        order.reverse()
                    for label, subset in order:
                        sampler.start()
                        result = day(base, tokens["schema"], subset, args)
                        result["peak_connections"] = sampler.stop()
                        result["peak_account_connections"] = sampler.peak_accounts
                        p95s[label].append(result["context_p95_ms"])
                        rows.append({"kind": "day", "accounts": len(subset), "round": round_, **result})
                        print(
                            f"  round {round_} {label:13s}: {result['turns']} turns, errors {result['errors']}"
                            f" {result['errors_by_kind']}, context p50 {result['context_p50_ms']:.0f} ms"
                            f" p95 {result['context_p95_ms']:.0f} ms, peak connections {result['peak_connections']}"
                            f" (accounts {result['peak_account_connections']})",
                            flush=True,
                        )
                one, many = (statistics.median(p95s[label]) for label in labels)
                ratio = many / one if one else 0.0
                rows.append({"kind": "day_summary", "p95_all_ms": many, "p95_one_ms": one, "ratio": ratio})
                print(
                    f"  context p95 (median over {args.day_rounds} rounds), all accounts / one account:"
                    f" {many:.0f} / {one:.0f} ms = {ratio:.2f} (target <= 1.5)"
                )
            finally:
                stop_process(worker)
                stop_process(gunicorn)
        if not args.day_only:
            for layout in layouts:
                used = {accounts[k % len(accounts)] for k in range(ones[layout])} | set(accounts[:3])
                stored = _histories_in_database(server, layout, sorted(used))
                kept = {key: count for key, count in histories[layout].counts.items() if key[0] in used}
                wrong = sorted(key for key in kept if stored.get(key) != kept[key])
                print(
                    f"\n{layout} layout: messages per customer tallied by the load generator = the database's for"
                    f" {len(kept) - len(wrong)} of {len(kept)} customers of {len(used)} accounts"
                    + (f"; differ: {[(key, kept[key], stored.get(key)) for key in wrong[:5]]}" if wrong else "")
                )
            print(
                "\nratio all accounts / one account (median over rounds; each round's in brackets), target >= 0.8;"
                " mean window (messages in the context window) and history (the customer's messages) per phase:"
            )
        for route in args.routes:
            for clients in args.clients:
                for layout in layouts:
                    phases = {
                        count: sorted(
                            (
                                r
                                for r in rows
                                if "rps" in r
                                and (r["route"], r["layout"], r["clients"], r["accounts"])
                                == (route, layout, clients, count)
                            ),
                            key=lambda r: r["round"],
                        )
                        for count in (1, len(accounts))
                    }
                    if not phases[1] or not phases[len(accounts)]:
                        continue  # --only-all: no one-account phase to compare with
                    one, many = (statistics.median(r["rps"] for r in phases[count]) for count in (1, len(accounts)))
                    ratio = many / one if one else 0.0
                    per_round = [
                        b["rps"] / a["rps"] if a["rps"] else 0.0 for a, b in zip(*phases.values(), strict=True)
                    ]
                    window, history = (
                        {count: statistics.fmean(r[key] for r in phases[count]) for count in phases}
                        for key in ("mean_window", "mean_history")
                    )
                    verdict = "met" if ratio >= TARGET else "missed"
                    print(
                        f"  {route:9s} {clients:2d} clients {layout:8s}: one {one:6.1f}  all {many:6.1f} req/s"
                        f"  ratio {ratio:.3f} ({verdict}; rounds {', '.join(f'{x:.2f}' for x in per_round)})"
                        f"  window one {window[1]:.1f} / all {window[len(accounts)]:.1f}"
                        f"  history one {history[1]:.1f} / all {history[len(accounts)]:.1f}"
                    )
                    rows.append(
                        {
                            "route": route,
                            "clients": clients,
                            "layout": layout,
                            "ratio": ratio,
                            "round_ratios": per_round,
                            "window_one": window[1],
                            "window_all": window[len(accounts)],
                            "history_one": history[1],
                            "history_all": history[len(accounts)],
                        }
                    )
        for layout in [] if args.day_only else layouts:
            for force in (False, True):
                env = _env(layout, server.port, data_dirs[layout], args.cap, pgbouncer=False)
                sampler.start()
                result = migrate_all(env, force=force)
                result["peak_connections"] = sampler.stop()
                how = "--force (migrate run in every one)" if force else "(fingerprints current: checked, skipped)"
                print(
                    f"  migrate_accounts {how} over {args.accounts} accounts, {layout} layout: "
                    f"exit {result['exit']}, {result['seconds']:.1f} s, peak connections {result['peak_connections']}"
                )
                rows.append({"layout": layout, "kind": "migrate_accounts", "force": force, **result})
    finally:
        server.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
