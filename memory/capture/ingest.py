"""Ingest WeCom messages (DESIGN §6.1, §12): idempotent on `external_id`, and every new inbound
message gets its durable capture job in the same transaction.

Race-free: one conversation's ingests are serialised on its customer row (SQLite's IMMEDIATE
transactions already serialise writers), and a lost race — a unique violation, a serialization
failure or deadlock — is retried a bounded number of times, then answered 503 with Retry-After.
No message is lost and none is stored twice."""

from __future__ import annotations

import datetime as dt
import logging
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connections
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from conversations.models import AuditAction, Customer, Message, MessageDirection, MessageSecret
from conversations.received import stored_form
from conversations.selectors import messages_up_to
from conversations.services import customer_get_or_create
from memory import sql
from memory.capture.jobs import enqueue_after_commit
from memory.context.recall import recall_features_store
from memory.models import CaptureJob
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.errors import StorageUnavailable, ValidationFailed, storage_fault, validate_identifier
from qiwei_site.platform.history import Actor
from qiwei_site.platform.sql import insert
from qiwei_site.platform.tenancy import account_atomic, current_alias
from qiwei_site.reading.recall import features
from qiwei_site.reading.safety import CREDENTIAL, VERIFICATION_CODE, bare_secret

logger = logging.getLogger(__name__)

MAX_TEXT_CHARS = 8000
MAX_BATCH = 500
MAX_SENDER_CHARS = 100
# Retries after losing a race (unique violation, serialization failure, deadlock): fast, bounded.
INGEST_ATTEMPTS = 5
RETRY_BACKOFF_SECONDS = 0.02
# A lock wait that already lasted this long was the full busy/lock timeout: answer 503 at once
# instead of waiting it out again (the whole request stays within one timeout).
LOCK_RETRY_BELOW_SECONDS = 1.0
# PostgreSQL waits for a row lock forever by default; SQLite's busy timeout is 5 s (tenancy).
POSTGRES_LOCK_TIMEOUT = "5s"
_SURROGATE = re.compile("[\ud800-\udfff]")
# A message outside these years is garbage; dates before 1901 even serialize with Shanghai's
# local-mean-time offset (+08:05:43), which is not a valid RFC 3339 date-time.
SENT_AT_EARLIEST = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
SENT_AT_LATEST = dt.datetime(2100, 1, 1, tzinfo=dt.UTC)


@dataclass
class IngestResult:
    customer: Customer
    created: list[Message] = field(default_factory=list)
    duplicates: list[Message] = field(default_factory=list)
    jobs: list[CaptureJob] = field(default_factory=list)

    @property
    def messages(self) -> list[Message]:
        return [*self.created, *self.duplicates]


def _invalid(index: int, detail: str) -> ValidationFailed:
    return ValidationFailed(f"第 {index + 1} 条消息：{detail}", code="invalid_message")


def _clean(index: int, raw: Any, now: dt.datetime) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _invalid(index, "必须是 JSON 对象 (each message must be an object).")
    try:
        # A string, never a coerced bool or number: `true` must not become the id "True".
        external_id = validate_identifier(raw.get("external_id"), field="external_id")
    except ValidationFailed as exc:
        raise _invalid(index, exc.detail) from None
    direction = raw.get("direction", MessageDirection.INBOUND)
    if not isinstance(direction, str) or direction not in MessageDirection.values:
        raise _invalid(
            index, "direction 必须是 inbound、outbound 或 system (direction must be inbound|outbound|system)."
        )
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise _invalid(index, "text 不能为空 (text must be a non-empty string).")
    if "\x00" in text:
        raise _invalid(index, "text 不能包含空字符 (text must not contain NUL).")
    if _SURROGATE.search(text):
        raise _invalid(index, "text 含有孤立的代理字符 (text contains a lone surrogate).")
    if len(text) > MAX_TEXT_CHARS:
        raise _invalid(index, f"text 最长 {MAX_TEXT_CHARS} 个字符 (text is at most {MAX_TEXT_CHARS} chars).")
    sender = raw.get("sender")
    if sender is None:
        sender = ""
    if not isinstance(sender, str) or len(sender) > MAX_SENDER_CHARS or "\x00" in sender or _SURROGATE.search(sender):
        raise _invalid(index, f"sender 必须是最长 {MAX_SENDER_CHARS} 个字符的文本 (sender must be a short string).")
    return {
        "external_id": external_id,
        "direction": direction,
        "text": text,
        "sender": sender.strip(),
        "sent_at": _clean_sent_at(index, raw.get("sent_at"), now),
    }


def _clean_sent_at(index: int, raw: Any, now: dt.datetime) -> dt.datetime:
    if raw in (None, ""):
        return now
    if isinstance(raw, dt.datetime):
        sent_at = raw
    elif isinstance(raw, str):
        try:
            parsed = parse_datetime(raw.strip())
        except ValueError:
            parsed = None
        if parsed is None:
            raise _invalid(index, "sent_at 必须是 ISO 8601 时间 (sent_at must be an ISO 8601 datetime).")
        sent_at = parsed
    else:
        raise _invalid(index, "sent_at 必须是 ISO 8601 时间 (sent_at must be an ISO 8601 datetime).")
    if timezone.is_naive(sent_at):
        raise _invalid(index, "sent_at 必须带时区，例如 +08:00 (sent_at needs a timezone offset).")
    if not SENT_AT_EARLIEST <= sent_at < SENT_AT_LATEST:
        raise _invalid(index, "sent_at 必须在 2000–2099 年之间 (sent_at must be within 2000–2099).")
    skew = settings.QIWEI_INGEST_MAX_FUTURE_SKEW_SECONDS
    if sent_at > now + dt.timedelta(seconds=skew):
        # Otherwise it would stay "the latest customer message" until that date.
        raise _invalid(
            index,
            f"sent_at 晚于服务器当前时间超过 {skew} 秒，请检查发送方时钟 "
            f"(sent_at is more than {skew} s in the future; check the sender's clock).",
        )
    return sent_at


# A value counts as the secret a customer announced ("密码发你" … "Lm20461qa") only right after the
# announcement: the customer's very next message, within this long, with nothing of ours between.
ANNOUNCEMENT_WINDOW = dt.timedelta(minutes=30)


def _announcement_before(customer: Customer, cleaned: list[dict[str, Any]]) -> tuple[str, dt.datetime] | None:
    """The customer's latest stored message (text, sent time), when it is theirs and the batch's
    first message is theirs and could be a bare secret; otherwise nothing is read."""
    first = cleaned[0] if cleaned else None
    if first is None or first["direction"] != MessageDirection.INBOUND or customer.pk is None:
        return None
    if not (bare_secret(first["text"], CREDENTIAL) or bare_secret(first["text"], VERIFICATION_CODE)):
        return None
    latest = messages_up_to(customer, None).first()
    if latest is None or latest.direction != MessageDirection.INBOUND:
        return None
    return latest.text, latest.sent_at


def _store(customer: Customer, cleaned: list[dict[str, Any]], actor: Actor, reason: str) -> IngestResult:
    # Secrets are masked and their originals sealed, and recall features tokenised (from the masked
    # text: the only text stored), before the transaction, so SQLite's write lock is not held for it.
    # On copies: a retried attempt starts again from the words as received.
    cleaned = [dict(item) for item in cleaned]
    sealed: dict[str, tuple[str, tuple[str, ...]]] = {}
    previous = _announcement_before(customer, cleaned)
    for item in cleaned:
        words = item["text"]
        announced = previous[0] if previous and item["sent_at"] - previous[1] <= ANNOUNCEMENT_WINDOW else None
        item["text"], original, categories = stored_form(words, announced)
        if original is not None:
            sealed.setdefault(item["external_id"], (original, categories))
        previous = (words, item["sent_at"]) if item["direction"] == MessageDirection.INBOUND else None
    text_features = [features(item["text"]) for item in cleaned]
    with account_atomic():
        connection = connections[current_alias()]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL lock_timeout = '{POSTGRES_LOCK_TIMEOUT}'")
        # One ingest per conversation at a time (PostgreSQL; SQLite writers are serialised anyway):
        # the duplicate check below then sees every message stored before, and last_message_at
        # is read fresh, so a slower batch cannot move it back.
        customer = sql.customer_locked(customer.pk)
        result = IngestResult(customer=customer)
        ids = [item["external_id"] for item in cleaned]
        existing = {m.external_id: m for m in sql.messages_by_external_id(customer.pk, ids)}
        fresh: list[Message] = []
        fresh_features = []
        for item, item_features in zip(cleaned, text_features, strict=True):
            if item["external_id"] in existing:
                result.duplicates.append(existing[item["external_id"]])
                continue
            message = Message(customer=customer, **item)
            existing[item["external_id"]] = message  # a repeat inside the same batch is a duplicate too
            fresh.append(message)
            fresh_features.append(item_features)
        if not fresh:
            return result
        # Plain inserts (`sql.insert`: `bulk_create`'s statement without its compiler's cost).
        result.created = insert(fresh)
        insert(
            [
                MessageSecret(
                    message=message,
                    sealed=sealed[message.external_id][0],
                    categories=list(sealed[message.external_id][1]),
                )
                for message in result.created
                if message.external_id in sealed
            ]
        )
        # Stored with the messages, instead of tokenised again on every later turn's recall.
        recall_features_store(messages=result.created, computed=fresh_features, new=True)
        now = timezone.now()
        jobs = [
            CaptureJob(customer=customer, message=m, next_attempt_at=now, enqueued_at=now)
            for m in result.created
            if m.direction == MessageDirection.INBOUND
        ]
        result.jobs = insert(jobs)
        latest = max(m.sent_at for m in result.created)
        if customer.last_message_at is None or latest > customer.last_message_at:
            customer.last_message_at, customer.updated_at = latest, now
            sql.customer_last_message_set(customer.pk, latest, now)
        audit_record(
            action=AuditAction.MESSAGES_INGESTED,
            conversation_id=customer.conversation_id,
            actor=actor,
            reason=reason,
            payload={
                "message_ids": [m.pk for m in result.created],
                "duplicates": len(result.duplicates),
                "capture_job_ids": [j.pk for j in result.jobs],
            },
        )
        enqueue_after_commit([j.pk for j in result.jobs])
    return result


def _customer_create(conversation_id: str, display_name: str, actor: Actor, reason: str) -> Customer:
    """The conversation's customer on first sight (or theirs, if a concurrent request made it first)."""
    customer, _created = customer_get_or_create(
        conversation_id=conversation_id, display_name=display_name, actor=actor, reason=reason
    )
    return customer


def messages_ingest(
    *, conversation_id: str, messages: list[dict[str, Any]], actor: Actor, reason: str = "企微消息入库"
) -> IngestResult:
    """Store messages for a conversation (creating the customer on first sight) and queue capture."""
    if not isinstance(messages, list) or not messages:
        raise ValidationFailed("至少需要一条消息 (at least one message is required).", code="invalid_message")
    if len(messages) > MAX_BATCH:
        raise ValidationFailed(f"一次最多 {MAX_BATCH} 条消息 (at most {MAX_BATCH} messages per request).")
    now = timezone.now()
    cleaned = [_clean(index, raw, now) for index, raw in enumerate(messages)]
    conversation_id = validate_identifier(conversation_id, field="conversation_id", code="invalid_conversation_id")
    display_name = next(
        (c["sender"] for c in cleaned if c["direction"] == MessageDirection.INBOUND and c["sender"]), ""
    )
    cause = "contention"
    for attempt in range(1, INGEST_ATTEMPTS + 1):
        started = time.monotonic()
        try:
            customer = sql.customer_by_conversation(conversation_id) or _customer_create(
                conversation_id, display_name, actor, reason
            )
            return _store(customer, cleaned, actor, reason)
        except (IntegrityError, Customer.DoesNotExist):
            # A concurrent ingest stored some of these first, or the customer was erased meanwhile:
            # the next pass sees the stored ones as duplicates (or creates the customer again).
            cause = "contention"
        except DatabaseError as exc:
            cause = storage_fault(exc) or ""
            waited_out = time.monotonic() - started >= LOCK_RETRY_BELOW_SECONDS
            if cause not in ("contention", "locked") or (cause == "locked" and waited_out):
                raise
        logger.info("ingest for %s lost a race (%s), attempt %s", conversation_id, cause, attempt)
        if attempt < INGEST_ATTEMPTS:
            time.sleep(RETRY_BACKOFF_SECONDS * (2 ** (attempt - 1)) * (0.5 + random.random()))
    raise StorageUnavailable(cause)
