"""WeCom as an account's upstream (`conversations.gateway` asks `wecom_gateway_for`): replies leave
through `kf/send_msg` within WeCom's rules, known before trying — only within 48 hours of the
customer's last message and at most 5 replies after it — and the status is a token fetch."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import time

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from conversations.gateway import UpstreamError, UpstreamGateway, UpstreamRefused, UpstreamStatus
from conversations.models import Customer, Delivery, Message, MessageDirection
from qiwei_site.platform.sealing import SealBroken
from wecom.client import Credentials, WeComApiError, WeComClient
from wecom.errcodes import INVALID_PARAMETER
from wecom.selectors import connection_get, credentials_of, uses_wecom

REPLY_WINDOW = dt.timedelta(hours=48)
REPLIES_PER_CUSTOMER_MESSAGE = 5
TEXT_MAX_BYTES = 2048  # kf/send_msg: a text's content is at most 2,048 bytes
TRANSIENT_RETRIES = 2
# What the thread calls a customer's message that is not words (an image, a location…): stored as
# a system line so nothing reads it as what the customer said, yet it opens WeCom's reply window.
CUSTOMER_PLACEHOLDER_SENDER = "客户"


def send_msgid(*, account_id: str, idempotency_key: str, created_at: dt.datetime | None) -> str:
    """WeCom's own idempotency: the msgid we give a send, the same for every retry of one delivery
    (so WeCom never delivers it twice) and never the same for two deliveries of any account, which
    WeCom would refuse as a repeat — msgids must be unique per kf account, and our delivery keys are
    only unique inside one account's store (a second account on the same kf account, an account
    made again). 32 characters of [0-9a-f]: "q" and 31 of a SHA-256."""
    # The instant in microseconds: the same whatever time zone a caller's datetime is in.
    stamp = str(round(created_at.timestamp() * 1_000_000)) if created_at is not None else ""
    digest = hashlib.sha256(f"{account_id}\0{idempotency_key}\0{stamp}".encode()).hexdigest()
    return "q" + digest[:31]


_DUPLICATE_MSGID = re.compile(r"msgid.*(already|exist|used|duplicat|重复)|(重复|duplicat).*msgid", re.IGNORECASE)


def already_sent(exc: WeComApiError) -> bool:
    """WeCom's answer to a msgid it has already delivered for this kf account: its send_msg page
    says a repeated msgid is an error without naming the code; it comes as the invalid-parameter
    code (40058) saying the msgid was used. A malformed msgid is the same code and is NOT this (ours
    are never malformed, and an unclear answer is a failure, never "sent")."""
    return exc.errcode == INVALID_PARAMETER and bool(_DUPLICATE_MSGID.search(exc.errmsg))


def customer_messages(customer: Customer) -> Q:
    return Q(customer=customer) & (
        Q(direction=MessageDirection.INBOUND) | Q(direction=MessageDirection.SYSTEM, sender=CUSTOMER_PLACEHOLDER_SENDER)
    )


def reply_refusal(customer: Customer, *, now: dt.datetime | None = None) -> str | None:
    """Why WeCom will not take a reply to `customer` now (Chinese), or None."""
    now = now or timezone.now()
    last = Message.objects.filter(customer_messages(customer)).order_by("-sent_at", "-id").only("pk", "sent_at").first()
    if last is None:
        return "该客户还没有通过企业微信客服发来消息，企业微信不允许主动发送 (no customer message to reply to)."
    if now - last.sent_at > REPLY_WINDOW:
        local = timezone.localtime(last.sent_at).strftime("%Y-%m-%d %H:%M")
        return (
            f"客户最后一条消息（{local}）已超过 48 小时，企业微信不允许再回复；请等客户再次来信 "
            "(outside WeCom's 48-hour reply window)."
        )
    # Our replies stored after her message was (WeCom's send_time has whole seconds only, so a
    # reply in the same second would look older or newer than it is by time).
    replies = Message.objects.filter(
        customer=customer,
        direction=MessageDirection.OUTBOUND,
        external_id__startswith="delivery-",
        pk__gt=last.pk,
    ).count()
    if replies >= REPLIES_PER_CUSTOMER_MESSAGE:
        return (
            f"客户上一条消息之后已回复 {replies} 条，企业微信最多允许 {REPLIES_PER_CUSTOMER_MESSAGE} 条；"
            "请等客户回复后再发 (WeCom allows 5 replies per customer message)."
        )
    if not customer.upstream_channel:
        return "不知道该客户来自哪个企业微信客服账号 (open_kfid)，无法发送 (no open_kfid for this customer)."
    return None


class WeComGateway(UpstreamGateway):
    name = "wecom"

    def __init__(self, credentials: Credentials, *, client: WeComClient | None = None) -> None:
        self.credentials = credentials
        self.client = client or WeComClient(credentials)
        self.status_scope = credentials.account_id

    def probe(self, timeout: float) -> UpstreamStatus:
        now = timezone.now
        try:
            self.client.access_token(refresh=True, timeout=min(max(timeout, 0.05), 2.5))
        except WeComApiError as exc:
            reachable = exc.errcode is not None
            return UpstreamStatus(
                online=reachable,
                logged_in=False if reachable else None,
                subscription="wecom-kf",
                checked_at=now(),
                detail=f"企业微信客服：{exc}"[:200],
            )
        return UpstreamStatus(
            online=True,
            logged_in=True,
            subscription="wecom-kf",
            checked_at=now(),
            detail=f"企业微信客服（企业 {self.credentials.corp_id}）",
        )

    def send_refusal(self, conversation_id: str, text: str | None = None) -> str | None:
        if text is not None and len(text.strip().encode("utf-8")) > TEXT_MAX_BYTES:
            return f"回复超过企业微信单条 {TEXT_MAX_BYTES} 字节的上限，请缩短后再发 (reply too long for WeCom)."
        customer = Customer.objects.filter(conversation_id=conversation_id).first()
        if customer is None:
            return "客户不存在 (no such customer)."
        return reply_refusal(customer)

    def send(self, *, conversation_id: str, text: str, idempotency_key: str) -> str:
        customer = Customer.objects.filter(conversation_id=conversation_id).first()
        refusal = reply_refusal(customer) if customer is not None else "客户不存在 (no such customer)."
        if refusal:
            raise UpstreamRefused(refusal, code="wecom_reply_refused")
        if len(text.encode("utf-8")) > TEXT_MAX_BYTES:
            raise UpstreamRefused(
                f"回复超过企业微信单条 {TEXT_MAX_BYTES} 字节的上限，请缩短后再发 (reply too long for WeCom).",
                code="wecom_reply_too_long",
            )
        assert customer is not None
        created = Delivery.objects.filter(idempotency_key=idempotency_key).values_list("created_at", flat=True).first()
        msgid = send_msgid(account_id=self.credentials.account_id, idempotency_key=idempotency_key, created_at=created)
        for attempt in range(TRANSIENT_RETRIES + 1):
            try:
                return self.client.send_text(
                    touser=conversation_id,
                    open_kfid=customer.upstream_channel,
                    text=text,
                    msgid=msgid,
                )
            except WeComApiError as exc:
                if already_sent(exc):
                    # An earlier attempt of this delivery reached WeCom (its answer was lost): WeCom
                    # refuses a msgid it has seen, so the reply is out, once.
                    return msgid
                if exc.kind == "transient" and attempt < TRANSIENT_RETRIES:
                    time.sleep(0.3 * (attempt + 1))
                    continue
                if exc.kind in ("window", "quota", "request"):
                    raise UpstreamRefused(str(exc), code=f"wecom_{exc.kind}") from None
                raise UpstreamError(f"企业微信：{exc}") from None
        raise AssertionError("unreachable")  # pragma: no cover


class UnusableWeComGateway(UpstreamGateway):
    """An account that must use WeCom but cannot (not connected under QIWEI_UPSTREAM=wecom, or its
    sealed credentials do not open): sending is refused with the reason; nothing else stops."""

    name = "wecom"

    def __init__(self, account_id: str, reason: str) -> None:
        self.status_scope = account_id
        self.reason = reason

    def probe(self, timeout: float) -> UpstreamStatus:
        return UpstreamStatus(False, False, "wecom-kf", timezone.now(), self.reason)

    def send_refusal(self, conversation_id: str, text: str | None = None) -> str | None:
        return self.reason

    def send(self, *, conversation_id: str, text: str, idempotency_key: str) -> str:
        raise UpstreamError(self.reason)


def wecom_gateway_for(account_id: str | None) -> UpstreamGateway | None:
    """The account's WeCom gateway, or None when it does not use WeCom (the shared upstream answers)."""
    if not account_id:
        return None
    connection = connection_get(account_id)
    if connection is None:
        if settings.QIWEI_UPSTREAM == "wecom":
            return UnusableWeComGateway(
                account_id,
                "账号尚未连接企业微信客服（manage.py wecom_connect 或后台设置）(account not connected to WeCom).",
            )
        return None
    if not uses_wecom(connection):
        return None
    try:
        return WeComGateway(credentials_of(connection))
    except SealBroken:
        return UnusableWeComGateway(
            account_id,
            "企业微信凭据无法用当前密封密钥打开，请检查密封密钥或重新连接 (WeCom credentials cannot be unsealed).",
        )
