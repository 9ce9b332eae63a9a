"""Recall quality on LoCoMo (third-party long conversations): memory.recall against the committed
ranker it replaces and a plain BM25, in the same run.

Every turn of a conversation is indexed as a message; each question is asked as the new
customer message; a hit is an evidence turn among the top k. Category 5 (adversarial, no
answer) is left out. Prints recall@k (any / all evidence turns) and MRR per category, and the
share of questions whose recall is empty: of all, and of those sharing a term (a bigram, word or
number, not a lone character) with one of their evidence turns, where the goal is none.

"ours" ranks the turns' features computed once per conversation, as recall reads them stored;
"rank" is the public `memory.recall.rank(query, texts)` on the texts (features memoised by text);
"old" is `memory/context/recall.py` at --old-ref (read with `git show`, not checked out), timed
with its tokenisation cache warm; "bm25" is rank_bm25's Okapi BM25 over the same tokens as ours.

    .venv/bin/python benchmarks/recall_locomo.py [--data ../shared/datasets/locomo-dev] [--k 6]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rank_bm25 import BM25Okapi  # noqa: E402

from benchmarks.common import datasets_dir, missing_datasets, write_json  # noqa: E402
from memory.recall import document, features, rank, rank_documents, tokens  # noqa: E402

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
RANKERS = ("ours", "rank", "old", "bm25")
# The committed ranker before stored features, amounts as values and the fallback (issues 13.3, 15.5).
DEFAULT_OLD_REF = "b40be73"


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


def load_old_ranker(ref: str) -> tuple[ModuleType, str]:
    """`memory/context/recall.py` as of `ref`, imported under a private name (read-only git)."""
    source = subprocess.run(
        ["git", "show", f"{ref}:memory/context/recall.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    commit = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False, encoding="utf-8") as handle:
        handle.write(source)
    spec = importlib.util.spec_from_file_location("_recall_old", handle.name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    Path(handle.name).unlink()
    return module, commit


def bm25_rank(model: BM25Okapi, query: str, limit: int) -> list[int]:
    query_tokens = tokens(query)
    if not query_tokens:
        return []
    scores = model.get_scores(query_tokens)
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], -i))
    return [i for i in order[:limit] if scores[i] > 0]


def terms(text_features: tuple) -> set[str]:
    """Features that make a lexical overlap: bigrams, words and numbers, not lone characters."""
    return {feature for feature, _weight, _count in text_features if feature[0] in "bwn"}


class Tally:
    def __init__(self) -> None:
        self.n = 0
        self.any = 0
        self.all = 0
        self.rr = 0.0
        self.empty = 0
        self.overlapping = 0
        self.empty_overlapping = 0

    def add(self, ranked: list[int], gold: set[int], k: int, overlap: bool) -> None:
        top = ranked[:k]
        self.n += 1
        self.any += bool(gold & set(top))
        self.all += gold <= set(top)
        self.empty += not ranked
        self.overlapping += overlap
        self.empty_overlapping += overlap and not ranked
        for position, index in enumerate(ranked, start=1):
            if index in gold:
                self.rr += 1.0 / position
                break

    def row(self) -> tuple[float, float, float]:
        n = self.n or 1
        return self.any / n, self.all / n, self.rr / n

    def empties(self) -> dict[str, float | int]:
        return {
            "empty": self.empty,
            "empty_share": self.empty / (self.n or 1),
            "overlapping": self.overlapping,
            "empty_overlapping": self.empty_overlapping,
            "empty_overlapping_share": self.empty_overlapping / (self.overlapping or 1),
        }


def evaluate(files: list[Path], k: int, depth: int, old: ModuleType) -> dict:
    """recall@k (any / all evidence turns), MRR and empty recalls per category, for each ranker."""
    tallies: dict[str, dict[str, Tally]] = {name: defaultdict(Tally) for name in RANKERS}
    seconds = dict.fromkeys(RANKERS, 0.0)
    turns_total = 0
    for path in files:
        turn_ids, texts, qa = load_conversation(path)
        turns_total += len(texts)
        position = {turn_id: i for i, turn_id in enumerate(turn_ids)}
        turn_features = [features(text) for text in texts]  # what ingest stores, once per message
        stored = [document(text_features) for text_features in turn_features]
        turn_terms = [terms(text_features) for text_features in turn_features]
        model = BM25Okapi([tokens(text) or ["∅"] for text in texts])
        old.rank("warm-up", texts, 1)  # fills the old ranker's tokenisation cache, as in a long-lived process
        rank("warm-up", texts, 1)  # fills the public rank()'s feature memo, the same way
        rankers: dict[str, Callable[[str], list[int]]] = {
            "ours": lambda question, stored=stored: rank_documents(features(question), stored, depth),
            "rank": lambda question, texts=texts: rank(question, texts, depth),
            "old": lambda question, texts=texts: old.rank(question, texts, depth),
            "bm25": lambda question, model=model: bm25_rank(model, question, depth),
        }
        for item in qa:
            category = item.get("category")
            if category not in CATEGORIES:
                continue
            gold = {position[e] for e in evidence_of(item, set(position))}
            if not gold:
                continue
            question_terms = terms(features(item["question"]))
            overlap = any(question_terms & turn_terms[index] for index in gold)
            for name, ranker in rankers.items():
                started = time.perf_counter()
                ranked = ranker(item["question"])
                seconds[name] += time.perf_counter() - started
                for key in (CATEGORIES[category], "overall"):
                    tallies[name][key].add(ranked, gold, k, overlap)
    overall = tallies["ours"]["overall"]
    n = overall.n or 1
    rows = [
        {"category": key, "n": tallies["ours"][key].n, **{name: tallies[name][key].row() for name in RANKERS}}
        for key in [*CATEGORIES.values(), "overall"]
        if key in tallies["ours"]
    ]
    return {
        "conversations": len(files),
        "turns": turns_total,
        "k": k,
        "depth": depth,
        "rows": rows,
        "empty": {name: tallies[name]["overall"].empties() for name in RANKERS},
        **{f"{name}_ms_per_question": seconds[name] / n * 1000 for name in RANKERS},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="the locomo-dev folder (default: in the data-set folder, common.py)")
    parser.add_argument("--k", type=int, default=6)
    parser.add_argument("--depth", type=int, default=50, help="ranking depth used for MRR")
    parser.add_argument("--old-ref", default=DEFAULT_OLD_REF, help="git revision of the ranker to compare with")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    if args.data is None:
        if message := missing_datasets(["locomo-dev"]):
            print(message, file=sys.stderr)
            return 2
        args.data = datasets_dir() / "locomo-dev"
    files = sorted(args.data.glob("*.json"))
    if not files:
        print(f"没有找到数据文件 (no *.json under {args.data}); use --data or set QIWEI_DATASETS_DIR.", file=sys.stderr)
        return 2
    old, old_commit = load_old_ranker(args.old_ref)

    result = evaluate(files, args.k, args.depth, old)
    k = args.k
    print(
        f"LoCoMo recall: {result['conversations']} conversations, {result['turns']} turns,"
        f" k={k}, MRR depth {args.depth}; old = {old_commit}"
    )
    columns = f"{'any':>6} {'all':>6} {'MRR':>6}"
    header = f"{'category':<12} {'n':>5} | " + " | ".join(f"{name:<4}@{k} {columns}" for name in RANKERS)
    print(header)
    print("-" * len(header))
    pad = " " * len(f"ours@{k} ")
    for row in result["rows"]:
        cells = " | ".join(f"{pad}{a:>6.3f} {b:>6.3f} {c:>6.3f}" for a, b, c in (row[name] for name in RANKERS))
        print(f"{row['category']:<12} {row['n']:>5} | {cells}")
    print("empty recalls (all questions; questions sharing a term with their evidence):")
    for name in RANKERS:
        empty = result["empty"][name]
        print(
            f"  {name:<5} {empty['empty']:>4} of {overall_n(result)} ({empty['empty_share']:.1%});"
            f" {empty['empty_overlapping']:>4} of {empty['overlapping']} ({empty['empty_overlapping_share']:.1%})"
        )
    print(
        "mean time per question: " + ", ".join(f"{name} {result[f'{name}_ms_per_question']:.2f} ms" for name in RANKERS)
    )
    result["data"] = str(args.data)
    result["old_ref"] = old_commit
    write_json(args.json, result)
    return 0


def overall_n(result: dict) -> int:
    return next(row["n"] for row in result["rows"] if row["category"] == "overall")


if __name__ == "__main__":
    raise SystemExit(main())
