"""`account_create` per account from the migrated template beside plain `migrate` (issue 38, item 3),
and onboarding many accounts with `accounts_onboard`, on SQLite and both PostgreSQL layouts.

Each layout runs in a process of its own (a fresh data dir, template dir and, for PostgreSQL, a
login role and database or databases made for the run and dropped after). Per layout: the first
account (it makes the template), then `--samples` accounts from the template and `--plain-samples`
with `QIWEI_ACCOUNT_TEMPLATES=0`, alternating; then `accounts_onboard --prefix onb --count N` (the
template's verification runs inside every creation and is counted), a second run of the same
command (resuming: everything skipped), and every onboarded account's catalogue digest compared
with a plainly migrated account's.

    .venv/bin/python benchmarks/account_create.py                       # 500 on sqlite and schema
    .venv/bin/python benchmarks/account_create.py --count 100 --layouts sqlite schema database \\
        --onboard-layouts sqlite schema database
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PG_BASE, ROOT, _pg_connect, machine_line, percentile, postgres_available

LAYOUTS = ("sqlite", "schema", "database")


def _environment(layout: str, run: str) -> dict[str, str]:
    data_dir = tempfile.mkdtemp(prefix=f"qiwei-bench-create-{layout}-")
    env = {
        "DJANGO_SETTINGS_MODULE": "qiwei_site.settings.local",
        "QIWEI_DATA_DIR": data_dir,
        "QIWEI_ACCOUNT_TEMPLATE_DIR": str(Path(data_dir) / "templates"),
        "DJANGO_LOG_LEVEL": "WARNING",
        "QIWEI_BENCH_RUN": run,
    }
    server = PG_BASE.split("//", 1)[1].split("@", 1)[1]
    if layout == "schema":
        env["QIWEI_ACCOUNT_DATABASE_URL"] = f"postgres://qiwei_bench_login_{run}@{server}/qiwei_bench_schemas_{run}"
    elif layout == "database":
        env["QIWEI_ACCOUNT_DATABASE_URL"] = f"{PG_BASE}/qiwei_bench_{run}_{{account}}"
    return env


def _prepare_postgres(layout: str, run: str) -> None:
    from psycopg import sql

    if layout != "schema":
        return
    login, database = f"qiwei_bench_login_{run}", f"qiwei_bench_schemas_{run}"
    with _pg_connect() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOINHERIT CREATEROLE").format(sql.Identifier(login)))
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database), sql.Identifier(login)))


def _drop_postgres(run: str) -> None:
    from psycopg import sql

    with _pg_connect() as conn:
        for (name,) in conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s OR datname LIKE %s",
            [f"qiwei_bench_%{run}%", "qiwei\\_\\_tpl\\_%"],
        ).fetchall():
            if run in name or name.startswith("qiwei__tpl_"):
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        database = f"qiwei_bench_schemas_{run}"
        import hashlib

        prefix = f"qiwei_{hashlib.sha256(database.encode()).hexdigest()[:8]}_"
        roles = [r[0] for r in conn.execute("SELECT rolname FROM pg_roles WHERE starts_with(rolname, %s)", [prefix])]
        for role in [*roles, f"qiwei_bench_login_{run}"]:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def _stats(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "median_s": round(statistics.median(values), 4) if values else None,
        "p95_s": round(percentile(values, 95), 4) if values else None,
    }


def child(layout: str, samples: int, plain_samples: int, count: int, jobs: int) -> dict[str, Any]:
    """Runs in the layout's own process, Django configured from the environment."""
    import django

    sys.path.insert(0, str(ROOT))
    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from qiwei_site.platform import account_template, tenancy
    from qiwei_site.platform.models import WeComAccount
    from qiwei_site.platform.services import account_create

    call_command("migrate", verbosity=0, interactive=False)

    def create(account_id: str, *, template: bool) -> float:
        settings.QIWEI_ACCOUNT_TEMPLATES = "1" if template else "0"
        started = time.perf_counter()
        account_create(account_id=account_id, name=account_id, actor="benchmark")
        elapsed = time.perf_counter() - started
        expected = tenancy.TEMPLATE if template else tenancy.MIGRATE
        if tenancy.made_by(tenancy.alias_for(account_id)) != expected:
            raise SystemExit(f"{account_id} was not made by {expected}")
        tenancy.account_connections_close(account_id)
        return elapsed

    first = create("first", template=True)
    timed: dict[str, list[float]] = {"template": [], "plain": []}
    for n in range(max(samples, plain_samples)):
        if n < samples:
            timed["template"].append(create(f"tpl{n:03d}", template=True))
        if n < plain_samples:
            timed["plain"].append(create(f"plain{n:03d}", template=False))
    settings.QIWEI_ACCOUNT_TEMPLATES = "1"
    reference = account_template.alias_digest(tenancy.alias_for("plain000")) if plain_samples else None
    result: dict[str, Any] = {
        "layout": layout,
        "first_makes_template_s": round(first, 3),
        "template": _stats(timed["template"]),
        "plain_migrate": _stats(timed["plain"]),
    }
    if count:
        onboard: dict[str, Any] = {"count": count, "jobs": jobs}
        out = io.StringIO()
        started = time.perf_counter()
        call_command("accounts_onboard", "--prefix", "onb", "--count", str(count), "--jobs", str(jobs), stdout=out)
        onboard["seconds"] = round(time.perf_counter() - started, 1)
        onboard["summary"] = out.getvalue().strip().splitlines()[-1]
        onboard["from_template"] = out.getvalue().count("（模板）")
        out = io.StringIO()
        started = time.perf_counter()
        call_command("accounts_onboard", "--prefix", "onb", "--count", str(count), "--jobs", str(jobs), stdout=out)
        onboard["rerun_seconds"] = round(time.perf_counter() - started, 1)
        onboard["rerun_skipped"] = out.getvalue().count("已存在且是最新，跳过")
        ids = list(WeComAccount.objects.filter(pk__startswith="onb").values_list("id", flat=True))
        started = time.perf_counter()
        alike = current = 0
        for account_id in ids:
            alias = tenancy.register_account_database(account_id)
            current += tenancy.schema_is_current(alias)
            alike += reference is None or account_template.alias_digest(alias) == reference
            tenancy.account_connections_close(account_id)
        onboard["checked_afterwards_s"] = round(time.perf_counter() - started, 1)
        onboard["digest_equal_to_migrated"] = alike
        onboard["fingerprint_current"] = current
        onboard["registered"] = len(ids)
        result["onboard"] = onboard
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS))
    parser.add_argument("--onboard-layouts", nargs="+", choices=LAYOUTS, default=["sqlite", "schema"])
    parser.add_argument("--count", type=int, default=500, help="accounts onboarded per onboarding layout")
    parser.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    parser.add_argument("--samples", type=int, default=20, help="accounts created from the template")
    parser.add_argument("--plain-samples", type=int, default=5, help="accounts created by plain migrate")
    parser.add_argument("--json", help="write the results here too")
    parser.add_argument("--child", choices=LAYOUTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        count = args.count if args.child in args.onboard_layouts else 0
        print(json.dumps(child(args.child, args.samples, args.plain_samples, count, args.jobs)))
        return
    print(machine_line())
    results = []
    for layout in args.layouts:
        if layout != "sqlite" and not postgres_available():
            print(f"{layout}: PostgreSQL not reachable at {PG_BASE}, skipped")
            continue
        run = uuid.uuid4().hex[:6]
        env = {**os.environ, **_environment(layout, run)}
        try:
            _prepare_postgres(layout, run)
            command = [sys.executable, __file__, "--child", layout, "--count", str(args.count)]
            command += ["--jobs", str(args.jobs)]
            command += ["--samples", str(args.samples), "--plain-samples", str(args.plain_samples)]
            command += ["--onboard-layouts", *args.onboard_layouts]
            done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
            if done.returncode:
                print(f"{layout}: failed\n{done.stderr[-3000:]}")
                continue
            result = json.loads(done.stdout.strip().splitlines()[-1])
        finally:
            if layout != "sqlite":
                _drop_postgres(run)
        results.append(result)
        template, plain = result["template"], result["plain_migrate"]
        print(
            f"{layout:9s} account_create: template median {template['median_s']:.3f}s p95 {template['p95_s']:.3f}s "
            f"(n={template['n']}) | plain migrate median {plain['median_s']:.3f}s p95 {plain['p95_s']:.3f}s "
            f"(n={plain['n']}) | first account (makes the template) {result['first_makes_template_s']:.2f}s"
        )
        onboard = result.get("onboard")
        if onboard:
            print(
                f"{layout:9s} onboard {onboard['count']} accounts (--jobs {onboard['jobs']}): {onboard['seconds']}s, "
                f"{onboard['from_template']} from the verified template; again (resume): {onboard['rerun_seconds']}s, "
                f"{onboard['rerun_skipped']} skipped; afterwards "
                f"{onboard['fingerprint_current']}/{onboard['registered']} "
                f"current, {onboard['digest_equal_to_migrated']} with a migrated account's catalogue digest "
                f"({onboard['checked_afterwards_s']}s)"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
