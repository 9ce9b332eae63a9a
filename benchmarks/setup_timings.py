"""Set-up time (issue 24, items 5 and 6): `./run.sh` from its start to the server's first answer,
on a new data dir (fresh) and again on the data dir that run left (warm), and optionally
`./test.sh`, for a baseline revision (default d7f4749) beside ours, in the same run.

Each revision is a `git worktree` (detached) in a temporary directory — ours is HEAD with the
working tree's uncommitted changes copied over (`--ours HEAD`: HEAD alone) — with a venv of its
own made by its own `scripts/bootstrap.sh` and its sources byte-compiled, both BEFORE any timing
and not counted (printed apart): a timed `./run.sh` runs the same bootstrap, which then finds the
venv current, as on every start after the first install. Every run gets its own QIWEI_DATA_DIR
(fresh: a folder that does not exist yet, as in a new clone; warm: the folder the fresh run of
the same round left) and a free loopback port (QIWEI_BIND); the caller's QIWEI_*, DJANGO_*,
DATABASE_URL, CELERY_* and GUNICORN_* variables are dropped, so both revisions run their shipped
defaults (SQLite, the embedded broker).

A run is timed from starting `./run.sh` to the first 200 from GET /healthz (polled every 0.1 s;
it answers once gunicorn serves, after every set-up step); then the run's process group (run.sh,
gunicorn, the celery worker and their children) is sent SIGTERM, and SIGKILL after 30 s. Rounds
alternate which revision goes first; each figure is the median over `--rounds`. `--tests` also
times `./test.sh` (the README's test command) in each tree, and `--tests-serial` ours with
`./test.sh -n 0` (the same tests one at a time, as d7f4749's test.sh ran them), each tree after an
untimed warm-up (its tests collected, then those named *account* run); `--test-rounds N` runs
them N times, in alternating order, and reports medians. The worktrees,
venvs and data dirs are removed at the end (`--keep` keeps them, with every run's log).

    .venv/bin/python benchmarks/setup_timings.py [--baseline d7f4749] [--ours worktree|HEAD]
        [--rounds 3] [--tests] [--tests-serial] [--test-rounds 1] [--timeout 600] [--keep] [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import ROOT, free_port, machine_line, write_json

TARGETS = {"warm": 10.0, "fresh": 90.0}  # seconds to the first answer (issue 24, item 5)
TEST_TARGET_RATIO = 0.5  # ./test.sh at most half of the baseline's wall time (item 6)
DROPPED_PREFIXES = ("QIWEI_", "DJANGO_", "DATABASE_URL", "CELERY_", "GUNICORN_", "VIRTUAL_ENV", "PYTHONPATH")


@dataclass
class Tree:
    label: str
    revision: str
    path: Path
    overlaid: int = 0
    prepare_seconds: float = 0.0
    runs: dict[str, list[float]] = field(default_factory=lambda: {"fresh": [], "warm": []})
    setup_step: dict[str, list[float]] = field(default_factory=lambda: {"fresh": [], "warm": []})
    tests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # one result per test round
    loads: list[float] = field(default_factory=list)  # 1-minute load average as each run started


# --- trees ---------------------------------------------------------------------------------------


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def add_worktree(revision: str, path: Path) -> None:
    git("worktree", "add", "--detach", "--quiet", str(path), revision)


def remove_worktree(path: Path) -> None:
    """Only the worktree this run added: `git worktree remove` drops its folder and its entry."""
    result = subprocess.run(
        ["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, capture_output=True, text=True
    )
    if result.returncode != 0 and path.exists():
        shutil.rmtree(path, ignore_errors=True)
        subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, capture_output=True)


def overlay_working_tree(dest: Path) -> int:
    """Copy this checkout's uncommitted state over a worktree of HEAD: files changed or deleted
    against HEAD (staged or not) and untracked files that are not ignored. Returns how many."""
    changed = git("diff", "--name-only", "-z", "HEAD").split("\0")
    untracked = git("ls-files", "--others", "--exclude-standard", "-z").split("\0")
    count = 0
    for name in filter(None, {*changed, *untracked}):
        source, target = ROOT / name, dest / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        elif target.exists():
            target.unlink()
        count += 1
    return count


def prepare_tree(tree: Tree, *, extras: list[str]) -> None:
    """The venv (the tree's own bootstrap, once per extra: run.sh asks for `runtime`, test.sh for
    `dev`) and byte-compiled sources; untimed, reported apart."""
    started = time.perf_counter()
    for extra in extras:
        subprocess.run(["scripts/bootstrap.sh", extra], cwd=tree.path, env=clean_env(), check=True)
    subprocess.run(
        [str(tree.path / ".venv/bin/python"), "-m", "compileall", "-q", "-x", r"[/\\]\.venv[/\\]", "."],
        cwd=tree.path,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    tree.prepare_seconds += time.perf_counter() - started


def clean_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(DROPPED_PREFIXES)}
    env.update(extra)
    return env


# --- processes -----------------------------------------------------------------------------------


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the run's process group (run.sh stops its children too), SIGKILL after 30 s;
    returns once no process of the group is left."""
    pgid = process.pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and group_alive(pgid):
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.2)
    if group_alive(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        while group_alive(pgid):
            time.sleep(0.1)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


def group_alive(pgid: int) -> bool:
    """Whether any process of the group is left (zombies of run.sh reaped by `wait` aside)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


SETUP_DONE = re.compile(r"准备完成，用时 ([0-9.]+) 秒")


def time_run(tree: Tree, data_dir: Path, log_path: Path, *, timeout: float) -> tuple[float, float | None]:
    """Seconds from starting ./run.sh to the first 200 from /healthz, and the set-up step's own
    figure when run.sh prints it (ours: `manage.py setup` ends with it)."""
    port = free_port()
    env = clean_env(QIWEI_DATA_DIR=str(data_dir), QIWEI_BIND=f"127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}/healthz"
    with open(log_path, "wb") as log:
        started = time.perf_counter()
        process = subprocess.Popen(
            ["./run.sh"], cwd=tree.path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            while True:
                if answers(url):
                    elapsed = time.perf_counter() - started
                    break
                if process.poll() is not None:
                    print_tail(log_path)
                    raise RuntimeError(
                        f"{tree.label}: run.sh exited ({process.returncode}) before answering; see {log_path}"
                    )
                if time.perf_counter() - started > timeout:
                    print_tail(log_path)
                    raise RuntimeError(f"{tree.label}: no answer within {timeout:.0f} s; see {log_path}")
                time.sleep(0.1)
        finally:
            stop_group(process)
    match = SETUP_DONE.search(log_path.read_text(encoding="utf-8", errors="replace"))
    return elapsed, float(match.group(1)) if match else None


def print_tail(log_path: Path, lines: int = 30) -> None:
    """The end of a failed run's log (the log itself goes with the temporary folder)."""
    for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]:
        print(f"    | {line}", flush=True)


PYTEST_COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed|xpassed)")


def time_tests(tree: Tree, args: list[str], log_path: Path) -> dict[str, Any]:
    """Wall time of ./test.sh <args> in the tree, with pytest's closing counts."""
    with open(log_path, "wb") as log:
        started = time.perf_counter()
        process = subprocess.Popen(
            ["./test.sh", *args],
            cwd=tree.path,
            env=clean_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = process.wait()
        finally:
            stop_group(process)
        elapsed = time.perf_counter() - started
    lines = [line for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    summary = next((line for line in reversed(lines) if PYTEST_COUNTS.search(line)), "")
    counts = {
        kind.rstrip("s") if kind.startswith("error") else kind: int(n) for n, kind in PYTEST_COUNTS.findall(summary)
    }
    failed = [line.split(" - ", 1)[0] for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return {"seconds": elapsed, "exit": code, "counts": counts, "summary": summary.strip("= "), "failed": failed}


# --- report --------------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def spread(values: list[float]) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


def load_range(loads: list[float]) -> str:
    return f"{min(loads):.1f}–{max(loads):.1f} (median {median(loads):.1f})" if loads else "–"


def report(base: Tree, ours: Tree, args: argparse.Namespace) -> list[str]:
    lines = [
        f"setup_timings — {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {machine_line()}",
        f"1-minute load average as the runs started: {load_range([*base.loads, *ours.loads])}; "
        f"at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())} (the machine is shared)",
        f"baseline {base.revision} · ours {ours.revision}"
        + (f" + {ours.overlaid} uncommitted file(s) of the working tree" if ours.overlaid else ""),
        f"untimed preparation (venv by scripts/bootstrap.sh, compileall): {base.label} {base.prepare_seconds:.0f} s, "
        f"ours {ours.prepare_seconds:.0f} s",
        "",
        f"| figure | {base.label} | ours | ratio ours/{base.label} | target |",
        "|---|---|---|---|---|",
    ]
    for kind in ("fresh", "warm"):
        if not ours.runs[kind]:
            continue  # --rounds 0: the tests alone
        b, o = median(base.runs[kind]), median(ours.runs[kind])
        verdict = "met" if o <= TARGETS[kind] else "missed"
        lines.append(
            f"| {kind} ./run.sh to first answer, median of {len(ours.runs[kind])} (s) | {b:.1f} | {o:.1f} | "
            f"{o / b:.2f} | ≤ {TARGETS[kind]:.0f} s: {verdict} |"
        )
    for kind in ("fresh", "warm"):
        if ours.setup_step[kind]:
            lines.append(
                f"| … {kind}: of which `manage.py setup` says it took, median (s) | – | "
                f"{median(ours.setup_step[kind]):.1f} | | |"
            )
    base_readme = test_seconds(base, "readme")
    for name, label in (("readme", "./test.sh"), ("serial", "./test.sh -n 0 (same tests, one process)")):
        ours_seconds = test_seconds(ours, name)
        if ours_seconds is None:
            continue
        ratio = ours_seconds / base_readme if base_readme else float("nan")
        target = ""
        if name == "readme":
            target = f"≤ {TEST_TARGET_RATIO:.1f}×: {'met' if ratio <= TEST_TARGET_RATIO else 'missed'}"
            failed_runs = sum(1 for tree in (base, ours) for result in tree.tests.get(name, []) if result["exit"])
            if failed_runs:
                target = f"≤ {TEST_TARGET_RATIO:.1f}×: no verdict, {failed_runs} run(s) failed"
        rounds = len(ours.tests[name])
        lines.append(
            f"| {label} wall time, median of {rounds} (s) | "
            f"{base_readme if base_readme is not None else float('nan'):.0f} | {ours_seconds:.0f} | "
            f"{ratio:.2f} | {target} |"
        )
    ours_readme, ours_serial = test_seconds(ours, "readme"), test_seconds(ours, "serial")
    if ours_readme and ours_serial:
        lines.append(
            f"| ours ./test.sh ÷ ours ./test.sh -n 0 | | {ours_readme / ours_serial:.2f} | | -n auto on "
            f"{os.cpu_count()} cores |"
        )
    lines.append("")
    for tree in (base, ours):
        for kind in ("fresh", "warm"):
            if tree.runs[kind]:
                lines.append(f"{tree.label} {kind}: {spread(tree.runs[kind])} s")
        for name, results in tree.tests.items():
            for result in results:
                lines.append(
                    f"{tree.label} tests ({name}): {result['seconds']:.0f} s, exit {result['exit']}, "
                    f"load {result.get('load_at_start', float('nan')):.1f} at its start, {result['summary']}"
                )
    return lines


def test_seconds(tree: Tree, name: str) -> float | None:
    """The median wall time of a tree's test runs of this kind, None when none ran."""
    results = tree.tests.get(name)
    return median([result["seconds"] for result in results]) if results else None


# --- main ----------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", default="d7f4749", help="the revision beside ours")
    parser.add_argument(
        "--ours",
        choices=("worktree", "HEAD"),
        default="worktree",
        help="HEAD plus this checkout's uncommitted changes (default), or HEAD alone",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="fresh + warm runs per revision (median); 0 with --tests: tests alone"
    )
    parser.add_argument("--tests", action="store_true", help="also time ./test.sh in each tree (--test-rounds times)")
    parser.add_argument("--tests-serial", action="store_true", help="also time ours with ./test.sh -n 0")
    parser.add_argument("--test-rounds", type=int, default=1, help="times each test command runs (median)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a run may take to answer")
    parser.add_argument("--keep", action="store_true", help="keep the worktrees, data dirs and logs")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    if args.test_rounds < 1:
        parser.error("--test-rounds must be at least 1")

    tmp = Path(tempfile.mkdtemp(prefix="qiwei-setup-timings-"))
    base_rev = git("rev-parse", "--short", args.baseline).strip()
    head = git("rev-parse", "--short", "HEAD").strip()
    base = Tree(label=args.baseline, revision=base_rev, path=tmp / "baseline")
    ours = Tree(label="ours", revision=head, path=tmp / "ours")
    added: list[Path] = []
    # A stop from outside still reaches `finally` (worktrees removed, processes stopped).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        for tree, revision in ((base, base_rev), (ours, head)):
            add_worktree(revision, tree.path)
            added.append(tree.path)
        if args.ours == "worktree":
            ours.overlaid = overlay_working_tree(ours.path)
        extras = (["runtime"] if args.rounds else []) + (["dev"] if args.tests or args.tests_serial else [])
        for tree in (base, ours):
            print(f"preparing {tree.label} ({tree.revision}) in {tree.path} — untimed …", flush=True)
            prepare_tree(tree, extras=extras)
        logs = tmp / "logs"
        logs.mkdir()
        for round_no in range(args.rounds):
            order = (base, ours) if round_no % 2 == 0 else (ours, base)
            for tree in order:
                data_dir = tmp / f"data-{tree.label}-{round_no}"
                for kind in ("fresh", "warm"):
                    tree.loads.append(os.getloadavg()[0])
                    seconds, setup = time_run(
                        tree, data_dir, logs / f"{tree.label}-{round_no}-{kind}.log", timeout=args.timeout
                    )
                    tree.runs[kind].append(seconds)
                    if setup is not None:
                        tree.setup_step[kind].append(setup)
                    note = f" (set-up step {setup:.1f} s)" if setup is not None else ""
                    print(
                        f"  round {round_no + 1} {tree.label:>8} {kind}: {seconds:.1f} s{note}, "
                        f"load {tree.loads[-1]:.1f}",
                        flush=True,
                    )
                if not args.keep:
                    shutil.rmtree(data_dir, ignore_errors=True)
        plans: list[tuple[Tree, str, list[str]]] = []
        if args.tests:
            plans += [(base, "readme", []), (ours, "readme", [])]
        if args.tests_serial:
            plans.append((ours, "serial", ["-n", "0"]))
        for tree in {id(tree): tree for tree, _, _ in plans}.values():
            # Untimed: a developer's tree has run its tests before (bytecode and pytest's rewritten
            # test modules written where the tree's test.sh lets them be, and ours's migrated copies).
            time_tests(tree, ["-n", "0", "--collect-only", "-q"], logs / f"{tree.label}-tests-warm-up.log")
            time_tests(tree, ["-n", "0", "-q", "-k", "account"], logs / f"{tree.label}-tests-warm-up-db.log")
        for round_no in range(args.test_rounds):
            for tree, name, test_args in plans if round_no % 2 == 0 else plans[::-1]:
                print(f"  round {round_no + 1} {tree.label} ./test.sh {' '.join(test_args)} …", flush=True)
                load = os.getloadavg()[0]
                result = time_tests(tree, test_args, logs / f"{tree.label}-tests-{name}-{round_no}.log")
                result["load_at_start"] = load
                tree.tests.setdefault(name, []).append(result)
                print(f"  {tree.label} tests ({name}): {result['seconds']:.0f} s — {result['summary']}", flush=True)
                for line in result["failed"]:
                    print(f"    {line}", flush=True)
    finally:
        if args.keep:
            print(f"kept in {tmp} (remove the worktrees with `git worktree remove --force <path>`)")
        else:
            for path in added:
                remove_worktree(path)
            shutil.rmtree(tmp, ignore_errors=True)
    lines = report(base, ours, args)
    print()
    for line in lines:
        print(line)
    write_json(
        args.json,
        {
            "targets": TARGETS,
            "test_target_ratio": TEST_TARGET_RATIO,
            "trees": {
                tree.label: {
                    "revision": tree.revision,
                    "overlaid": tree.overlaid,
                    "prepare_seconds": tree.prepare_seconds,
                    "runs": tree.runs,
                    "setup_step": tree.setup_step,
                    "tests": tree.tests,
                    "loads": tree.loads,
                }
                for tree in (base, ours)
            },
            "lines": lines,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
