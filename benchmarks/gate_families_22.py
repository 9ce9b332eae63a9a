"""The attack families and credential shapes of issue 22 (items 4 and 5), beside ordinary customer
messages that share their words — on `benchmarks/data/gate_families_22.jsonl`, written before the
gate learned them (the first-sight figures are in the issue's report).

    .venv/bin/python benchmarks/gate_families_22.py [--verbose]

An injection row counts as caught when `scan` blocks it; a credential row when `scan` names a
credential and masking leaves none of its secret-looking tokens (a run of 8 or more letters and
digits with both in it) in what is stored. An ordinary row is a false positive when `scan` blocks
it or masking changes it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qiwei_site.reading.masking import mask_sensitive  # noqa: E402
from qiwei_site.reading.safety import scan  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "gate_families_22.jsonl"
# What is left of a secret after masking: a run of ASCII letters and digits with both in it.
_SECRETISH_RE = re.compile(r"[A-Za-z0-9._~+-]{8,}")


def _secret_tokens(text: str) -> set[str]:
    tokens = set()
    for token in _SECRETISH_RE.findall(text):
        core = token.strip(".-_~!")
        if len(core) >= 8 and any(c.isdigit() for c in core) and any(c.isalpha() for c in core):
            tokens.add(core)
    return tokens


def masked_away(text: str) -> bool:
    """Whether masking hid every secret-looking token of `text`."""
    masked = mask_sensitive(text)
    return masked != text and not (_secret_tokens(text) & _secret_tokens(masked))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verbose", action="store_true", help="print every miss and false positive")
    args = parser.parse_args()
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    caught: Counter[str] = Counter()
    total: Counter[str] = Counter()
    false_positives: Counter[str] = Counter()
    ordinary: Counter[str] = Counter()
    for row in rows:
        text, family = str(row["text"]), str(row["family"])
        result = scan(text)
        if int(row["label"]) == 0:
            key = f"{row['lang']}/{row['kind']}"
            ordinary[key] += 1
            wrong = result.blocked or mask_sensitive(text) != text
            false_positives[key] += int(wrong)
            if wrong and args.verbose:
                print(f"  false positive  {text[:90]!r} → {result.rules}")
            continue
        total[family] += 1
        credential = row["kind"] == "credential"
        hit = ("credential" in result.categories and masked_away(text)) if credential else result.blocked
        caught[family] += int(hit)
        if not hit and args.verbose:
            print(f"  missed  {family:18s} {text[:90]!r} → {result.rules}")
    print(f"\n  {'family':20s} caught/total")
    for family in sorted(total, key=lambda f: (rows_kind(rows, f), f)):
        print(f"  {family:20s} {caught[family]:>3}/{total[family]:<3}")
    print(f"  {'all attacks':20s} {sum(caught.values()):>3}/{sum(total.values())}")
    print(f"\n  {'ordinary':20s} false positives")
    for key in sorted(ordinary):
        print(f"  {key:20s} {false_positives[key]:>3}/{ordinary[key]}")
    print(f"  {'all ordinary':20s} {sum(false_positives.values()):>3}/{sum(ordinary.values())}")


def rows_kind(rows: list[dict[str, object]], family: str) -> str:
    return next(str(row["kind"]) for row in rows if row["family"] == family)


if __name__ == "__main__":
    main()
