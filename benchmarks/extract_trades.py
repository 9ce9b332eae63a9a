"""The extractor on one hand-labelled set per trade, beside a committed extractor in the same run
(issue 22): rentals (`trade_rental_fresh.jsonl`), e-commerce after-sales (`trade_aftersales.jsonl`)
and course sales (`trade_training.jsonl`), each written fresh before the extractor was tuned for
it (first figures in `benchmarks/RESULTS.md`), with the trade's knowledge base where an account would
have one (`trade_*.knowledge.md`: its vocabulary), and the older rental dev set for reference.

Below them, the fresh family sets of issue 22's second pass (`fresh_*.jsonl`): one phrasing family
each (spending limits said without 预算, stock questions and requests naming features, after-sales
outcomes said as verbs, a branch named by its place), each written and measured once before the
extractor was changed for its family, never tuned on (first and final figures in `benchmarks/RESULTS.md`).

Scoring is `extract_rental_dev`'s: recall of the labels, precision of the candidates, the
false-extraction rate on messages with nothing to keep. Plain Python: no database.

    .venv/bin/python benchmarks/extract_trades.py [--rev d7f4749] [--json OUT] [--misses]

`--misses` prints the current extractor's misses on the trade sets (not on the fresh family sets:
they are for measuring, not for reading while tuning).
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine_line, write_json  # noqa: E402
from benchmarks.extract_crosswoz import load_previous  # noqa: E402
from benchmarks.extract_rental_dev import _pct, _run, score, vocabulary_of  # noqa: E402
from qiwei_site.reading.extract import extract_candidates  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
SETS = (
    ("rental (fresh)", "trade_rental_fresh.jsonl", None),
    ("after-sales", "trade_aftersales.jsonl", "trade_aftersales.knowledge.md"),
    ("training", "trade_training.jsonl", "trade_training.knowledge.md"),
    ("rental dev (older)", "rental_dev.jsonl", None),
)
FAMILY_SETS = (
    ("spend limits", "fresh_spend_limits.jsonl", None),
    ("stock features", "fresh_stock_features.jsonl", None),
    ("service verbs", "fresh_service_wants.jsonl", "trade_aftersales.knowledge.md"),
    ("branch areas", "fresh_facility_areas.jsonl", None),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default="d7f4749", help="the git revision of the extractor to compare with")
    parser.add_argument("--json", default=None)
    parser.add_argument("--misses", action="store_true", help="print the current extractor's misses on the trade sets")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="qiwei-prev-extract-") as tmp:
        previous = load_previous(args.rev, Path(tmp))
        takes_context = len(inspect.signature(previous).parameters) > 1
        print(machine_line())
        print(f"{'set':<20} {'n':>4}  {'recall':>15}  {'precision':>15}  {'false extraction':>17}")
        print(f"{'':<20} {'':>4}  {args.rev + ' → now':>15}  {args.rev + ' → now':>15}  {args.rev + ' → now':>17}")
        for name, filename, knowledge in (*SETS, *FAMILY_SETS):
            if (name, filename, knowledge) == FAMILY_SETS[0]:
                print("fresh family sets (issue 22, second pass)")
            rows = [json.loads(line) for line in (DATA / filename).read_text(encoding="utf-8").splitlines() if line]
            vocabulary = vocabulary_of(DATA / knowledge) if knowledge else None
            old = score(rows, _run(previous, rows, takes_context))
            new = score(rows, _run(extract_candidates, rows, True, vocabulary))
            results[name] = {
                "messages": len(rows),
                "previous": {k: v for k, v in old.items() if k != "misses"},
                "current": {k: v for k, v in new.items() if k != "misses"},
            }
            pairs = [f"{_pct(old[key])} → {_pct(new[key])}" for key in ("recall", "precision", "false_extraction_rate")]
            print(f"{name:<20} {len(rows):>4}  {pairs[0]:>15}  {pairs[1]:>15}  {pairs[2]:>17}")
            if args.misses and (name, filename, knowledge) in SETS:
                for miss in new["misses"]:
                    print(f"    #{miss['id']} {miss['text']}  missed={miss['missed']} wrong={miss['wrong']}")
    write_json(args.json, {"rev": args.rev, "sets": results})


if __name__ == "__main__":
    main()
