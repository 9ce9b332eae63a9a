"""API throughput and p95 latency for the context and ingest endpoints under 8 and 32 concurrent
clients, against gunicorn on loopback, on SQLite and on PostgreSQL (several workers), beside
`/healthz` under the same load (the server's floor: routing, middleware, no database).

    .venv/bin/python benchmarks/api_load.py [--seconds 10] [--clients 8 32] [--backends sqlite postgres]
        [--workers 4] [--json out.json]

The load generator runs in separate processes (so the client does not share the server's GIL)
and only talks to 127.0.0.1. The server uses the embedded filesystem broker with no worker, so
ingest pays for queueing its capture jobs but not for running them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    ROOT,
    bench_environment,
    drop_pg_databases,
    percentile,
    postgres_available,
    setup_django,
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def prepare(env: dict[str, str]) -> str:
    """Migrate, create the account with customers and history, and return a staff token."""
    setup_django(env)
    from django.contrib.auth import get_user_model
    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    from conversations.models import Customer, CustomerProfile, Message
    from conversations.services import account_create, membership_grant
    from qiwei_site.platform.tenancy import use_account

    account = account_create(account_id=ACCOUNT, name="压测账号")
    user = get_user_model().objects.create_user("bench", password="bench-pass", is_staff=True)
    membership_grant(user=user, account=account)
    rng = random.Random(7)
    start = timezone.now() - dt.timedelta(days=60)
    with use_account(ACCOUNT):
        for c in range(CUSTOMERS):
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
                for i in range(MESSAGES_PER_CUSTOMER)
            )
    return Token.objects.create(user=user).key


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


def run_load(base: str, token: str, clients: int, seconds: float, kind: str) -> dict:
    processes = 2 if clients >= 2 else 1
    per = [clients // processes + (1 if i < clients % processes else 0) for i in range(processes)]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        chunks = pool.map(client_process, [(base, token, per[i], seconds, kind, i) for i in range(processes)])
    samples = [s for chunk in chunks for s in chunk]
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
    port = free_port()
    server_env = {
        **os.environ,
        **env,
        "QIWEI_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": str(workers),
        "GUNICORN_THREADS": "4",
        "GUNICORN_ACCESS_LOG": "/dev/null",
        "GUNICORN_LOG_LEVEL": "warning",
    }
    log = open(Path(env["QIWEI_DATA_DIR"]) / "gunicorn.log", "wb")  # noqa: SIM115
    server = subprocess.Popen(
        [str(ROOT / ".venv/bin/gunicorn"), "qiwei_site.wsgi:application", "-c", "qiwei_site/gunicorn.conf.py"],
        cwd=ROOT,
        env=server_env,
        stdout=log,
        stderr=log,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        import requests

        for _ in range(150):
            try:
                if requests.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                time.sleep(0.2)
        else:
            raise RuntimeError(f"gunicorn did not answer on {base}; see {log.name}")
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
        server.terminate()
        server.wait(timeout=30)
        log.close()
        drop_pg_databases(env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, nargs="+", default=[8, 32])
    parser.add_argument(
        "--backends",
        nargs="+",
        choices=BACKENDS,
        default=["sqlite", "postgres"],
        help="postgres: connections closed per request (baseline); postgres-persistent: the default, kept 60 s",
    )
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--json", help="write the rows here as JSON")
    args = parser.parse_args()
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
    if "--one" in sys.argv:
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
