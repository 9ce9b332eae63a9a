"""Recall on three families of misses (issue 22 item 6), a small hand-written dev set: a question
asked again (the answer after the earlier question is the evidence, not the question), a short
list of facts sharing one character with the query, and relative dates (昨天, last week, 下周三)
named against the day each message was sent.

Each row of `data/recall_families_22.jsonl` is a short history (texts with sent_at, oldest first),
a query with its own sent_at and the expected evidence turn indexes; an empty list means nothing
should come back (scored as "quiet"). Scored with the pure ranker over the features as stored,
each message's send date and the query's passed when the ranker takes them. Prints hit@1/3/6 per
family and language.

    .venv/bin/python benchmarks/recall_families_22.py [--data benchmarks/data/recall_families_22.jsonl] [--show]
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import write_json  # noqa: E402
from qiwei_site.reading.recall import document, features, rank_documents  # noqa: E402

KS = (1, 3, 6)
# The ranker before issue 22 takes no dates: the first-sight figure is scored without them.
TAKES_DATES = "sent_on" in inspect.signature(rank_documents).parameters


def ranked(row: dict, depth: int) -> list[int]:
    documents = [document(features(turn["text"])) for turn in row["history"]]
    query = features(row["query"])
    if not TAKES_DATES:
        return rank_documents(query, documents, depth)
    sent_on = [dt.datetime.fromisoformat(turn["sent_at"]).date() for turn in row["history"]]
    query_on = dt.datetime.fromisoformat(row["query_sent_at"]).date()
    return rank_documents(query, documents, depth, sent_on=sent_on, query_on=query_on)


def evaluate(rows: list[dict], show: bool) -> dict:
    hits: dict[str, dict[int, int]] = defaultdict(lambda: dict.fromkeys(KS, 0))
    counts: dict[str, int] = defaultdict(int)
    quiet: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        result = ranked(row, max(KS))
        expected = set(row["expected"])
        if not expected:
            quiet[row["family"]][0] += not result
            quiet[row["family"]][1] += 1
            if show:
                print(f"{row['id']:<28} quiet={not result} got={result}")
            continue
        for key in (row["family"], f"{row['family']}/{row['lang']}", "overall"):
            counts[key] += 1
            for k in KS:
                hits[key][k] += bool(expected & set(result[:k]))
        if show:
            print(f"{row['id']:<28} expected={sorted(expected)} got={result}")
    return {
        "ranker_takes_dates": TAKES_DATES,
        "rows": [
            {"group": key, "n": counts[key], **{f"hit@{k}": hits[key][k] / counts[key] for k in KS}} for key in counts
        ],
        "quiet": {family: {"quiet": q, "n": n} for family, (q, n) in quiet.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "benchmarks" / "data" / "recall_families_22.jsonl")
    parser.add_argument("--show", action="store_true", help="print every row's ranking")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]
    result = evaluate(rows, args.show)
    print(f"recall families (issue 22): {len(rows)} rows; dates passed to the ranker: {TAKES_DATES}")
    print(f"{'group':<34} {'n':>3} " + " ".join(f"{'hit@' + str(k):>6}" for k in KS))
    for row in sorted(result["rows"], key=lambda r: (r["group"] == "overall", r["group"])):
        print(f"{row['group']:<34} {row['n']:>3} " + " ".join(f"{row[f'hit@{k}']:>6.2f}" for k in KS))
    for family, quiet in result["quiet"].items():
        print(f"{family:<34} quiet (nothing returned where nothing fits): {quiet['quiet']} of {quiet['n']}")
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
