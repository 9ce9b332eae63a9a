"""The credential shapes issue 21 found unrecognised (a symbol or emoji between keyword and value,
traditional characters, pinyin keywords, one-time codes and mobiles in Chinese numerals, handovers
like "密码我发你了：X", and a credential sent in the message after "密码发你"), beside ordinary
messages that resemble them — on `benchmarks/data/credential_shapes.jsonl`, written before the
reader learned them.

    .venv/bin/python benchmarks/credential_shapes.py

A secret counts as found when what ingest stores (`masked_with_categories`, given the message
before for the last shape) no longer holds it; an ordinary message counts as a false positive when
anything in it is masked."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qiwei_site.reading import masking  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "credential_shapes.jsonl"


def stored(text: str, previous: str | None) -> tuple[str, tuple[str, ...]]:
    after = getattr(masking, "masked_after", None)
    if previous is not None and after is not None:
        return after(text, previous)
    return masking.masked_with_categories(text)


def main() -> None:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    found: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for row in rows:
        masked, categories = stored(row["text"], row.get("previous"))
        total[row["shape"]] += 1
        if row["secret"] is None:
            if categories:
                found[row["shape"]] += 1
                print(f"  false positive  {row['text']!r} → {masked!r}")
        elif row["secret"] not in masked:
            found[row["shape"]] += 1
        else:
            print(f"  missed  {row['shape']:16s} {row['text']!r}")
    print()
    for shape in sorted(total):
        label = "false positives" if shape == "ordinary" else "masked"
        print(f"  {shape:16s} {label}: {found[shape]}/{total[shape]}")


if __name__ == "__main__":
    main()
