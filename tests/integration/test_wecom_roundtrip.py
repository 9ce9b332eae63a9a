"""WeCom kf end to end (issue 37), through real HTTP: the stand-in (`wecom.standin`) speaks WeCom's
kf API and posts its signed, encrypted callbacks to the live server; a real Celery worker on the
embedded broker (run.sh's default, in the test's own data dir, so parallel runs never share a
queue) pulls `kf/sync_msg` and captures; replies leave through the drafts API and `kf/send_msg`.

    QIWEI_REQUIRE_INTEGRATION=1 .venv/bin/python -m pytest -p no:xdist -q -m integration \
        tests/integration/test_wecom_roundtrip.py

Faults are put into the worker itself (WORKER_BOOT): a storage error in the pull's first ingest, or
a pull that stores its page and is SIGKILLed before it saves WeCom's cursor.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
from django.core.cache import caches
from django.db import connections
from django.db.models import F
from django.utils import timezone
from rest_framework.authtoken.models import Token

from conversations.gateway import upstream_status_cached
from conversations.models import Message, MessageDirection
from memory.capture.jobs import capture_sweep
from memory.models import CaptureJob, CaptureJobStatus, MemoryItem
from qiwei_site.celery import app
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.services import account_create, membership_grant
from qiwei_site.platform.tenancy import use_account
from tests.factories import StaffUserFactory
from tests.integration.conftest import ROOT, WorkerProcess, celery_sending_to, wait_until
from tests.integration.test_embedded_broker import broker_options
from tests.wecom.conftest import AES_KEY, CALLBACK_TOKEN, CORP_ID, OPEN_KFID, SECRET
from wecom.gateway import send_msgid
from wecom.models import WeComCallback, WeComCursor
from wecom.services import wecom_connect
from wecom.standin import WeComStandin

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ACCOUNT = "wecomrt"
FIRM = "我预算六千，只看两居室"
SOON = 15.0  # "within a few seconds", with room for a slow machine
# What the worker's log says of a WeCom pull it took, and of one that failed.
PULL_RECEIVED = re.compile(r"Task wecom\.tasks\.wecom_sync_task\[[0-9a-f-]+\] received")
PULL_FAILED = re.compile(r"Task wecom\.tasks\.wecom_sync_task\[[0-9a-f-]+\] (retry|raised unexpected)")

# The worker, as run.sh starts it (`celery -A qiwei_site worker`), with an optional fault in the
# WeCom pull: `fail` makes the first ingest of the pull raise a storage error, `hang` lets the first
# ingest commit and then stops before the cursor is saved (the test SIGKILLs the worker there). The
# fault fires once across the worker's processes (an O_EXCL file).
WORKER_BOOT = r"""
import os, sys, time
import django

django.setup()
fault = os.environ.get("QIWEI_IT_WECOM_FAULT", "")
if fault:
    import wecom.sync as sync

    real_ingest = sync.messages_ingest
    once = os.environ["QIWEI_IT_WECOM_FAULT_FILE"]

    def faulty_ingest(**kwargs):
        try:
            os.close(os.open(once, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return real_ingest(**kwargs)
        if fault == "fail":
            from django.db import OperationalError

            raise OperationalError("database is locked")
        result = real_ingest(**kwargs)
        open(once + ".stored", "w").close()
        time.sleep(3600)  # killed here: stored, the cursor not moved
        return result

    sync.messages_ingest = faulty_ingest

from celery.__main__ import main

sys.argv = ["celery", "-A", "qiwei_site", "worker", "--loglevel=INFO", "--without-gossip", "--without-mingle",
            "--pool=prefork", *sys.argv[1:]]
main()
"""


class WeComWorker(WorkerProcess):
    """conftest's worker, started through WORKER_BOOT (same command line, plus the optional fault)."""

    def start(self, concurrency: int = 2) -> None:
        with open(self.log, "ab") as handle:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", WORKER_BOOT, f"--concurrency={concurrency}"],
                cwd=ROOT,
                env=self.env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def ready(self) -> bool:
        return " ready." in self.text() or (self.proc is not None and self.proc.poll() is not None)


@dataclass
class World:
    account_id: str
    standin: WeComStandin
    api: requests.Session
    root: str  # the live server
    base: str  # the account's API root on the live server
    worker_env: dict[str, str]
    tmp: Path
    workers: list[WeComWorker] = field(default_factory=list)

    # --- the worker ----------------------------------------------------------------------------

    def start_worker(self, fault: str = "") -> WeComWorker:
        env = dict(self.worker_env)
        if fault:
            env["QIWEI_IT_WECOM_FAULT"] = fault
            env["QIWEI_IT_WECOM_FAULT_FILE"] = str(self.tmp / f"fault-{fault}")
        worker = WeComWorker(env, self.tmp / f"worker-{len(self.workers)}.log")
        worker.start()
        self.workers.append(worker)
        assert wait_until(worker.ready, timeout=60, interval=0.05), worker.text()[-3000:]
        assert worker.proc is not None and worker.proc.poll() is None, worker.text()[-3000:]
        return worker

    # --- the API -------------------------------------------------------------------------------

    def get(self, path: str, **params: Any) -> requests.Response:
        return self.api.get(f"{self.base}{path}", params=params, timeout=30)

    def post(self, path: str, payload: Any = None) -> requests.Response:
        return self.api.post(f"{self.base}{path}", json=payload or {}, timeout=30)

    def status(self, *, fast: bool) -> dict[str, Any]:
        """`/api/status` for this account's own upstream (its WeCom connection)."""
        params = {"account": self.account_id, **({"fast": "true"} if fast else {})}
        response = self.api.get(f"{self.root}/api/status", params=params, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def messages(self, conversation_id: str) -> list[dict[str, Any]]:
        response = self.get(f"/conversations/{conversation_id}/messages/", limit=200)
        if response.status_code == 404:
            return []
        assert response.status_code == 200, response.text
        body = response.json()
        return body["results"] if isinstance(body, dict) else body

    def draft(self, conversation_id: str, *, regenerate: bool = False) -> dict[str, Any]:
        response = self.post(f"/conversations/{conversation_id}/drafts/", {"regenerate": regenerate})
        assert response.status_code == 201, response.text
        return response.json()

    def approve(self, draft_id: int) -> dict[str, Any]:
        response = self.post(f"/drafts/{draft_id}/approve/", {"reason": "审核通过"})
        assert response.status_code == 200, response.text
        return response.json()

    def send(self, draft_id: int) -> requests.Response:
        return self.post(f"/drafts/{draft_id}/send/", {"reason": "发送回复"})

    def reply(self, conversation_id: str, *, regenerate: bool = False) -> tuple[dict[str, Any], requests.Response]:
        """Generate, approve and send a draft: (the approved draft, the send's answer)."""
        draft = self.approve(self.draft(conversation_id, regenerate=regenerate)["id"])
        return draft, self.send(draft["id"])

    # --- the store -----------------------------------------------------------------------------

    def stored(self, conversation_id: str) -> list[Message]:
        with use_account(self.account_id):
            return list(
                Message.objects.filter(customer__conversation_id=conversation_id).order_by("sent_at", "id").all()
            )

    def wait_stored(self, conversation_id: str, count: int, timeout: float = SOON) -> list[Message]:
        ok = wait_until(lambda: len(self.stored(conversation_id)) >= count, timeout=timeout, interval=0.1)
        found = self.stored(conversation_id)
        assert ok, (count, [m.text for m in found], self.logs())
        return found

    def captured(self) -> bool:
        """Every capture job of the account has run."""
        with use_account(self.account_id):
            jobs = list(CaptureJob.objects.values_list("status", flat=True))
        return bool(jobs) and all(status == CaptureJobStatus.DONE for status in jobs)

    def settled(self) -> None:
        """The pulls are over (no lease held) and every capture job has run."""
        assert wait_until(lambda: self.cursor().leased_until is None and self.captured(), timeout=SOON), self.logs()

    def cursor(self) -> WeComCursor:
        return WeComCursor.objects.get(account_id=self.account_id, open_kfid=OPEN_KFID)

    # --- what happened ---------------------------------------------------------------------------

    def says(self, external_userid: str, text: str, **kwargs: Any) -> dict[str, Any]:
        """The customer writes on WeCom; WeCom's callback must be answered 200 "success"."""
        before = len(self.standin.callbacks)
        message = self.standin.customer_says(external_userid, text, open_kfid=OPEN_KFID, **kwargs)
        assert self.standin.callbacks[before:] == [(OPEN_KFID, 200, "")], self.standin.callbacks
        return message

    def wecom_calls(self, path: str) -> int:
        return sum(1 for called, _body in self.standin.calls if called == path)

    def pulls_received(self) -> int:
        """The WeCom pulls the workers took off the broker."""
        return sum(len(PULL_RECEIVED.findall(worker.text())) for worker in self.workers)

    def queued(self) -> list[str]:
        """Task messages waiting in the embedded broker's queue folder."""
        folder = Path(str(app.conf.broker_transport_options["data_folder_in"]))
        return sorted(path.name for path in folder.iterdir() if path.name.endswith(".msg"))

    def logs(self) -> str:
        return "\n".join(worker.text()[-2500:] for worker in self.workers)


@pytest.fixture
def world(live_server, settings, tmp_path, non_eager) -> Iterator[World]:
    """`wecomrt` connected to a running stand-in whose callbacks reach the live server; this process
    (and the live server's threads) send tasks to the embedded broker in the test's data dir, where
    the workers `world.start_worker()` starts take them."""
    data_dir = Path(settings.QIWEI_DATA_DIR)
    with contextlib.ExitStack() as cleanup:
        caches["shared"].clear()  # access tokens and statuses of an earlier test's stand-in
        cleanup.callback(caches["shared"].clear)
        standin = WeComStandin(
            corp_id=CORP_ID,
            secret=SECRET,
            token=CALLBACK_TOKEN,
            encoding_aes_key=AES_KEY,
            open_kfids=[OPEN_KFID],
            callback_url=f"{live_server.url}/wecom/{ACCOUNT}/callback/",
        ).start()
        cleanup.callback(standin.stop)
        settings.QIWEI_WECOM_API_BASE = standin.url

        account_create(account_id=ACCOUNT, name="安居客服企微")
        wecom_connect(
            account_id=ACCOUNT,
            corp_id=CORP_ID,
            secret=SECRET,
            token=CALLBACK_TOKEN,
            aes_key=AES_KEY,
            open_kfids=[OPEN_KFID],
            actor="test",
            reason="接入企业微信客服",
        )
        user = StaffUserFactory()
        membership_grant(user=user, account=WeComAccount.objects.get(pk=ACCOUNT))
        api = cleanup.enter_context(requests.Session())
        api.trust_env = False
        api.headers["Authorization"] = f"Token {Token.objects.get_or_create(user=user)[0].key}"

        previous = app.conf.broker_transport_options, app.conf.broker_transport
        cleanup.callback(lambda: setattr(app.conf, "broker_transport_options", previous[0]))
        cleanup.callback(lambda: setattr(app.conf, "broker_transport", previous[1]))
        app.conf.broker_transport_options = broker_options(data_dir)
        app.conf.broker_transport = None
        for key in ("data_folder_in", "processed_folder", "control_folder", "corrupt_folder"):
            Path(str(app.conf.broker_transport_options[key])).mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "qiwei_site.settings.local",
            "QIWEI_DATA_DIR": str(data_dir),
            "QIWEI_ACCOUNT_TEMPLATE_DIR": str(settings.QIWEI_ACCOUNT_TEMPLATE_DIR),
            "DATABASE_URL": f"sqlite:///{connections['default'].settings_dict['NAME']}",
            "QIWEI_ACCOUNT_DATABASE_URL": settings.QIWEI_ACCOUNT_DATABASE_URL,
            "QIWEI_SEALING_KEYS": ",".join(settings.QIWEI_SEALING_KEYS),
            "QIWEI_WECOM_API_BASE": standin.url,
        }
        env.pop("CELERY_BROKER_URL", None)  # the embedded default
        world = World(
            account_id=ACCOUNT,
            standin=standin,
            api=api,
            root=live_server.url,
            base=f"{live_server.url}/api/accounts/{ACCOUNT}",
            worker_env=env,
            tmp=tmp_path,
        )
        # The test is over: a warm shutdown would only cost seconds.
        cleanup.callback(lambda: [worker.kill() for worker in world.workers])
        cleanup.enter_context(celery_sending_to("filesystem://localhost/"))
        yield world


def callback_request(standin: WeComStandin) -> tuple[dict[str, str], bytes]:
    """One kf_msg_or_event callback as WeCom signs and encrypts it: (query, body), to post as is."""
    inner = (
        f"<xml><ToUserName><![CDATA[{CORP_ID}]]></ToUserName><CreateTime>{int(time.time())}</CreateTime>"
        "<MsgType><![CDATA[event]]></MsgType><Event><![CDATA[kf_msg_or_event]]></Event>"
        f"<Token><![CDATA[{standin._issue_msg_token()}]]></Token><OpenKfId><![CDATA[{OPEN_KFID}]]></OpenKfId></xml>"
    )
    timestamp, nonce = str(int(time.time())), str(time.time_ns() % 10**10)
    body, signature = standin.crypto.callback_body(inner, timestamp=timestamp, nonce=nonce)
    return {"msg_signature": signature, "timestamp": timestamp, "nonce": nonce}, body.encode("utf-8")


def move_customer_messages(account_id: str, conversation_id: str, by: dt.timedelta) -> None:
    with use_account(account_id):
        Message.objects.filter(customer__conversation_id=conversation_id, direction=MessageDirection.INBOUND).update(
            sent_at=F("sent_at") + by
        )


# --- in: a customer writes ----------------------------------------------------------------------


def test_customer_message_arrives_captured_with_nickname_and_a_reply_reaches_wecom_once(world):
    world.start_worker()
    # given 李女士 writes a firm statement to the kf account on WeCom (its callback answered)
    started = time.monotonic()
    said = world.says("wmLi0001", FIRM, nickname="李女士")

    # then within seconds her words are in the conversation, as hers, under WeCom's msgid
    assert wait_until(lambda: len(world.messages("wmLi0001")) == 1, timeout=SOON, interval=0.05), world.logs()
    arrived = time.monotonic() - started
    [message] = world.messages("wmLi0001")
    assert (message["external_id"], message["direction"], message["text"]) == (said["msgid"], "inbound", FIRM)
    # and her WeCom nickname becomes the customer's name (the same pull asks WeCom for it once her
    # messages are stored, so it may land a moment after them)
    assert wait_until(
        lambda: world.get("/conversations/wmLi0001/").json()["display_name"] == "李女士", timeout=SOON, interval=0.05
    ), world.logs()
    # and capture ran on it in the worker: both values are memory by themselves (no proposal)
    assert wait_until(world.captured, timeout=SOON), world.logs()
    items = world.get("/conversations/wmLi0001/memory/", limit=50).json()["results"]
    print(f"\ncallback → stored in {arrived:.2f} s; memory {[(i['content'], i['status']) for i in items]}")
    assert sorted((item["content"], item["status"]) for item in items) == [
        ("户型：两居室", "active"),
        ("预算：六千（6000元）", "active"),
    ]
    assert all(item["source_message_ids"] == [message["id"]] for item in items), items

    # when a draft is generated, approved and sent through the API
    draft, sent = world.reply("wmLi0001")

    # then WeCom got it once, for her, from the kf account, with the delivery's key as msgid
    assert sent.status_code == 200, sent.text
    delivery = sent.json()
    assert [(s["touser"], s["open_kfid"], s["text"]) for s in world.standin.sent] == [
        ("wmLi0001", OPEN_KFID, delivery["text"])
    ]
    assert delivery["text"] == (draft["final_text"] or draft["reply"]).strip()
    assert world.standin.sent[0]["msgid"] == send_msgid(
        account_id=ACCOUNT,
        idempotency_key=delivery["idempotency_key"],
        created_at=dt.datetime.fromisoformat(delivery["created_at"]),
    )
    # and sending again (a double click, a client's retry) answers the same delivery, sends nothing
    again = world.send(draft["id"])
    assert again.status_code == 200 and again.json()["id"] == delivery["id"], again.text
    assert len(world.standin.sent) == 1
    # and the reply is in the thread once, as ours
    outbound = [m for m in world.messages("wmLi0001") if m["direction"] == "outbound"]
    assert [m["external_id"] for m in outbound] == [f"delivery-{delivery['id']}"]


def test_wecom_retrying_one_callback_three_times_queues_one_pull_and_stores_once(world, live_server):
    world.start_worker()
    # given a customer's message on WeCom and its callback, delivered three times over (WeCom retries
    # a callback it had no answer to within 5 s, so a retry can meet the first still being answered)
    said = world.standin.customer_says("wmZhou01", "我想在静安区租一套一居室", open_kfid=OPEN_KFID, callback=False)
    query, body = callback_request(world.standin)
    url = f"{live_server.url}/wecom/{ACCOUNT}/callback/"

    def deliver() -> requests.Response:
        return requests.post(url, params=query, data=body, headers={"Content-Type": "text/xml"}, timeout=10)

    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda _n: deliver(), range(3)))

    # then each is answered "success" (WeCom stops retrying), and one of them is taken
    assert [(a.status_code, a.text) for a in answers] == [(200, "success")] * 3
    assert WeComCallback.objects.filter(account_id=ACCOUNT).count() == 1
    # and the message is stored once, by one pull, which asked WeCom once
    [stored] = world.wait_stored("wmZhou01", 1)
    assert stored.external_id == said["msgid"]
    assert wait_until(lambda: not world.queued() and world.cursor().leased_until is None, timeout=SOON)
    time.sleep(0.5)  # a second pull, had one been queued, would be received by now
    assert world.pulls_received() == 1, world.logs()
    assert world.wecom_calls("/cgi-bin/kf/sync_msg") == 1
    assert len(world.stored("wmZhou01")) == 1
    # and a fourth delivery later (WeCom's last retry) is still answered, and still not taken again
    late = deliver()
    assert (late.status_code, late.text) == (200, "success")
    assert WeComCallback.objects.filter(account_id=ACCOUNT).count() == 1


# --- a crash between the pull and its commit -----------------------------------------------------


def assert_each_stored_once(world: World, conversation_id: str, msgids: list[str]) -> None:
    """Every WeCom message stored once, each inbound one with one capture job, no memory twice."""
    stored = world.stored(conversation_id)
    assert sorted(m.external_id for m in stored) == sorted(msgids), [m.text for m in stored]
    with use_account(world.account_id):
        jobs = Counter(CaptureJob.objects.values_list("message_id", flat=True))
        assert jobs == Counter({m.pk: 1 for m in stored if m.direction == MessageDirection.INBOUND})
        assert wait_until(world.captured, timeout=SOON), world.logs()
        active = Counter(MemoryItem.objects.filter(status="active").values_list("customer_id", "key"))
        assert active and max(active.values()) == 1
        for item in MemoryItem.objects.all():
            assert len(item.source_message_ids) == len(set(item.source_message_ids)), item.key


def test_worker_killed_after_storing_a_page_before_its_cursor_moved_replays_it_once(world, settings):
    # given a worker that dies (SIGKILL, the whole process group) after a pull stored the customer's
    # two messages and before it saved WeCom's cursor
    crashing = world.start_worker(fault="hang")
    first = world.standin.customer_says("wmChen01", "我想租个一居室", open_kfid=OPEN_KFID, callback=False)
    second = world.says("wmChen01", "我预算四千五以内")
    assert wait_until((world.tmp / "fault-hang.stored").exists, timeout=SOON), world.logs()
    crashing.kill()  # the capture job it had taken comes back with the beat's sweep (below)
    assert len(world.stored("wmChen01")) == 2
    assert world.cursor().cursor == ""  # WeCom's cursor still stands before them

    # when a worker starts again, the dead one's lease has run out (LEASE_SECONDS, as five minutes
    # later), and the customer writes once more
    world.start_worker()
    WeComCursor.objects.filter(pk=world.cursor().pk).update(leased_until=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
    third = world.says("wmChen01", "最好离张江近一点")

    # then the pull replays the page from the old cursor: all three are stored, none twice, each
    # captured once, and the cursor now stands after them
    world.wait_stored("wmChen01", 3)
    assert wait_until(lambda: world.cursor().leased_until is None, timeout=SOON), world.logs()
    with use_account(ACCOUNT):  # the beat's capture sweep, QIWEI_CAPTURE_STUCK_SECONDS later
        capture_sweep(now=timezone.now() + dt.timedelta(seconds=settings.QIWEI_CAPTURE_STUCK_SECONDS + 1))
    assert_each_stored_once(world, "wmChen01", [first["msgid"], second["msgid"], third["msgid"]])
    assert world.cursor().cursor and world.cursor().messages_synced == 3


def test_a_pull_whose_first_ingest_fails_is_replayed_by_the_next_pull_nothing_lost_or_twice(world):
    # given a worker whose first ingest of a pull fails (a storage error), after the customer wrote
    world.start_worker(fault="fail")
    first = world.says("wmSun001", "我想在徐汇租房")
    assert wait_until(lambda: PULL_FAILED.search(world.logs()) is not None, timeout=SOON), world.logs()
    # then the failed pull let its lease go, and WeCom's cursor did not move past what is not stored
    assert wait_until(lambda: world.cursor().leased_until is None, timeout=SOON)
    assert world.cursor().cursor == "" or world.stored("wmSun001")

    # when the customer writes again (its callback queues the next pull)
    second = world.says("wmSun001", "只看两居室")

    # then both messages are stored once each, in order, each captured once
    assert [m.text for m in world.wait_stored("wmSun001", 2)] == ["我想在徐汇租房", "只看两居室"]
    assert_each_stored_once(world, "wmSun001", [first["msgid"], second["msgid"]])


def test_after_a_worker_crash_the_next_customer_message_arrives_within_seconds(world):
    # given a worker killed in the middle of a pull, and a new worker in its place
    crashing = world.start_worker(fault="hang")
    world.says("wmHe0001", "我想租个一居室")
    assert wait_until((world.tmp / "fault-hang.stored").exists, timeout=SOON), world.logs()
    crashing.kill()
    world.start_worker()

    # when the customer writes again
    world.says("wmHe0001", "最好离张江近一点")

    # then her message is in the conversation within seconds (a pull takes well under one)
    stored = wait_until(lambda: len(world.stored("wmHe0001")) == 2, timeout=8, interval=0.1)
    cursor = world.cursor()
    assert stored, (cursor.leased_until, cursor.rerun, world.logs()[-800:])


def test_a_pull_whose_first_ingest_fails_is_retried_by_its_task_without_another_callback(world):
    # given a worker whose first ingest of a pull fails (a storage error), after the customer wrote
    world.start_worker(fault="fail")
    said = world.says("wmSun002", "我想在徐汇租房")
    assert wait_until(lambda: PULL_FAILED.search(world.logs()) is not None, timeout=SOON), world.logs()

    # then the task itself retries (no second callback, no beat) and the message is stored
    outcome = PULL_FAILED.search(world.logs())
    assert outcome is not None and outcome.group(1) == "retry", world.logs()
    [stored] = world.wait_stored("wmSun002", 1)
    assert stored.external_id == said["msgid"]


# --- out: WeCom's reply rules, its token, WeCom down ----------------------------------------------

WINDOW_REASON = "已超过 48 小时"
QUOTA_REASON = "企业微信最多允许 5 条"


def test_replies_outside_48_hours_or_past_five_are_refused_409_with_the_reason_on_the_draft(world):
    world.start_worker()
    world.says("wmWang01", FIRM, nickname="王先生")
    world.wait_stored("wmWang01", 1)
    draft = world.approve(world.draft("wmWang01")["id"])
    assert draft["send_blocked_reason"] is None

    # when 49 hours have passed since her message (as stored here)
    move_customer_messages(ACCOUNT, "wmWang01", -dt.timedelta(hours=49))
    # then the draft says why it cannot go, and sending it answers 409 with that reason; WeCom is
    # not asked
    blocked = world.get(f"/drafts/{draft['id']}/").json()["send_blocked_reason"]
    assert blocked and WINDOW_REASON in blocked, blocked
    refused = world.send(draft["id"])
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "upstream_refused" and WINDOW_REASON in refused.json()["detail"]
    assert world.wecom_calls("/cgi-bin/kf/send_msg") == 0 and world.standin.sent == []

    # when our clock and WeCom's disagree: here the message is fresh, WeCom's clock is 49 hours on
    move_customer_messages(ACCOUNT, "wmWang01", dt.timedelta(hours=49))
    world.standin.clock_offset = 49 * 3600
    # then WeCom's own answer (95002, window closed) is a 409 with its Chinese reason, kept on the
    # draft's delivery; the account's upstream is not marked offline for it
    refused = world.send(draft["id"])
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "wecom_window" and "48 小时" in refused.json()["detail"]
    delivery = world.get(f"/drafts/{draft['id']}/").json()["delivery"]
    assert delivery["status"] == "failed" and "48 小时" in delivery["last_error"], delivery
    assert world.standin.sent == []
    assert world.status(fast=True)["online"] is not False

    # when the clocks agree again, five replies go out after her message
    world.standin.clock_offset = 0
    assert world.send(draft["id"]).status_code == 200  # the refused draft, retried
    for _n in range(4):
        _draft, sent = world.reply("wmWang01", regenerate=True)
        assert sent.status_code == 200, sent.text
    assert len(world.standin.sent) == 5

    # then a sixth is refused before trying: the reason on the draft, 409, WeCom not asked
    sixth = world.approve(world.draft("wmWang01", regenerate=True)["id"])
    assert sixth["send_blocked_reason"] and QUOTA_REASON in sixth["send_blocked_reason"], sixth
    calls = world.wecom_calls("/cgi-bin/kf/send_msg")
    refused = world.send(sixth["id"])
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "upstream_refused" and QUOTA_REASON in refused.json()["detail"]
    assert world.wecom_calls("/cgi-bin/kf/send_msg") == calls and len(world.standin.sent) == 5

    # and once she writes again, the same draft may go
    world.says("wmWang01", "好的，那周六下午可以看房吗？")
    world.wait_stored("wmWang01", 1 + 5 + 1)
    assert world.get(f"/drafts/{sixth['id']}/").json()["send_blocked_reason"] is None
    assert world.send(sixth["id"]).status_code == 200
    assert len(world.standin.sent) == 6


def test_an_expired_access_token_is_fetched_again_by_the_next_send_which_succeeds(world):
    world.start_worker()
    world.says("wmZhao01", FIRM)
    world.wait_stored("wmZhao01", 1)
    world.settled()  # the pull's own WeCom calls (the nickname) are over
    _draft, sent = world.reply("wmZhao01")
    assert sent.status_code == 200, sent.text

    # when WeCom expires every access token it issued
    world.standin.expire_tokens()
    calls = len(world.standin.calls)

    # then the next send is refused once for its token (42001), fetches a new one, and is delivered
    _draft, sent = world.reply("wmZhao01", regenerate=True)
    assert sent.status_code == 200, sent.text
    assert [path for path, _body in world.standin.calls[calls:]] == [
        "/cgi-bin/kf/send_msg",
        "/cgi-bin/gettoken",
        "/cgi-bin/kf/send_msg",
    ]
    assert len(world.standin.sent) == 2 and sent.json()["attempts"] == 1


def test_wecom_down_sending_answers_503_the_account_shows_offline_and_ingest_still_works(world):
    world.start_worker()
    world.says("wmQian01", FIRM)
    world.wait_stored("wmQian01", 1)
    draft = world.approve(world.draft("wmQian01")["id"])

    # when WeCom cannot be reached
    world.standin.stop()

    # then sending answers 503 in Chinese, nothing is sent, the draft is kept
    down = world.send(draft["id"])
    assert down.status_code == 503, down.text
    assert "企微上游不可用" in down.json()["detail"] and down.json()["draft_id"] == draft["id"]
    assert world.get(f"/drafts/{draft['id']}/").json()["status"] == "approved"
    # and the account's upstream status says offline, from the failed send and when probed
    assert world.status(fast=True)["online"] is False
    probed = world.status(fast=False)
    assert probed["online"] is False and probed["detail"].startswith("企业微信客服："), probed
    assert upstream_status_cached(ACCOUNT).online is False
    # and messages still come in through the ingest API, and are captured
    ingest = world.post(
        "/conversations/wmQian01/messages/",
        {"external_id": "api-ingest-1", "direction": "inbound", "text": "我下周二有空看房"},
    )
    assert ingest.status_code == 201, ingest.text
    assert [m.external_id for m in world.wait_stored("wmQian01", 2)][-1] == "api-ingest-1"
    assert wait_until(world.captured, timeout=SOON), world.logs()

    # when WeCom is back, the account is online again and the kept draft is sent, once
    world.standin.start()
    assert world.status(fast=False)["online"] is True
    again = world.send(draft["id"])
    assert again.status_code == 200, again.text
    assert len(world.standin.sent) == 1 and again.json()["attempts"] == 2
