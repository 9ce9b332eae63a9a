"""Shared set-up for benchmarks: a throw-away data dir, Django configured from the environment,
optional PostgreSQL account databases, percentile helpers, the JSON hand-off to run_all, another
revision's tree to compare with (`revision_tree`) and gunicorn on loopback (`start_gunicorn`)."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_BASE = os.environ.get("QIWEI_BENCH_POSTGRES", "postgres://postgres@127.0.0.1:5432")

# The third-party data sets (crosswoz-dev/, locomo-dev/, beike-dev/), read in place and never
# copied into the repository. One lookup for every benchmark that reads them: a `--datasets DIR`
# given to run_all (which passes it on in this variable), else $QIWEI_DATASETS_DIR, else a
# `shared/datasets` folder beside the project or one level further up (a clone under
# /work/worktrees/NAME finds /work/shared/datasets as /work/main does).
DATASETS_ENV = "QIWEI_DATASETS_DIR"
DATASETS_CANDIDATES = (ROOT.parent / "shared" / "datasets", ROOT.parent.parent / "shared" / "datasets")


def datasets_dir(explicit: Path | str | None = None) -> Path:
    """The data-set folder: `explicit`, else $QIWEI_DATASETS_DIR, else the first candidate that
    exists. A folder that was named (argument or variable) is used as is, never replaced by a
    guess; with nothing named and nothing found, the first candidate (callers check `.exists()`
    or call `require_dataset`, which says where it looked)."""
    named = explicit or os.environ.get(DATASETS_ENV)
    if named:
        return Path(named).expanduser().resolve()
    return next((path for path in DATASETS_CANDIDATES if path.is_dir()), DATASETS_CANDIDATES[0])


def missing_datasets(names: Sequence[str], explicit: Path | str | None = None) -> str | None:
    """None when every data set in `names` (sub-folders such as "locomo-dev") is there; otherwise a
    message naming the missing ones, where they were looked for and how to point at them."""
    root = datasets_dir(explicit)
    missing = [name for name in names if not (root / name).is_dir() or not any((root / name).iterdir())]
    if not missing:
        return None
    named = explicit or os.environ.get(DATASETS_ENV)
    looked = (
        f"{root} ({'--datasets' if explicit else '$' + DATASETS_ENV})"
        if named
        else " and ".join(str(path) for path in DATASETS_CANDIDATES)
    )
    return (
        f"data set not found: {', '.join(missing)} (looked in {looked}); set {DATASETS_ENV}=DIR "
        "or pass --datasets DIR to run_all.py, DIR holding crosswoz-dev/, locomo-dev/ and beike-dev/"
    )


def require_dataset(name: str) -> Path:
    """`<data-set folder>/name`, or exit 2 with `missing_datasets`'s message (a benchmark run alone)."""
    message = missing_datasets([name])
    if message:
        print(message, file=sys.stderr)
        raise SystemExit(2)
    return datasets_dir() / name


# Where a committed revision's modules live now (issue 20 moved the reading of text into
# `qiwei_site/reading/`): an older extractor or gate read with `git show` imports them by their old
# names, which `moved_imports` rewrites so it loads beside today's code.
MOVED_MODULES = {
    "memory.capture.safety": "qiwei_site.reading.safety",
    "memory.capture.masking": "qiwei_site.reading.masking",
    "memory.capture.guard": "qiwei_site.reading.guard",
    "memory.values": "qiwei_site.reading.values",
    "memory.text": "qiwei_site.reading.normalise",
    "conversations.profile_fields": "qiwei_site.reading.fields",
}


def moved_imports(source: str) -> str:
    """`source` with imports of moved modules pointing at their new homes."""
    import re

    for old, new in MOVED_MODULES.items():
        source = re.sub(rf"\b{re.escape(old)}\b", new, source)
    return source


def bench_environment(*, postgres: bool, tag: str, conn_max_age: int = 60) -> dict[str, str]:
    """Environment variables for a fresh, isolated benchmark installation (`conn_max_age`: seconds a
    PostgreSQL connection stays open between requests; the shipped default is 60, 0 closes it)."""
    data_dir = tempfile.mkdtemp(prefix=f"qiwei-bench-{tag}-")
    env = {
        "DJANGO_SETTINGS_MODULE": "qiwei_site.settings.local",
        "QIWEI_DATA_DIR": data_dir,
        "DJANGO_LOG_LEVEL": "WARNING",
    }
    if postgres:
        run = uuid.uuid4().hex[:6]
        env["QIWEI_DB_CONN_MAX_AGE"] = str(conn_max_age)
        env["DATABASE_URL"] = f"{PG_BASE}/qiwei_bench_default_{run}"
        env["QIWEI_ACCOUNT_DATABASE_URL"] = f"{PG_BASE}/qiwei_bench_{run}_{{account}}"
        env["QIWEI_BENCH_RUN"] = run
    return env


def setup_django(env: dict[str, str], *, root: Path | None = None, fresh: bool = True) -> None:
    """Configure Django from `env` and migrate; `root` is the source tree to import the project
    from (this checkout by default; context_build runs another revision's tree beside it).
    `fresh` (re)creates a PostgreSQL default database; False attaches to one another process made."""
    os.environ.update(env)
    if os.environ.get("QIWEI_BENCH_KEEP") != "1":  # keep the data dir (logs, databases) for a post-mortem
        atexit.register(shutil.rmtree, env["QIWEI_DATA_DIR"], ignore_errors=True)
    sys.path.insert(0, str(root or ROOT))
    if fresh and "DATABASE_URL" in env and env["DATABASE_URL"].startswith("postgres"):
        _create_pg_database(env["DATABASE_URL"].rsplit("/", 1)[1].split("?", 1)[0])
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def _pg_connect():
    import psycopg

    host_part = PG_BASE.split("//", 1)[1]
    user, host = host_part.split("@", 1)
    hostname, port = host.split(":")
    return psycopg.connect(host=hostname, port=int(port), user=user, dbname="postgres", autocommit=True)


def _create_pg_database(name: str) -> None:
    from psycopg import sql

    with _pg_connect() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_pg_databases(env: dict[str, str]) -> None:
    run = env.get("QIWEI_BENCH_RUN")
    if not run:
        return
    from psycopg import sql

    with contextlib.suppress(Exception):
        from django.db import connections

        connections.close_all()
    with _pg_connect() as conn:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s", [f"qiwei_bench_%{run}%"]
            ).fetchall()
        ]
        for name in names:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def postgres_available() -> bool:
    try:
        with _pg_connect():
            return True
    except Exception:
        return False


def percentile(values: Sequence[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * pct / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary_ms(values: Sequence[float]) -> str:
    return (
        f"p50 {percentile(values, 50) * 1000:.1f} ms · p95 {percentile(values, 95) * 1000:.1f} ms · "
        f"mean {statistics.fmean(values) * 1000:.1f} ms (n={len(values)})"
    )


def machine_line() -> str:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(Exception):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = ""
    with contextlib.suppress(Exception):
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    return f"{os.cpu_count()} cores ({cpu}){mem}, Python {platform.python_version()}, {platform.system()}"


@contextlib.contextmanager
def timer() -> Iterator[list[float]]:
    import time

    box: list[float] = []
    start = time.perf_counter()
    yield box
    box.append(time.perf_counter() - start)


def write_json(path: str | None, data: object) -> None:
    """Hand the figures to run_all (which renders RESULTS.md); a no-op without --json."""
    if path:
        Path(path).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


def redis_available(url: str) -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except Exception:
        return False


# --- another revision, gunicorn, processes -------------------------------------------------


def revision_tree(revision: str, into: Path) -> Path:
    """A read-only export of `revision` into `into` (git archive | tar -x), never a checkout;
    returns `into`. Run with this checkout's venv, its code comes first on sys.path when it is the
    working directory (or `setup_django(root=...)`), ahead of the venv's editable install."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", revision], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_gunicorn(
    env: dict[str, str], *, root: Path = ROOT, workers: int, threads: int = 4, log_path: Path
) -> tuple[subprocess.Popen[bytes], str]:
    """gunicorn (the tree's own qiwei_site/gunicorn.conf.py, this venv's gunicorn) serving the code
    at `root` on a free loopback port, workers never recycled (GUNICORN_MAX_REQUESTS=0); returns
    the process and the base URL once /healthz answers."""
    import time

    import requests

    port = free_port()
    server_env = {
        **os.environ,
        **env,
        "PYTHONPATH": str(root),
        "QIWEI_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": str(workers),
        "GUNICORN_THREADS": str(threads),
        "GUNICORN_ACCESS_LOG": "/dev/null",
        "GUNICORN_LOG_LEVEL": "warning",
        "GUNICORN_MAX_REQUESTS": "0",
    }
    with open(log_path, "ab") as log:
        server = subprocess.Popen(
            [str(ROOT / ".venv/bin/gunicorn"), "qiwei_site.wsgi:application", "-c", "qiwei_site/gunicorn.conf.py"],
            cwd=root,
            env=server_env,
            stdout=log,
            stderr=log,
        )
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        if server.poll() is not None:
            break
        try:
            if requests.get(base + "/healthz", timeout=1).status_code == 200:
                return server, base
        except requests.RequestException:
            time.sleep(0.2)
    stop_process(server)
    raise RuntimeError(f"gunicorn did not answer on {base}; see {log_path}")


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 30 s: only the process this benchmark started."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def child_pids(pid: int) -> list[int]:
    """The direct children of `pid` (a gunicorn master's workers), from /proc."""
    children: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if int(_stat_fields(int(entry.name))[1]) == pid:
                children.append(int(entry.name))
    return sorted(children)


def _stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat from field 3 (state) on: the command name may hold spaces and parentheses,
    so the fields after the last ")"."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def vm_rss_kib(pid: int) -> int:
    """Resident set size of `pid` in KiB (VmRSS in /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) spent so far by `pid`, its reaped children and its live
    children: a gunicorn master and its workers, or a postmaster and its backends (a backend that
    exits is counted through its parent's cutime once reaped)."""
    total = sum(int(value) for value in _stat_fields(pid)[11:15])  # utime stime cutime cstime
    for child in child_pids(pid):
        with contextlib.suppress(OSError):
            total += sum(int(value) for value in _stat_fields(child)[11:13])  # utime stime
    return total / os.sysconf("SC_CLK_TCK")
