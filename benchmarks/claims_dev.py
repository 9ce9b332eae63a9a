"""Claims that must not become memory (issue 21, item 5) beside ordinary statements that must:
authority claims (someone approved, promised or allowed something), titles built from service
words used as a form of address, the prompt's own line prefixes, disguised role markers and
instructions to change the record — on `benchmarks/data/claims_dev.jsonl`, written by us before the
guard learned these families.

    .venv/bin/python benchmarks/claims_dev.py

Prints, per family, how many claims still became a candidate (lower is better) and how many
ordinary statements kept at least one (higher is better), each candidate shown for the claims."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qiwei_site.reading.extract import extract_candidates  # noqa: E402
from qiwei_site.reading.guard import item_refusal, message_refusal  # noqa: E402
from qiwei_site.reading.safety import scan  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "claims_dev.jsonl"


def memory_from(text: str) -> list[str]:
    """What capture would write from the message: gate, whole-message guard, extraction, item guard."""
    if scan(text).blocked or message_refusal(text):
        return []
    kept = []
    for candidate in extract_candidates(text):
        value = candidate.value if candidate.field else None  # a profile item's bare value
        if not item_refusal(key=candidate.key, content=candidate.content, value=value):
            kept.append(candidate.content)
    return kept


def main() -> None:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    leaked: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for row in rows:
        found = memory_from(row["text"])
        total[row["family"]] += 1
        if row["expect"] == "none" and found:
            leaked[row["family"]] += 1
            print(f"  leaked  {row['family']:9s} {row['text']}  →  {found}")
        if row["expect"] == "keep" and not found:
            print(f"  missed  {row['family']:9s} {row['text']}")
    print()
    for family in sorted(total):
        if family == "legit":
            kept = total[family] - sum(1 for r in rows if r["family"] == "legit" and not memory_from(r["text"]))
            print(f"  {family:9s} ordinary statements kept: {kept}/{total[family]}")
        else:
            print(f"  {family:9s} claims that became memory: {leaked[family]}/{total[family]}")
    claims = sum(v for k, v in total.items() if k != "legit")
    print(f"  all claims that became memory: {sum(leaked.values())}/{claims}")


if __name__ == "__main__":
    main()
