"""Messages in from WeCom (issue 37): `kf/sync_msg` from the cursor stored per `open_kfid` until
`has_more` is 0. Each page is ingested like any message (idempotent by msgid, masked, sealed,
captured) and only then is the cursor advanced, so a crash between the two replays a page and never
skips one. Customer text (origin 3) is inbound; the agent's messages from WeCom's own app (origin 5)
outbound; events (origin 4) system lines; anything that is not text is a typed placeholder with
what WeCom gave, stored as a system line so nothing reads it as the customer's words."""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import socket
from dataclasses import dataclass
from typing import Any

from django.db.models import F, Q
from django.utils import timezone

from conversations.drafts import delivery_undelivered
from conversations.models import Customer, Delivery, DeliveryStatus, Message, MessageDirection
from conversations.services import customer_upstream_profile_update
from memory.capture.ingest import MAX_BATCH, MAX_TEXT_CHARS, messages_ingest
from memory.governance.messages import message_forget
from qiwei_site.platform.errors import ApplicationError, NotFound
from qiwei_site.platform.history import Actor
from qiwei_site.platform.tenancy import use_account
from wecom.client import WeComApiError, WeComClient
from wecom.errcodes import MSG_TOKEN_INVALID
from wecom.gateway import CUSTOMER_PLACEHOLDER_SENDER, customer_messages, send_msgid
from wecom.models import WeComCursor
from wecom.selectors import connection_get, credentials_of

logger = logging.getLogger(__name__)

SYNC_ACTOR = "wecom"
SYNC_REASON = "企业微信客服消息"
# A pull holds its kf account's lease this long and renews it with every page, so a worker killed
# mid-pull (SIGKILL, OOM) stalls that kf account for at most this long: the next pull asked for in
# the meantime is re-queued for when the lease runs out (`SyncResult.watch`).
LEASE_SECONDS = 60
PAGE_LIMIT = 1000
# One pull takes at most this many pages (50,000 messages); the rest is the next pull's (queued).
PAGES_PER_PULL = 50
ORIGIN_CUSTOMER, ORIGIN_EVENT, ORIGIN_SERVICER = 3, 4, 5
_UNPRINTABLE = re.compile(r"[\x00\ud800-\udfff]")

# What a message that is not words is called in the thread: (label, the fields of WeCom's object shown).
PLACEHOLDERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "image": ("图片", ()),
    "voice": ("语音", ()),
    "video": ("视频", ()),
    "file": ("文件", ("file_name",)),
    "location": ("位置", ("name", "address", "latitude", "longitude")),
    "link": ("链接", ("title", "desc", "url")),
    "miniprogram": ("小程序", ("title", "appid", "pagepath")),
    "business_card": ("名片", ("userid",)),
    "msgmenu": ("菜单消息", ("head_content",)),
    "channels_shop_product": ("视频号商品", ("title", "sales_price")),
    "channels_shop_order": ("视频号订单", ("order_id", "product_titles")),
    "channels": ("视频号", ("nickname", "title")),
    "merged_msg": ("聊天记录", ("title",)),
    "note": ("笔记", ()),
}
EVENT_LABELS = {
    "enter_session": "客户进入会话",
    "msg_send_fail": "消息发送失败",
    "servicer_status_change": "接待人员状态变更",
    "session_status_change": "会话状态变更",
    "user_recall_msg": "客户撤回了一条消息",
    "servicer_recall_msg": "接待人员撤回了一条消息",
    "reject_customer_msg_switch_change": "拒收客户消息开关变更",
}


@dataclass
class SyncResult:
    pages: int = 0
    fetched: int = 0
    stored: int = 0
    duplicates: int = 0
    skipped: int = 0  # events that name no customer
    busy: bool = False  # another worker holds this open_kfid's sync; it will run once more for us
    # busy, and the first to find it so since the lease was taken: the caller queues one more pull
    # for when the lease runs out (`watch_in` seconds), in case the holder died holding it.
    watch_in: float | None = None
    more: bool = False  # stopped at PAGES_PER_PULL with more waiting: the caller queues the next pull


def _clean_text(text: Any) -> str:
    value = text if isinstance(text, str) else ""
    return _UNPRINTABLE.sub("\ufffd", value)[:MAX_TEXT_CHARS].strip()


def _sent_at(raw: Any, now: dt.datetime) -> dt.datetime:
    try:
        sent = dt.datetime.fromtimestamp(int(raw), tz=dt.UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return now
    return min(sent, now)  # WeCom's clock ahead of ours must not put a message in the future


def placeholder_text(msgtype: str, body: Any, *, who: str) -> str:
    label, fields = PLACEHOLDERS.get(msgtype, (msgtype or "未知类型", ()))
    detail = body if isinstance(body, dict) else {}
    parts = [f"{detail[name]}" for name in fields if detail.get(name) not in (None, "", [])]
    shown = "，".join(_clean_text(part)[:300] for part in parts)
    return f"〔{who}发来{label}{'：' + shown if shown else ''}〕"


def message_for(raw: dict[str, Any], now: dt.datetime) -> tuple[str, dict[str, Any]] | None:
    """(the customer's external_userid, the message as ingest takes it), or None for what names no
    customer."""
    msgid = raw.get("msgid")
    if not isinstance(msgid, str) or not msgid:
        return None
    origin = raw.get("origin")
    raw_type = raw.get("msgtype")
    msgtype: str = raw_type if isinstance(raw_type, str) else ""
    body = raw.get(msgtype) if msgtype else None
    sent_at = _sent_at(raw.get("send_time"), now)
    external_userid = raw.get("external_userid")
    if origin == ORIGIN_EVENT or msgtype == "event":
        event = body if isinstance(body, dict) else {}
        external_userid = event.get("external_userid") or external_userid
        if not isinstance(external_userid, str) or not external_userid:
            return None
        kind = str(event.get("event_type") or "")
        text = f"〔企业微信事件：{EVENT_LABELS.get(kind, kind or '未知事件')}〕"
        return external_userid, {
            "external_id": msgid,
            "direction": MessageDirection.SYSTEM,
            "sender": "企业微信",
            "text": text,
            "sent_at": sent_at,
        }
    if not isinstance(external_userid, str) or not external_userid:
        return None
    content = _clean_text(body.get("content")) if msgtype == "text" and isinstance(body, dict) else ""
    menu_click = msgtype == "text" and isinstance(body, dict) and bool(body.get("menu_id"))
    if origin == ORIGIN_SERVICER:
        raw_servicer = raw.get("servicer_userid")
        servicer: str = raw_servicer if isinstance(raw_servicer, str) else ""
        if content:
            return external_userid, {
                "external_id": msgid,
                "direction": MessageDirection.OUTBOUND,
                "sender": servicer[:100],
                "text": content,
                "sent_at": sent_at,
            }
        text = placeholder_text(msgtype, body, who="客服")
        return external_userid, {
            "external_id": msgid,
            "direction": MessageDirection.SYSTEM,
            "sender": servicer[:100],
            "text": text,
            "sent_at": sent_at,
        }
    if content and not menu_click:
        return external_userid, {
            "external_id": msgid,
            "direction": MessageDirection.INBOUND,
            "sender": "",
            "text": content,
            "sent_at": sent_at,
        }
    text = f"〔客户点击菜单：{content}〕" if menu_click and content else placeholder_text(msgtype, body, who="客户")
    return external_userid, {
        "external_id": msgid,
        "direction": MessageDirection.SYSTEM,
        "sender": CUSTOMER_PLACEHOLDER_SENDER,
        "text": text,
        "sent_at": sent_at,
    }


def _holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:128]


def _holder_gone(holder: str) -> bool:
    """Whether `holder` (host:pid) is a process of this host that no longer runs."""
    host, _, pid = holder.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False  # another host's pull: only its lease's end tells
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    # A killed worker's pool process lingers as a zombie until someone reaps it: that is gone too.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] in ("Z", "X")
    except OSError:
        return False


def _take(row: WeComCursor, now: dt.datetime, *, dead: str | None = None) -> bool:
    free = Q(leased_until__isnull=True) | Q(leased_until__lt=now)
    if dead is not None:
        free |= Q(leased_by=dead)
    return bool(
        WeComCursor.objects.filter(pk=row.pk)
        .filter(free)
        .update(leased_until=now + dt.timedelta(seconds=LEASE_SECONDS), leased_by=_holder(), rerun=False)
    )


def _lease(row: WeComCursor) -> tuple[bool, float | None]:
    """Take the open_kfid's sync lease (a conditional UPDATE: one winner on SQLite and PostgreSQL):
    (taken, None); a lease whose holder on this host has died is taken over. A loser marks `rerun`
    so the holder pulls once more for it: (False, seconds until the lease runs out) for the first
    loser since the lease was taken (its caller queues a pull for then), else (False, None)."""
    now = timezone.now()
    if _take(row, now):
        return True, None
    holder = WeComCursor.objects.filter(pk=row.pk).values_list("leased_by", "leased_until").first()
    if holder is not None and holder[0] and _holder_gone(holder[0]) and _take(row, now, dead=holder[0]):
        logger.warning("wecom: took over the sync lease of a pull that died (%s)", holder[0])
        return True, None
    first_to_wait = bool(WeComCursor.objects.filter(pk=row.pk, rerun=False).update(rerun=True))
    # The holder may have let go between our two statements, missing the note: take it now.
    if _take(row, timezone.now()):
        return True, None
    if not first_to_wait:
        return False, None
    until = holder[1] if holder is not None else None
    left = (until - now).total_seconds() if until is not None else 0.0
    return False, max(1.0, left + 1.0)


def _renew(row: WeComCursor) -> None:
    """Extend our lease (only ours: one taken over from us is left alone)."""
    WeComCursor.objects.filter(pk=row.pk, leased_by=_holder()).update(
        leased_until=timezone.now() + dt.timedelta(seconds=LEASE_SECONDS)
    )


def _release(row: WeComCursor) -> bool:
    """Let the lease go unless a sync asked for one more pull meanwhile (then True: pull again).
    One statement decides: no note → released; a note → it is cleared and we pull again; a lease
    that is no longer ours (taken over after it ran out) → we stop."""
    me = _holder()
    if WeComCursor.objects.filter(pk=row.pk, rerun=False, leased_by=me).update(leased_until=None, leased_by=""):
        return False
    if WeComCursor.objects.filter(pk=row.pk, rerun=True, leased_by=me).update(rerun=False):
        _renew(row)
        return True
    return False


def _ingest_page(messages: list[dict[str, Any]], *, open_kfid: str, client: WeComClient, result: SyncResult) -> None:
    now = timezone.now()
    by_customer: dict[str, list[dict[str, Any]]] = {}
    for raw in messages:
        mapped = message_for(raw, now) if isinstance(raw, dict) else None
        if mapped is None:
            result.skipped += 1
            continue
        by_customer.setdefault(mapped[0], []).append(mapped[1])
    fresh_customers: list[Customer] = []
    created_ids: set[str] = set()
    for external_userid, batch in by_customer.items():
        for start in range(0, len(batch), MAX_BATCH):
            ingested = messages_ingest(
                conversation_id=external_userid,
                messages=batch[start : start + MAX_BATCH],
                actor=SYNC_ACTOR,
                reason=SYNC_REASON,
            )
            result.stored += len(ingested.created)
            result.duplicates += len(ingested.duplicates)
            created_ids.update(m.external_id for m in ingested.created)
        customer = ingested.customer
        _channel_follow(customer, batch, open_kfid)
        if not customer.avatar_url:
            fresh_customers.append(customer)
    # Events that change what was said, each acted on once (when its own line was new here).
    for raw in messages:
        event = raw.get("event") if isinstance(raw, dict) else None
        if isinstance(event, dict) and raw.get("msgtype") == "event" and raw.get("msgid") in created_ids:
            _event_apply(event, client)
    _profiles_refresh(fresh_customers, client)


def _event_apply(event: dict[str, Any], client: WeComClient) -> None:
    """WeCom's word that a reply of ours never arrived (`msg_send_fail`: the delivery is failed and
    its line no longer counts as said), or that the customer took a message back
    (`user_recall_msg`: it is forgotten, as a supervisor's forget would, so nothing remembers it)."""
    kind = event.get("event_type")
    customer = Customer.objects.filter(conversation_id=str(event.get("external_userid") or "")).first()
    if customer is None:
        return
    if kind == "msg_send_fail":
        failed = str(event.get("fail_msgid") or "")
        for delivery in Delivery.objects.filter(draft__customer=customer, status=DeliveryStatus.SENT).select_related(
            "draft__customer"
        ):
            msgid = send_msgid(
                account_id=client.credentials.account_id,
                idempotency_key=delivery.idempotency_key,
                created_at=delivery.created_at,
            )
            if msgid == failed:
                delivery_undelivered(
                    delivery=delivery,
                    detail=f"企业微信报告该回复未送达客户（原因代码 {event.get('fail_type', '未知')}）",
                    actor=SYNC_ACTOR,
                    reason="企业微信报告发送失败",
                )
    elif kind == "user_recall_msg":
        recalled = Message.objects.filter(
            customer=customer, external_id=str(event.get("recall_msgid") or ""), direction=MessageDirection.INBOUND
        ).first()
        if recalled is not None:
            message_forget(message=recalled, actor=SYNC_ACTOR, reason="客户在企业微信撤回了这条消息")


def _channel_follow(customer: Customer, batch: list[dict[str, Any]], open_kfid: str) -> None:
    """The kf account a reply must leave from is the one the customer's newest own message came to:
    set only when this page holds it (a page of older messages, events or the agent's messages
    from another kf account moves nothing)."""
    own = [
        m["sent_at"]
        for m in batch
        if m["direction"] == MessageDirection.INBOUND
        or (m["direction"] == MessageDirection.SYSTEM and m["sender"] == CUSTOMER_PLACEHOLDER_SENDER)
    ]
    if not own or customer.upstream_channel == open_kfid:
        return
    newest = (
        Message.objects.filter(customer_messages(customer))
        .order_by("-sent_at", "-id")
        .values_list("sent_at", flat=True)
        .first()
    )
    if newest is not None and max(own) < newest:
        return
    customer_upstream_profile_update(
        customer=customer, upstream_channel=open_kfid, actor=SYNC_ACTOR, reason="客户改从另一个客服账号来信"
    )
    customer.upstream_channel = open_kfid


def _profiles_refresh(customers: list[Customer], client: WeComClient) -> None:
    """Nickname and avatar from `kf/customer/batchget` for customers we have none for: the profile
    the upstream keeps, never memory. A failure here costs the nickname, never the messages."""
    if not customers:
        return
    try:
        found = {c.get("external_userid"): c for c in client.customers([c.conversation_id for c in customers])}
    except Exception as exc:  # the messages are stored; the nickname can wait for the next message
        logger.warning("wecom: customer profiles not refreshed (%s)", exc.__class__.__name__)
        return
    for customer in customers:
        data = found.get(customer.conversation_id)
        if not data:
            continue
        try:
            customer_upstream_profile_update(
                customer=customer,
                display_name=_clean_text(data.get("nickname"))[:100],
                avatar_url=str(data.get("avatar") or "")[:500],
                actor=SYNC_ACTOR,
                reason="企业微信客服资料",
            )
        except ApplicationError as exc:  # an avatar that is no URL, say: the messages stay stored
            logger.warning("wecom: customer profile refused (%s)", exc.code)


def wecom_sync(
    *, account_id: str, open_kfid: str, token: str = "", client: WeComClient | None = None, actor: Actor = SYNC_ACTOR
) -> SyncResult:
    """Pull one open_kfid's new messages into the account's store (see the module's note)."""
    connection = connection_get(account_id)
    if connection is None:
        raise NotFound(f"账号 {account_id} 没有连接企业微信客服 (not connected).", code="wecom_not_connected")
    if not connection.account.is_active:
        raise NotFound(f"账号 {account_id} 已停用 (account inactive).", code="account_inactive")
    client = client or WeComClient(credentials_of(connection))
    result = SyncResult()
    row, _created = WeComCursor.objects.get_or_create(account_id=account_id, open_kfid=open_kfid)
    taken, watch_in = _lease(row)
    if not taken:
        result.busy, result.watch_in = True, watch_in
        return result
    try:
        cursor = WeComCursor.objects.get(pk=row.pk).cursor
        while True:
            try:
                page = client.sync_msg(open_kfid=open_kfid, cursor=cursor, token=token, limit=PAGE_LIMIT)
            except WeComApiError as exc:
                if not token or exc.errcode != MSG_TOKEN_INVALID:
                    raise
                # The callback's token lives 10 minutes (a queue that backed up): pull without it.
                token = ""
                continue
            listed = page.get("msg_list")
            messages: list[dict[str, Any]] = listed if isinstance(listed, list) else []
            result.pages += 1
            result.fetched += len(messages)
            with use_account(account_id):
                _ingest_page(messages, open_kfid=open_kfid, client=client, result=result)
            raw_cursor = page.get("next_cursor")
            next_cursor: str = raw_cursor if isinstance(raw_cursor, str) else ""
            moved = bool(next_cursor) and next_cursor != cursor
            if moved:
                cursor = next_cursor
            # Only now: the page's messages are committed.
            WeComCursor.objects.filter(pk=row.pk).update(
                cursor=cursor, synced_at=timezone.now(), messages_synced=F("messages_synced") + len(messages)
            )
            if page.get("has_more") and not moved:
                # WeCom says there is more but gave no new cursor: asking again would loop for ever.
                logger.warning("wecom: %s/%s has_more without a new cursor; stopping this pull", account_id, open_kfid)
            elif page.get("has_more") and result.pages >= PAGES_PER_PULL:
                result.more = True
            elif page.get("has_more"):
                _renew(row)
                continue
            if _release(row):
                token = ""  # the waiting callback's token was not ours
                continue
            break
    except BaseException:
        WeComCursor.objects.filter(pk=row.pk, leased_by=_holder()).update(leased_until=None, leased_by="")
        raise
    return result
