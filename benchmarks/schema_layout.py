"""Many accounts on one PostgreSQL (issue 23): a schema per account behind one shared pool beside a
database per account, in the same run, on the same private cluster (`max_connections = 100`).

    .venv/bin/python benchmarks/schema_layout.py [--accounts 200] [--clients 8 32] [--seconds 8]
        [--rounds 2] [--workers 4] [--cap 8] [--routes direct pgbouncer] [--json out.json]

Set-up (untimed): a private cluster (api_load's PrivatePostgres), a login role `qiwei_bench`
(NOSUPERUSER NOINHERIT CREATEROLE) owning the schema layout's one database; each layout gets its
own registry (`default`) and data dir. The first account of each layout is made the normal way
(`account_create`, `migrate`, 5 customers of 100 messages); the database layout copies it with
CREATE DATABASE … TEMPLATE; the schema layout makes every other account with `account_create`
(its schema migrated, in two processes) and copies the first schema's rows into it as the
superuser with triggers off (`session_replication_role = replica`), sequences set after. Both
layouts are vacuumed and analysed before timing (the database layout's template, which its copies
inherit; the schema layout's one database after the copies), as a long-running server's would be:
no autovacuum catching up inside a timed phase.

Timed: for each route (direct to PostgreSQL, through PgBouncer in transaction pooling) one gunicorn
per layout (`--workers` workers, 4 threads, QIWEI_ACCOUNT_CONN_CAP=`--cap`), warmed up over every
account (16 clients for `--warm-seconds`, default max(8, accounts / 10) s, so each worker has met
nearly every account, as a long-running server has); then, for each client count, the phases one
account / all accounts, layout by layout, alternated for `--rounds` rounds (the order reversed every
other round). In every phase each client thread, in turn over its accounts, POSTs one new customer
message and then GETs that conversation's context (the context is never served from a cache); the
context GET is what is timed. Printed per phase: context req/s, p95, errors, the peak of server client connections
(pg_stat_activity every 20 ms), and the CPU per turn of the PostgreSQL server (postmaster and
backends) and of gunicorn (master and workers), from /proc; per layout: the ratio of all accounts
to one account (median over rounds) — the issue's target is ≥ 0.8 — and `migrate_accounts` over
every account (exit, s), with current fingerprints and with `--force`. `--layouts schema
--only-all` times only the all-accounts phase (a soak: errors, peak connections; the account
store's connections counted apart).

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
    MULTI_MESSAGES,
    TEXTS,
    ConnectionSampler,
    PgBouncer,
    PrivatePostgres,
    seed_history,
)
from benchmarks.common import ROOT, machine_line, percentile, start_gunicorn, stop_process, tree_cpu_seconds

LOGIN = "qiwei_bench"
SCHEMA_DB = "qiwei_bench_accounts"
TARGET = 0.8


class AccountConnectionSampler(ConnectionSampler):
    """Peak client connections, all of them and those to account stores (the schema layout's one
    database, or the account databases), sampled every 20 ms."""

    peak_accounts = 0

    def count(self, conn: Any) -> int:
        row = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE datname = %s OR datname LIKE 'qiwei_bench_bench%%')"
            " FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
            [SCHEMA_DB],
        ).fetchone()
        self.peak_accounts = max(self.peak_accounts, int(row[1]))
        return int(row[0])

    def start(self) -> None:
        self.peak_accounts = 0
        super().start()


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


def _create_accounts(args: tuple[dict[str, str], list[str]]) -> None:
    """A child process: `account_create` for each id (the schema layout: role, schema, migrate)."""
    env, ids = args
    os.environ.update(env)
    import django

    django.setup()
    from qiwei_site.platform.services import account_create
    from qiwei_site.platform.tenancy import account_connections_close

    for account_id in ids:
        account_create(account_id=account_id, name=f"压测账号{account_id}")
        account_connections_close(account_id)


def prepare(layout: str, env: dict[str, str], count: int, server: PrivatePostgres) -> str:
    """Runs in a process of its own (Django set up once per layout). Returns a staff token."""
    os.environ.update(env)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connections
    from psycopg import sql
    from rest_framework.authtoken.models import Token

    from qiwei_site.platform.services import account_create
    from qiwei_site.platform.tenancy import account_connections_close, account_database_config, use_account

    call_command("migrate", verbosity=0, interactive=False)
    first = "bench000"
    account_create(account_id=first, name="压测账号0")
    with use_account(first):
        seed_history(MULTI_CUSTOMERS, MULTI_MESSAGES)
    account_connections_close(first)
    connections.close_all()
    ids = [f"bench{n:03d}" for n in range(1, count)]
    if layout == "database":
        template = account_database_config(first)["NAME"]
        with server.connect(template) as conn:
            conn.execute("VACUUM ANALYZE")  # statistics the copies inherit: no autovacuum catching up mid-run
        with server.connect() as conn:
            for account_id in ids:
                target = account_database_config(account_id)["NAME"]
                conn.execute(
                    sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(target), sql.Identifier(template))
                )
        for account_id in ids:
            account_create(account_id=account_id, name=f"压测账号{account_id}")
            account_connections_close(account_id)
    else:
        with multiprocessing.get_context("spawn").Pool(2) as pool:
            pool.map(_create_accounts, [(env, ids[i::2]) for i in range(2)])
        _copy_schema_rows(server, "acct_" + first, ["acct_" + account_id for account_id in ids])
        with server.connect(SCHEMA_DB) as conn:
            conn.execute("VACUUM ANALYZE")  # as the database layout's copies: settled, with statistics
    user = get_user_model().objects.create_user("bench", password="bench-pass", is_staff=True, is_superuser=True)
    token = Token.objects.create(user=user).key
    connections.close_all()
    return token


def _copy_schema_rows(server: PrivatePostgres, source: str, targets: list[str]) -> None:
    """The first account's rows into every other (migrated, empty) schema, as the superuser with
    triggers off; each sequence set past its table's largest id."""
    with server.connect(SCHEMA_DB) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename <> 'qiwei_account_schema'"
                " AND tablename <> 'django_migrations'",
                [source],
            )
        ]
        sequences = conn.execute(
            "SELECT s.relname, t.relname, a.attname FROM pg_class s"
            " JOIN pg_depend d ON d.objid = s.oid AND d.deptype IN ('a', 'i')"
            " JOIN pg_class t ON t.oid = d.refobjid"
            " JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid"
            " JOIN pg_namespace n ON n.oid = s.relnamespace WHERE s.relkind = 'S' AND n.nspname = %s",
            [source],
        ).fetchall()
        for target in targets:
            with conn.transaction():
                conn.execute("SET LOCAL session_replication_role = replica")
                for table in tables:  # account_create's own rows (its audit) out first
                    conn.execute(f'DELETE FROM "{target}"."{table}"')
                for table in tables:
                    conn.execute(f'INSERT INTO "{target}"."{table}" SELECT * FROM "{source}"."{table}"')
                for sequence, table, column in sequences:
                    conn.execute(
                        f'SELECT setval(\'"{target}"."{sequence}"\', '
                        f'COALESCE((SELECT max("{column}") FROM "{target}"."{table}"), 0) + 1, false)'
                    )


def _cpu(server: PrivatePostgres, gunicorn: subprocess.Popen[bytes]) -> tuple[float, float]:
    """CPU seconds so far of the PostgreSQL server (postmaster and backends) and of gunicorn."""
    postmaster = int((server.folder / "data" / "postmaster.pid").read_text().split()[0])
    return tree_cpu_seconds(postmaster), tree_cpu_seconds(gunicorn.pid)


def _cpu_per_request(before: tuple[float, float], after: tuple[float, float], row: dict[str, Any]) -> dict[str, float]:
    """CPU per timed turn (one POST and one context GET) of the server and of the app, in ms."""
    turns = max(row["requests"], 1)
    return {
        "pg_cpu_ms": (after[0] - before[0]) * 1000 / turns,
        "app_cpu_ms": (after[1] - before[1]) * 1000 / turns,
    }


def _client(args: tuple[str, str, int, float, list[str], int]) -> list[tuple[float, int]]:
    base, token, threads, seconds, accounts, seed = args
    import requests

    results: list[tuple[float, int]] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def loop(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        session = requests.Session()
        session.headers["Authorization"] = f"Token {token}"
        position = rng.randrange(len(accounts))
        counter = 0
        local: list[tuple[float, int]] = []
        while time.monotonic() < stop_at:
            account = accounts[position % len(accounts)]
            position += 1
            counter += 1
            url = f"{base}/api/accounts/{account}/conversations/wm_bench_{rng.randrange(MULTI_CUSTOMERS)}/"
            body = {
                "external_id": f"turn-{seed}-{n}-{counter}-{time.monotonic_ns()}",
                "direction": "inbound",
                "sender": "客户",
                "text": rng.choice(TEXTS).format(n=rng.randint(1, 12) * 1000),
            }
            try:
                posted = session.post(url + "messages/", json=body, timeout=30).status_code
                t0 = time.perf_counter()
                status = session.get(url + "context/", timeout=30).status_code
                elapsed = time.perf_counter() - t0
                if posted >= 400:
                    status = posted
            except requests.RequestException:
                elapsed, status = 0.0, 0
            local.append((elapsed, status))
        with lock:
            results.extend(local)

    workers = [threading.Thread(target=loop, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return results


def load(base: str, token: str, clients: int, seconds: float, accounts: list[str]) -> dict[str, Any]:
    per = [clients // 2 + (1 if i < clients % 2 else 0) for i in range(2)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        chunks = pool.map(_client, [(base, token, per[i], seconds, accounts, i) for i in range(2)])
    samples = [sample for chunk in chunks for sample in chunk]
    ok = [latency for latency, status in samples if 0 < status < 400]
    return {
        "requests": len(samples),
        "errors": sum(1 for _, status in samples if not 0 < status < 400),
        "rps": len(ok) / seconds,
        "p95_ms": percentile(ok, 95) * 1000 if ok else 0.0,
    }


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
        with server.connect() as conn:
            conn.execute(f"CREATE ROLE {LOGIN} LOGIN NOSUPERUSER NOINHERIT CREATEROLE")
            conn.execute(f"CREATE DATABASE {SCHEMA_DB} OWNER {LOGIN}")
            for layout in layouts:
                conn.execute(f"CREATE DATABASE qiwei_bench_default_{layout}")
        tokens: dict[str, str] = {}
        for layout in layouts:
            started = time.perf_counter()
            env = _env(layout, server.port, data_dirs[layout], args.cap, pgbouncer=False)
            # Not a Pool: its daemonic worker could not start the schema layout's two creators.
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as executor:
                tokens[layout] = executor.submit(prepare, layout, env, args.accounts, server).result()
            seconds = time.perf_counter() - started
            print(f"prepared {args.accounts} accounts, {layout} layout: {seconds:.0f} s", flush=True)
        accounts = [f"bench{n:03d}" for n in range(args.accounts)]
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
                    load(servers[layout][1], tokens[layout], 16, warm_seconds, accounts)
                for clients in args.clients:
                    for round_ in range(args.rounds):
                        counts = (len(accounts),) if args.only_all else (1, len(accounts))
                        order = [(lay, n) for lay in layouts for n in counts]
                        if round_ % 2:
                            order.reverse()
                        for layout, count in order:
                            sampler.start()
                            cpu_before = _cpu(server, servers[layout][0])
                            row = load(servers[layout][1], tokens[layout], clients, args.seconds, accounts[:count])
                            row.update(_cpu_per_request(cpu_before, _cpu(server, servers[layout][0]), row))
                            row.update(
                                route=route,
                                layout=layout,
                                accounts=count,
                                clients=clients,
                                round=round_,
                                peak_connections=sampler.stop(),
                                peak_account_connections=sampler.peak_accounts,
                            )
                            rows.append(row)
                            print(
                                f"  {route:9s} {layout:8s} {clients:2d} clients {count:3d} accounts: "
                                f"{row['rps']:6.1f} req/s  p95 {row['p95_ms']:6.1f} ms  "
                                f"errors {row['errors']}/{row['requests']}  peak connections {row['peak_connections']}"
                                f" (accounts {row['peak_account_connections']})  CPU per turn: server"
                                f" {row['pg_cpu_ms']:.1f} ms, app {row['app_cpu_ms']:.1f} ms",
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
            print("\nratio all accounts / one account (median over rounds), target >= 0.8:")
        for route in args.routes:
            for clients in args.clients:
                for layout in layouts:

                    def rps(count: int, layout: str = layout, clients: int = clients, route: str = route) -> float:
                        values = [
                            r["rps"]
                            for r in rows
                            if "rps" in r
                            and (r["route"], r["layout"], r["clients"], r["accounts"])
                            == (route, layout, clients, count)
                        ]
                        return statistics.median(values) if values else 0.0

                    one, many = rps(1), rps(len(accounts))
                    if not one:
                        continue  # --only-all: no one-account phase to compare with
                    ratio = many / one if one else 0.0
                    verdict = "met" if ratio >= TARGET else "missed"
                    print(
                        f"  {route:9s} {clients:2d} clients {layout:8s}: one {one:6.1f}  all {many:6.1f} req/s"
                        f"  ratio {ratio:.2f} ({verdict})"
                    )
                    rows.append({"route": route, "clients": clients, "layout": layout, "ratio": ratio})
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
