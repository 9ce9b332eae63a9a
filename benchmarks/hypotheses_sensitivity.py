"""Which model hypotheses `qiwei_site.reading.hypotheses` refuses (issue 36, review findings H4 and L5),
for the reader at `--rev` beside the current one, in one run.

    .venv/bin/python benchmarks/hypotheses_sensitivity.py [--rev d1d2adf|none] [--verbose] [--show] [--json OUT]

Two sets written by hand before the reader changed (the first-sight figures are the `--rev` column):
`data/hypotheses_fresh36.jsonl`, sensitive hypotheses by PIPL art. 28 category (and completed
transactions) beside ordinary admissible ones, several written to look like a category
(离医院近, 打算签, 2号线); `data/hypotheses_topics36.jsonl`, a hypothesis and the customer message it
cites, with whether they are about the same thing. Printed: the sensitive ones refused (recall, by
category), the ordinary ones refused (false refusals), and the topic pairs read right (`shared_topics`
non-empty exactly when `same_topic`).

The second fresh set, `data/hypotheses_fresh36b.jsonl` (24 sensitive, 20 ordinary), was written
with the new rows in view, in wordings neither the first set nor the rows name (肺结核, 存折, 蹲过局子,
小升初), before the reader was run on it, and measured once (2/24 refused, 2/20 ordinary refused): it
shows how far the rows reach past the words they list. The reader is not tuned on it: a miss there is
a finding to report, not a row to add. `--verbose` prints every miss of both sets.

Then how many third-party customer messages (beike-dev, CrossWOZ dev user turns, read in place from
`../shared/datasets`) each reader's `sensitive` fires on, by row: these are messages, not hypotheses,
and many rightly name a loan or a building (about the listing, not the customer), so the count shows
how far the rows reach into ordinary customer language, not an error rate; `--show` prints them
(third-party words stay out of the default output). Plain Python, a few seconds; the older reader runs
from `git archive` of its `qiwei_site/reading` in a process of its own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import datasets_dir  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
SHARED = datasets_dir()  # $QIWEI_DATASETS_DIR or shared/datasets beside the project (common.py)
DEFAULT_REV = "d1d2adf"  # main before this work

# Reads both sets with whichever reader is importable, JSON in and out: for each hypothesis the
# sensitive row's name (or None), for each pair whether a topic is shared.
_WORKER = """
import json, sys
from qiwei_site.reading.hypotheses import sensitive, shared_topics
request = json.load(sys.stdin)
def names(texts):
    return [getattr(sensitive(text), "name", None) for text in texts]
out = {
    "sensitive": names(request["sensitive"]),
    "second": names(request["second"]),
    "shared": [sorted(shared_topics(h, [e])) for h, e in request["pairs"]],
    "pools": {pool: names(texts) for pool, texts in request["pools"].items()},
}
json.dump(out, sys.stdout, ensure_ascii=False)
"""


def rows(name: str) -> list[dict[str, Any]]:
    path = DATA / name
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read(request: dict[str, Any], tree: Path | None) -> dict[str, Any]:
    """The worker's answer, run on this checkout (tree None) or on an extracted older reader."""
    cwd = tree or ROOT
    done = subprocess.run(
        [sys.executable, "-c", _WORKER],
        input=json.dumps(request, ensure_ascii=False),
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def pools() -> dict[str, list[str]]:
    """Third-party customer messages, read in place; a pool that is absent is left out."""
    found: dict[str, list[str]] = {}
    beike = SHARED / "beike-dev" / "train.query.tsv"
    if beike.exists():
        lines = beike.read_text(encoding="utf-8").splitlines()
        found["beike-dev customer messages"] = [line.split("\t", 1)[1] for line in lines if "\t" in line]
    crosswoz = SHARED / "crosswoz-dev" / "user_turns.jsonl"
    if crosswoz.exists():
        lines = crosswoz.read_text(encoding="utf-8").splitlines()
        found["CrossWOZ dev user turns"] = [json.loads(line)["text"] for line in lines if line.strip()]
    return found


def extract(rev: str, tree: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "qiwei_site/reading"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(tree, filter="data")
    (tree / "qiwei_site" / "__init__.py").write_text("")


def score_hypotheses(hypotheses: list[dict[str, Any]], answer: list[str | None], *, verbose: bool) -> dict[str, Any]:
    """Recall by category over the sensitive hypotheses, and the ordinary ones refused."""
    by_category: dict[str, list[int]] = {}
    false_refusals: list[str] = []
    for row, caught in zip(hypotheses, answer, strict=True):
        if row["sensitive"]:
            cell = by_category.setdefault(row["category"], [0, 0])
            cell[1] += 1
            cell[0] += caught is not None
            if caught is None and verbose:
                print(f"    missed        {row['category']:22s} {row['hypothesis']}")
        elif caught is not None:
            false_refusals.append(row["hypothesis"])
            if verbose:
                print(f"    false refusal {caught:22s} {row['hypothesis']}")
    return {
        "by_category": by_category,
        "refused": sum(hits for hits, _ in by_category.values()),
        "sensitive": sum(total for _, total in by_category.values()),
        "false_refusals": len(false_refusals),
        "ordinary": sum(not row["sensitive"] for row in hypotheses),
    }


def score(
    hypotheses: list[dict[str, Any]],
    second: list[dict[str, Any]],
    pairs: list[dict[str, Any]],
    answer: dict[str, Any],
    *,
    verbose: bool,
) -> dict[str, Any]:
    report = score_hypotheses(hypotheses, answer["sensitive"], verbose=verbose)
    if verbose:
        print("    -- second fresh set")
    report["second"] = score_hypotheses(second, answer["second"], verbose=verbose)
    right = 0
    for pair, shared in zip(pairs, answer["shared"], strict=True):
        if bool(shared) == pair["same_topic"]:
            right += 1
        elif verbose:
            print(f"    topic wrong   expected {pair['same_topic']!s:5s} shared {shared}: "
                  f"{pair['hypothesis']} ← {pair['evidence']}")  # fmt: skip
    return report | {"pairs_right": right, "pairs": len(pairs)}


def print_hypotheses(report: dict[str, dict[str, Any]], names: list[str], part: str | None) -> None:
    def of(name: str) -> dict[str, Any]:
        return report[name] if part is None else report[name][part]

    for category in of("current")["by_category"]:
        cells = "".join(f"{'{}/{}'.format(*of(name)['by_category'][category]):>16s}" for name in names)
        print(f"  {'refused: ' + category:34s}{cells}")
    for label, hits, total in (
        ("sensitive refused (recall)", "refused", "sensitive"),
        ("ordinary refused (false refusals)", "false_refusals", "ordinary"),
    ):
        print(f"  {label:34s}{_cells([(of(name)[hits], of(name)[total]) for name in names])}")


def _cells(figures: list[tuple[int, int]]) -> str:
    return "".join(f"{hits}/{total} {hits / total:>4.0%}".rjust(16) for hits, total in figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default=DEFAULT_REV, help="git revision of the reader to compare with, or none")
    parser.add_argument("--verbose", action="store_true", help="print every miss, false refusal and wrong pair")
    parser.add_argument("--show", action="store_true", help="print the third-party messages the current reader refuses")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    hypotheses = rows("hypotheses_fresh36.jsonl")
    second = rows("hypotheses_fresh36b.jsonl")
    pairs = rows("hypotheses_topics36.jsonl")
    request: dict[str, Any] = {
        "sensitive": [row["hypothesis"] for row in hypotheses],
        "second": [row["hypothesis"] for row in second],
        "pairs": [(pair["hypothesis"], pair["evidence"]) for pair in pairs],
        "pools": pools(),
    }
    answers: dict[str, dict[str, Any]] = {}
    rev = None if args.rev == "none" else args.rev
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="hypotheses36-") as tmp:
        if rev:
            extract(rev, Path(tmp))
            print(f"at {rev}:")
            answers[f"at {rev}"] = read(request, Path(tmp))
            report[f"at {rev}"] = score(hypotheses, second, pairs, answers[f"at {rev}"], verbose=args.verbose)
        print("current:")
        answers["current"] = read(request, None)
        report["current"] = score(hypotheses, second, pairs, answers["current"], verbose=args.verbose)
    names = list(report)
    header = f"  {'':34s}" + "".join(f"{name:>16s}" for name in names)
    print(f"\nfirst fresh set: {len(hypotheses)} hypotheses, {len(pairs)} topic pairs")
    print(header)
    print_hypotheses(report, names, None)
    print(f"  {'topic pairs read right':34s}{_cells([(report[n]['pairs_right'], report[n]['pairs']) for n in names])}")
    print(f"\nsecond fresh set (measured once): {len(second)} hypotheses")
    print(header)
    print_hypotheses(report, names, "second")
    print("\nThird-party customer messages `sensitive` fires on (messages, not hypotheses; see the docstring)")
    for pool, texts in request["pools"].items():
        print(f"  {pool} ({len(texts)}):")
        for name in names:
            fired = [row for row in answers[name]["pools"][pool] if row]
            by_row = ", ".join(f"{row} {fired.count(row)}" for row in sorted(set(fired), key=fired.index))
            print(f"    {name:14s} {len(fired):4d}  {by_row}")
            report[name].setdefault("pools", {})[pool] = {row: fired.count(row) for row in set(fired)}
        if args.show:  # third-party words: printed only when asked
            for text, row in zip(texts, answers["current"]["pools"][pool], strict=True):
                if row:
                    print(f"      {row:22s} {text}")
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
