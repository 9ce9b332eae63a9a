"""Run every benchmark, each beside its baseline in the same run, print the figures and write
benchmarks/RESULTS.md (figures, machine, date, and the command that reproduces them).

    .venv/bin/python benchmarks/run_all.py [--quick] [--only context recall api capture language scale] [--output PATH]
        [--datasets DIR]

`--quick` shrinks every group (smaller data, shorter loads, fewer rounds; each figure still beside
its baseline in the same run) and, unless `--output` is given, writes its report to
QUICK_OUTPUT (in the system's temporary folder), never over the full run's benchmarks/RESULTS.md.

Each benchmark runs in its own process (Django is configured once per process) and hands its
figures back as JSON. PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) parts are skipped,
and say so, when the server is not reachable. The third-party data sets (LoCoMo, CrossWOZ, beike)
are found by `benchmarks.common.datasets_dir`: `--datasets DIR`, else $QIWEI_DATASETS_DIR, else
`shared/datasets` beside the project or one level up; a benchmark whose data set is absent is
reported as "skipped: data set not found" and the run goes on.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    DATASETS_ENV,
    ROOT,
    datasets_dir,
    machine_line,
    missing_datasets,
    postgres_available,
    redis_available,
)

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
REDIS_URL = "redis://127.0.0.1:6379/11"
CAPTURE_CUSTOMERS = 20

TODAY_REF = "b40be73"  # the code the context build is compared with (issue 13's "today")

# Where --quick writes its report unless --output is given: the full figures in RESULTS.md stay.
QUICK_OUTPUT = Path(tempfile.gettempdir()) / "qiwei-bench-quick" / "RESULTS.md"

FULL: dict[str, dict[str, Any]] = {
    "context": {"total": 1_000_000, "sizes": "1000,10000,100000", "rounds": 40, "naive_rounds": 6, "stage_runs": 30},
    "api": {"seconds": 10, "clients": [8, 32]},
    "capture": {"messages": 1000, "filesystem_messages": 240},
}
# --quick: a few minutes in all (see README). Smaller customers in a smaller account, fewer rounds,
# shorter loads at 8 clients only, fewer messages; every baseline still runs beside its figure.
QUICK: dict[str, dict[str, Any]] = {
    "context": {"total": 50_000, "sizes": "1000,10000,30000", "rounds": 8, "naive_rounds": 2, "stage_runs": 10},
    "api": {"seconds": 2, "clients": [8]},
    "capture": {"messages": 100, "filesystem_messages": 10},
}


GROUPS = ["context", "recall", "api", "capture", "language", "scale"]


def run(name: str, command: list[str], out: Path) -> Any:
    """Run one benchmark with its output streamed; returns its JSON figures or None on failure."""
    print(f"\n### {name}: {' '.join(Path(c).name if c == PYTHON else c for c in command)}", flush=True)
    started = time.monotonic()
    completed = subprocess.run(command, cwd=ROOT, check=False)
    print(f"### {name}: {time.monotonic() - started:.0f} s, exit {completed.returncode}", flush=True)
    if completed.returncode != 0 or not out.exists():
        return None
    return json.loads(out.read_text(encoding="utf-8"))


def bench_context(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for backend in ("sqlite", "postgres"):
        if backend == "postgres" and not postgres_available():
            results[backend] = "skipped: PostgreSQL is not reachable at 127.0.0.1:5432"
            continue
        out = tmp / f"context-{backend}.json"
        command = [PYTHON, str(HERE / "context_build.py"), "--backend", backend, "--total", str(params["total"])]
        command += ["--sizes", params["sizes"]]
        command += ["--rounds", str(params["rounds"]), "--naive-rounds", str(params["naive_rounds"])]
        command += ["--stage-runs", str(params["stage_runs"])]
        command += ["--today", TODAY_REF, "--json", str(out)]
        results[backend] = run(f"context build ({backend})", command, out) or "failed (see the log above)"
    return results


def bench_recall(tmp: Path) -> Any:
    if message := missing_datasets(["locomo-dev"]):
        print(f"\n### recall (LoCoMo): skipped: {message}", flush=True)
        return f"skipped: {message}"
    out = tmp / "recall.json"
    return run("recall (LoCoMo)", [PYTHON, str(HERE / "recall_locomo.py"), "--json", str(out)], out) or "failed"


LANGUAGE_BENCHMARKS = (
    (
        "capture_tiers",
        "Capture's two tiers on real customers, fresh trades and CrossWOZ (issue 35)",
        ["capture_tiers.py"],
    ),
    ("gate", "Safety gate: false positives on CrossWOZ / LoCoMo turns, detection by technique", ["gate_fp.py"]),
    ("extract_crosswoz", "Extraction on CrossWOZ dev Inform slot values", ["extract_crosswoz.py"]),
    ("extract_rental", "Extraction on our own rental dev set", ["extract_rental_dev.py"]),
    ("extract_trades", "Extraction on one fresh hand-labelled set per trade (issue 22)", ["extract_trades.py"]),
    ("gate_families", "Gate families and credential shapes of issue 22, with look-alikes", ["gate_families_22.py"]),
    (
        "secret_shapes36",
        "Secret shapes of issue 36 (the issue's 10, 40 fresh, look-alikes, third-party pools) beside 7dedc7b",
        ["secret_shapes36.py"],
    ),
    (
        "hypotheses_sensitivity",
        "Hypotheses refused as sensitive (PIPL art. 28, done deals) and topic pairs (issue 36 H4/L5) beside d1d2adf",
        ["hypotheses_sensitivity.py"],
    ),
    ("recall_families", "Recall: a repeated question, one shared character, dates", ["recall_families_22.py"]),
    (
        "reading_bound",
        "Reading is bounded: a draft over 8 crafted 8,000-character messages beside 8 ordinary ones (issue 36)",
        ["reading_bound.py"],
    ),
)
# --quick: the same data and verdicts, one timed pass instead of the best of three.
LANGUAGE_QUICK = (
    (
        "capture_tiers",
        "Capture's two tiers on real customers, fresh trades and CrossWOZ (issue 35)",
        ["capture_tiers.py"],
    ),
    (
        "gate",
        "Safety gate: false positives on CrossWOZ / LoCoMo turns, detection by technique (one timed pass)",
        ["gate_fp.py", "--passes", "1"],
    ),
    (
        "extract_crosswoz",
        "Extraction on CrossWOZ dev Inform slot values (one timed pass)",
        ["extract_crosswoz.py", "--repeats", "1"],
    ),
    ("extract_rental", "Extraction on our own rental dev set", ["extract_rental_dev.py"]),
    ("extract_trades", "Extraction on one fresh hand-labelled set per trade (issue 22)", ["extract_trades.py"]),
    ("gate_families", "Gate families and credential shapes of issue 22, with look-alikes", ["gate_families_22.py"]),
    (
        "secret_shapes36",
        "Secret shapes of issue 36 (the issue's 10, 40 fresh, look-alikes, third-party pools) beside 7dedc7b",
        ["secret_shapes36.py"],
    ),
    (
        "hypotheses_sensitivity",
        "Hypotheses refused as sensitive (PIPL art. 28, done deals) and topic pairs (issue 36 H4/L5) beside d1d2adf",
        ["hypotheses_sensitivity.py"],
    ),
    ("recall_families", "Recall: a repeated question, one shared character, dates", ["recall_families_22.py"]),
    (
        "reading_bound",
        "Reading is bounded: a draft over 8 crafted 8,000-char messages beside 8 ordinary ones (issue 36, 2 rounds)",
        ["reading_bound.py", "--rounds", "2"],
    ),
)

_ACCOUNTS = ["api_load.py", "--accounts", "1", "200", "500", "--backends", "postgres", "pgbouncer", "--clients", "32"]
# Issue 13's figures, each printed beside the code before it (b40be73) or the behaviour before it
# (QIWEI_ACCOUNT_CONN_CAP=0) in the same run.
SCALE_BENCHMARKS = (
    (
        "api_compare",
        "Context API, one account on SQLite, 8 clients: this code beside b40be73, phases alternated",
        ["api_load.py", "--compare", TODAY_REF, "--backends", "sqlite", "--clients", "8", "--seconds", "10"],
    ),
    (
        "accounts_capped",
        "Many accounts on one PostgreSQL (max_connections = 100): the account pool (cap 8), 60 s per phase",
        [*_ACCOUNTS, "--modes", "capped", "--seconds", "60"],
    ),
    (
        "accounts_legacy",
        "The same before the pool (QIWEI_ACCOUNT_CONN_CAP=0: a connection per thread per account), 15 s per phase",
        [*_ACCOUNTS, "--modes", "legacy", "--seconds", "15"],
    ),
    (
        "connection_floor",
        "What a cold connection costs: one context build's SQL replayed, held connection vs 200 databases",
        ["connection_floor.py"],
    ),
    (
        "capture_compare",
        "Capture, durable jobs run as the worker runs them, SQLite: this code beside b40be73",
        ["capture_throughput.py", "--mode", "direct", "--compare", TODAY_REF, "--rounds", "3"],
    ),
    (
        "worker_rss",
        "RSS of one gunicorn worker over 10,000 context requests across 1,000 customers, beside b40be73",
        ["worker_rss.py", "--compare", TODAY_REF],
    ),
)
# --quick: every scale benchmark smaller and shorter, each still beside its baseline in the same
# run; the pool and the behaviour before it share one preparation (one invocation, both modes).
# fmt: off
SCALE_QUICK = (
    (
        "api_compare",
        "Context API, one account on SQLite, 8 clients: this code beside b40be73, phases alternated (2 s, 2 rounds)",
        ["api_load.py", "--compare", TODAY_REF, "--backends", "sqlite", "--clients", "8", "--seconds", "2",
         "--rounds", "2"],
    ),
    (
        "accounts",
        "Many accounts on one PostgreSQL (max_connections = 100): before the pool (QIWEI_ACCOUNT_CONN_CAP=0) "
        "beside the account pool (cap 8), 20 accounts, 4 s per phase (PgBouncer: the full run)",
        ["api_load.py", "--accounts", "20", "--backends", "postgres", "--clients", "32",
         "--modes", "legacy", "capped", "--seconds", "4"],
    ),
    (
        "connection_floor",
        "What a cold connection costs: one context build's SQL replayed, held connection vs 20 databases, 8 clients",
        ["connection_floor.py", "--accounts", "20", "--pool", "8", "--clients", "8", "--requests", "100",
         "--max-seconds", "8", "--batch-seconds", "0.5", "--connect-reps", "40"],
    ),
    (
        "capture_compare",
        "Capture, durable jobs run as the worker runs them, SQLite: this code beside b40be73 (100 messages)",
        ["capture_throughput.py", "--mode", "direct", "--compare", TODAY_REF, "--rounds", "2",
         "--messages", "100", "--customers", "2"],
    ),
    (
        "worker_rss",
        "RSS of one gunicorn worker over 1,000 context requests across 100 customers, beside b40be73",
        ["worker_rss.py", "--compare", TODAY_REF, "--customers", "100", "--requests", "1000", "--every", "200",
         "--budget", "60"],
    ),
)
# fmt: on


# The third-party data sets each script of the language group reads (the others read only
# benchmarks/data/, or leave an absent pool out by themselves).
NEEDS_DATASETS = {
    "capture_tiers.py": ["beike-dev", "crosswoz-dev"],
    "gate_fp.py": ["crosswoz-dev", "locomo-dev"],
    "extract_crosswoz.py": ["crosswoz-dev"],
    "secret_shapes36.py": ["crosswoz-dev", "beike-dev", "locomo-dev"],
}


def pgbouncer_installed() -> bool:
    return bool(shutil.which("pgbouncer")) or Path("/usr/sbin/pgbouncer").exists()


def bench_printed(benchmarks: tuple[tuple[str, str, list[str]], ...]) -> dict[str, Any]:
    """Scripts that compare with their own baseline in the same run and print their own tables,
    kept here as printed."""
    results: dict[str, Any] = {}
    for key, title, argv in benchmarks:
        print(f"\n### {title}: {' '.join(argv)}", flush=True)
        started = time.monotonic()
        skipped = None
        if argv[0] == "connection_floor.py" and not pgbouncer_installed():
            # It times PgBouncer beside the direct connections and cannot run without it (api_load
            # skips its pgbouncer backend by itself).
            skipped = "skipped: PgBouncer is not installed (Debian package `pgbouncer`, as .ci/run installs it)"
        elif message := missing_datasets(NEEDS_DATASETS.get(argv[0], [])):
            skipped = f"skipped: {message}"
        if skipped:
            print(skipped, flush=True)
            results[key] = {
                "title": title,
                "command": f".venv/bin/python benchmarks/{' '.join(argv)}",
                "seconds": 0.0,
                "output": skipped,
            }
            continue
        completed = subprocess.run(
            [PYTHON, str(HERE / argv[0]), *argv[1:]], cwd=ROOT, check=False, capture_output=True, text=True
        )
        print(completed.stdout, flush=True)
        print(f"### {key}: {time.monotonic() - started:.0f} s, exit {completed.returncode}", flush=True)
        results[key] = {
            "title": title,
            "command": f".venv/bin/python benchmarks/{' '.join(argv)}",
            "seconds": time.monotonic() - started,
            "date": f"{dt.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
            "output": completed.stdout if completed.returncode == 0 else f"failed: {completed.stderr[-2000:]}",
        }
    return results


def render_printed(heading: str, result: Any) -> list[str]:
    lines = [heading, ""]
    for entry in result.values():
        when = f", {entry['date']}" if entry.get("date") else ""
        lines += [f"### {entry['title']}", "", f"`{entry['command']}` ({entry['seconds']:.0f} s{when})", ""]
        lines += ["```text", entry["output"].rstrip(), "```", ""]
    return lines


def bench_api(params: dict[str, Any], tmp: Path) -> Any:
    out = tmp / "api.json"
    backends = ["sqlite"] + (["postgres", "postgres-persistent"] if postgres_available() else [])
    command = [PYTHON, str(HERE / "api_load.py"), "--seconds", str(params["seconds"])]
    command += ["--clients", *map(str, params["clients"])]
    command += ["--backends", *backends, "--json", str(out)]
    rows = run("API load", command, out)
    return {"rows": rows or [], "seconds": params["seconds"], "postgres": "postgres" in backends}


def bench_capture(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for mode in ("bare", "direct", "filesystem", "filesystem-1s", "redis"):
        if mode == "redis" and not redis_available(REDIS_URL):
            results[mode] = "skipped: Redis is not reachable at 127.0.0.1:6379"
            continue
        out = tmp / f"capture-{mode}.json"
        # 1 s polling is slow, so it gets fewer messages over fewer customers: the same messages
        # per customer, since a customer's memory size drives the cost of a capture.
        messages = params["filesystem_messages"] if mode == "filesystem-1s" else params["messages"]
        customers = max(1, round(CAPTURE_CUSTOMERS * messages / params["messages"]))
        command = [PYTHON, str(HERE / "capture_throughput.py"), "--mode", mode, "--messages", str(messages)]
        command += ["--customers", str(customers)]
        command += ["--redis-url", REDIS_URL, "--json", str(out)]
        results[mode] = run(f"capture ({mode})", command, out) or "failed (see the log above)"
    return results


# --- RESULTS.md ---------------------------------------------------------------------------


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    align = ["---" if i == 0 else "--:" for i in range(len(headers))]
    return [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join(align) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


def ms(value: float) -> str:
    return f"{value:,.1f}"


def _variant_label(name: str, result: dict[str, Any]) -> str:
    today = result.get("today_ref") or "?"
    labels = {
        "ours_warm": "ours, warm (context answer cached)",
        "ours_cold": "ours, cold (answer and recall caches cleared)",
        "today_warm": f"today ({today}), warm",
        "today_cold": f"today ({today}), cold (tokenisation cache cleared)",
        "recent_window": "recent-window prompt (newest messages that fit)",
        "naive": "naive prompt (every message)",
    }
    if name in labels:
        return labels[name]
    base, _sep, mode = name.rpartition("_")
    return f"{base}, {mode}"


# Today's steps read and compute; ours read everything first (`*_read`, `window`), then compute.
STAGE_ORDER = [
    "instructions",
    "latest_message",
    "core_memory",
    "core_read",
    "window",
    "recent",
    "business_state",
    "business_read",
    "gather (incl. recall)",
    "recall",
    "assemble",
]
VARIANT_ORDER = ["ours_warm", "ours_cold", "today_warm", "today_cold", "recent_window", "naive"]


def render_context(results: dict[str, Any]) -> list[str]:
    lines = [
        "## 1. Context build latency (AgentContextBuilder.build, today's builder, the recent-window and naive prompts)",
        "",
    ]
    for backend, result in results.items():
        if not isinstance(result, dict):
            lines += [f"**{backend}**: {result}", ""]
            continue
        if "latency" not in result:
            lines += [f"**{backend}**: figures from an older run format; run the context benchmark again.", ""]
            continue
        sizes = result["sizes"]
        first, last = sizes[0], sizes[-1]
        lines += [
            f"**{result['vendor']}** — one account of {result['total_messages']:,} messages over "
            f"{result['customers']:,} customers (loaded in {result['load_seconds']:.0f} s). Every variant and size "
            f"timed in one round-robin loop, order shuffled each round: {result['rounds']} rounds "
            f"({result['naive_rounds']} with the naive prompt). Warm and cold run in separate processes over the "
            "same database, so clearing caches for a cold build does not empty the warm ones; today's code runs "
            "from `git archive` in its own process over the same data.",
            "",
        ]
        names = [n for n in VARIANT_ORDER if n in result["latency"]]
        names += [n for n in result["latency"] if n not in names]
        rows = []
        for name in names:
            by_size = result["latency"][name]
            ratio = result["ratios"][name]
            rows.append(
                [
                    _variant_label(name, result),
                    *(f"{ms(by_size[str(size)]['p50_ms'])} / {ms(by_size[str(size)]['p95_ms'])}" for size in sizes),
                    f"{ratio['p50']:.2f}× ({ratio['verdict']})",
                ]
            )
        lines += table(
            ["variant", *(f"{size:,} msgs p50 / p95 ms" for size in sizes), f"{last:,} / {first:,} p50"], rows
        )
        lines += [
            "",
            f"Verdict from the p50 ratio: flat up to {result['flat_ratio']}×, linear from half the size ratio "
            f"({last // first // 2}×), growing in between.",
            "",
        ]
        lines += _render_queries_and_stages(result)
        for name, same in result.get("identical_prompts", {}).items():
            lines += [f"Prompts of `{name}` and ours identical for every size: **{'yes' if same else 'NO'}**.", ""]
    return lines


def _render_queries_and_stages(result: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    queries = result.get("queries", {})
    if queries:
        rows = [
            [
                label,
                f"{q['warm']['account']} + {q['warm']['default']}",
                f"{q['cold']['account']} + {q['cold']['default']}",
            ]
            for label, q in queries.items()
        ]
        lines += ["SQL queries per build (account database + default database):", ""]
        lines += [*table(["builder", "warm", "cold"], rows), ""]
    stages = result.get("stages", {})
    if stages:
        steps = [step for step in STAGE_ORDER if any(step in split for split in stages.values())]
        for split in stages.values():
            steps += [step for step in split if step not in steps and step != "total"]
        lines += [
            f"Where a cold build's time goes ({result['stage_size']:,}-message customer, p50 ms per step, "
            "builder methods timed by name; `gather` includes recall):",
            "",
        ]
        lines += table(
            ["step", *stages],
            [[step, *(f"{split[step]:.2f}" if step in split else "–" for split in stages.values())] for step in steps]
            + [["total", *(f"{split['total']:.2f}" for split in stages.values())]],
        )
        lines.append("")
    return lines


def render_prompt_size(results: dict[str, Any]) -> list[str]:
    result = next((r for r in results.values() if isinstance(r, dict) and "chars" in r), None)
    lines = ["## 2. Prompt size (characters): ours, today's, the recent-window and the naive prompt", ""]
    if result is None:
        return [*lines, "No context figures (see above).", ""]
    chars = result["chars"]
    columns = [name for name in ("ours_warm", "today_warm", "recent_window", "naive") if name in chars]
    headers = {"ours_warm": "ours", "today_warm": "today", "recent_window": "recent window", "naive": "naive"}
    rows = [
        [
            f"{size:,}",
            *(f"{chars[name][str(size)]:,}" for name in columns),
            f"{1 - chars['ours_warm'][str(size)] / chars['naive'][str(size)]:.2%}",
            f"{chars['naive'][str(size)] / result['prompt_char_limit']:,.1f}×",
        ]
        for size in result["sizes"]
    ]
    lines += table(
        ["customer's messages", *(headers[name] for name in columns), "ours saves vs naive", "naive ÷ prompt limit"],
        rows,
    )
    lines += [
        "",
        f"Same customers and latest message everywhere; the prompt limit is QIWEI_AGENT_PROMPT_CHAR_LIMIT = "
        f"{result['prompt_char_limit']:,}, the recent window fills QIWEI_AGENT_CONVERSATION_CHAR_LIMIT = "
        f"{result['conversation_char_limit']:,} with the newest messages. The sizes do not depend on the backend.",
        "",
    ]
    return lines


def render_recall(result: Any) -> list[str]:
    lines = ["## 3. Recall quality on LoCoMo (memory.recall.rank, the ranker before it, BM25 on the same tokens)", ""]
    if not isinstance(result, dict):
        return [*lines, str(result), ""]
    k = result["k"]
    old = result.get("old_ref", "?")
    lines += [
        f"{result['conversations']} conversations, {result['turns']:,} turns, k = {k}, MRR depth {result['depth']}; "
        f"category 5 (adversarial) left out. Data read in place from `{result.get('data', 'locomo-dev')}`. "
        f'"old" is `memory/context/recall.py` at {old}, run in the same process.',
        "",
    ]
    rows = [
        [row["category"], str(row["n"]), *(f"{v:.3f}" for name in ("ours", "old", "bm25") for v in row[name])]
        for row in result["rows"]
    ]
    lines += table(
        [
            "category", "n",
            f"ours any@{k}", f"ours all@{k}", "ours MRR",
            f"old any@{k}", f"old all@{k}", "old MRR",
            f"BM25 any@{k}", f"BM25 all@{k}", "BM25 MRR",
        ],
        rows,
    )  # fmt: skip
    empty = result["empty"]
    lines += [
        "",
        "Empty recalls (all questions / questions sharing a bigram, word or number with an evidence turn): "
        + "; ".join(
            f"{name} {empty[name]['empty']} ({empty[name]['empty_share']:.1%}) / "
            f"{empty[name]['empty_overlapping']} of {empty[name]['overlapping']}"
            for name in ("ours", "old", "bm25")
        )
        + ".",
        "",
        f"Mean time per question: ours {result['ours_ms_per_question']:.2f} ms (stored features), "
        f"old {result['old_ms_per_question']:.2f} ms (tokenisation cache warm), "
        f"BM25 {result['bm25_ms_per_question']:.2f} ms.",
        "",
    ]
    return lines


def render_api(result: dict[str, Any]) -> list[str]:
    lines = ["## 4. API throughput and latency (gunicorn on 127.0.0.1, /healthz as the floor)", ""]
    rows = result["rows"]
    if not rows:
        return [*lines, "API load failed (see the log).", ""]
    workers = rows[0]["workers"]
    lines += [
        f"gunicorn gthread, {workers} workers × 4 threads; load generator in 2 processes on the same machine; "
        f"{result['seconds']:.0f} s per point; 20 customers × 300 messages; ingest posts one message per "
        "request and queues its capture job on the filesystem broker (no worker running).",
        "",
    ]
    if not result["postgres"]:
        lines += ["PostgreSQL skipped: not reachable at 127.0.0.1:5432.", ""]
    table_rows = [
        [
            {"postgres": "postgres, QIWEI_DB_CONN_MAX_AGE=0", "postgres-persistent": "postgres (default: 60 s)"}.get(
                row["backend"], row["backend"]
            ),
            {"healthz": "GET /healthz", "context": "GET …/context/", "ingest": "POST …/messages/"}[row["kind"]],
            str(row["clients"]),
            f"{row['rps']:,.1f}",
            ms(row["p50_ms"]),
            ms(row["p95_ms"]),
            str(row["errors"]),
        ]
        for row in rows
    ]
    lines += table(["database", "endpoint", "clients", "req/s", "p50 ms", "p95 ms", "errors"], table_rows)
    by_key = {(row["backend"], row["kind"], row["clients"]): row for row in rows}
    fresh, kept = by_key.get(("postgres", "context", 8)), by_key.get(("postgres-persistent", "context", 8))
    fresh_in, kept_in = by_key.get(("postgres", "ingest", 8)), by_key.get(("postgres-persistent", "ingest", 8))
    if fresh and kept and fresh_in and kept_in:
        lines += [
            "",
            "On PostgreSQL the shipped default keeps connections to `default` and to the account database open "
            "for 60 s (`QIWEI_DB_CONN_MAX_AGE`, with health checks). Closing them after every request (0) gives "
            f"the context endpoint {fresh['rps']:.0f} req/s against {kept['rps']:.0f} with the default, and "
            f"ingest {fresh_in['rps']:.0f} against {kept_in['rps']:.0f} req/s at 8 clients. Both endpoints are "
            "CPU-bound on this 2-core machine (the load generator shares it), well below the /healthz floor.",
        ]
    return [*lines, ""]


CAPTURE_LABELS = {
    "bare": "baseline: bare capture service, no job rows or queue (in process)",
    "direct": "durable jobs run directly (claim → run → done, in process, no broker)",
    "filesystem": "embedded default: filesystem broker (polled every 0.1 s) + real `celery worker`",
    "filesystem-1s": "filesystem broker at kombu's default 1 s polling + real `celery worker`",
    "redis": "Redis broker + real `celery worker`",
}


def render_capture(results: dict[str, Any]) -> list[str]:
    lines = ["## 5. Capture throughput (ingest → every capture job `done`)", ""]
    lines += [
        "SQLite account database; messages ingested through `messages_ingest` in batches of 50, customers taking "
        "turns; the clock runs from the first ingest until the last job is `done` (for the bare baseline: until "
        "the last `capture_message` returns). Workers: `celery worker --pool=prefork`.",
        "",
    ]
    rows = []
    for mode, result in results.items():
        if not isinstance(result, dict):
            rows.append([CAPTURE_LABELS[mode], "–", "–", "–", "–", str(result)])
            continue
        rows.append(
            [
                CAPTURE_LABELS[mode],
                f"{result['messages']:,}",
                str(result["concurrency"]),
                f"{result['rate']:,.1f}",
                f"{result['end_to_end_seconds']:,.1f}",
                f"{result['jobs_done']:,} jobs done, {result['memory_items']:,} items, "
                f"{result['snapshot_versions']:,} snapshots",
            ]
        )
    lines += table(["mode", "messages", "processes", "messages/s", "seconds", "outcome"], rows)
    fs, slow = results.get("filesystem"), results.get("filesystem-1s")
    if isinstance(fs, dict) and isinstance(slow, dict):
        lines += [
            "",
            f"At kombu's default polling (once a second) the filesystem broker drains only {slow['rate']:.1f} "
            "messages/s: with `acks_late` and a prefetch of 1 each worker process takes one message per poll. "
            "The shipped setting polls every 0.1 s "
            f"(`CELERY_BROKER_TRANSPORT_OPTIONS['polling_interval']`): {fs['rate']:.1f} messages/s. "
            "Redis has no polling bound; use it (or RabbitMQ) in production.",
        ]
    split = next((r for m, r in results.items() if m == "bare" and isinstance(r, dict) and r["stages"]), None)
    if split:
        capture_seconds = split["after_ingest_seconds"]
        stages = dict(split["stages"])
        stages["other (transaction, audit, profile)"] = capture_seconds - sum(stages.values())
        lines += ["", "Where the bare capture time goes:", ""]
        lines += table(
            ["stage", "ms / message", "share"],
            [
                [name, f"{seconds / split['messages'] * 1000:.2f}", f"{seconds / capture_seconds:.0%}"]
                for name, seconds in stages.items()
            ],
        )
    return [*lines, ""]


def render(
    results: dict[str, Any],
    *,
    quick: bool,
    command: str,
    seconds: float,
    date: str,
    group_seconds: dict[str, float] | None = None,
    load: list[list[float]] | None = None,
) -> str:
    by_group = ", ".join(f"{group} {sec / 60:.1f}" for group, sec in (group_seconds or {}).items())
    load_text = (
        f"; load average (1/5/15 min) {' / '.join(f'{v:.1f}' for v in load[0])} at the start, "
        f"{' / '.join(f'{v:.1f}' for v in load[1])} at the end"
        if load
        else ""
    )
    lines = [
        "# Benchmark results" + (" (quick run)" if quick else ""),
        "",
        f"- Date: {date}",
        f"- Machine: {machine_line()}",
        f"- Reproduce: `{command}`"
        + (
            " (quick run: every group smaller and shorter; its figures are not comparable with a full run's, "
            "only with the baseline beside them)"
            if quick
            else ""
        ),
        f"- Wall time of the whole run: {seconds / 60:.1f} min"
        + (f" ({by_group} min)" if by_group else "")
        + load_text,
        "- The machine is shared (other processes were running), so absolute times are noisy; every figure "
        "sits beside its baseline measured in the same run.",
        "",
    ]
    if "context" in results:
        lines += render_context(results["context"]) + render_prompt_size(results["context"])
    if "recall" in results:
        lines += render_recall(results["recall"])
    if "api" in results:
        lines += render_api(results["api"])
    if "capture" in results:
        lines += render_capture(results["capture"])
    if "language" in results:
        lines += render_printed(
            "## 6. Language quality (issue 15): gate, extraction, each beside the code before it", results["language"]
        )
    if "scale" in results:
        lines += render_printed(
            "## 7. Scale-out (issue 13): many accounts, API, capture and memory, each beside the code before it",
            results["scale"],
        )
    return "\n".join(lines).rstrip() + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a few minutes: every group smaller and shorter; written to {QUICK_OUTPUT} unless --output is given",
    )
    parser.add_argument("--only", nargs="+", choices=GROUPS)
    parser.add_argument(
        "--output",
        type=Path,
        help=f"the report (its figures beside it as .json); default {HERE / 'RESULTS.md'}, with --quick {QUICK_OUTPUT}",
    )
    parser.add_argument("--render-only", action="store_true", help="rewrite the report from its .json")
    parser.add_argument(
        "--datasets",
        type=Path,
        help=f"the folder holding locomo-dev/, crosswoz-dev/ and beike-dev/ (passed on as ${DATASETS_ENV}); "
        f"default ${DATASETS_ENV}, else shared/datasets beside the project or one level up",
    )
    args = parser.parse_args()
    if args.datasets:
        os.environ[DATASETS_ENV] = str(args.datasets.expanduser().resolve())
    if args.output is None:
        args.output = QUICK_OUTPUT if args.quick else HERE / "RESULTS.md"
    args.output.parent.mkdir(parents=True, exist_ok=True)
    json_path = args.output.with_suffix(".json")
    if args.render_only:
        saved = json.loads(json_path.read_text(encoding="utf-8"))
        meta = saved.pop("meta")
        args.output.write_text(render(saved, **meta), encoding="utf-8")
        print(f"written: {args.output}")
        return 0
    params = QUICK if args.quick else FULL
    wanted = args.only or GROUPS
    print(f"machine: {machine_line()}", flush=True)
    data_message = missing_datasets(["locomo-dev", "crosswoz-dev", "beike-dev"])
    print(f"data sets: {data_message or datasets_dir()}", flush=True)
    load_start = os.getloadavg()
    started = time.monotonic()
    results: dict[str, Any] = {}
    group_seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="qiwei-bench-all-") as tmp_name:
        tmp = Path(tmp_name)
        groups = {
            "context": lambda: bench_context(params["context"], tmp),
            "recall": lambda: bench_recall(tmp),
            "api": lambda: bench_api(params["api"], tmp),
            "capture": lambda: bench_capture(params["capture"], tmp),
            "language": lambda: bench_printed(LANGUAGE_QUICK if args.quick else LANGUAGE_BENCHMARKS),
            "scale": lambda: bench_printed(SCALE_QUICK if args.quick else SCALE_BENCHMARKS),
        }
        for group in GROUPS:
            if group in wanted:
                group_started = time.monotonic()
                results[group] = groups[group]()
                group_seconds[group] = time.monotonic() - group_started
                print(f"\n### group {group}: {group_seconds[group]:.0f} s", flush=True)
    command = ".venv/bin/python benchmarks/run_all.py" + (" --quick" if args.quick else "")
    if args.only:
        command += " --only " + " ".join(args.only)
        if json_path.exists():
            # A partial run refreshes its parts and keeps the others from the last run.
            kept = json.loads(json_path.read_text(encoding="utf-8"))
            kept.pop("meta", None)
            results = {**kept, **results}
    meta = {
        "quick": args.quick,
        "command": command,
        "seconds": time.monotonic() - started,
        "date": f"{dt.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
        "group_seconds": group_seconds,
        "load": [list(load_start), list(os.getloadavg())],
    }
    text = render(results, **meta)
    args.output.write_text(text, encoding="utf-8")
    json_path.write_text(json.dumps({**results, "meta": meta}, ensure_ascii=False, indent=1), encoding="utf-8")
    print("\n" + text)
    print("wall time: " + ", ".join(f"{group} {sec:.0f} s" for group, sec in group_seconds.items()), end="")
    print(f"; whole run {meta['seconds'] / 60:.1f} min ({meta['seconds']:.0f} s)")
    print("load average (1/5/15 min): " + " → ".join(" / ".join(f"{v:.1f}" for v in ends) for ends in meta["load"]))
    print(f"written: {args.output}")
    failed = [name for name, value in results.items() if _has_failure(value)]
    if "api" in results and not results["api"]["rows"]:
        failed.append("api")
    return 1 if failed else 0


def _has_failure(value: Any) -> bool:
    if isinstance(value, str):
        return value.startswith("failed")
    if isinstance(value, dict):
        return any(_has_failure(v) for v in value.values())
    return False


if __name__ == "__main__":
    raise SystemExit(main())
