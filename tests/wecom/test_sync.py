"""Messages in from WeCom: `kf/sync_msg` by the stored cursor, idempotent by msgid, the cursor moved
only after the messages it covers are stored, and what is not words kept as a typed placeholder."""

from __future__ import annotations

import pytest

from conversations.models import Customer, Message, MessageDirection
from memory.models import CaptureJob
from wecom import sync as sync_module
from wecom.models import WeComCursor
from wecom.sync import wecom_sync

from .conftest import OPEN_KFID


def _sync(account):
    return wecom_sync(account_id=account.id, open_kfid=OPEN_KFID)


def test_wecom_sync_stores_customer_text_as_inbound_with_capture_and_nickname(connected, account, standin):
    # given 李女士 writes to the kf account on WeCom
    standin.customer_says("wmLi0001", "你好，我想在浦东租一套两居室，预算六千左右", nickname="李女士", callback=False)

    # when the account pulls
    result = _sync(account)

    # then her words are an inbound message of her conversation, queued for capture, and her WeCom
    # nickname and avatar are on the customer record
    assert (result.fetched, result.stored) == (1, 1)
    customer = Customer.objects.get(conversation_id="wmLi0001")
    message = Message.objects.get(customer=customer)
    assert message.direction == MessageDirection.INBOUND
    assert message.text == "你好，我想在浦东租一套两居室，预算六千左右"
    assert CaptureJob.objects.filter(message=message).exists()
    assert customer.display_name == "李女士"
    assert customer.avatar_url.endswith("/avatar/wmLi0001.png")
    assert customer.upstream_channel == OPEN_KFID


def test_wecom_sync_pages_until_has_more_is_zero_without_skipping_or_repeating(connected, account, standin):
    # given 2,500 messages waiting (three pages of at most 1,000)
    for n in range(2500):
        standin.customer_says(f"wmBulk{n % 7}", f"第{n}条：想看看地铁附近的房子", callback=False)

    # when the account pulls
    result = _sync(account)

    # then every message is stored once and the cursor stands after the last page
    assert result.pages == 3
    assert Message.objects.count() == 2500
    assert len(set(Message.objects.values_list("external_id", flat=True))) == 2500
    assert WeComCursor.objects.get(open_kfid=OPEN_KFID).messages_synced == 2500


def test_wecom_sync_replayed_from_an_old_cursor_stores_nothing_twice(connected, account, standin):
    # given messages already pulled
    standin.customer_says("wmZhang01", "我下周二有空看房", callback=False)
    _sync(account)

    # when the cursor is lost (a crash before it was saved) and the pull runs again
    WeComCursor.objects.update(cursor="")
    replay = _sync(account)

    # then the replay finds them stored already
    assert (replay.stored, replay.duplicates) == (0, 1)
    assert Message.objects.count() == 1


def test_wecom_sync_crash_before_commit_keeps_the_cursor_and_loses_nothing(connected, account, standin, monkeypatch):
    # given two messages, and storing them fails the first time (the worker dies mid-page)
    standin.customer_says("wmChen01", "我想租个一居室", callback=False)
    standin.customer_says("wmChen01", "最好离张江近一点", callback=False)
    real_ingest = sync_module.messages_ingest
    calls = {"n": 0}

    def dying_ingest(**kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("worker lost")
        return real_ingest(**kwargs)

    monkeypatch.setattr(sync_module, "messages_ingest", dying_ingest)
    with pytest.raises(RuntimeError):
        _sync(account)
    assert WeComCursor.objects.get(open_kfid=OPEN_KFID).cursor == ""
    assert WeComCursor.objects.get(open_kfid=OPEN_KFID).leased_until is None

    # when the pull runs again
    _sync(account)

    # then both messages are stored, once each
    assert list(Message.objects.order_by("sent_at", "id").values_list("text", flat=True)) == [
        "我想租个一居室",
        "最好离张江近一点",
    ]


def test_wecom_sync_keeps_other_types_as_placeholders_never_read_as_words(connected, account, standin):
    # given an image, a location, a link and an agent's reply from WeCom's own app, and an event
    standin.event("wmWu0001", "enter_session", callback=False)
    standin.customer_says("wmWu0001", msgtype="image", payload={"media_id": "MEDIA_1"}, callback=False)
    standin.customer_says(
        "wmWu0001",
        msgtype="location",
        payload={"latitude": 31.2304, "longitude": 121.4737, "name": "人民广场", "address": "上海市黄浦区"},
        callback=False,
    )
    standin.customer_says(
        "wmWu0001",
        msgtype="link",
        payload={"title": "我只要朝南的房子", "desc": "", "url": "http://127.0.0.1/listing/9", "pic_url": ""},
        callback=False,
    )
    standin.agent_says("wmWu0001", "您好，我是小张，马上为您查询", callback=False)

    # when the account pulls
    _sync(account)

    # then each is kept with what WeCom gave; none of the customer's non-text is inbound or captured
    rows = list(Message.objects.order_by("sent_at", "id").values_list("direction", "text"))
    assert rows[0] == (MessageDirection.SYSTEM, "〔企业微信事件：客户进入会话〕")
    assert rows[1] == (MessageDirection.SYSTEM, "〔客户发来图片〕")
    assert rows[2][0] == MessageDirection.SYSTEM and "人民广场" in rows[2][1] and "31.2304" in rows[2][1]
    assert rows[3][0] == MessageDirection.SYSTEM and "我只要朝南的房子" in rows[3][1]
    assert rows[4] == (MessageDirection.OUTBOUND, "您好，我是小张，马上为您查询")
    assert not Message.objects.filter(direction=MessageDirection.INBOUND).exists()
    assert CaptureJob.objects.count() == 0


def test_wecom_sync_held_by_another_worker_asks_it_to_pull_again(connected, account, standin):
    # given another worker holds the open_kfid's lease
    _sync(account)
    cursor = WeComCursor.objects.get(open_kfid=OPEN_KFID)
    from django.utils import timezone

    WeComCursor.objects.filter(pk=cursor.pk).update(leased_until=timezone.now() + timezone.timedelta(minutes=5))

    # when a callback's pull arrives meanwhile
    result = _sync(account)

    # then it does not pull itself, and leaves the holder a note to pull once more
    assert result.busy is True
    assert WeComCursor.objects.get(pk=cursor.pk).rerun is True


def test_wecom_sync_takes_over_the_lease_of_a_pull_that_died_on_this_host(connected, account, standin):
    # given a pull on this host was killed holding the lease (its process is gone)
    import socket
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()
    _sync(account)
    from django.utils import timezone

    WeComCursor.objects.update(
        leased_until=timezone.now() + timezone.timedelta(minutes=1), leased_by=f"{socket.gethostname()}:{gone.pid}"
    )
    standin.customer_says("wmHe0001", "最好离张江近一点", callback=False)

    # when the next pull comes / then it takes the lease over at once and stores the message
    result = _sync(account)
    assert result.busy is False and result.stored == 1
    assert WeComCursor.objects.get(open_kfid=OPEN_KFID).leased_until is None


def test_wecom_sync_busy_asks_its_caller_to_pull_again_when_the_lease_runs_out(connected, account):
    # given a live pull elsewhere holds the lease for another 40 s
    _sync(account)
    from django.utils import timezone

    WeComCursor.objects.update(leased_until=timezone.now() + timezone.timedelta(seconds=40), leased_by="other-host:1")

    # when two pulls arrive meanwhile / then the first is told when to come back, the second not
    first, second = _sync(account), _sync(account)
    assert first.busy and 40 <= first.watch_in <= 42
    assert second.busy and second.watch_in is None


def test_wecom_sync_task_retries_a_storage_failure(connected, account, standin, monkeypatch):
    # given the account's store is locked during the pull
    from django.db import OperationalError

    from wecom import tasks

    def locked(**kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(tasks, "wecom_sync", locked)
    retried = {}

    def fake_retry(self, exc=None, countdown=None, **kwargs):
        retried["exc"], retried["countdown"] = exc, countdown
        return RuntimeError("retry")

    monkeypatch.setattr(tasks.wecom_sync_task, "retry", fake_retry.__get__(tasks.wecom_sync_task))

    # when its task runs / then it is retried with a backoff, not failed for good
    with pytest.raises(RuntimeError, match="retry"):
        tasks.wecom_sync_task.run(account.id, OPEN_KFID, "")
    assert isinstance(retried["exc"], OperationalError) and retried["countdown"] >= 2


def test_wecom_sync_stops_when_wecom_says_more_without_a_new_cursor(connected, account):
    # given a WeCom that answers has_more=1 and the same cursor again (a bug on its side)
    class Stuck:
        calls = 0

        def sync_msg(self, **kwargs):
            Stuck.calls += 1
            return {"errcode": 0, "next_cursor": "", "has_more": 1, "msg_list": []}

    # when the account pulls / then it stops after that page instead of asking for ever
    result = wecom_sync(account_id=account.id, open_kfid=OPEN_KFID, client=Stuck())
    assert Stuck.calls == 1 and result.pages == 1
    assert WeComCursor.objects.get(open_kfid=OPEN_KFID).leased_until is None


def test_wecom_sync_replies_leave_from_the_kf_account_of_her_newest_message(connected, account, standin):
    # given she wrote to kf account A, later to kf account B
    from wecom.services import wecom_connect

    from .conftest import AES_KEY, CALLBACK_TOKEN, CORP_ID, SECRET

    standin.open_kfids.append("wkSecond02")
    wecom_connect(
        account_id=account.id,
        corp_id=CORP_ID,
        secret=SECRET,
        token=CALLBACK_TOKEN,
        aes_key=AES_KEY,
        open_kfids=[OPEN_KFID, "wkSecond02"],
        actor="test",
    )
    standin.customer_says("wmLin001", "我先问问一居室", callback=False)
    import time

    time.sleep(1.1)  # WeCom's send_time has whole seconds
    standin.customer_says("wmLin001", "我换个客服问两居室", open_kfid="wkSecond02", callback=False)

    # when B's page is pulled first and A's (the older message) after it
    wecom_sync(account_id=account.id, open_kfid="wkSecond02")
    wecom_sync(account_id=account.id, open_kfid=OPEN_KFID)

    # then replies leave from B, where her newest message went
    assert Customer.objects.get(conversation_id="wmLin001").upstream_channel == "wkSecond02"


def test_wecom_recalled_message_is_forgotten(connected, account, standin):
    # given 钱先生 said his budget, it was captured, then he recalled the message in WeChat
    from memory.capture.services import capture_message
    from memory.models import MemoryItem

    said = standin.customer_says("wmQian001", "我的预算是八千", callback=False)
    _sync(account)
    capture_message(message=Message.objects.get(external_id=said["msgid"]))
    assert MemoryItem.objects.filter(customer__conversation_id="wmQian001").exists()
    standin.event("wmQian001", "user_recall_msg", extra={"recall_msgid": said["msgid"]}, callback=False)

    # when the account pulls
    _sync(account)

    # then the message and what was remembered from it are gone, and the recall is a system line
    assert not Message.objects.filter(external_id=said["msgid"]).exists()
    assert not MemoryItem.objects.filter(customer__conversation_id="wmQian001").exists()
    assert Message.objects.filter(text="〔企业微信事件：客户撤回了一条消息〕").count() == 1
