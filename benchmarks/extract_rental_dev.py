"""The extractor on the rental dev set (`benchmarks/data/rental_dev.jsonl`), beside the committed
extractor in the same run.

The dev set is this project's own: rental and second-hand-home customer messages written for it
(none copied from an issue or a dataset), each labelled with the memory items a careful agent would
keep, as `标签：值` (预算：4000以内, 意向区域：滨江, 户型：两居, 偏好：朝南, 必须：电梯, 不考虑：一楼,
称呼：赵, 家庭情况：老人, 宠物：猫) or nothing. A row may carry the agent's message just before it
(`previous_outbound`), which a bare answer ("宝山吧") answers.

A candidate matches a label when its content has the same label before `：` and holds the value: for
预算 the same amount (both ends of the range, read by `qiwei_site.reading.values.amounts_in`), otherwise the
value's words. Printed per extractor: recall (labels found), per family; precision (candidates that
match a label of their message); the false-extraction rate (messages labelled with nothing that still
yield a candidate). Acceptances are releases, not candidates, and are not counted.

The committed extractor is `git show <rev>:memory/capture/extract/*` (read-only git), loaded beside
the current one (`extract_crosswoz.load_previous`); it is called as it was, with the text alone when
it takes no context. Plain Python: extraction needs no database.

    .venv/bin/python benchmarks/extract_rental_dev.py [--data FILE] [--knowledge KB.md] [--rev b40be73] [--misses]

`--knowledge`: the account's knowledge base, whose vocabulary sections name its trade's terms (the
current extractor reads them; the previous one had none).
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine_line, write_json  # noqa: E402
from benchmarks.extract_crosswoz import load_previous  # noqa: E402
from qiwei_site.reading.extract import ExtractContext, extract_candidates  # noqa: E402
from qiwei_site.reading.values import amounts_in  # noqa: E402
from qiwei_site.reading.values.vocabulary import Vocabulary, parse_vocabulary  # noqa: E402

DEFAULT_DATA = ROOT / "benchmarks" / "data" / "rental_dev.jsonl"
# Messages carry no time: relative dates resolve against a fixed Wednesday.
SENT_AT = datetime(2027, 3, 10, 9, 30, tzinfo=ZoneInfo("Asia/Shanghai"))


def _label_value(text: str) -> tuple[str, str]:
    label, _, value = text.partition("：")
    return label.strip(), value.strip()


def _amount_spans(text: str) -> set[tuple[float | None, float | None]]:
    return {(amount.low, amount.high) for amount in amounts_in(text, bare=True)}


def matches(expected: str, content: str) -> bool:
    label, value = _label_value(expected)
    got_label, got_value = _label_value(content)
    if label != got_label:
        return False
    if label == "预算":
        wanted = _amount_spans(value)
        return bool(wanted) and bool(wanted & _amount_spans(got_value))
    return re.sub(r"\s+", "", value).lower() in re.sub(r"\s+", "", got_value).lower()


def score(rows: list[dict[str, Any]], found: list[list[str]]) -> dict[str, Any]:
    labels: Counter[str] = Counter()
    recalled: Counter[str] = Counter()
    candidates = correct = negatives = false_messages = 0
    misses: list[dict[str, Any]] = []
    for row, contents in zip(rows, found, strict=True):
        family = row["family"].removesuffix("-neg")
        expected = row["expect"]
        candidates += len(contents)
        wrong = [content for content in contents if not any(matches(label, content) for label in expected)]
        correct += len(contents) - len(wrong)
        missed = [label for label in expected if not any(matches(label, content) for content in contents)]
        labels[family] += len(expected)
        recalled[family] += len(expected) - len(missed)
        if not expected:
            negatives += 1
            false_messages += bool(contents)
        if missed or wrong:
            misses.append({"id": row["id"], "text": row["text"], "missed": missed, "wrong": wrong})
    total = sum(labels.values())
    return {
        "labels": dict(labels),
        "recalled": dict(recalled),
        "recall": sum(recalled.values()) / total if total else None,
        "recall_by_family": {f: recalled[f] / labels[f] for f in labels if labels[f]},
        "candidates": candidates,
        "correct": correct,
        "precision": correct / candidates if candidates else None,
        "negatives": negatives,
        "false_extraction_rate": false_messages / negatives if negatives else None,
        "misses": misses,
    }


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def vocabulary_of(path: Path | None) -> Vocabulary | None:
    """An account's trade vocabulary from a knowledge-base file, as capture reads it."""
    if path is None:
        return None
    return Vocabulary(parse_vocabulary(path.read_text(encoding="utf-8")))


def _run(
    extract: Callable[..., list[Any]],
    rows: list[dict[str, Any]],
    with_context: bool,
    vocabulary: Vocabulary | None = None,
) -> list[list[str]]:
    found = []
    for row in rows:
        if with_context:
            context = ExtractContext(
                sent_at=SENT_AT, previous_outbound=row.get("previous_outbound", ""), vocabulary=vocabulary
            )
            candidates = extract(row["text"], context)
        else:
            candidates = extract(row["text"])
        found.append([candidate.content for candidate in candidates])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rev", default="b40be73", help="the git revision of the extractor before issue 15")
    parser.add_argument("--misses", action="store_true", help="print the current extractor's misses")
    parser.add_argument("--knowledge", type=Path, default=None, help="the account's knowledge base (its vocabulary)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]
    with tempfile.TemporaryDirectory(prefix="qiwei-prev-extract-") as tmp:
        previous = load_previous(args.rev, Path(tmp))
        takes_context = len(inspect.signature(previous).parameters) > 1
        before = _run(previous, rows, takes_context)
    after = _run(extract_candidates, rows, True, vocabulary_of(args.knowledge))
    old, new = score(rows, before), score(rows, after)

    print(machine_line())
    labelled = sum(1 for row in rows if row["expect"])
    print(f"{args.data.name}: {len(rows)} messages, {labelled} labelled, {len(rows) - labelled} with nothing to keep")
    table = [
        ("recall", _pct(old["recall"]), _pct(new["recall"]), f"n={sum(new['labels'].values())}"),
        *[
            (f"  {family}", _pct(old["recall_by_family"].get(family)), _pct(rate), f"n={new['labels'][family]}")
            for family, rate in sorted(new["recall_by_family"].items())
        ],
        ("candidates", str(old["candidates"]), str(new["candidates"]), ""),
        ("precision", _pct(old["precision"]), _pct(new["precision"]), "matches a label of its message"),
        (
            "false extraction",
            _pct(old["false_extraction_rate"]),
            _pct(new["false_extraction_rate"]),
            f"messages with nothing to keep, n={new['negatives']}",
        ),
    ]
    width = max(len(row[0]) for row in table)
    print(f"{'':{width}}  {f'previous ({args.rev})':>16}  {'current':>10}")
    for label, before_value, after_value, note in table:
        print(f"{label:{width}}  {before_value:>16}  {after_value:>10}  {note}")
    if args.misses:
        for miss in new["misses"]:
            print(f"#{miss['id']} {miss['text']}  missed={miss['missed']} wrong={miss['wrong']}")
    write_json(
        args.json,
        {
            "messages": len(rows),
            "previous": {**{k: v for k, v in old.items() if k != "misses"}, "rev": args.rev},
            "current": {k: v for k, v in new.items() if k != "misses"},
        },
    )


if __name__ == "__main__":
    main()
