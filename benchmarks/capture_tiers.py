"""What capture writes by itself and what it sends to review, on real and fresh customer words (issue 35).

Three kinds of data, each scored for the two tiers of capture's reader
(`qiwei_site.reading.extract.extract`: `candidates` are written automatically, `proposals` wait in the
review queue) and for the two together:

- **beike sample**: 300 real customer messages of a real-estate agency (`../shared/datasets/beike-dev`,
  read in place, never copied), drawn with a fixed seed and labelled by hand before the reader was
  changed (`benchmarks/data/beike_sample_labels.json`: ids and labels only);
- **fresh trades**: 60 messages in four other trades (after-sales and repairs, training enrolment,
  travel, e-commerce returns; `benchmarks/data/fresh35_*.jsonl`), written with their expected items
  before the first measurement (the script prints no misses for them), and a second set of 40
  (`fresh35b_trades.jsonl`) written near the end of the build, once the first had been measured
  again, and measured once;
- **CrossWOZ dev**: 4,229 crowd-sourced Chinese user turns with Inform acts, scored as
  `extract_crosswoz.py` scores them (the price and facility slots; wrong items per 100 turns);
- **the review's families** (`review35_families.jsonl`: the strings an adversarial review of issue 35
  found written by themselves) and **a fresh set in the same families** (`fresh35c_families.jsonl`:
  other wording, with firm self-statements that must still be written), both written before the
  reader learned them, and **a second fresh set** (`fresh35d_families.jsonl`, 40 messages) written
  when that work was done and measured once; all scored **by tier**: `expect` must be written by
  itself, `propose` must be proposed, `allow` may be proposed (or dropped), `allow_auto` may be written
  (a refusal read from a negated want); anything else in a tier is wrong. A row with `earlier` is
  said after that message: an acceptance relaxing what `earlier` wrote is written by itself, as
  capture writes it.

An item matches a label when the label before `：` is the same (a label may list alternatives with
`|`, or be `*` for any; one stance counts as one label: 偏好/必须/可以接受 are a want, 不考虑/不需要/
不强求 a refusal) and it holds the value (budgets by amount). An acceptance with nothing to relax
(`releases`; only a row's `earlier` message gives it something) counts as a proposal, on both sides
when `--rev` has the two tiers: capture proposes it (before the tiers it dropped it). Printed per set
and tier: precision, recall of the labels, items per 1,000 messages — beside the reader at `--rev` (default
5804d3c, before the two tiers: everything it read was written), run from `git archive` of its
`qiwei_site/reading` in a process of its own, so both readers are whole.

    .venv/bin/python benchmarks/capture_tiers.py [--rev 5804d3c] [--json OUT] [--misses beike|crosswoz|review]

Plain Python: reading needs no database.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from io import BytesIO
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import datasets_dir, machine_line, require_dataset, write_json  # noqa: E402
from benchmarks.extract_crosswoz import matches as crosswoz_matches  # noqa: E402
from benchmarks.extract_crosswoz import slot_family  # noqa: E402
from qiwei_site.reading.values import amounts_in  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
SHARED = datasets_dir()  # $QIWEI_DATASETS_DIR or shared/datasets beside the project (common.py)
BEIKE = SHARED / "beike-dev" / "train.query.tsv"
CROSSWOZ = SHARED / "crosswoz-dev" / "user_turns.jsonl"
LABELS = DATA / "beike_sample_labels.json"
# Written while the reader was being built (issue 35), one message per family the issue names and
# per family of other trades: for measuring progress, not a held-out figure.
DEV = "dev35_families.jsonl"
# A second fresh set in the same four trades (each row names its knowledge base), written when the
# first had been measured again during the build: measured once, at the end.
FRESH_B = "fresh35b_trades.jsonl"
# The strings of the adversarial review of issue 35 (third-party, measured before the build), our own
# fresh set in the same families (other wording; firm self-statements beside them), and a second fresh
# set written when the review's work was finished (measured once, at the end), scored by tier.
TIERED = (
    ("review of issue 35: its families (third-party strings)", "review35_families.jsonl"),
    ("review families, fresh set (other wording, firm statements beside)", "fresh35c_families.jsonl"),
    ("review families, second fresh set (measured once, at the end)", "fresh35d_families.jsonl"),
)
FRESH = (
    ("after-sales (fresh)", "fresh35_aftersales.jsonl", "trade_aftersales.knowledge.md"),
    ("training (fresh)", "fresh35_training.jsonl", "trade_training.knowledge.md"),
    ("travel (fresh)", "fresh35_travel.jsonl", None),
    ("returns (fresh)", "fresh35_returns.jsonl", "trade_aftersales.knowledge.md"),
)
# Messages carry no time: relative dates resolve against a fixed Wednesday morning.
SENT_AT = datetime(2027, 3, 10, 9, 30, tzinfo=ZoneInfo("Asia/Shanghai"))
AUTO, PROPOSED = "auto", "proposed"

# Run in a process of its own over another revision's reader: texts in on stdin, contents out.
_WORKER = r"""
import json, sys
from datetime import datetime
from zoneinfo import ZoneInfo
from qiwei_site.reading.extract import ExtractContext, extract
from qiwei_site.reading.values.vocabulary import Vocabulary, parse_vocabulary
try:
    from qiwei_site.reading.extract import release_targets
except ImportError:
    release_targets = lambda release: tuple(release.supersedes_keys)
rows = json.load(sys.stdin)
sent_at = datetime.fromisoformat(rows["sent_at"])
vocabularies = {}
out = []
for row in rows["rows"]:
    path = row.get("knowledge")
    if path and path not in vocabularies:
        vocabularies[path] = Vocabulary(parse_vocabulary(open(path, encoding="utf-8").read()))
    context = ExtractContext(sent_at=sent_at, previous_outbound=row.get("previous_outbound", ""),
                             vocabulary=vocabularies.get(path) if path else None)
    found = extract(row["text"], context)
    active = {c.key for c in extract(row["earlier"], context).candidates} if row.get("earlier") else set()
    relaxing = [r for r in found.releases if active & set(release_targets(r))]
    # a reader with two tiers proposes an acceptance with nothing to relax (capture does); before the
    # tiers capture dropped it
    lone = [r for r in found.releases if r not in relaxing] if hasattr(found, "proposals") else []
    out.append({"auto": [c.content for c in [*found.candidates, *relaxing]],
                "proposed": [c.content for c in [*getattr(found, "proposals", []), *lone]]})
json.dump(out, sys.stdout, ensure_ascii=False)
"""


@dataclass
class Row:
    text: str
    expect: list[str]
    previous_outbound: str = ""
    knowledge: str | None = None
    inform: list[list[str]] = field(default_factory=list)  # CrossWOZ's Inform acts
    # scored by tier (the review's families): what must be proposed, what may be proposed or written
    propose: list[str] = field(default_factory=list)
    allow: list[str] = field(default_factory=list)
    allow_auto: list[str] = field(default_factory=list)
    earlier: str = ""  # a message said before this one (what it wrote is active)


def _label_value(text: str) -> tuple[str, str]:
    label, _, value = text.partition("：")
    return label.strip(), value.strip()


def _amounts(text: str) -> set[tuple[float | None, float | None]]:
    return {(amount.low, amount.high) for amount in amounts_in(text, bare=True)}


# One stance, however the reader labels it: a want, or a refusal.
_STANCES = ({"偏好", "必须", "可以接受"}, {"不考虑", "不需要", "不强求"})


def _labels(label: str) -> set[str]:
    wanted = set(label.split("|"))
    for stance in _STANCES:
        if wanted & stance:
            wanted |= stance
    return wanted


def matches(expected: str, content: str) -> bool:
    """A label (`标签：值`, 标签 may be `A|B` or `*`) matches an item's content."""
    label, value = _label_value(expected)
    got_label, got_value = _label_value(content)
    if label != "*" and got_label not in _labels(label):
        return False
    if label == "预算":
        wanted = _amounts(value)
        return bool(wanted) and bool(wanted & _amounts(got_value))
    squeeze: Callable[[str], str] = lambda text: "".join(text.split()).lower()  # noqa: E731
    return squeeze(value) in squeeze(got_value)


def beike_rows() -> tuple[list[int], list[Row]]:
    meta = json.loads(LABELS.read_text(encoding="utf-8"))
    require_dataset("beike-dev")
    texts = dict(line.rstrip("\n").split("\t", 1) for line in BEIKE.read_text(encoding="utf-8").splitlines())
    drawn = sorted(random.Random(meta["seed"]).sample(range(len(texts)), meta["size"]))
    ids = [int(list(texts)[index]) for index in drawn]
    if [str(i) for i in ids] != list(meta["labels"]):
        raise SystemExit("the labelled ids are not the draw of the labels file's seed: the data set changed?")
    return ids, [Row(text=texts[str(i)], expect=meta["labels"][str(i)]) for i in ids]


def _data_path(name: str | None) -> str | None:
    return str(DATA / name) if name else None


def fresh_rows(filename: str, knowledge: str | None) -> list[Row]:
    rows = [json.loads(line) for line in (DATA / filename).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [
        Row(
            text=r["text"],
            expect=r["expect"],
            previous_outbound=r.get("previous_outbound", ""),
            knowledge=_data_path(r.get("knowledge") or knowledge),
            propose=r.get("propose", []),
            allow=r.get("allow", []),
            allow_auto=r.get("allow_auto", []),
            earlier=r.get("earlier", ""),
        )
        for r in rows
    ]


def _raw(filename: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / filename).read_text(encoding="utf-8").splitlines() if line.strip()]


def crosswoz_rows() -> list[Row]:
    require_dataset("crosswoz-dev")
    turns = [json.loads(line) for line in CROSSWOZ.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Row(text=t["text"], expect=[], inform=t["inform"]) for t in turns]


Found = list[dict[str, list[str]]]


def read_current(rows: Sequence[Row]) -> Found:
    from qiwei_site.reading.extract import ExtractContext, extract, release_targets
    from qiwei_site.reading.values.vocabulary import Vocabulary, parse_vocabulary

    vocabularies: dict[str, Vocabulary] = {}
    found: Found = []
    for row in rows:
        if row.knowledge and row.knowledge not in vocabularies:
            vocabularies[row.knowledge] = Vocabulary(parse_vocabulary(Path(row.knowledge).read_text(encoding="utf-8")))
        context = ExtractContext(
            sent_at=SENT_AT,
            previous_outbound=row.previous_outbound,
            vocabulary=vocabularies.get(row.knowledge) if row.knowledge else None,
        )
        extraction = extract(row.text, context)
        # an acceptance relaxing what the earlier message wrote is written (capture writes it); one
        # with nothing to relax is proposed by capture
        active = {c.key for c in extract(row.earlier, context).candidates} if row.earlier else set()
        relaxing = [r for r in extraction.releases if active & set(release_targets(r))]
        found.append(
            {
                AUTO: [c.content for c in [*extraction.candidates, *relaxing]],
                PROPOSED: [c.content for c in [*extraction.proposals, *extraction.releases] if c not in relaxing],
            }
        )
    return found


def read_revision(rev: str, rows: Sequence[Row], tree: Path) -> Found:
    if not (tree / "qiwei_site").exists():
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "qiwei_site/reading"], check=True,
                                 capture_output=True).stdout  # fmt: skip
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")
        (tree / "qiwei_site" / "__init__.py").write_text("")
    payload = {
        "sent_at": SENT_AT.isoformat(),
        "rows": [
            {"text": r.text, "previous_outbound": r.previous_outbound, "knowledge": r.knowledge, "earlier": r.earlier}
            for r in rows
        ],
    }
    done = subprocess.run(
        [sys.executable, "-c", _WORKER],
        input=json.dumps(payload, ensure_ascii=False),
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
    )
    return list(json.loads(done.stdout))


@dataclass
class Score:
    items: int = 0
    right: int = 0
    labels: int = 0
    found: int = 0

    @property
    def precision(self) -> float | None:
        return self.right / self.items if self.items else None

    @property
    def recall(self) -> float | None:
        return self.found / self.labels if self.labels else None


def score_labelled(rows: Sequence[Row], found: Found) -> dict[str, Score]:
    scores = {AUTO: Score(), PROPOSED: Score(), "both": Score()}
    for row, got in zip(rows, found, strict=True):
        tiers = {AUTO: got[AUTO], PROPOSED: got[PROPOSED], "both": got[AUTO] + got[PROPOSED]}
        for tier, contents in tiers.items():
            score = scores[tier]
            score.items += len(contents)
            score.right += sum(any(matches(label, content) for label in row.expect) for content in contents)
            score.labels += len(row.expect)
            score.found += sum(any(matches(label, content) for content in contents) for label in row.expect)
    return scores


def score_tiered(rows: Sequence[Row], found: Found) -> dict[str, Score]:
    """By tier: an item written by itself is right only where `expect` or `allow_auto` holds it; a
    proposal where any label of the row does. Recall: `expect` in the automatic tier, `propose` in the
    proposals, both in either."""
    scores = {AUTO: Score(), PROPOSED: Score(), "both": Score()}
    for row, got in zip(rows, found, strict=True):
        may_write = [*row.expect, *row.allow_auto]
        may_propose = [*row.expect, *row.propose, *row.allow, *row.allow_auto]
        tiers = (
            (AUTO, got[AUTO], may_write, row.expect),
            (PROPOSED, got[PROPOSED], may_propose, row.propose),
        )
        for tier, contents, right_labels, wanted in tiers:
            score, both = scores[tier], scores["both"]
            right = sum(any(matches(label, content) for label in right_labels) for content in contents)
            score.items, score.right = score.items + len(contents), score.right + right
            both.items, both.right = both.items + len(contents), both.right + right
            score.labels += len(wanted)
            score.found += sum(any(matches(label, content) for content in contents) for label in wanted)
        wanted_all = [*row.expect, *row.propose]
        scores["both"].labels += len(wanted_all)
        scores["both"].found += sum(
            any(matches(label, content) for content in got[AUTO] + got[PROPOSED]) for label in wanted_all
        )
    return scores


def wrongly_written(rows: Sequence[Row], found: Found) -> int:
    """Messages with at least one item written by itself that the row does not allow there."""
    return sum(
        any(not any(matches(label, c) for label in [*row.expect, *row.allow_auto]) for c in got[AUTO])
        for row, got in zip(rows, found, strict=True)
    )


def score_crosswoz(rows: Sequence[Row], found: Found) -> dict[str, Score]:
    scores = {AUTO: Score(), PROPOSED: Score(), "both": Score()}
    for row, got in zip(rows, found, strict=True):
        informs = [(d, s, v) for d, s, v in row.inform]
        claimed = [(d, s, v, f) for d, s, v in informs if (f := slot_family(d, s, v)) in {"price", "features"}]
        tiers = {AUTO: got[AUTO], PROPOSED: got[PROPOSED], "both": got[AUTO] + got[PROPOSED]}
        for tier, contents in tiers.items():
            score = scores[tier]
            score.items += len(contents)
            score.right += sum(
                any(crosswoz_matches(slot_family(d, s, v), s, v, content) for d, s, v in informs)
                for content in contents
            )
            score.labels += len(claimed)
            score.found += sum(any(crosswoz_matches(f, s, v, c) for c in contents) for _d, s, v, f in claimed)
    return scores


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _row_figures(scores: dict[str, Score], messages: int) -> dict[str, Any]:
    return {
        tier: {
            "items": s.items,
            "right": s.right,
            "precision": s.precision,
            "labels": s.labels,
            "found": s.found,
            "recall": s.recall,
            "per_1000_messages": 1000 * s.items / messages if messages else None,
        }
        for tier, s in scores.items()
    }


def print_set(name: str, messages: int, before: dict[str, Score], after: dict[str, Score], *, wrong: bool) -> None:
    print(f"\n{name}: {messages} messages, {after['both'].labels} labels")
    print(
        f"  {'tier':<10} {'precision':>17} {'recall':>17} {'per 1,000 msgs':>17}"
        + (f" {'wrong/100':>13}" if wrong else "")
    )
    for tier in (AUTO, PROPOSED, "both"):
        b, a = before[tier], after[tier]
        line = (
            f"  {tier:<10} {_pct(b.precision):>7} → {_pct(a.precision):>7} {_pct(b.recall):>7} → {_pct(a.recall):>7}"
            f" {1000 * b.items / messages:>7.1f} → {1000 * a.items / messages:>7.1f}"
        )
        if wrong:
            line += f" {100 * (b.items - b.right) / messages:>5.1f} → {100 * (a.items - a.right) / messages:>5.1f}"
        print(line)


def print_misses(
    ids: Sequence[Any], rows: Sequence[Row], found: Found, *, crosswoz: bool = False, tiered: bool = False
) -> None:
    for ident, row, got in zip(ids, rows, found, strict=True):
        contents = got[AUTO] + got[PROPOSED]
        if crosswoz:
            informs = [(d, s, v) for d, s, v in row.inform]
            wrong = [
                c for c in got[AUTO] if not any(crosswoz_matches(slot_family(d, s, v), s, v, c) for d, s, v in informs)
            ]
            wrong_p = [
                c
                for c in got[PROPOSED]
                if not any(crosswoz_matches(slot_family(d, s, v), s, v, c) for d, s, v in informs)
            ]
            missed = [f"{s}={v}" for d, s, v in informs if slot_family(d, s, v) in {"price", "features"}
                      and not any(crosswoz_matches(slot_family(d, s, v), s, v, c) for c in contents)]  # fmt: skip
        elif tiered:
            may_write = [*row.expect, *row.allow_auto]
            may_propose = [*may_write, *row.propose, *row.allow]
            wrong = [c for c in got[AUTO] if not any(matches(label, c) for label in may_write)]
            wrong_p = [c for c in got[PROPOSED] if not any(matches(label, c) for label in may_propose)]
            missed = [label for label in row.expect if not any(matches(label, c) for c in got[AUTO])]
            missed += [label for label in row.propose if not any(matches(label, c) for c in got[PROPOSED])]
        else:
            wrong = [c for c in got[AUTO] if not any(matches(label, c) for label in row.expect)]
            wrong_p = [c for c in got[PROPOSED] if not any(matches(label, c) for label in row.expect)]
            missed = [label for label in row.expect if not any(matches(label, c) for c in contents)]
        if wrong or wrong_p or missed:
            print(f"#{ident} {row.text} | wrong auto={wrong} wrong proposed={wrong_p} missed={missed}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default="5804d3c", help="the revision whose reader is the baseline")
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--misses",
        choices=["beike", "crosswoz", "review"],
        default=None,
        help="print the current reader's wrong and missed items on that set (never on the fresh sets)",
    )
    args = parser.parse_args()
    results: dict[str, Any] = {"rev": args.rev}
    print(machine_line())
    print(f"tiers: auto = written by itself; proposed = to the review queue; both = either.  {args.rev} → now")
    with tempfile.TemporaryDirectory(prefix="qiwei-tiers-") as tmp:
        tree = Path(tmp)
        ids, beike = beike_rows()
        sets: list[tuple[str, list[Row], Callable[..., dict[str, Score]], bool]] = [
            ("beike sample (real customers, seed 35)", beike, score_labelled, False),
            *[(name, fresh_rows(filename, knowledge), score_labelled, False) for name, filename, knowledge in FRESH],
            (
                "fresh trades, second set (written at the end of the build)",
                fresh_rows(FRESH_B, None),
                score_labelled,
                False,
            ),
            ("families written during the build (dev)", fresh_rows(DEV, None), score_labelled, False),
            ("CrossWOZ dev (price and facility slots)", crosswoz_rows(), score_crosswoz, True),
        ]
        fresh_all: list[tuple[dict[str, Score], dict[str, Score]]] = []
        for name, rows, scorer, is_crosswoz in sets:
            before = scorer(rows, read_revision(args.rev, rows, tree))
            current = read_current(rows)
            after = scorer(rows, current)
            print_set(name, len(rows), before, after, wrong=is_crosswoz)
            results[name] = {"messages": len(rows), "before": _row_figures(before, len(rows)),
                             "after": _row_figures(after, len(rows))}  # fmt: skip
            if "(fresh)" in name:
                fresh_all.append((before, after))
            if args.misses == "beike" and name.startswith("beike"):
                print_misses(ids, rows, current)
            if args.misses == "crosswoz" and is_crosswoz:
                print_misses(range(len(rows)), rows, current, crosswoz=True)
        for name, filename in TIERED:
            rows = fresh_rows(filename, None)
            before_found, current = read_revision(args.rev, rows, tree), read_current(rows)
            before, after = score_tiered(rows, before_found), score_tiered(rows, current)
            print_set(name, len(rows), before, after, wrong=False)
            wrong_before, wrong_after = wrongly_written(rows, before_found), wrongly_written(rows, current)
            print(f"  messages with an item written by itself not allowed there: {wrong_before} → {wrong_after}")
            results[name] = {"messages": len(rows), "before": _row_figures(before, len(rows)),
                             "after": _row_figures(after, len(rows)),
                             "wrongly_written": {"before": wrong_before, "after": wrong_after}}  # fmt: skip
            if args.misses == "review" and filename.startswith("review"):
                print_misses([r["id"] for r in _raw(filename)], rows, current, tiered=True)
        totals = []
        for side in (0, 1):
            merged = {tier: Score() for tier in (AUTO, PROPOSED, "both")}
            for pair in fresh_all:
                for tier, s in pair[side].items():
                    m = merged[tier]
                    m.items, m.right, m.labels, m.found = (
                        m.items + s.items,
                        m.right + s.right,
                        m.labels + s.labels,
                        m.found + s.found,
                    )
            totals.append(merged)
        fresh_messages = sum(len(fresh_rows(f, k)) for _n, f, k in FRESH)
        print_set("fresh trades, all four", fresh_messages, totals[0], totals[1], wrong=False)
        results["fresh trades, all four"] = {
            "messages": fresh_messages,
            "before": _row_figures(totals[0], fresh_messages),
            "after": _row_figures(totals[1], fresh_messages),
        }
    write_json(args.json, results)


if __name__ == "__main__":
    main()
