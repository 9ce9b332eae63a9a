"""The safety gate beside the committed one, in one run (issue 15, items 3, 4 and 6).

- False positives: every user turn of CrossWOZ dev (Chinese, travel) and every turn of the LoCoMo
  dev conversations (English, chit-chat): third-party ordinary messages with no injection in them,
  read only to measure (nothing here is tuned on them phrase by phrase).
- Detection on the project's own data (`benchmarks/data/`, generated or written here, licence-clean):
  the dev set by technique and language (`gate_dev.py` builds it), three hand-written hold-out sets
  (each written after the rules of its day and measured once before any rule looked at it; the
  first-sight figures are in `benchmarks/RESULTS.md`), and credentials by shape with look-alikes.
- Time per message, best of three passes (`--passes`; the quick run takes one).

The current gate is `qiwei_site.reading.safety`; the committed one is read with `git show
<ref>:memory/capture/safety.py` into a throw-away module (read-only: nothing in the checkout changes).

    .venv/bin/python benchmarks/gate_fp.py [--ref b40be73] [--passes 3] [--json out.json]

Plain Python: the gate needs no database.
"""

from __future__ import annotations

import argparse
import glob
import json
import subprocess
import sys
import time
import types
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import datasets_dir, moved_imports, require_dataset  # noqa: E402
from qiwei_site.reading import safety as current  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
SHARED = datasets_dir()  # $QIWEI_DATASETS_DIR or shared/datasets beside the project (common.py)
HOLDOUTS = ("gate_holdout.jsonl", "gate_holdout2.jsonl", "gate_holdout3.jsonl")

Scan = Callable[[str], Any]


def committed_gate(ref: str) -> types.ModuleType:
    """`memory/capture/safety.py` as committed at `ref`, loaded as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{ref}:memory/capture/safety.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    module = types.ModuleType("committed_safety")
    module.__file__ = f"<{ref}:memory/capture/safety.py>"
    sys.modules[module.__name__] = module  # dataclasses look their module up while the class is built
    exec(compile(moved_imports(source), module.__file__, "exec"), module.__dict__)  # our own committed file
    return module


def crosswoz_turns() -> list[str]:
    path = require_dataset("crosswoz-dev") / "user_turns.jsonl"
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def locomo_turns() -> list[str]:
    turns: list[str] = []
    for path in sorted(glob.glob(str(require_dataset("locomo-dev") / "*.json"))):
        conversation = json.loads(Path(path).read_text(encoding="utf-8"))
        for key, value in conversation.items():
            if key.startswith("session_") and isinstance(value, list):
                turns += [turn["text"] for turn in value if turn.get("text")]
    return turns


def rows(name: str) -> list[dict[str, Any]]:
    path = DATA / name
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def timed(scan: Scan, texts: list[str], passes: int = 3) -> tuple[list[Any], float]:
    """Results and the best mean milliseconds per message over `passes` passes (no cache between
    texts matters: each text is scanned once per pass, and the personal-number cache is cleared)."""
    best = float("inf")
    results: list[Any] = []
    for _ in range(max(1, passes)):
        cache_clear = getattr(getattr(sys.modules[scan.__module__], "_find_sensitive", None), "cache_clear", None)
        if cache_clear:
            cache_clear()
        started = time.perf_counter()
        results = [scan(text) for text in texts]
        best = min(best, (time.perf_counter() - started) * 1e3 / max(1, len(texts)))
    return results, best


def rate(hits: int, total: int) -> str:
    return f"{hits}/{total} ({100 * hits / total:.1f}%)" if total else "-"


def detection_table(
    gates: dict[str, Scan], data: Iterable[dict[str, Any]], *, credential: bool
) -> dict[tuple[str, str, int], dict[str, int]]:
    """{(technique, lang, label): {gate: hits, "total": n}}; a credential row counts when the gate
    names a credential, an injection row when it blocks."""
    table: dict[tuple[str, str, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in data:
        key = (str(row["technique"]), str(row["lang"]), int(row["label"]))
        table[key]["total"] += 1
        for name, scan in gates.items():
            result = scan(str(row["text"]))
            hit = "credential" in result.categories if credential else result.blocked
            table[key][name] += int(hit)
    return table


def print_table(title: str, table: dict[tuple[str, str, int], dict[str, int]], gates: list[str]) -> dict[str, Any]:
    print(f"\n{title}")
    print(f"  {'technique':<24} {'lang':<4} {'kind':<10} " + " ".join(f"{g:>18}" for g in gates))
    totals: dict[int, dict[str, int]] = {label: defaultdict(int) for label in (0, 1)}
    out: dict[str, Any] = {}
    for (technique, lang, label), counts in sorted(table.items(), key=lambda kv: (-kv[0][2], kv[0][0], kv[0][1])):
        kind = "attack" if label else "ordinary"
        cells = " ".join(f"{rate(counts[g], counts['total']):>18}" for g in gates)
        print(f"  {technique:<24} {lang:<4} {kind:<10} {cells}")
        out[f"{technique}/{lang}/{kind}"] = {g: counts[g] for g in gates} | {"total": counts["total"]}
        for key in (*gates, "total"):
            totals[label][key] += counts[key]
    for label, word in ((1, "detected"), (0, "false positives")):
        if totals[label]["total"]:
            cells = " ".join(f"{rate(totals[label][g], totals[label]['total']):>18}" for g in gates)
            print(f"  {'all (' + word + ')':<40} {cells}")
            out[f"all/{word}"] = dict(totals[label])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default="b40be73", help="git revision of the gate to compare with (before issue 15)")
    parser.add_argument(
        "--passes", type=int, default=3, help="timed passes over the third-party turns (best kept); 1 for a quick run"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    committed = committed_gate(args.ref)
    gates: dict[str, Scan] = {f"committed ({args.ref})": committed.scan, "current": current.scan}
    names = list(gates)
    report: dict[str, Any] = {}

    print("False positives on third-party ordinary messages (lower is better; the goal is 0)")
    for pool_name, texts in (("CrossWOZ dev user turns", crosswoz_turns()), ("LoCoMo dev turns", locomo_turns())):
        line = []
        for gate, scan in gates.items():
            results, ms = timed(scan, texts, args.passes)
            blocked = sum(result.blocked for result in results)
            injection = sum("prompt_injection" in result.categories for result in results)
            line.append(f"{gate}: {rate(blocked, len(texts))} blocked ({injection} as injection), {ms:.3f} ms/message")
            report[f"fp/{pool_name}/{gate}"] = {"blocked": blocked, "total": len(texts), "ms_per_message": round(ms, 4)}
        print(f"  {pool_name} ({len(texts)}):\n    " + "\n    ".join(line))

    dev = rows("gate_dev.jsonl")
    report["dev/injection"] = print_table(
        "Dev set, injection techniques (generated by benchmarks/gate_dev.py)",
        detection_table(gates, (r for r in dev if r["kind"] == "injection"), credential=False),
        names,
    )
    report["dev/credential"] = print_table(
        "Dev set, credentials by shape (a row counts when the gate names a credential)",
        detection_table(gates, (r for r in dev if r["kind"] == "credential"), credential=True),
        names,
    )
    for holdout in HOLDOUTS:
        if (DATA / holdout).exists():
            report[holdout] = print_table(
                f"Hold-out {holdout} (hand-written)", detection_table(gates, rows(holdout), credential=False), names
            )
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
