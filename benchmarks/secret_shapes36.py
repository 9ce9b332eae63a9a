"""The secret shapes issue 36 found shown raw (an 18-digit resident ID ending in X, a passport after its
cue, `pass`/`passwd`/`pwd`, a cue split by symbols, a reference to an earlier secret or a transformation
of it, a value with a space inside, phone numbers in keycap emoji or 大写 numerals) — the issue's ten
(`data/secret_shapes36_issue.jsonl`) and forty fresh ones with their look-alikes
(`data/secret_shapes36.jsonl`, written and measured once before the masker learned them) — and what
the masker masks in third-party ordinary messages (CrossWOZ dev user turns, beike-dev customer
messages, LoCoMo dev turns), for the masker at `--rev` beside the current one, in one run.

    .venv/bin/python benchmarks/secret_shapes36.py [--rev 7dedc7b] [--data FILE ...] [--show] [--json OUT]

A secret counts as masked when what ingest stores (`masked_with_categories`, or `masked_after` given
the message before) no longer holds it, nor — for a secret (not a personal number, whose ends are
shown on purpose) — any space-separated piece of it of three characters or more: "密码是 •••••• 1234"
has masked half of "abcd 1234", not all of it. An ordinary message counts as a false positive when
anything in it is masked. On the third-party pools the messages each masker masks are counted, and
those the current one masks differently from `--rev`; `--show` prints them, and every masked one, as
masked (their words stay out of the default output, which run_all keeps): a real customer's own
phone number is a true positive, any other a false positive. `--rev none` skips the comparison.
Plain Python; the older masker runs from `git archive` in a process of its own.
"""

from __future__ import annotations

import argparse
import glob
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import datasets_dir, require_dataset  # noqa: E402
from qiwei_site.reading import masking  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
SHARED = datasets_dir()  # $QIWEI_DATASETS_DIR or shared/datasets beside the project (common.py)
DEFAULT_FILES = ("secret_shapes36_issue.jsonl", "secret_shapes36.jsonl")
DEFAULT_REV = "7dedc7b"  # main before this work (issue 36 measured 5804d3c; the masker is the same)
PERSONAL_NUMBERS = {"id_card", "bank_card", "mobile"}

# Masks (text, previous) pairs with whichever masker is importable, JSON in and out.
_WORKER = """
import json, sys
from qiwei_site.reading import masking
after = getattr(masking, "masked_after", None)
out = []
for text, previous in json.load(sys.stdin):
    if previous is not None and after is not None:
        masked, categories = after(text, previous)
    else:
        masked, categories = masking.masked_with_categories(text)
    out.append([masked, list(categories)])
json.dump(out, sys.stdout, ensure_ascii=False)
"""

Masked = list[tuple[str, list[str]]]


def mask_here(pairs: Sequence[tuple[str, str | None]]) -> Masked:
    out: Masked = []
    for text, previous in pairs:
        if previous is not None:
            masked, categories = masking.masked_after(text, previous)
        else:
            masked, categories = masking.masked_with_categories(text)
        out.append((masked, list(categories)))
    return out


def mask_at(rev: str, tree: Path, pairs: Sequence[tuple[str, str | None]]) -> Masked:
    if not (tree / "qiwei_site").exists():
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "qiwei_site/reading"], check=True,
                                 capture_output=True).stdout  # fmt: skip
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")
        (tree / "qiwei_site" / "__init__.py").write_text("")
    done = subprocess.run(
        [sys.executable, "-c", _WORKER],
        input=json.dumps(list(pairs), ensure_ascii=False),
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
    )
    return [(masked, categories) for masked, categories in json.loads(done.stdout)]


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def hidden(secret: str, masked: str, categories: Sequence[str]) -> bool:
    if secret in masked:
        return False
    if set(categories) <= PERSONAL_NUMBERS and categories:
        return True
    return not any(len(piece) >= 3 and piece in masked for piece in secret.split())


def score(data: list[dict[str, Any]], results: Masked, *, verbose: bool) -> dict[str, list[int]]:
    """{shape: [masked (or, for ordinary, false positives), total]}"""
    table: dict[str, list[int]] = {}
    for row, (masked, categories) in zip(data, results, strict=True):
        cell = table.setdefault(row["shape"], [0, 0])
        cell[1] += 1
        if row["secret"] is None:
            if categories:
                cell[0] += 1
                if verbose:
                    print(f"    false positive  {row['text']!r} → {masked!r}")
        elif hidden(row["secret"], masked, categories):
            cell[0] += 1
        elif verbose:
            print(f"    missed  {row['shape']:12s} {row['text']!r} → {masked!r}")
    return table


def crosswoz_turns() -> list[str]:
    path = require_dataset("crosswoz-dev") / "user_turns.jsonl"
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def beike_queries() -> list[str]:
    path = require_dataset("beike-dev") / "train.query.tsv"
    return [line.split("\t", 1)[1] for line in path.read_text(encoding="utf-8").splitlines() if "\t" in line]


def locomo_turns() -> list[str]:
    turns: list[str] = []
    for path in sorted(glob.glob(str(require_dataset("locomo-dev") / "*.json"))):
        conversation = json.loads(Path(path).read_text(encoding="utf-8"))
        for key, value in conversation.items():
            if key.startswith("session_") and isinstance(value, list):
                turns += [turn["text"] for turn in value if turn.get("text")]
    return turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default=DEFAULT_REV, help="git revision of the masker to compare with, or none")
    parser.add_argument("--data", nargs="+", type=Path, help="JSONL shape files (default: the issue's and ours)")
    parser.add_argument("--show", action="store_true", help="print every masked third-party message")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    files = args.data or [DATA / name for name in DEFAULT_FILES]
    rev = None if args.rev == "none" else args.rev
    names = ([f"at {rev}"] if rev else []) + ["current"]
    report: dict[str, Any] = {}

    with tempfile.TemporaryDirectory(prefix="secret-shapes36-") as tmp:
        tree = Path(tmp)

        def both(pairs: Sequence[tuple[str, str | None]]) -> dict[str, Masked]:
            out = {"current": mask_here(pairs)}
            if rev:
                out[f"at {rev}"] = mask_at(rev, tree, pairs)
            return out

        for path in files:
            data = rows(path)
            results = both([(row["text"], row.get("previous")) for row in data])
            print(f"\n{path.name} ({len(data)} rows)")
            tables = {name: score(data, results[name], verbose=name == "current") for name in names}
            print(f"  {'shape':14s}" + "".join(f"{name:>18s}" for name in names))
            for shape in sorted(tables["current"], key=lambda s: (s == "ordinary", s)):
                cells = "".join(f"{'{}/{}'.format(*tables[name][shape]):>18s}" for name in names)
                label = "false positives" if shape == "ordinary" else "masked"
                print(f"  {shape:14s}{cells}   {label}")
            secret = {name: [0, 0] for name in names}
            for name in names:
                for shape, (hits, total) in tables[name].items():
                    if shape != "ordinary":
                        secret[name][0] += hits
                        secret[name][1] += total
            print(f"  {'all secrets':14s}" + "".join(f"{'{}/{}'.format(*secret[n]):>18s}" for n in names))
            report[path.name] = {name: {shape: list(cell) for shape, cell in tables[name].items()} for name in names}

        print(
            "\nThird-party ordinary messages: how many each masker masks,"
            " and how many the current one masks otherwise than --rev"
        )
        for pool, texts in (
            ("CrossWOZ dev user turns", crosswoz_turns()),
            ("beike-dev customer messages", beike_queries()),
            ("LoCoMo dev turns", locomo_turns()),
        ):
            results = both([(text, None) for text in texts])
            counts = {name: sum(bool(categories) for _, categories in results[name]) for name in names}
            line = ", ".join(f"{name}: {counts[name]}" for name in names)
            new = []
            if rev:
                new = [
                    (text, now)
                    for text, now, before in zip(texts, results["current"], results[f"at {rev}"], strict=True)
                    if now[0] != before[0]
                ]
            print(f"  {pool} ({len(texts)}): masked {line}; changed by the current masker: {len(new)}")
            if args.show:  # third-party words: printed only when asked, never into RESULTS.md
                for _text, (masked, categories) in new:
                    print(f"    changed  {','.join(categories) or '-'}  {masked!r}")
                for masked, categories in results["current"]:
                    if categories:
                        print(f"    masked  {','.join(categories)}  {masked!r}")
            report[pool] = {"total": len(texts), "masked": counts, "changed": len(new)}
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
