"""Replies out through WeCom's `kf/send_msg`: within the 48-hour window and 5 replies per customer
message (known before trying, said on the draft, never tried by auto-send), once per delivery
however often retried, the token refreshed when WeCom calls it expired, and WeCom down stopping only
sending."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from conversations.drafts import draft_approve, draft_auto_send_blockers, draft_send
from conversations.gateway import get_gateway, upstream_status_cached, upstream_status_refresh
from conversations.models import Customer, Delivery, DeliveryStatus, Message, SessionMode
from conversations.serializers import DraftOutputSerializer
from qiwei_site.platform.errors import Conflict, UpstreamUnavailable
from tests.factories import DraftFactory
from wecom.gateway import WeComGateway, send_msgid
from wecom.sync import wecom_sync

from .conftest import OPEN_KFID

CID = "wmGao0001"


@pytest.fixture
def customer(connected, account, standin) -> Customer:
    """高女士 wrote on WeCom a minute ago; her message is pulled."""
    standin.customer_says(CID, "你好，静安寺附近有没有一室户", nickname="高女士", callback=False)
    wecom_sync(account_id=account.id, open_kfid=OPEN_KFID)
    return Customer.objects.get(conversation_id=CID)


def _approved(customer, staff_user, text="高女士您好，静安寺附近有两套一室户，周末可以看房。"):
    draft = DraftFactory(customer=customer, reply=text)
    return draft_approve(draft=draft, actor=staff_user, reason="审核通过")


def test_wecom_gateway_serves_a_connected_account(customer, account):
    assert isinstance(get_gateway(account.id), WeComGateway)


def test_wecom_send_delivers_once_with_the_delivery_as_msgid(customer, staff_user, standin):
    # given an approved reply to 高女士
    draft = _approved(customer, staff_user)

    # when it is sent, and sent again (a retried click)
    delivery = draft_send(draft=draft, actor=staff_user)
    again = draft_send(draft=draft, actor=staff_user)

    # then WeCom got it once, keyed by the delivery, and the thread holds our reply
    assert delivery.status == DeliveryStatus.SENT and again.pk == delivery.pk
    assert [(s["touser"], s["open_kfid"], s["msgid"]) for s in standin.sent] == [
        (
            CID,
            OPEN_KFID,
            send_msgid(
                account_id="acme",
                idempotency_key=delivery.idempotency_key,
                created_at=delivery.created_at,
            ),
        )
    ]
    assert standin.sent[0]["text"] == "高女士您好，静安寺附近有两套一室户，周末可以看房。"
    assert Message.objects.filter(customer=customer, external_id=f"delivery-{delivery.pk}").exists()


def test_wecom_send_after_48_hours_is_refused_with_the_reason_on_the_draft(customer, staff_user, standin):
    # given her last message is 49 hours old
    Message.objects.filter(customer=customer).update(sent_at=timezone.now() - dt.timedelta(hours=49))
    draft = _approved(customer, staff_user)

    # when the agent looks at the draft and sends it
    shown = DraftOutputSerializer(draft).data
    with pytest.raises(Conflict) as refused:
        draft_send(draft=draft, actor=staff_user)

    # then the draft says why before anyone tries, the send is refused with it, and WeCom got nothing
    assert "48 小时" in shown["send_blocked_reason"]
    assert "48 小时" in refused.value.detail
    assert standin.sent == []
    assert not Delivery.objects.filter(status=DeliveryStatus.SENT).exists()


def test_wecom_auto_send_does_not_try_outside_the_window(customer, staff_user):
    # given a whitelisted auto customer whose last message is 49 hours old
    Customer.objects.filter(pk=customer.pk).update(session_mode=SessionMode.AUTO, auto_send_whitelisted=True)
    Message.objects.filter(customer=customer).update(sent_at=timezone.now() - dt.timedelta(hours=49))
    draft = DraftFactory(customer=Customer.objects.get(pk=customer.pk), confidence=0.99)

    # when the auto-send gate is asked / then WeCom's window is one of its blockers
    assert any("48 小时" in blocker for blocker in draft_auto_send_blockers(draft))


def test_wecom_sixth_reply_is_refused_until_the_customer_writes_again(customer, staff_user, standin, account):
    # given five replies sent after her message
    for n in range(5):
        draft_send(draft=_approved(customer, staff_user, text=f"第{n + 1}条回复：房源信息已发您"), actor=staff_user)

    # when a sixth is sent
    with pytest.raises(Conflict) as refused:
        draft_send(draft=_approved(customer, staff_user, text="第6条回复"), actor=staff_user)

    # then it is refused with the reason; after she writes again a reply goes out
    assert "5 条" in refused.value.detail
    assert len(standin.sent) == 5
    standin.customer_says(CID, "好的，周六上午可以", callback=False)
    wecom_sync(account_id=account.id, open_kfid=OPEN_KFID)
    draft_send(draft=_approved(customer, staff_user, text="好的，周六上午十点见"), actor=staff_user)
    assert len(standin.sent) == 6


def test_wecom_refusal_by_wecom_itself_stays_on_the_draft_and_keeps_the_status_online(
    customer, staff_user, standin, account
):
    # given WeCom's own clock says her message is 49 hours old (ours does not know yet)
    upstream_status_refresh(account_id=account.id)
    standin.clock_offset = 49 * 3600
    draft = _approved(customer, staff_user)

    # when the reply is sent
    with pytest.raises(Conflict) as refused:
        draft_send(draft=draft, actor=staff_user)

    # then WeCom's errcode is said in Chinese, the delivery records it, and sending elsewhere goes on
    assert "48 小时" in refused.value.detail
    assert Delivery.objects.get(draft=draft).status == DeliveryStatus.FAILED
    assert upstream_status_cached(account.id).online is True


def test_wecom_expired_token_is_refreshed_and_the_send_goes_out(customer, staff_user, standin):
    # given a token cached earlier that WeCom has since expired
    draft_send(draft=_approved(customer, staff_user, text="第一条"), actor=staff_user)
    standin.expire_tokens()

    # when the next reply is sent / then it goes out with a fresh token
    draft_send(draft=_approved(customer, staff_user, text="第二条"), actor=staff_user)
    assert [s["text"] for s in standin.sent] == ["第一条", "第二条"]
    gettokens = [path for path, _ in standin.calls if path.endswith("gettoken")]
    assert len(gettokens) == 2


def test_wecom_down_stops_only_sending(customer, staff_user, standin, account):
    # given WeCom cannot be reached
    draft = _approved(customer, staff_user)
    standin.stop()

    # when a reply is sent / then it is refused as unavailable and the account's status says offline
    with pytest.raises(UpstreamUnavailable):
        draft_send(draft=draft, actor=staff_user)
    assert upstream_status_cached(account.id).online is False
    # and a retry once WeCom is back sends it once
    standin.start()
    from django.conf import settings

    settings.QIWEI_WECOM_API_BASE = standin.url
    delivery = draft_send(draft=draft, actor=staff_user)
    assert delivery.status == DeliveryStatus.SENT and len(standin.sent) == 1


def test_wecom_status_probe_is_a_token_fetch(customer, account, standin):
    status = upstream_status_refresh(account_id=account.id)
    assert (status.online, status.logged_in, status.subscription) == (True, True, "wecom-kf")
    standin.stop()
    status = upstream_status_refresh(account_id=account.id)
    assert status.online is False


def test_wecom_retry_of_a_send_whose_answer_was_lost_is_not_sent_twice(customer, staff_user, standin, monkeypatch):
    # given the first attempt reached WeCom but its answer was lost (the delivery is left failed)
    from wecom.client import WeComApiError, WeComClient

    draft = _approved(customer, staff_user)
    real_send = WeComClient.send_text

    def lost_answer(self, **kwargs):
        real_send(self, **kwargs)
        raise WeComApiError("企业微信 5 秒内无响应")

    monkeypatch.setattr(WeComClient, "send_text", lost_answer)
    with pytest.raises(UpstreamUnavailable):
        draft_send(draft=draft, actor=staff_user)
    monkeypatch.setattr(WeComClient, "send_text", real_send)

    # when the agent sends again
    delivery = draft_send(draft=draft, actor=staff_user)

    # then WeCom's "msgid already used" means it is out: sent, and the customer got it once
    assert delivery.status == DeliveryStatus.SENT
    assert len(standin.sent) == 1


def test_wecom_status_api_answers_for_the_account_only_to_its_members(customer, account, standin, agent_client):
    # given the beat probed the account's WeCom connection
    upstream_status_refresh(account_id=account.id)

    # when the Workbench asks for the account's status / then it is WeCom's, from the cache
    data = agent_client.get("/api/status", {"fast": "true", "account": account.id}).json()
    assert (data["online"], data["subscription"]) == (True, "wecom-kf")
    # and an account the user may not see is a 404, as anywhere else
    assert agent_client.get("/api/status", {"fast": "true", "account": "globex"}).status_code == 404


def test_wecom_msgids_differ_between_accounts_on_one_kf_account(customer, staff_user, standin, account, settings):
    # given a second account connected to the same kf account (a migration, a test account) whose
    # first draft has the same key as acme's first
    from qiwei_site.platform.tenancy import use_account
    from tests.conftest import make_account
    from wecom.services import wecom_connect

    from .conftest import AES_KEY, CALLBACK_TOKEN, CORP_ID, SECRET

    first = draft_send(draft=_approved(customer, staff_user, text="acme 的回复"), actor=staff_user)
    globex = make_account("globex", "优居客服二部")
    with use_account(globex.id):
        wecom_connect(
            account_id=globex.id,
            corp_id=CORP_ID,
            secret=SECRET,
            token=CALLBACK_TOKEN,
            aes_key=AES_KEY,
            open_kfids=["wkOther01"],
            actor="test",
        )
        standin.open_kfids.append("wkOther01")
        standin.customer_says("wmGlobex01", "你好", open_kfid="wkOther01", callback=False)
        wecom_sync(account_id=globex.id, open_kfid="wkOther01")
        other = Customer.objects.get(conversation_id="wmGlobex01")
        second = draft_send(draft=_approved(other, staff_user, text="globex 的回复"), actor=staff_user)

    # then both keys may be draft-1, but WeCom got two different msgids and delivered both
    assert first.status == second.status == DeliveryStatus.SENT
    assert len({s["msgid"] for s in standin.sent}) == 2
    assert [s["text"] for s in standin.sent] == ["acme 的回复", "globex 的回复"]


def test_wecom_an_invalid_msgid_answer_is_never_taken_as_sent(customer, staff_user, standin, monkeypatch):
    # given WeCom answers 40058 "invalid msgid" (malformed), which is not "already used"
    from wecom.client import WeComApiError, WeComClient

    def invalid(self, **kwargs):
        raise WeComApiError("参数不合法", errcode=40058, kind="request", errmsg="invalid msgid")

    monkeypatch.setattr(WeComClient, "send_text", invalid)

    # when a reply is sent / then it is refused, not marked sent
    draft = _approved(customer, staff_user)
    with pytest.raises(Conflict):
        draft_send(draft=draft, actor=staff_user)
    assert Delivery.objects.get(draft=draft).status == DeliveryStatus.FAILED


def test_wecom_refused_send_is_retried_under_a_new_msgid(customer, staff_user, standin, account):
    # given WeCom refused a reply (its clock says 49 hours), so the delivery failed for good
    standin.clock_offset = 49 * 3600
    draft = _approved(customer, staff_user)
    with pytest.raises(Conflict):
        draft_send(draft=draft, actor=staff_user)
    refused_key = Delivery.objects.get(draft=draft).idempotency_key

    # when the customer writes again and the agent sends the same draft
    standin.clock_offset = 0
    standin.customer_says(CID, "还在吗", callback=False)
    wecom_sync(account_id=account.id, open_kfid=OPEN_KFID)
    delivery = draft_send(draft=draft, actor=staff_user)

    # then the refused attempt's key was replaced, and the send went out under a msgid of its own
    assert refused_key != f"draft-{draft.pk}"
    assert delivery.status == DeliveryStatus.SENT and len(standin.sent) == 1
    tried = [body.get("msgid") for path, body in standin.calls if path.endswith("send_msg")]
    assert tried[-1] != tried[0]  # (the refused attempt was made twice: once more after a token refresh)


def test_wecom_access_token_is_sealed_in_the_shared_cache(customer, account, standin):
    # given a send fetched a token
    from django.core.cache import caches

    from wecom.client import WeComClient
    from wecom.selectors import credentials_get

    client = WeComClient(credentials_get(account.id))
    token = client.access_token()

    # then the shared cache (a file or a Redis key) holds it sealed, and it opens again
    raw = caches["shared"].get(client._token_key())
    assert raw and token not in raw
    assert client.access_token() == token


def test_wecom_reported_send_failure_fails_the_delivery_and_uncounts_the_reply(customer, staff_user, standin, account):
    # given a reply went out, then WeCom reports it never reached her (msg_send_fail)
    delivery = draft_send(draft=_approved(customer, staff_user), actor=staff_user)
    standin.event(CID, "msg_send_fail", extra={"fail_msgid": standin.sent[0]["msgid"], "fail_type": 4}, callback=False)

    # when the account pulls
    wecom_sync(account_id=account.id, open_kfid=OPEN_KFID)

    # then the delivery is failed with WeCom's reason and the reply's line no longer counts as said
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED and "未送达" in delivery.last_error
    reply = Message.objects.get(customer=customer, external_id=f"delivery-{delivery.pk}")
    assert reply.is_effective is False


def test_wecom_reply_longer_than_2048_bytes_says_so_on_the_card_before_sending(customer, staff_user, standin):
    # given a draft of 700 Chinese characters (2,100 bytes in UTF-8)
    draft = _approved(customer, staff_user, text="房" * 700)

    # when the agent looks at it and sends it / then the card said why, and nothing was tried
    assert "2048" in DraftOutputSerializer(draft).data["send_blocked_reason"]
    with pytest.raises(Conflict, match="2048"):
        draft_send(draft=draft, actor=staff_user)
    assert not [path for path, _ in standin.calls if path.endswith("send_msg")]
