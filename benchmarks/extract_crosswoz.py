"""The extractor on CrossWOZ's annotated user turns, beside the previous extractor in the same run.

CrossWOZ (Apache-2.0) is Chinese travel dialogue, not rentals, but its user turns state wants and
limits the way Chinese customers do ("人均消费在100-150元", "有早餐服务的酒店"), and every turn carries
its Inform acts as (domain, slot, value). The extractor is scored on the slots it claims:

- price: 餐馆/人均消费, 酒店/价格, 景点/门票 (amounts; "免费" is no amount): a candidate whose content
  reads the same amount (both ends of a range) — the budget or an object holding it;
- features: 酒店/酒店设施-* (value 是): a candidate whose content names the facility;
- area: the place slots (区域, 地址); CrossWOZ's dev Inform acts hold none, so it is printed as 0;
- rating (评分) is not claimed (a rental extractor has no score field); it is printed for reference.

Printed per extractor: recall per claimed slot, precision (a candidate is right when it matches any
annotated value of its turn, claimed or not), the false-extraction rate (turns without any Inform
act that still yield a candidate; and wrong candidates per 100 turns), and the time per turn.

The previous extractor is `git show <rev>:memory/capture/extract/*` (read-only git), loaded under
another package name beside the current one; both share the current guard. No dataset text is kept.

    .venv/bin/python benchmarks/extract_crosswoz.py [--data …/user_turns.jsonl] [--rev b40be73] [--json OUT] [--misses]

`--misses` prints the current extractor's misses (a claimed slot no candidate holds) and its wrong
candidates, one per line with the turn's text, to analyse them by phrasing family.

Plain Python: extraction needs no database.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import datasets_dir, machine_line, moved_imports, write_json  # noqa: E402
from qiwei_site.reading.extract import ExtractContext, extract_candidates  # noqa: E402
from qiwei_site.reading.values import amounts_in  # noqa: E402

DEFAULT_DATA = datasets_dir() / "crosswoz-dev" / "user_turns.jsonl"  # $QIWEI_DATASETS_DIR or beside the project
PACKAGE = "memory.capture.extract"  # its name at the revisions compared with
PRICE_SLOTS = {("餐馆", "人均消费"), ("酒店", "价格"), ("景点", "门票")}
AREA_SLOTS = {"区域", "地址", "area"}
FEATURE_PREFIX = "酒店设施-"
MAPPING = [
    ("price", "餐馆/人均消费, 酒店/价格, 景点/门票 (amount values)", "same amount in the content (both ends)"),
    ("features", "酒店/酒店设施-* = 是", "the facility named in the content"),
    ("area", "区域, 地址 (none in this split)", "the place named in the content"),
    ("rating (not claimed)", "*/评分", "the score written in the content"),
]


def load_previous(rev: str, into: Path) -> Callable[[str], list[Any]]:
    """The extractor as it was at `rev`, importable as its own package."""
    listing = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "--name-only", f"{rev}:memory/capture/extract/"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    name = "previous_extract"
    package = into / name
    package.mkdir(parents=True)
    for filename in listing:
        if not filename.endswith(".py"):
            continue
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:memory/capture/extract/{filename}"],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        (package / filename).write_text(moved_imports(source.replace(PACKAGE, name)), encoding="utf-8")
    sys.path.insert(0, str(into))
    module = importlib.import_module(name)
    return module.extract_candidates  # type: ignore[no-any-return]


def _amount_key(text: str) -> tuple[float | None, float | None] | None:
    found = amounts_in(text, bare=True)
    if not found:
        return None
    amount = found[0]
    return amount.low, amount.high


def _amounts_of(content: str) -> set[tuple[float | None, float | None]]:
    keys = set()
    for amount in amounts_in(content, bare=True):
        keys.add((amount.low, amount.high))
        if amount.low is not None and amount.high is not None:
            keys.add((amount.low, amount.high))
    return keys


def _facility_terms(slot: str) -> list[str]:
    name = slot.removeprefix(FEATURE_PREFIX)
    if "wifi" in name.lower():
        return ["wifi"]
    core = re.sub(r"^(?:提供|有)|服务$|免费$", "", name)
    return [term for term in {name, core} if len(term) >= 2]


def slot_family(domain: str, slot: str, value: str) -> str | None:
    if (domain, slot) in PRICE_SLOTS and _amount_key(value) is not None:
        return "price"
    if slot.startswith(FEATURE_PREFIX) and value == "是":
        return "features"
    if slot in AREA_SLOTS:
        return "area"
    if slot == "评分":
        return "rating (not claimed)"
    return None


def matches(family: str | None, slot: str, value: str, content: str) -> bool:
    lowered = content.lower()
    if family == "price":
        key = _amount_key(value)
        return key is not None and key in _amounts_of(content)
    if family == "features":
        return any(term.lower() in lowered for term in _facility_terms(slot))
    if family == "rating (not claimed)":
        score = re.match(r"[\d.]+", value)
        return score is not None and f"{score.group(0)}分" in content
    return len(value) >= 2 and value.lower() in lowered


def score(turns: list[dict[str, Any]], found: list[list[Any]]) -> dict[str, Any]:
    annotated: Counter[str] = Counter()
    recalled: Counter[str] = Counter()
    candidates = correct = 0
    empty_turns = empty_turns_with_candidates = 0
    for turn, cands in zip(turns, found, strict=True):
        contents = [c.content for c in cands]
        candidates += len(contents)
        informs = [(d, s, v) for d, s, v in turn["inform"]]
        if not informs:
            empty_turns += 1
            empty_turns_with_candidates += bool(contents)
        for domain, slot, value in informs:
            family = slot_family(domain, slot, value)
            if family is None:
                continue
            annotated[family] += 1
            recalled[family] += any(matches(family, slot, value, content) for content in contents)
        for content in contents:
            correct += any(matches(slot_family(d, s, v), s, v, content) for d, s, v in informs)
    claimed = [family for family, *_ in MAPPING if "not claimed" not in family]
    total_annotated = sum(annotated[f] for f in claimed)
    total_recalled = sum(recalled[f] for f in claimed)
    return {
        "annotated": dict(annotated),
        "recalled": dict(recalled),
        "recall": {f: (recalled[f] / annotated[f] if annotated[f] else None) for f in annotated},
        "claimed_recall": total_recalled / total_annotated if total_annotated else None,
        "candidates": candidates,
        "correct": correct,
        "precision": correct / candidates if candidates else None,
        "turns_without_inform": empty_turns,
        "false_extraction_rate": empty_turns_with_candidates / empty_turns if empty_turns else None,
        "wrong_per_100_turns": 100 * (candidates - correct) / len(turns),
    }


def timed(extract: Callable[[str], list[Any]], texts: list[str], repeats: int) -> tuple[list[list[Any]], float, float]:
    """Candidates per text, and the best mean and median milliseconds per text over `repeats` runs."""
    best_mean = best_median = float("inf")
    found: list[list[Any]] = []
    for _ in range(repeats):
        times = []
        found = []
        for text in texts:
            started = time.perf_counter()
            found.append(extract(text))
            times.append(time.perf_counter() - started)
        best_mean = min(best_mean, 1e3 * statistics.fmean(times))
        best_median = min(best_median, 1e3 * statistics.median(times))
    return found, best_mean, best_median


def print_misses(turns: list[dict[str, Any]], found: list[list[Any]]) -> None:
    """Each claimed slot no candidate holds ("miss"), and each candidate matching no Inform act ("wrong")."""
    for turn, cands in zip(turns, found, strict=True):
        contents = [c.content for c in cands]
        for domain, slot, value in turn["inform"]:
            family = slot_family(domain, slot, value)
            if family in {"price", "features", "area"} and not any(matches(family, slot, value, c) for c in contents):
                print(f"miss  {family:<8} {slot}={value} | {turn['text']} | {contents}")
        for content in contents:
            if not any(matches(slot_family(d, s, v), s, v, content) for d, s, v in turn["inform"]):
                print(f"wrong {content} | {turn['text']} | inform={turn['inform']}")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rev", default="b40be73", help="the git revision of the previous extractor (before issue 15)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None)
    parser.add_argument("--misses", action="store_true", help="print the current extractor's misses and wrong ones")
    args = parser.parse_args()
    turns = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [turn["text"] for turn in turns]
    # The turns carry no time: relative dates resolve against a fixed day (nothing here depends on it).
    context = ExtractContext(sent_at=datetime(2026, 11, 20, 10, 0, tzinfo=ZoneInfo("Asia/Shanghai")))

    with tempfile.TemporaryDirectory(prefix="qiwei-prev-extract-") as tmp:
        previous = load_previous(args.rev, Path(tmp))
        extract_candidates("预热")
        previous("预热")
        before, before_mean, before_median = timed(previous, texts, args.repeats)
        after, after_mean, after_median = timed(lambda text: extract_candidates(text, context), texts, args.repeats)

    old, new = score(turns, before), score(turns, after)
    print(machine_line())
    print(f"CrossWOZ dev user turns: {len(turns)}, {len(turns) - old['turns_without_inform']} with an Inform act")
    print("slot mapping (family: CrossWOZ slots → what counts as found):")
    for family, slots, rule in MAPPING:
        print(f"  {family}: {slots} → {rule}")
    rows = [
        *[
            (
                f"recall {family}",
                _pct(old["recall"].get(family)),
                _pct(new["recall"].get(family)),
                f"n={new['annotated'].get(family, 0)}",
            )
            for family, *_ in MAPPING
        ],
        ("recall, claimed slots", _pct(old["claimed_recall"]), _pct(new["claimed_recall"]), ""),
        ("candidates", str(old["candidates"]), str(new["candidates"]), ""),
        ("precision", _pct(old["precision"]), _pct(new["precision"]), "matches any Inform value of its turn"),
        (
            "false extraction (turns w/o Inform)",
            _pct(old["false_extraction_rate"]),
            _pct(new["false_extraction_rate"]),
            f"n={old['turns_without_inform']}",
        ),
        ("wrong candidates / 100 turns", f"{old['wrong_per_100_turns']:.1f}", f"{new['wrong_per_100_turns']:.1f}", ""),
        ("ms per turn, mean", f"{before_mean:.3f}", f"{after_mean:.3f}", f"best of {args.repeats}"),
        ("ms per turn, median", f"{before_median:.3f}", f"{after_median:.3f}", ""),
    ]
    width = max(len(row[0]) for row in rows)
    print(f"{'':{width}}  {f'previous ({args.rev})':>16}  {'current':>10}")
    for label, before_value, after_value, note in rows:
        print(f"{label:{width}}  {before_value:>16}  {after_value:>10}  {note}")
    if args.misses:
        print_misses(turns, after)
    write_json(
        args.json,
        {
            "turns": len(turns),
            "previous": {**old, "ms_mean": before_mean, "ms_median": before_median, "rev": args.rev},
            "current": {**new, "ms_mean": after_mean, "ms_median": after_median},
            "mapping": MAPPING,
        },
    )


if __name__ == "__main__":
    main()
