"""WeCom kf in (issue 37): messages per second from a customer's WeCom message to the message stored
in the conversation — the stand-in's `customer_says`, its signed, encrypted `kf_msg_or_event`
callback to `/wecom/<account>/callback/`, the queued pull (`kf/sync_msg` in a real `celery worker`),
the message stored — and the callback's answer time (p50, p95), beside the same number of messages
POSTed to the ingest API (`…/conversations/{cid}/messages/`, one message per request, stored before
it answers) in the same run: the same gunicorn, the same account, the same texts and customers'
count, rounds interleaved (ingest first in one round, WeCom first in the next).

    python benchmarks/wecom_callback.py [--messages N]

(from the repository root with the project's venv: `.venv/bin/python benchmarks/wecom_callback.py
[--messages 100] [--rounds 3] [--customers 10] [--workers 2] [--json out.json]`)

Set-up: a throw-away QIWEI_DATA_DIR (SQLite, the embedded filesystem broker polled every 0.1 s, as
run.sh has it), gunicorn on a free loopback port (`--workers` × 4 threads), one `celery worker`
(prefork, 2 processes), the WeCom stand-in (`wecom.standin`) in this process. Both paths send one
message at a time from one client; a round's clock runs from its first request until every one of
its messages is in the database (polled every 20 ms). Each message also queues its capture job;
between rounds the worker drains the queue (capture included), so every round starts idle. The
WeCom path's messages are each announced by a callback (WeCom sends one per event); a pull takes
whatever WeCom holds, so one pull can store many. Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    ROOT,
    bench_environment,
    machine_line,
    percentile,
    setup_django,
    start_gunicorn,
    stop_process,
    write_json,
)

ACCOUNT = "wecombench"
CORP_ID = "wwbench5f3a9c1e7b2d40"
SECRET = "bench-kf-secret-Zt8qWm3Lx0Rb6Yv2Nc5Hs9Pd"
CALLBACK_TOKEN = "Bench7Tn2Wb9Xc4"
AES_KEY = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"
OPEN_KFID = "wkBench01"
TEXTS = [
    "你好，我想在浦东新区租个两居室",
    "我预算六千，只看两居室",
    "顶楼就不考虑了，夏天太热",
    "我比较喜欢南向的，最好有电梯",
    "下个月15号入住",
    "叫我小王就行",
    "周六下午可以看房吗？",
    "别推荐合租的，我要整租",
    "好的，谢谢",
    "有没有离地铁近一点的？",
]
POLL_SECONDS = 0.02
ROUND_TIMEOUT = 300.0
DRAIN_TIMEOUT = 600.0


# --- processes ---------------------------------------------------------------------------------


WORKER_COMMAND = [
    sys.executable, "-m", "celery", "-A", "qiwei_site", "worker", "--loglevel=INFO",
    "--concurrency=2", "--pool=prefork", "--without-gossip", "--without-mingle",
]  # fmt: skip


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as handle:
        proc = subprocess.Popen(
            WORKER_COMMAND,
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if " ready." in log.read_text(errors="replace"):
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    stop_worker(proc)
    raise RuntimeError(f"celery worker did not start:\n{log.read_text(errors='replace')[-3000:]}")


def stop_worker(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the worker's main process (a warm shutdown), then SIGKILL to its group (the
    process this script started and its pool) if it lingers."""
    if proc.poll() is None:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # the pool's processes, should any be left
    proc.wait(timeout=10)


# --- the account, the stand-in, a client ---------------------------------------------------------


def prepare() -> str:
    """The account, connected to the stand-in's corp; a staff member's API token for ingest."""
    from rest_framework.authtoken.models import Token

    from qiwei_site.platform.models import WeComAccount
    from qiwei_site.platform.services import account_create, membership_grant
    from wecom.services import wecom_connect

    account_create(account_id=ACCOUNT, name="企微压测账号")
    wecom_connect(
        account_id=ACCOUNT,
        corp_id=CORP_ID,
        secret=SECRET,
        token=CALLBACK_TOKEN,
        aes_key=AES_KEY,
        open_kfids=[OPEN_KFID],
        actor="bench",
        reason="压测",
    )
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(username="bench", password=None, is_staff=True)
    membership_grant(user=user, account=WeComAccount.objects.get(pk=ACCOUNT))
    return Token.objects.get_or_create(user=user)[0].key


def stored_count(conversation_ids: list[str]) -> int:
    from conversations.models import Message
    from qiwei_site.platform.tenancy import use_account

    with use_account(ACCOUNT):
        return Message.objects.filter(customer__conversation_id__in=conversation_ids).count()


def idle() -> bool:
    """Nothing left for the worker: no task file queued, every capture job done, no pull running."""
    from memory.models import CaptureJob, CaptureJobStatus
    from qiwei_site.platform.tenancy import use_account
    from wecom.models import WeComCursor

    queue = Path(os.environ["QIWEI_DATA_DIR"]) / "broker" / "queue"
    if any(path.name.endswith(".msg") or path.name.startswith(".claimed-") for path in queue.iterdir()):
        return False
    if WeComCursor.objects.filter(account_id=ACCOUNT, leased_until__isnull=False).exists():
        return False
    with use_account(ACCOUNT):
        return not CaptureJob.objects.exclude(status=CaptureJobStatus.DONE).exists()


def wait_idle() -> float:
    started = time.perf_counter()
    deadline = time.monotonic() + DRAIN_TIMEOUT
    while not idle():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the worker did not drain its queue in {DRAIN_TIMEOUT:.0f} s")
        time.sleep(0.1)
    return time.perf_counter() - started


# --- the two paths -------------------------------------------------------------------------------


def plan(round_no: int, path: str, messages: int, customers: int) -> list[tuple[str, str]]:
    """(conversation id, text) for each message of a round: customers take turns, texts cycle."""
    return [(f"wm{path}{round_no:02d}c{n % customers:03d}", TEXTS[n % len(TEXTS)]) for n in range(messages)]


def run_ingest(base: str, token: str, round_no: int, messages: list[tuple[str, str]]) -> dict[str, Any]:
    import requests

    answers: list[float] = []
    errors = 0
    headers = {"Authorization": f"Token {token}"}
    started = time.perf_counter()
    for n, (conversation_id, text) in enumerate(messages):
        sent = time.perf_counter()
        response = requests.post(
            f"{base}/api/accounts/{ACCOUNT}/conversations/{conversation_id}/messages/",
            json={"external_id": f"api-{round_no}-{n}", "direction": "inbound", "text": text},
            headers=headers,
            timeout=30,
        )
        answers.append(time.perf_counter() - sent)
        errors += response.status_code != 201
    result = _finish("ingest", messages, started, answers, errors)
    _drained(result, messages)
    return result


def run_wecom(standin: Any, round_no: int, messages: list[tuple[str, str]]) -> dict[str, Any]:
    answers: list[float] = []
    errors = 0
    pulls_before = sum(1 for path, _body in standin.calls if path == "/cgi-bin/kf/sync_msg")
    started = time.perf_counter()
    for conversation_id, text in messages:
        standin.customer_says(conversation_id, text, open_kfid=OPEN_KFID, callback=False)
        sent = time.perf_counter()
        response = standin.post_callback(OPEN_KFID)  # as WeCom posts it, one per message event
        answers.append(time.perf_counter() - sent)
        errors += response.status_code != 200 or response.text != "success"
    result = _finish("wecom", messages, started, answers, errors)
    _drained(result, messages)
    # kf/sync_msg calls of the round, those after its last message was stored included
    result["pulls"] = sum(1 for path, _body in standin.calls if path == "/cgi-bin/kf/sync_msg") - pulls_before
    return result


def _drained(result: dict[str, Any], messages: list[tuple[str, str]]) -> None:
    """Wait until the worker is idle (every pull and capture job of the round done); how long that
    took after the last message was stored, and how many messages are stored then (never more)."""
    result["drain_seconds"] = wait_idle()
    result["to_idle_seconds"] = result["seconds"] + result["drain_seconds"]
    result["stored"] = stored_count(sorted({conversation_id for conversation_id, _text in messages}))


def _finish(
    path: str, messages: list[tuple[str, str]], started: float, answers: list[float], errors: int
) -> dict[str, Any]:
    """Wait until every message of the round is stored; the round's figures."""
    sent_all = time.perf_counter()
    conversation_ids = sorted({conversation_id for conversation_id, _text in messages})
    deadline = time.monotonic() + ROUND_TIMEOUT
    stored = stored_count(conversation_ids)
    while stored < len(messages):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path}: {stored} of {len(messages)} messages stored after {ROUND_TIMEOUT:.0f} s")
        time.sleep(POLL_SECONDS)
        stored = stored_count(conversation_ids)
    finished = time.perf_counter()
    return {
        "path": path,
        "messages": len(messages),
        "stored": stored,
        "seconds": finished - started,
        "sending_seconds": sent_all - started,
        "rate": len(messages) / (finished - started),
        "answer_p50_ms": percentile(answers, 50) * 1000,
        "answer_p95_ms": percentile(answers, 95) * 1000,
        "answers": answers,
        "errors": errors,
        "pulls": 0,
    }


# --- the run -------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    env = bench_environment(postgres=False, tag="wecom")
    setup_django(env)
    token = prepare()
    from wecom.standin import WeComStandin

    standin = WeComStandin(
        corp_id=CORP_ID, secret=SECRET, token=CALLBACK_TOKEN, encoding_aes_key=AES_KEY, open_kfids=[OPEN_KFID]
    ).start()
    env["QIWEI_WECOM_API_BASE"] = standin.url
    os.environ["QIWEI_WECOM_API_BASE"] = standin.url
    data_dir = Path(env["QIWEI_DATA_DIR"])
    server = worker = None
    try:
        server, base = start_gunicorn(env, workers=args.workers, log_path=data_dir / "gunicorn.log")
        standin.callback_url = f"{base}/wecom/{ACCOUNT}/callback/"
        worker = start_worker(env, data_dir / "worker.log")
        rounds: list[dict[str, Any]] = []
        warm = plan(0, "warm", min(10, args.messages), min(2, args.customers))
        run_ingest(base, token, 0, warm)  # every gunicorn worker and the pull's code paths warmed once
        run_wecom(standin, 0, warm)
        wait_idle()
        for round_no in range(1, args.rounds + 1):
            order = ("ingest", "wecom") if round_no % 2 else ("wecom", "ingest")
            for path in order:
                messages = plan(round_no, path, args.messages, args.customers)
                if path == "ingest":
                    result = run_ingest(base, token, round_no, messages)
                else:
                    result = run_wecom(standin, round_no, messages)
                result["round"] = round_no
                rounds.append(result)
                print(
                    f"  round {round_no} {path:6s}: {result['rate']:6.1f} messages/s ({result['seconds']:.2f} s), "
                    f"answer p50 {result['answer_p50_ms']:.1f} ms p95 {result['answer_p95_ms']:.1f} ms, "
                    f"errors {result['errors']}, "
                    + (f"kf/sync_msg calls {result['pulls']}, " if path == "wecom" else "")
                    + f"the worker idle {result['drain_seconds']:.1f} s later",
                    flush=True,
                )
    finally:
        if worker is not None:
            stop_worker(worker)
        if server is not None:
            stop_process(server)
        standin.stop()
    return {
        "messages": args.messages,
        "customers": args.customers,
        "rounds": rounds,
        "workers": args.workers,
        "machine": machine_line(),
        "load": list(os.getloadavg()),
    }


def summary(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for path in ("ingest", "wecom"):
        rounds = [r for r in result["rounds"] if r["path"] == path]
        answers = [a for r in rounds for a in r["answers"]]
        out[path] = {
            "rate_median": statistics.median(r["rate"] for r in rounds),
            "rate_min": min(r["rate"] for r in rounds),
            "rate_max": max(r["rate"] for r in rounds),
            "seconds_median": statistics.median(r["seconds"] for r in rounds),
            "answer_p50_ms": percentile(answers, 50) * 1000,
            "answer_p95_ms": percentile(answers, 95) * 1000,
            "errors": sum(r["errors"] for r in rounds),
            "pulls_median": statistics.median(r["pulls"] for r in rounds),
            "to_idle_median": statistics.median(r["to_idle_seconds"] for r in rounds),
            "rate_to_idle_median": statistics.median(r["messages"] / r["to_idle_seconds"] for r in rounds),
            "stored_twice": sum(r["stored"] - r["messages"] for r in rounds),
        }
    return out


def print_table(result: dict[str, Any]) -> None:
    figures = summary(result)
    rounds = len(result["rounds"]) // 2
    print(
        f"\nWeCom callback → stored, beside the ingest API: one account on SQLite, gunicorn {result['workers']} "
        f"workers × 4 threads, one celery worker (2 processes) on the embedded filesystem broker; "
        f"{result['messages']} messages over {result['customers']} customers per round, one client, "
        f"{rounds} rounds interleaved; {result['machine']}; load average at the end "
        f"{' '.join(f'{x:.2f}' for x in result['load'])}\n"
    )
    print(
        "| path | messages/s to stored (median, min–max) | s to stored | answer p50 ms | answer p95 ms "
        "| s until the worker is idle (captured) | messages/s to idle | errors | stored twice |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    labels = {
        "ingest": "ingest API: POST …/messages/, stored before it answers",
        "wecom": "WeCom: customer_says → callback → kf/sync_msg in the worker → stored",
    }
    for path in ("ingest", "wecom"):
        f = figures[path]
        print(
            f"| {labels[path]} | {f['rate_median']:.1f} ({f['rate_min']:.1f}–{f['rate_max']:.1f}) | "
            f"{f['seconds_median']:.2f} | {f['answer_p50_ms']:.1f} | {f['answer_p95_ms']:.1f} | "
            f"{f['to_idle_median']:.1f} | {f['rate_to_idle_median']:.1f} | {f['errors']:.0f} | "
            f"{f['stored_twice']:.0f} |"
        )
    ratio = figures["wecom"]["rate_median"] / figures["ingest"]["rate_median"]
    idle_ratio = figures["wecom"]["rate_to_idle_median"] / figures["ingest"]["rate_to_idle_median"]
    print(
        f"\nWeCom path / ingest API: {ratio:.2f}× the messages/s to stored, {idle_ratio:.2f}× to the worker idle; "
        f"{result['messages']} callbacks made {figures['wecom']['pulls_median']:.0f} kf/sync_msg calls (median "
        "of the rounds): each callback queues a pull, and a pull after the one that took everything finds nothing."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--messages", type=int, default=100, help="messages per path per round (default 100)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each path once per round (default 3)")
    parser.add_argument("--customers", type=int, default=10, help="customers the messages are spread over")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (4 threads each)")
    parser.add_argument("--json", default=None, help="write the figures here")
    args = parser.parse_args()
    if args.messages < 1 or args.rounds < 1 or args.customers < 1:
        parser.error("--messages, --rounds and --customers must be at least 1")
    result = run(args)
    print_table(result)
    write_json(args.json, {**result, "summary": summary(result)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
