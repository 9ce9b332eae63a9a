"""Where a turn's CPU goes: process CPU (`time.process_time`, not wall clock) of the context build
each new customer message asks for, in a warm process, for customers with 1k and 10k messages;
`document_decode` calls per build; and a cProfile of those builds (top functions by own time).
The code at --baseline (`git archive`, read-only) and this checkout run the same turns on the
same data (same seed), each in its own process with its own throw-away SQLite installation.

    .venv/bin/python benchmarks/turn_cpu.py [--sizes 1000,10000] [--turns 60] [--baseline HEAD]
        [--top 12] [--json out.json]

A turn: one inbound message is written with its recall features (as ingest writes them), then
the builder builds the context for it (the answer cache misses: the latest message is new). The
first --warmup turns of each customer are not counted, so caches hold what a serving process has.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import importlib.util
import io
import json
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ACCOUNT = "bench"


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# --- a worker (runs against the tree at --root) --------------------------------------------------


def _turn(customer: Any, n: int, rng: random.Random, data: Any) -> None:
    """A new inbound message with its stored features, after every message already there."""
    from conversations.models import Message
    from memory.context.recall import recall_features_store

    sent_at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=n)
    message = Message.objects.create(
        customer=customer,
        external_id=f"turn{n:06d}",
        direction="inbound",
        sender="客户",
        text=data.message_text(rng, True),
        sent_at=sent_at,
        is_effective=True,
    )
    recall_features_store(messages=[message])


def worker(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    sys.path.insert(0, str(root))
    reply = sys.stdout
    sys.stdout = sys.stderr
    common = _load("benchmarks_common", HERE / "common.py")
    data = _load("bench_context_build", HERE / "context_build.py")  # its data, this checkout's copy
    env = common.bench_environment(postgres=False, tag=f"turn-cpu-{args.label}")
    common.setup_django(env, root=root)
    from qiwei_site.platform.services import account_create
    from qiwei_site.platform.tenancy import use_account

    sizes = sorted(int(size) for size in args.sizes.split(","))
    account_create(account_id=ACCOUNT, name="基准测试门店")
    result: dict[str, Any] = {"label": args.label, "sizes": {}}
    with use_account(ACCOUNT) as alias:
        targets, counts = data.create_customers(sizes, sum(sizes))
        data.bulk_load(alias, data.message_rows(counts, random.Random(args.seed)))
        data.backfill_features(list(targets.values()))
        for customer in targets.values():
            data.give_memory(customer)
        data.settle(alias)
        from memory.context import recall
        from memory.context.builder import AgentContextBuilder

        decode = recall.document_decode
        calls = [0]

        def counted(encoded: str) -> Any:
            calls[0] += 1
            return decode(encoded)

        recall.document_decode = counted
        rng = random.Random(args.seed)
        turn = 0
        for size in sizes:
            customer = targets[size]
            cpu: list[float] = []
            decodes: list[int] = []
            profile = cProfile.Profile()
            # Timed turns unprofiled (cProfile's hooks cost CPU), then the profiled ones.
            for index in range(args.warmup + args.turns + args.profiled):
                turn += 1
                _turn(customer, turn, rng, data)
                calls[0] = 0
                profiled = index >= args.warmup + args.turns
                if profiled:
                    profile.enable()
                started = time.process_time()
                AgentContextBuilder().build(customer=customer)
                spent = time.process_time() - started
                if profiled:
                    profile.disable()
                elif index >= args.warmup:
                    cpu.append(spent * 1000)
                    decodes.append(calls[0])
            out = io.StringIO()
            stats = pstats.Stats(profile, stream=out)
            stats.sort_stats("tottime").print_stats(args.top)
            top = [
                line.strip()
                for line in out.getvalue().splitlines()
                if line.strip() and line.strip()[0].isdigit() and "function calls" not in line
            ]
            result["sizes"][str(size)] = {
                "cpu_ms_p50": statistics.median(cpu),
                "cpu_ms_mean": statistics.fmean(cpu),
                "decodes_per_build": statistics.fmean(decodes),
                "top": top,
            }
    reply.write(json.dumps(result) + "\n")
    reply.flush()
    return 0


# --- the controller ------------------------------------------------------------------------------


def _run(label: str, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--root", str(root), "--label", label]
    command += ["--sizes", args.sizes, "--turns", str(args.turns), "--warmup", str(args.warmup)]
    command += ["--profiled", str(args.profiled), "--seed", str(args.seed), "--top", str(args.top)]
    done = subprocess.run(command, cwd=root, check=True, capture_output=True, text=True, encoding="utf-8")
    return json.loads(done.stdout.strip().splitlines()[-1])


def controller(args: argparse.Namespace) -> int:
    common = _load("benchmarks_common", HERE / "common.py")
    baseline_root = Path(tempfile.mkdtemp(prefix="qiwei-bench-turn-cpu-"))
    try:
        common.revision_tree(args.baseline, baseline_root)
        runs = {
            f"baseline {args.baseline}": _run("baseline", baseline_root, args),
            "ours": _run("ours", HERE.parent, args),
        }
    finally:
        shutil.rmtree(baseline_root, ignore_errors=True)
    for label, result in runs.items():
        for size, figures in result["sizes"].items():
            print(
                f"{label:<16} {int(size):>6,} messages: CPU per build p50 {figures['cpu_ms_p50']:.2f} ms"
                f" (mean {figures['cpu_ms_mean']:.2f}), document_decode per build {figures['decodes_per_build']:.1f}"
            )
    for label, result in runs.items():
        for size, figures in result["sizes"].items():
            print(f"\n{label}, {int(size):,} messages, top by own time over {args.profiled} builds:")
            print("  ncalls tottime percall cumtime percall filename:lineno(function)")
            for line in figures["top"]:
                print("  " + line)
    common.write_json(args.json, {"turns": args.turns, "warmup": args.warmup, "machine": common.machine_line(), **runs})
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--turns", type=int, default=60, help="builds counted per customer")
    parser.add_argument("--warmup", type=int, default=5, help="builds per customer not counted")
    parser.add_argument("--profiled", type=int, default=30, help="builds per customer profiled (not timed)")
    parser.add_argument("--baseline", default="HEAD", help="git ref to compare with")
    parser.add_argument("--top", type=int, default=12, help="functions shown from the profile")
    parser.add_argument("--seed", type=int, default=20261101)
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--label", default="ours", help=argparse.SUPPRESS)
    args = parser.parse_args()
    return worker(args) if args.worker else controller(args)


if __name__ == "__main__":
    raise SystemExit(main())
