"""Recall quality on LoCoMo (third-party long conversations): memory.recall.rank vs a BM25 baseline.

Every turn of a conversation is indexed as a message; each question is asked as the new
customer message; a hit is an evidence turn among the top k. Category 5 (adversarial, no
answer) is left out. Prints recall@k (any / all evidence turns) and MRR per category.

    .venv/bin/python benchmarks/recall_locomo.py [--data ../shared/datasets/locomo-dev] [--k 6]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rank_bm25 import BM25Okapi  # noqa: E402

from benchmarks.common import write_json  # noqa: E402
from memory.recall import rank, tokens  # noqa: E402

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def load_conversation(path: Path) -> tuple[list[str], list[str], list[dict]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    conversation = data.get("conversation", data)
    turn_ids: list[str] = []
    texts: list[str] = []
    sessions = sorted(
        (key for key, value in conversation.items() if re.fullmatch(r"session_\d+", key) and isinstance(value, list)),
        key=lambda key: int(key.split("_")[1]),
    )
    for key in sessions:
        for turn in conversation[key]:
            turn_ids.append(turn["dia_id"])
            texts.append(turn.get("text", ""))
    return turn_ids, texts, data["qa"]


def evidence_of(item: dict, known: set[str]) -> list[str]:
    ids: list[str] = []
    for raw in item.get("evidence", []):
        for part in re.split(r"[;\s]+", str(raw)):
            if part and part in known and part not in ids:
                ids.append(part)
    return ids


def bm25_rank(model: BM25Okapi, query: str, limit: int) -> list[int]:
    query_tokens = tokens(query)
    if not query_tokens:
        return []
    scores = model.get_scores(query_tokens)
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], -i))
    return [i for i in order[:limit] if scores[i] > 0]


class Tally:
    def __init__(self) -> None:
        self.n = 0
        self.any = 0
        self.all = 0
        self.rr = 0.0

    def add(self, ranked: list[int], gold: set[int], k: int) -> None:
        top = ranked[:k]
        self.n += 1
        self.any += bool(gold & set(top))
        self.all += gold <= set(top)
        for position, index in enumerate(ranked, start=1):
            if index in gold:
                self.rr += 1.0 / position
                break

    def row(self) -> tuple[float, float, float]:
        n = self.n or 1
        return self.any / n, self.all / n, self.rr / n


def evaluate(files: list[Path], k: int, depth: int) -> dict:
    """recall@k (any / all evidence turns) and MRR per category, ours and BM25, with timings."""
    ours: dict[str, Tally] = defaultdict(Tally)
    baseline: dict[str, Tally] = defaultdict(Tally)
    seconds = {"ours": 0.0, "bm25": 0.0}
    turns_total = 0
    for path in files:
        turn_ids, texts, qa = load_conversation(path)
        turns_total += len(texts)
        position = {turn_id: i for i, turn_id in enumerate(turn_ids)}
        model = BM25Okapi([tokens(text) or ["∅"] for text in texts])
        for item in qa:
            category = item.get("category")
            if category not in CATEGORIES:
                continue
            gold = {position[e] for e in evidence_of(item, set(position))}
            if not gold:
                continue
            started = time.perf_counter()
            ranked = rank(item["question"], texts, depth)
            seconds["ours"] += time.perf_counter() - started
            started = time.perf_counter()
            ranked_bm25 = bm25_rank(model, item["question"], depth)
            seconds["bm25"] += time.perf_counter() - started
            for key in (CATEGORIES[category], "overall"):
                ours[key].add(ranked, gold, k)
                baseline[key].add(ranked_bm25, gold, k)
    n = ours["overall"].n or 1
    rows = [
        {"category": key, "n": ours[key].n, "ours": ours[key].row(), "bm25": baseline[key].row()}
        for key in [*CATEGORIES.values(), "overall"]
        if key in ours
    ]
    return {
        "conversations": len(files),
        "turns": turns_total,
        "k": k,
        "depth": depth,
        "rows": rows,
        "ours_ms_per_question": seconds["ours"] / n * 1000,
        "bm25_ms_per_question": seconds["bm25"] / n * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "datasets" / "locomo-dev")
    parser.add_argument("--k", type=int, default=6)
    parser.add_argument("--depth", type=int, default=50, help="ranking depth used for MRR")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    files = sorted(args.data.glob("*.json"))
    if not files:
        print(f"没有找到数据文件 (no *.json under {args.data}); use --data.", file=sys.stderr)
        return 2

    result = evaluate(files, args.k, args.depth)
    k = args.k
    print(
        f"LoCoMo recall: {result['conversations']} conversations, {result['turns']} turns,"
        f" k={k}, MRR depth {args.depth}"
    )
    columns = f"{'any':>6} {'all':>6} {'MRR':>6}"
    header = f"{'category':<12} {'n':>5} | ours@{k} {columns} | bm25@{k} {columns}"
    print(header)
    print("-" * len(header))
    pad = " " * len(f"ours@{k} ")
    for row in result["rows"]:
        a, b = row["ours"], row["bm25"]
        print(
            f"{row['category']:<12} {row['n']:>5} | {pad}{a[0]:>6.3f} {a[1]:>6.3f} {a[2]:>6.3f}"
            f" | {pad}{b[0]:>6.3f} {b[1]:>6.3f} {b[2]:>6.3f}"
        )
    print(
        f"mean time per question: ours {result['ours_ms_per_question']:.1f} ms,"
        f" bm25 {result['bm25_ms_per_question']:.1f} ms"
    )
    result["data"] = str(args.data)
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
