"""WeCom's callback URL: the URL check, signed encrypted events taken once and their pull queued,
and everything that does not verify refused with 403, nothing stored, nothing logged in the clear."""

from __future__ import annotations

import logging
import time
from urllib.parse import urlencode

from conversations.models import Message
from wecom.models import WeComCallback

from .conftest import OPEN_KFID, callback_parts, post_callback


def test_wecom_callback_url_check_answers_the_decrypted_echostr(connected, account, standin, client):
    # given WeCom checks the callback URL while the supervisor saves it in WeCom's console
    plaintext = "8416529307716554321"
    echostr = standin.crypto.encrypt(plaintext)
    stamp, nonce = str(int(time.time())), "1372623149"
    from wecom.crypto import message_signature

    signature = message_signature(standin.crypto.token, stamp, nonce, echostr)

    # when it GETs the URL
    response = client.get(
        f"/wecom/{account.id}/callback/",
        {"msg_signature": signature, "timestamp": stamp, "nonce": nonce, "echostr": echostr},
    )

    # then the answer is the echostr's plaintext, nothing else
    assert response.status_code == 200
    assert response.content.decode() == plaintext


def test_wecom_callback_takes_an_event_once_and_pulls_its_messages(connected, account, standin, client):
    # given 周先生 wrote on WeCom and WeCom posts its callback, then retries it twice
    standin.customer_says("wmZhou001", "我想换一套离公司近点的房子", callback=False)
    query, body = callback_parts(standin)

    # when the three deliveries arrive
    answers = [post_callback(client, account.id, query, body) for _ in range(3)]

    # then each is answered at once, one pull is made, and the message is stored once
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert len([path for path, _ in standin.calls if path.endswith("sync_msg")]) == 1
    assert WeComCallback.objects.count() == 1
    assert list(Message.objects.values_list("text", flat=True)) == ["我想换一套离公司近点的房子"]


def test_wecom_callback_with_a_bad_signature_is_refused_and_nothing_stored(connected, account, standin, client, caplog):
    # given a callback whose signature was not made with the account's token
    standin.customer_says("wmZhou001", "我的密码是Lm20461qa", callback=False)
    query, body = callback_parts(standin)
    query["msg_signature"] = "0" * 40

    # when it is posted
    with caplog.at_level(logging.DEBUG):
        response = post_callback(client, account.id, query, body)

    # then it is refused with a JSON reason, nothing is taken or stored, and the log holds no payload
    assert response.status_code == 403
    assert response.json()["code"] == "callback_signature"
    assert WeComCallback.objects.count() == 0
    assert Message.objects.count() == 0
    logged = " ".join(record.getMessage() for record in caplog.records)
    assert body.decode()[60:120] not in logged and "Lm20461qa" not in logged


def test_wecom_callback_from_another_corp_is_refused(connected, account, standin, client):
    # given a payload encrypted for another corp id with the same token and key
    from wecom.standin import WeComStandin

    from .conftest import AES_KEY, CALLBACK_TOKEN, SECRET

    other = WeComStandin(
        corp_id="wwffffffffffffffff",
        secret=SECRET,
        token=CALLBACK_TOKEN,
        encoding_aes_key=AES_KEY,
        open_kfids=[OPEN_KFID],
    )
    query, body = callback_parts(other)

    # when it is posted to our account's URL
    response = post_callback(client, account.id, query, body)

    # then it is refused: the corp id inside is not ours
    assert response.status_code == 403
    assert response.json()["code"] == "callback_receiver"
    assert WeComCallback.objects.count() == 0


def test_wecom_callback_replayed_after_the_window_is_refused(connected, account, standin, client):
    # given a genuine callback captured ten minutes ago and posted again now
    query, body = callback_parts(standin, timestamp=int(time.time()) - 600)

    # when it arrives
    response = post_callback(client, account.id, query, body)

    # then it is refused as stale
    assert response.status_code == 403
    assert response.json()["code"] == "callback_stale"


def test_wecom_callback_for_an_account_without_wecom_is_a_json_404(account, client):
    # given an account that never connected WeCom / when WeCom's URL for it is called / then a JSON 404
    response = client.post(
        f"/wecom/{account.id}/callback/?{urlencode({'timestamp': '1'})}", data=b"<xml/>", content_type="text/xml"
    )
    assert response.status_code == 404
    assert response.json()["code"] == "wecom_not_connected"
    assert client.get("/wecom/NO-SUCH/callback/").json()["code"] == "not_found"


def test_wecom_callback_refused_by_the_broker_is_taken_again_on_wecoms_retry(
    connected, account, standin, client, monkeypatch
):
    # given the broker refuses the pull the first time
    from wecom import tasks

    calls = {"n": 0}
    real_delay = tasks.wecom_sync_task.delay

    def flaky_delay(*args):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("broker down")
        return real_delay(*args)

    monkeypatch.setattr(tasks.wecom_sync_task, "delay", flaky_delay)
    standin.customer_says("wmZhou001", "我想换一套离公司近点的房子", callback=False)
    query, body = callback_parts(standin)

    # when WeCom posts, is told to retry, and retries
    first = post_callback(client, account.id, query, body)
    retry = post_callback(client, account.id, query, body)

    # then the first answer is a JSON 503 and the retry's pull stores the message
    assert first.status_code == 503 and first.json()["code"] == "callback_failed"
    assert retry.status_code == 200
    assert Message.objects.count() == 1


def test_wecom_callback_oversized_or_wrong_method_is_a_json_refusal(connected, account, client):
    big = client.post(
        f"/wecom/{account.id}/callback/?timestamp=1", data=b"x" * (9 * 1024 * 1024), content_type="text/xml"
    )
    assert big.status_code == 413 and big.json()["code"] == "callback_too_large"
    put = client.put(f"/wecom/{account.id}/callback/", data=b"<xml/>", content_type="text/xml")
    assert put.status_code == 405 and put.json()["code"] == "method_not_allowed"


def test_wecom_callback_for_an_inactive_account_is_refused(connected, account, standin, client):
    from qiwei_site.platform.models import WeComAccount

    WeComAccount.objects.filter(pk=account.id).update(is_active=False)
    query, body = callback_parts(standin)
    response = post_callback(client, account.id, query, body)
    assert response.status_code == 404 and response.json()["code"] == "account_inactive"
    assert WeComCallback.objects.count() == 0
