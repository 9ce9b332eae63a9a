"""Session search (spec §1, §7): keyword search over a customer's or the whole account's messages.

The indexes are made by migration `memory.0004_message_search_index`: on SQLite an FTS5 `trigram`
index over `conversations_message` kept in sync by triggers; on PostgreSQL a `pg_trgm` GIN index.
Terms shorter than three characters (most Chinese words, e.g. "地铁") cannot use a trigram index
and fall back to a bounded LIKE scan; a SQLite database whose index is incomplete (e.g. a later
migration rebuilt the message table and dropped the triggers) is searched by LIKE alone.
"""

from __future__ import annotations

import logging

from django.db import connections
from django.db.models import QuerySet

from conversations.models import Message
from conversations.selectors import customer_get
from qiwei_site.platform.errors import ValidationFailed
from qiwei_site.platform.tenancy import current_alias

logger = logging.getLogger(__name__)

# The names the migration creates (kept there too: a migration must not import app code).
FTS_TABLE = "memory_message_fts"
PG_INDEX = "memory_message_text_trgm"
MAX_QUERY_CHARS = 200
MAX_TERMS = 8
MAX_LIMIT = 200
# A LIKE-only search (every term < 3 characters) scans at most the newest N messages.
LIKE_SCAN_LIMIT = 50_000

_SQLITE_OBJECTS = (FTS_TABLE, f"{FTS_TABLE}_ad", f"{FTS_TABLE}_ai", f"{FTS_TABLE}_au")

FTS5 = "fts5"
PG_TRGM = "pg_trgm"
LIKE = "like"


def search_index_kind() -> str:
    """How the selected account database can be searched: FTS5, pg_trgm or LIKE only.

    Checked on every call on SQLite (one lookup in sqlite_master): an index with a missing table
    or trigger would give stale results, so it is not used. On PostgreSQL ILIKE on the column is
    correct with or without the GIN index, which only makes it fast.
    """
    connection = connections[current_alias()]
    if connection.vendor == "postgresql":
        return PG_TRGM
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("SELECT name FROM sqlite_master WHERE name IN (%s, %s, %s, %s)", list(_SQLITE_OBJECTS))
            present = {row[0] for row in cursor.fetchall()}
        if present == set(_SQLITE_OBJECTS):
            return FTS5
        logger.warning(
            "search: FTS5 index incomplete on %s (missing %s); using LIKE",
            connection.alias,
            sorted(set(_SQLITE_OBJECTS) - present),
        )
    return LIKE


def _terms(query: str) -> list[str]:
    query = (query or "").strip()
    if not query:
        raise ValidationFailed("请输入搜索关键词 (q is required).", code="empty_query")
    if "\x00" in query:
        raise ValidationFailed("搜索关键词不能包含空字符 (q must not contain NUL).", code="invalid_query")
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationFailed(
            f"搜索关键词最长 {MAX_QUERY_CHARS} 个字符 (q is at most {MAX_QUERY_CHARS} chars).", code="query_too_long"
        )
    terms = list(dict.fromkeys(query.split()))
    if len(terms) > MAX_TERMS:
        raise ValidationFailed(f"最多 {MAX_TERMS} 个关键词 (at most {MAX_TERMS} terms).", code="too_many_terms")
    return terms


def _like_pattern(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def search_messages(*, query: str, conversation_id: str | None, limit: int = 50) -> list[Message]:
    """Effective messages containing every whitespace-separated term, newest first.

    `conversation_id` scopes the search to one customer's whole history; None searches the
    whole account. Raises ValidationFailed on an empty or oversized query, NotFound for an
    unknown conversation.
    """
    terms = _terms(query)
    if not 1 <= int(limit) <= MAX_LIMIT:
        raise ValidationFailed(f"limit 必须在 1–{MAX_LIMIT} 之间 (limit must be 1–{MAX_LIMIT}).", code="invalid_limit")
    messages: QuerySet[Message] = Message.objects.filter(is_effective=True).select_related("customer")
    if conversation_id is not None:
        messages = messages.filter(customer=customer_get(conversation_id))
    index = search_index_kind()
    long_terms = [term for term in terms if len(term) >= 3]
    short_terms = [term for term in terms if len(term) < 3]
    if index == FTS5 and long_terms:
        match = " AND ".join('"' + term.replace('"', '""') + '"' for term in long_terms)
        messages = messages.extra(
            where=[f"conversations_message.id IN (SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s)"],
            params=[match],
        )
    elif index == PG_TRGM:
        # ILIKE on the bare column is what the gin_trgm_ops index serves (Django's icontains wraps UPPER()).
        for term in long_terms:
            messages = messages.extra(where=["conversations_message.text ILIKE %s"], params=[_like_pattern(term)])
    else:
        short_terms = terms
    if short_terms and not long_terms:
        # Nothing narrows the search through an index: bound the scan to the newest messages.
        cutoff = messages.order_by("-id").values_list("id", flat=True)[LIKE_SCAN_LIMIT - 1 : LIKE_SCAN_LIMIT]
        floor = next(iter(cutoff), None)
        if floor is not None:
            messages = messages.filter(id__gte=floor)
    for term in short_terms:
        messages = messages.filter(text__icontains=term)
    return list(messages.order_by("-sent_at", "-id")[:limit])
