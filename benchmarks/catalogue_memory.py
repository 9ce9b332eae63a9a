"""What one PostgreSQL backend keeps for every account schema it has touched (issue 23): the
catalogue cache (`CacheMemoryContext` and its children, from `pg_backend_memory_contexts`) after
reading every table of 1, 20, 50, 100 and 200 schemas, beside a fresh backend's in the same run.

    .venv/bin/python benchmarks/catalogue_memory.py [--schemas 200] [--json out.json]

Set-up (untimed): a private cluster (api_load's PrivatePostgres); one account schema made the normal
way (this project's `manage.py migrate` and `account_create` in the schema layout); `--schemas - 1`
copies of its tables, indexes and constraints (`CREATE TABLE … (LIKE … INCLUDING ALL)`; triggers and
functions are not copied, so the figures are a floor). Then one superuser backend (the memory view
needs one) reads one row of every table of each schema in turn, a context build's breadth, and the
cache is read at each mark. `QIWEI_PG_SCHEMAS_PER_CONNECTION` (default 50) bounds a pooled backend.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.api_load import PrivatePostgres
from benchmarks.common import ROOT, machine_line

LOGIN, DATABASE = "qiwei_bench", "qiwei_bench_accounts"
MARKS = (1, 20, 50, 100, 200)


def cache_bytes(conn) -> int:
    """CacheMemoryContext and the contexts directly under it (index info, relation rules …)."""
    row = conn.execute(
        "SELECT sum(total_bytes) FROM pg_backend_memory_contexts"
        " WHERE name = 'CacheMemoryContext' OR parent = 'CacheMemoryContext'"
    ).fetchone()
    return int(row[0] or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--schemas", type=int, default=200)
    parser.add_argument("--json")
    args = parser.parse_args()
    print(machine_line(), flush=True)
    server = PrivatePostgres()
    server.start()
    data_dir = tempfile.mkdtemp(prefix="qiwei-bench-catalogue-")
    try:
        with server.connect() as conn:
            conn.execute(f"CREATE ROLE {LOGIN} LOGIN NOSUPERUSER NOINHERIT CREATEROLE")
            conn.execute(f"CREATE DATABASE {DATABASE} OWNER {LOGIN}")
            conn.execute("CREATE DATABASE qiwei_bench_default")
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "qiwei_site.settings.local",
            "QIWEI_DATA_DIR": data_dir,
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{server.port}/qiwei_bench_default",
            "QIWEI_ACCOUNT_DATABASE_URL": f"postgres://{LOGIN}@127.0.0.1:{server.port}/{DATABASE}",
        }
        for command in (["migrate", "-v0"], ["account_create", "cat000", "--name", "目录测量"]):
            subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True, capture_output=True)
        with server.connect(DATABASE) as conn:
            tables = [
                row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'acct_cat000'")
            ]
            for n in range(1, args.schemas):
                schema = f"acct_cat{n:03d}"
                conn.execute(f"CREATE SCHEMA {schema}")
                for table in tables:
                    conn.execute(f'CREATE TABLE {schema}."{table}" (LIKE acct_cat000."{table}" INCLUDING ALL)')
        rows = []
        with server.connect(DATABASE) as conn:
            fresh = cache_bytes(conn)
            print(f"  a fresh backend: {fresh / 2**20:.1f} MB of catalogue cache")
            rows.append({"schemas": 0, "bytes": fresh})
            for n in range(args.schemas):
                schema = f"acct_cat{n:03d}"
                for table in tables:
                    conn.execute(f'SELECT * FROM {schema}."{table}" LIMIT 1').fetchall()
                if n + 1 in MARKS:
                    size = cache_bytes(conn)
                    rows.append({"schemas": n + 1, "bytes": size})
                    print(
                        f"  after {n + 1:3d} schemas ({len(tables)} tables each): {size / 2**20:6.1f} MB "
                        f"({(size - fresh) / (n + 1) / 2**10:.0f} KB per schema)",
                        flush=True,
                    )
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
