"""Recall over a customer's history (spec §4): the features the reader computes
(`qiwei_site.reading.recall`) are stored per message at ingest (`MessageRecallFeatures`), and
`recall_for` ranks older effective messages against the latest customer message by them, so no
process tokenises the history on every turn. The dates a message names (昨天, 上周) are stored as
written and read against the local day it was sent, when ranking.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils import timezone

from qiwei_site.reading.recall import (
    FEATURE_VERSION,
    Document,
    Feature,
    document,
    document_decode,
    features,
    features_encode,
    has_dates,
    rank_documents,
    text_fingerprint,
)

if TYPE_CHECKING:
    from conversations.models import Customer, Message

logger = logging.getLogger(__name__)

# --- stored features ---------------------------------------------------------------------


def _feature_row(model: Any, message_id: int, text: str, text_features: Sequence[Feature] | None = None) -> Any:
    return model(
        message_id=message_id,
        version=FEATURE_VERSION,
        text_fingerprint=text_fingerprint(text),
        features=features_encode(features(text) if text_features is None else text_features),
    )


def _upsert(model: Any, rows: list[Any], using: str) -> int:
    if rows:
        model._default_manager.using(using).bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["message"],
            update_fields=["version", "text_fingerprint", "features"],
        )
    return len(rows)


def _store(
    pairs: Sequence[tuple[int, str, Sequence[Feature] | None]], using: str | None = None, *, new: bool = False
) -> int:
    """Upsert the features of (message id, text, features or None to compute) triples (`new`: the
    messages have none yet, a plain insert)."""
    from memory.models import MessageRecallFeatures
    from qiwei_site.platform import sql
    from qiwei_site.platform.tenancy import current_alias

    rows = [_feature_row(MessageRecallFeatures, pk, text, text_features) for pk, text, text_features in pairs]
    if new:
        return len(sql.insert(rows, using=using or current_alias()))
    return _upsert(MessageRecallFeatures, rows, using or current_alias())


def recall_features_store(
    *,
    messages: Iterable[Message],
    computed: Sequence[Sequence[Feature]] | None = None,
    using: str | None = None,
    new: bool = False,
) -> int:
    """Compute and store (or replace) the recall features of saved messages; returns rows written.

    Derived data, like the search index: no audit row, no history. Called at ingest in the same
    transaction as the messages, with the features it has already `computed` (one per message,
    in order) and `new` (the messages were inserted in this transaction: none has features yet, so
    a plain insert, not an upsert); recall stores those it finds missing or stale.
    """
    saved = list(messages)
    precomputed: list[Sequence[Feature] | None] = list(computed) if computed is not None else [None] * len(saved)
    pairs = [
        (message.pk, message.text, text_features)
        for message, text_features in zip(saved, precomputed, strict=True)
        if message.pk is not None
    ]
    return _store(pairs, using, new=new)


def recall_features_refresh(*, message_ids: Iterable[int]) -> int:
    """Recompute the stored features of messages whose text was changed in place (a scrub), so no
    feature keeps a word the text no longer holds; returns rows written."""
    from conversations.models import Message

    ids = list(message_ids)
    if not ids:
        return 0
    return recall_features_store(messages=Message.objects.filter(pk__in=ids).only("id", "text"))


def recall_features_backfill(
    *,
    using: str | None = None,
    batch_size: int = 1000,
    message_model: Any = None,
    features_model: Any = None,
) -> int:
    """Store features for every message that has none, has them from another FEATURE_VERSION or of
    an older text, in batches by id (SQLite and PostgreSQL alike); returns rows written.

    The migration passes its historical models; the command uses the current ones.
    """
    if message_model is None or features_model is None:
        from conversations.models import Message
        from memory.models import MessageRecallFeatures

        message_model, features_model = Message, MessageRecallFeatures
    if using is None:
        from qiwei_site.platform.tenancy import current_alias

        using = current_alias()
    written = 0
    last_id = 0
    while True:
        batch = list(
            message_model._default_manager.using(using)
            .filter(pk__gt=last_id)
            .order_by("pk")
            .values_list("pk", "text")[:batch_size]
        )
        if not batch:
            return written
        last_id = batch[-1][0]
        current = dict(
            features_model._default_manager.using(using)
            .filter(message_id__in=[pk for pk, _text in batch], version=FEATURE_VERSION)
            .values_list("message_id", "text_fingerprint")
        )
        rows = [
            _feature_row(features_model, pk, text) for pk, text in batch if current.get(pk) != text_fingerprint(text)
        ]
        written += _upsert(features_model, rows, using)


def _stored_document(text: str, version: int | None, fingerprint: str | None, encoded: str | None) -> Document | None:
    """A candidate's stored features when they are of this version and of its current text."""
    if encoded is None or version != FEATURE_VERSION or fingerprint != text_fingerprint(text):
        return None
    try:
        return document_decode(encoded)
    except ValueError:
        return None


# A turn ranks the same ~240 candidates the last turn ranked, so each candidate's checked and
# decoded features are kept per process: a build decodes only the rows it has not seen. The key is
# everything the answer is computed from (the row's text, version, fingerprint and stored bytes)
# beside the account and message id, so a rewritten row (a mask, a scrub, a new FEATURE_VERSION)
# is a new key and a forgotten message, no longer read, is never asked for; the old entries age
# out. Hashing the key is C-speed memory reading, far cheaper than the check and the decode.
# Bounded by entries: ~1.5 KiB each (the row's strings and the interned document; RSS measured), so
# ~30 MiB a process at most, ~80 customers' candidates.
DECODED_CACHE_SIZE = 20_000

_DecodedKey = tuple[str | None, int, str, int | None, str | None, str | None]
# (the document, or None when the stored features are not current; whether it names a date)
_Decoded = tuple[Document | None, bool]


class _DecodedCache:
    """A bounded, thread-safe LRU of `_stored_document` answers. The documents are shared by every
    build that hits them: ranking reads them and never changes them."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[_DecodedKey, _Decoded] = OrderedDict()
        self._lock = threading.Lock()

    def get_many(self, keys: Sequence[_DecodedKey]) -> list[_Decoded | None]:
        """`get` for a build's candidates, under the lock once (240 a build)."""
        with self._lock:
            entries = self._entries
            found = [entries.get(key) for key in keys]
            for key, hit in zip(keys, found, strict=True):
                if hit is not None:
                    entries.move_to_end(key)
            return found

    def put_many(self, pairs: Sequence[tuple[_DecodedKey, _Decoded]]) -> None:
        """Keep a build's newly decoded candidates, under the lock once."""
        with self._lock:
            entries = self._entries
            for key, decoded in pairs:
                entries[key] = decoded
                entries.move_to_end(key)
            while len(entries) > self.size:
                entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def forget(self, account: str | None, message_ids: set[int]) -> int:
        with self._lock:
            gone = [key for key in self._entries if key[0] == account and key[1] in message_ids]
            for key in gone:
                del self._entries[key]
            return len(gone)

    def __len__(self) -> int:
        return len(self._entries)


_DECODED = _DecodedCache(DECODED_CACHE_SIZE)


def decoded_cache_clear() -> None:
    """Empty this process's cache of decoded candidates (tests; a cold benchmark build)."""
    _DECODED.clear()


def decoded_cache_forget(*, message_ids: Iterable[int]) -> int:
    """Drop this process's decoded entries of the selected account's messages (forget, erase, a
    mask): nothing would be served from them (their rows are gone or rewritten), but their words
    need not wait in memory for the LRU to push them out. Other processes' entries age out."""
    from qiwei_site.platform.tenancy import current_account

    return _DECODED.forget(current_account(), set(message_ids))


def _candidate_decode(key: _DecodedKey) -> _Decoded:
    """A candidate's current stored document (None: tokenise it) and whether it names a date, for
    a candidate the cache did not hold (keyed by this account's row as read: a changed row is a new
    key); the caller keeps it in the cache."""
    _account, _pk, text, version, fingerprint, encoded = key
    stored = _stored_document(text, version, fingerprint, encoded)
    # On the stored text: cheaper than the decoded keys.
    return (stored, stored is not None and encoded is not None and has_dates(encoded))


def _store_missing(pairs: list[tuple[int, str, Sequence[Feature] | None]]) -> None:
    """Best effort: a failed write (a locked SQLite database) leaves recall working, uncached."""
    from django.db import DatabaseError

    from qiwei_site.platform.tenancy import account_atomic

    try:
        with account_atomic():
            _store(pairs)
    except DatabaseError:
        logger.warning("recall: could not store features for %s messages", len(pairs), exc_info=True)


# --- recall over a customer's history ---------------------------------------------------


@dataclass(frozen=True)
class RecalledMessage:
    id: int
    direction: str
    sender: str
    text: str
    sent_at: datetime


# The columns `recall_from_rows` reads, for a `values_list` over messages (the features by a LEFT
# JOIN): a caller reading the recent window and the recall candidates in one query selects these.
RECALL_COLUMNS = (
    "id",
    "direction",
    "sender",
    "text",
    "sent_at",
    "recall_features__version",
    "recall_features__text_fingerprint",
    "recall_features__features",
)


def _local_day(moment: datetime | None) -> date | None:
    """The day a message was sent where the account is (昨天 means the day before there)."""
    if moment is None:
        return None
    return (timezone.localtime(moment) if timezone.is_aware(moment) else moment).date()


def recall_from_rows(
    query_text: str, rows: Sequence[Sequence[Any]], limit: int, *, query_sent_at: datetime | None = None
) -> list[RecalledMessage]:
    """The best `limit` of candidate rows (RECALL_COLUMNS, oldest first) for `query_text` (sent at
    `query_sent_at`: its relative dates are read against that day), in time order. Rows without
    current stored features are tokenised, and their features stored."""
    if limit <= 0 or not rows or not query_text.strip():
        return []
    documents: list[Document] = []
    sent_on: list[date | None] = []
    missing: list[tuple[int, str, Sequence[Feature] | None]] = []
    from qiwei_site.platform.tenancy import current_account

    account = current_account()
    keys = [(account, row[0], row[3], row[5], row[6], row[7]) for row in rows]
    cached = _DECODED.get_many(keys)
    decoded: list[tuple[_DecodedKey, _Decoded]] = []
    for key, hit, (pk, _direction, _sender, text, sent_at, _version, _fingerprint, _encoded) in zip(
        keys, cached, rows, strict=True
    ):
        if hit is None:
            hit = _candidate_decode(key)
            decoded.append((key, hit))
        stored, names_dates = hit
        if stored is None:
            text_features = features(text)
            missing.append((pk, text, text_features))
            stored = document(text_features)
            names_dates = has_dates(stored[0])
        documents.append(stored)
        # Only a message naming a date needs its day: the others are ranked as they are.
        sent_on.append(_local_day(sent_at) if names_dates else None)
    if decoded:
        _DECODED.put_many(decoded)
    if missing:
        _store_missing(missing)
    best = rank_documents(features(query_text), documents, limit, sent_on=sent_on, query_on=_local_day(query_sent_at))
    chosen = sorted((rows[index] for index in best), key=lambda row: (row[4], row[0]))
    return [
        RecalledMessage(id=pk, direction=direction, sender=sender, text=text, sent_at=sent_at)
        for pk, direction, sender, text, sent_at, *_features in chosen
    ]


def recall_for(
    customer: Customer, query_message: Message | None, *, window: Sequence[Sequence[Any]] | None = None
) -> list[RecalledMessage]:
    """Older effective messages relevant to `query_message`, in time order.

    Only messages older than the newest QIWEI_AGENT_MEMORY_RECENT_MESSAGES (counted up to the
    query message) are candidates, and at most QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT of them,
    newest first, are scored; the best QIWEI_AGENT_MEMORY_RECALL_LIMIT are kept. Candidates are
    read as tuples with their stored features in one query; those without (written by a path
    that does not store them, or before a FEATURE_VERSION change) are tokenised and stored.

    A caller that has already read those candidates (the context builder reads them with the
    recent window, in one query) passes them as `window`: RECALL_COLUMNS rows, newest first,
    exactly the rows this would read; nothing is read then.
    """
    limit = settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT
    scan = settings.QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT
    recent = settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES
    if query_message is None or limit <= 0 or scan <= 0 or not query_message.text.strip():
        return []
    if window is not None:
        rows = list(window[:scan])
    else:
        from conversations.selectors import messages_up_to

        # The window ends at the query message, so an older turn can be rebuilt as it was.
        history = messages_up_to(customer, query_message)
        rows = list(history.values_list(*RECALL_COLUMNS)[recent : recent + scan])
    # Oldest first, so the ranking's tie-break (later index wins) favours the newer message.
    rows.reverse()
    return recall_from_rows(query_message.text, rows, limit, query_sent_at=query_message.sent_at)
