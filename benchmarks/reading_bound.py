"""Reading is bounded (issue 36, item 9): a draft over crafted customer messages beside one over
ordinary messages, in one run, and what reading one message costs.

Issue 36 measured at 5804d3c: a draft whose model proposes a value the customer never said re-read
up to 200 customer messages inside the request; with 8 crafted 8,000-character messages one
`POST drafts/` took 129 s (0.5 s with ordinary ones), one crafted message 2.6–2.9 s of CPU.

1. **Per message** (plain Python): CPU of the gate (`scan`) and of extraction (`extract`) for each
   crafted shape and for ordinary customer text, at 8,000 characters with the bound lifted (what an
   unbounded reader pays), at the bound (`READ_LIMIT_CHARS`, the most the reader now reads of one
   message), and through the one evidence check with the bound at 8,000 (refused unread).
   `--rev 5804d3c` adds that revision's reader at 8,000 characters (run from `git archive` of its
   `qiwei_site/reading` in a process of its own).
2. **Per draft** (one SQLite account, one process): `sessions_epoch.pipeline.draft_generate` with a
   scripted model that proposes a budget the customer never said, over 8 crafted 8,000-character
   messages beside 8 ordinary ones, rounds alternated; median wall time of each and the ratio
   (target ≤ 2×). Three cases: the messages captured as they came (a worker kept their readings: the
   normal path), not captured yet (the draft reads what its budget allows), and 8 crafted messages
   at the bound not captured yet (the most a request can be made to read). `--unbounded-round`
   adds one draft over the crafted messages with the bound and the kept readings switched off (what
   the request paid before this work).

    .venv/bin/python benchmarks/reading_bound.py [--rounds 5] [--rev 5804d3c] [--unbounded-round] [--json OUT]

Times are wall and CPU on a shared machine: read them as ratios within one run.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import bench_environment, machine_line, setup_django, write_json  # noqa: E402

ACCOUNT = "bench_reading"
SENT_AT = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=8)))
LONG = 8000  # the ingest API's largest message (`memory.capture.ingest.MAX_TEXT_CHARS`)


def filled(unit: str, chars: int) -> str:
    return (unit * (chars // len(unit) + 1))[:chars]


# Crafted shapes: what made reading slow before (long runs of digits and numerals, a cue word
# repeated without punctuation, thousands of short clauses, nested quotes, one line without
# punctuation, dates, many lines).
CRAFTED_UNITS: dict[str, str] = {
    "digits": "1",
    "numerals": "三千五百四十二",
    "cue words": "我想要不考虑",
    "clauses": "预算五千，",
    "nested quotes": "他说“我说「你说",
    "one long line": "我想要一个朝南的两居室预算五千左右在浦东附近找房子不考虑顶楼",
    "dates": "下个月15号",
    "many lines": "我要\n",
}
ORDINARY_UNIT = "您好，我想在浦东找一套两居室，预算五千左右，最好朝南，不考虑顶楼。下个月15号之前要入住。"
# Ordinary customer messages, as customers write them.
ORDINARY_MESSAGES = [
    "你好，我想在张江附近租房",
    "两居室就行，最好朝南",
    "不考虑顶楼，夏天太热",
    "我们一家三口，孩子明年上小学",
    "离地铁近一点，上班方便",
    "周六上午可以看房吗？",
    "电梯房优先，老小区就算了",
    "精装修的，拎包入住最好",
]
UNSAID_BUDGET = {"budget": "12000"}


def crafted(chars: int) -> dict[str, str]:
    return {name: filled(unit, chars) for name, unit in CRAFTED_UNITS.items()}


# --- 1. one message ---------------------------------------------------------------------------------


def cpu(fn: Callable[[], Any]) -> float:
    started = time.process_time()
    fn()
    return time.process_time() - started


@contextlib.contextmanager
def bound_lifted() -> Iterator[None]:
    """The reader with its bound lifted (the admission fix stays: this is today's reader, unbounded)."""
    import qiwei_site.reading.extract as extract_module

    original = extract_module.unreadable
    extract_module.unreadable = lambda text: None  # type: ignore[assignment]
    try:
        yield
    finally:
        extract_module.unreadable = original  # type: ignore[assignment]


def per_message() -> dict[str, dict[str, float]]:
    from qiwei_site.reading.extract import READ_LIMIT_CHARS, ExtractContext, extract, unreadable
    from qiwei_site.reading.safety import scan

    context = ExtractContext(sent_at=SENT_AT, previous_outbound="您的预算大概多少？")
    extract(ORDINARY_UNIT, context)  # load the gazetteer and the pattern tables first
    scan(ORDINARY_UNIT)
    shapes = {**crafted(LONG), "ordinary text": filled(ORDINARY_UNIT, LONG)}
    at_bound = {**crafted(READ_LIMIT_CHARS), "ordinary text": filled(ORDINARY_UNIT, READ_LIMIT_CHARS)}
    rows: dict[str, dict[str, float]] = {}
    for name, text in shapes.items():
        with bound_lifted():
            row = {"scan_8000": cpu(lambda t=text: scan(t)), "extract_8000": cpu(lambda t=text: extract(t, context))}
        short = at_bound[name]
        row["scan_bound"] = cpu(lambda t=short: scan(t))
        row["extract_bound"] = cpu(lambda t=short: extract(t, context))
        # With the bound, the evidence check refuses an 8,000-character message before any reading.
        row["bounded_8000"] = cpu(lambda t=text: unreadable(t) or extract(t, context))
        rows[name] = row
    return rows


_REV_WORKER = r"""
import json, sys, time
from datetime import datetime
from qiwei_site.reading.extract import ExtractContext, extract
from qiwei_site.reading.safety import scan
payload = json.load(sys.stdin)
context = ExtractContext(sent_at=datetime.fromisoformat(payload["sent_at"]), previous_outbound="您的预算大概多少？")
extract(payload["warm"], context); scan(payload["warm"])
out = {}
for name, text in payload["shapes"].items():
    a = time.process_time(); scan(text); b = time.process_time(); extract(text, context); c = time.process_time()
    out[name] = {"scan": b - a, "extract": c - b}
print(json.dumps(out))
"""


def per_message_at(rev: str) -> dict[str, dict[str, float]]:
    """The reader at `rev` over the same 8,000-character shapes, in a process of its own."""
    with tempfile.TemporaryDirectory(prefix="qiwei-reading-rev-") as tmp:
        tree = Path(tmp)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "qiwei_site/reading"], check=True, capture_output=True
        ).stdout
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")
        (tree / "qiwei_site" / "__init__.py").write_text("")
        payload = {
            "sent_at": SENT_AT.isoformat(),
            "warm": ORDINARY_UNIT,
            "shapes": {**crafted(LONG), "ordinary text": filled(ORDINARY_UNIT, LONG)},
        }
        done = subprocess.run(
            [sys.executable, "-c", _REV_WORKER],
            input=json.dumps(payload, ensure_ascii=False),
            capture_output=True,
            text=True,
            check=True,
            cwd=tree,
            env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        )
        return dict(json.loads(done.stdout))


# --- 2. one draft -----------------------------------------------------------------------------------


class ScriptedClient:
    """A model client that proposes a budget the customer never said (like the pipeline's tests)."""

    name = "scripted"

    def generate(self, *, prompt: str, session: Any, hints: Any = None) -> Any:
        from sessions_epoch.clients import ModelResult

        output = {
            "reply": "您好，张江地铁站附近有两套两居室，周六可以看房。",
            "confidence": 0.9,
            "requiresHuman": False,
            "profileUpdates": dict(UNSAID_BUDGET),
            "reasons": ["客户户型明确"],
        }
        return ModelResult(client=self.name, output=output, raw_text=json.dumps(output), session_id=session.session_id)


def _messages(texts: list[str]) -> list[dict[str, str]]:
    return [
        {
            "external_id": f"bench_{index:03d}",
            "direction": "inbound",
            "text": text,
            "sender": "王先生",
            "sent_at": (SENT_AT + dt.timedelta(minutes=index)).isoformat(),
        }
        for index, text in enumerate(texts)
    ]


def _customer(conversation_id: str, texts: list[str], *, captured: bool) -> Any:
    """A customer with these inbound messages; their capture jobs run (as a worker runs them) or not."""
    from conversations.models import Customer
    from memory.capture.ingest import messages_ingest
    from memory.capture.jobs import capture_job_run
    from memory.models import CaptureJob

    messages_ingest(conversation_id=conversation_id, messages=_messages(texts), actor="bench")
    customer = Customer.objects.get(conversation_id=conversation_id)
    if captured:
        for job_id in CaptureJob.objects.filter(customer=customer).values_list("pk", flat=True):
            capture_job_run(job_id=job_id)
    return customer


def _draft(customer: Any) -> tuple[float, float, dict[str, Any]]:
    from sessions_epoch.pipeline import draft_generate

    wall, cpu_started = time.perf_counter(), time.process_time()
    draft = draft_generate(customer=customer, actor="pipeline", client=ScriptedClient(), regenerate=True)  # type: ignore[arg-type]
    seconds, cpu_seconds = time.perf_counter() - wall, time.process_time() - cpu_started
    assert draft.profile_updates == {}, draft.profile_updates  # the unsaid budget is never kept
    return seconds, cpu_seconds, {"dropped": [d["reason"] for d in draft.dropped_updates]}


def _rounds(pair: tuple[Any, Any], rounds: int) -> dict[str, Any]:
    crafted_customer, ordinary_customer = pair
    times: dict[str, list[float]] = {"crafted": [], "ordinary": []}
    cpus: dict[str, list[float]] = {"crafted": [], "ordinary": []}
    reasons: dict[str, Any] = {}
    for round_index in range(rounds):
        order = [("crafted", crafted_customer), ("ordinary", ordinary_customer)]
        for name, customer in order if round_index % 2 == 0 else reversed(order):
            seconds, cpu_seconds, info = _draft(customer)
            times[name].append(seconds)
            cpus[name].append(cpu_seconds)
            reasons[name] = info["dropped"]
    crafted_s, ordinary_s = statistics.median(times["crafted"]), statistics.median(times["ordinary"])
    return {
        "crafted_s": crafted_s,
        "ordinary_s": ordinary_s,
        "crafted_cpu_s": statistics.median(cpus["crafted"]),
        "ordinary_cpu_s": statistics.median(cpus["ordinary"]),
        "ratio": crafted_s / ordinary_s,
        "dropped_reasons": reasons,
        "rounds": rounds,
    }


@contextlib.contextmanager
def unbounded_request() -> Iterator[None]:
    """The draft as it read before this work: no bound, no kept readings, no request budget."""
    import memory.capture.evidence as evidence
    import memory.capture.grounding as grounding
    import qiwei_site.reading.extract as extract_module

    saved = (evidence.unreadable, extract_module.unreadable, evidence._kept, grounding.READ_IN_REQUEST_CHARS)
    evidence.unreadable = extract_module.unreadable = lambda text: None  # type: ignore[assignment]
    evidence._kept = lambda message: None  # type: ignore[assignment]
    grounding.READ_IN_REQUEST_CHARS = 10**9
    try:
        yield
    finally:
        evidence.unreadable, extract_module.unreadable, evidence._kept, grounding.READ_IN_REQUEST_CHARS = saved  # type: ignore[assignment]


def per_draft(args: argparse.Namespace) -> dict[str, Any]:
    env = bench_environment(postgres=False, tag="reading-bound")
    setup_django(env)
    from knowledge.services import knowledge_index
    from memory.capture import jobs
    from qiwei_site.platform.services import account_create
    from qiwei_site.platform.tenancy import use_account
    from qiwei_site.reading.extract import READ_LIMIT_CHARS

    jobs._send = lambda account_id, job_ids: None  # type: ignore[assignment]  # jobs run below, when asked
    account_create(account_id=ACCOUNT, name="读取上限压测")
    results: dict[str, Any] = {}
    with use_account(ACCOUNT):
        knowledge_index()
        long_crafted = list(crafted(LONG).values())
        bound_crafted = list(crafted(READ_LIMIT_CHARS).values())
        cases = {
            "captured": (
                _customer("wm_crafted_captured", long_crafted, captured=True),
                _customer("wm_ordinary_captured", ORDINARY_MESSAGES, captured=True),
            ),
            "not_captured": (
                _customer("wm_crafted_fresh", long_crafted, captured=False),
                _customer("wm_ordinary_fresh", ORDINARY_MESSAGES, captured=False),
            ),
        }
        # Not captured yet, crafted at the bound: the request reads what its budget allows each time
        # (the readings it keeps are dropped between rounds, so every round pays it again).
        at_bound = _customer("wm_crafted_at_bound", bound_crafted, captured=False)
        for name, pair in cases.items():
            _draft(pair[0]), _draft(pair[1])  # warm: the first draft of a customer opens its epoch
            results[name] = _rounds_fresh(pair, args.rounds) if name == "not_captured" else _rounds(pair, args.rounds)
        _draft(at_bound)
        results["at_bound_not_captured"] = _rounds_fresh((at_bound, cases["not_captured"][1]), args.rounds)
        if args.unbounded_round:
            with unbounded_request():
                seconds, cpu_seconds, _info = _draft(cases["not_captured"][0])
            results["unbounded_crafted_s"], results["unbounded_crafted_cpu_s"] = seconds, cpu_seconds
    return results


def _forget_readings(pair: tuple[Any, Any]) -> None:
    from memory.models import MessageReading

    MessageReading.objects.filter(message__customer__in=list(pair)).delete()


def _rounds_fresh(pair: tuple[Any, Any], rounds: int) -> dict[str, Any]:
    """Like `_rounds`, each draft over messages with no kept reading (dropped before each round)."""
    collected = [_one_fresh_round(pair, index) for index in range(rounds)]
    crafted_s = statistics.median(r["crafted"][0] for r in collected)
    ordinary_s = statistics.median(r["ordinary"][0] for r in collected)
    return {
        "crafted_s": crafted_s,
        "ordinary_s": ordinary_s,
        "crafted_cpu_s": statistics.median(r["crafted"][1] for r in collected),
        "ordinary_cpu_s": statistics.median(r["ordinary"][1] for r in collected),
        "ratio": crafted_s / ordinary_s,
        "dropped_reasons": {"crafted": collected[-1]["crafted"][2], "ordinary": collected[-1]["ordinary"][2]},
        "rounds": rounds,
    }


def _one_fresh_round(pair: tuple[Any, Any], index: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    order = [("crafted", pair[0]), ("ordinary", pair[1])]
    for name, customer in order if index % 2 == 0 else reversed(order):
        _forget_readings((customer, customer))
        seconds, cpu_seconds, info = _draft(customer)
        out[name] = (seconds, cpu_seconds, info["dropped"])
    return out


# --- report -----------------------------------------------------------------------------------------


def report(messages: dict[str, Any], rev: dict[str, Any] | None, drafts: dict[str, Any], rev_name: str) -> None:
    print(f"reading_bound: {machine_line()}")
    print("\nReading one message: CPU ms (scan + extract)")
    header = f"  {'shape':<15} {'8,000 unbounded':>22} {'at the bound (2,000)':>24} {'8,000 with the bound':>22}"
    if rev is not None:
        header += f" {f'8,000 at {rev_name}':>20}"
    print(header)
    for name, row in messages.items():
        line = (
            f"  {name:<15} {row['scan_8000'] * 1000:>8.0f} + {row['extract_8000'] * 1000:>6.0f} ms    "
            f"{row['scan_bound'] * 1000:>8.0f} + {row['extract_bound'] * 1000:>6.0f} ms    "
            f"{row['bounded_8000'] * 1000:>14.2f} ms"
        )
        if rev is not None and name in rev:
            line += f" {rev[name]['scan'] * 1000:>9.0f} + {rev[name]['extract'] * 1000:>6.0f} ms"
        print(line)
    worst = max(r["scan_bound"] + r["extract_bound"] for n, r in messages.items() if n != "ordinary text")
    ordinary = messages["ordinary text"]["scan_bound"] + messages["ordinary text"]["extract_bound"]
    print(
        f"  at the bound: the costliest crafted shape {worst * 1000:.0f} ms, ordinary text {ordinary * 1000:.0f} ms "
        f"({worst / ordinary:.1f}×); past it nothing is read"
    )
    print("\nOne draft with a budget the customer never said: median wall (CPU) per draft")
    titles = {
        "captured": "captured as they came (kept readings)",
        "not_captured": "not captured yet (read in the request)",
        "at_bound_not_captured": "crafted at the bound, not captured yet",
    }
    for key, title in titles.items():
        row = drafts[key]
        note = "no target: one message at the bound read" if key == "at_bound_not_captured" else "target ≤ 2×"
        print(
            f"  {title:<42} 8 crafted {row['crafted_s'] * 1000:7.0f} ms ({row['crafted_cpu_s'] * 1000:5.0f}) · "
            f"8 ordinary {row['ordinary_s'] * 1000:6.0f} ms ({row['ordinary_cpu_s'] * 1000:5.0f}) · "
            f"ratio {row['ratio']:.2f}× ({note}, {row['rounds']} rounds)"
        )
    if "unbounded_crafted_s" in drafts:
        print(
            f"  unbounded (no bound, no kept readings, one round): 8 crafted {drafts['unbounded_crafted_s']:.1f} s "
            f"({drafts['unbounded_crafted_cpu_s']:.1f} s CPU); issue 36 measured 129 s at 5804d3c"
        )
    print("\nWhy the unsaid budget was dropped (crafted, last round):")
    for key in titles:
        print(f"  {key}: {sorted(set(drafts[key]['dropped_reasons']['crafted']))}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rev", default=None, help="also time this revision's reader per message (e.g. 5804d3c)")
    parser.add_argument("--unbounded-round", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    messages = per_message()
    rev = per_message_at(args.rev) if args.rev else None
    drafts = per_draft(args)
    report(messages, rev, drafts, args.rev or "")
    write_json(args.json, {"per_message": messages, "per_message_rev": rev, "per_draft": drafts})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
