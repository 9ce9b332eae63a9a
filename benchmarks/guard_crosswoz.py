"""The instruction guard on real customer turns: what it costs ordinary wishes (false refusals).

Reads CrossWOZ's 4,229 Chinese user turns (travel: hotels, restaurants, sights — third-party data
the guard was never tuned on, and with no injection in it), extracts candidates with the guard off
(its hooks in the extractor replaced by no-ops) and on, and prints:

- turns with at least one candidate, guard off vs on;
- candidates, guard off vs on, and each candidate the guard removed, with its turn;
- how many guard-off candidates `memory_item_put` would refuse (`item_refusal`);
- the time per turn.

    .venv/bin/python benchmarks/guard_crosswoz.py [--data ../shared/datasets/crosswoz-dev/user_turns.jsonl]

Plain Python: extraction and the guard need no database.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import datasets_dir  # noqa: E402
from qiwei_site.reading import extract as extract_package  # noqa: E402
from qiwei_site.reading.extract import Candidate, address, extract_candidates, statements  # noqa: E402
from qiwei_site.reading.guard import item_refusal  # noqa: E402

DEFAULT_DATA = datasets_dir() / "crosswoz-dev" / "user_turns.jsonl"  # $QIWEI_DATASETS_DIR or beside the project


@contextlib.contextmanager
def guard_off() -> Iterator[None]:
    """The extractor with every guard hook a no-op (the baseline)."""
    hooks = [
        (extract_package, "message_refusal"),
        (extract_package, "statement_refusal"),
        (address, "address_refusal"),
        (statements, "object_refusal"),
        (statements, "value_refusal"),
    ]
    saved = [(module, name, getattr(module, name)) for module, name in hooks]
    try:
        for module, name in hooks:
            setattr(module, name, lambda *args, **kwargs: None)
        yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)


def run(turns: list[dict[str, str]]) -> tuple[list[list[Candidate]], float]:
    started = time.perf_counter()
    found = [extract_candidates(turn["text"]) for turn in turns]
    return found, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    turns = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]

    with guard_off():
        before, before_seconds = run(turns)
    after, after_seconds = run(turns)

    removed = [
        (turn["text"], candidate.content)
        for turn, off, on in zip(turns, before, after, strict=True)
        for candidate in off
        if candidate.content not in {c.content for c in on}
    ]
    put_refused = [
        candidate.content
        for candidates in before
        for candidate in candidates
        if item_refusal(key=candidate.key, content=candidate.content, value=candidate.value or None)
    ]
    print(f"CrossWOZ user turns: {len(turns)} ({args.data})")
    print(f"turns with >= 1 candidate: guard off {sum(map(bool, before))}, guard on {sum(map(bool, after))}")
    print(f"candidates: guard off {sum(map(len, before))}, guard on {sum(map(len, after))}")
    print(f"candidates removed by the guard in extraction: {len(removed)}")
    for text, content in removed:
        print(f"  - {content}  ← {text}")
    print(f"guard-off candidates memory_item_put would refuse: {len(put_refused)}")
    for content in put_refused:
        print(f"  - {content}")
    per_turn = 1e3 / len(turns)
    print(f"time per turn: guard off {before_seconds * per_turn:.3f} ms, guard on {after_seconds * per_turn:.3f} ms")


if __name__ == "__main__":
    main()
