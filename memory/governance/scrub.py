"""What forget and erase leave behind, removed: quotes of the content in reasons, and on SQLite the
bytes that deleted rows leave in free pages, the WAL and the full-text index (issue 14, item 7).

The quote rule (`Quotes`): a text quotes a content when it shares with it a run of at least
4 characters containing a character other than a Latin letter, space or punctuation (Chinese,
digits), or a run of at least 8 characters of any kind; a content of 2 to 7 characters is
also a quote wherever it appears whole ("徐汇", "老王头"). Each such run is replaced by
`FORGOTTEN_MARK`. Forget applies it with the item's values (all versions, and a profile field's
bare value); erase with every text value of the customer's rows. A draft's stored prompt gets the
same treatment in the sections that quote the customer (`prompt_redact`).
"""

from __future__ import annotations

import logging
import string
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

from django.apps import apps
from django.db import connections, models, transaction
from django.db.models import F
from django.utils import timezone

from conversations.gateway import LoopbackGateway
from conversations.models import AuditAction, AuditEvent, Customer, Draft
from memory.models import CaptureJob, MemorySnapshot, StorageScrub
from qiwei_site.platform.audit import audit_record, audit_words_rewrite
from qiwei_site.platform.tenancy import current_alias, is_account_model, on_account_commit

logger = logging.getLogger(__name__)

FORGOTTEN_MARK = "［已遗忘内容已移除］"
QUOTE_MIN_CHARS = 4
# English words and identifiers ("the metro", "customer") are common to unrelated texts: a run of
# Latin letters, spaces and punctuation only counts as a quote from this length on.
WEAK_QUOTE_MIN_CHARS = 8
WHOLE_MIN_CHARS = 2
_WEAK = frozenset(string.ascii_letters + string.whitespace + string.punctuation)

FTS_TABLE = "memory_message_fts"  # memory/migrations/0004_message_search_index.py


class Quotes:
    """The parts of some contents that a text must not keep (see the module's rule)."""

    def __init__(self, contents: Iterable[str]) -> None:
        self.whole: set[str] = set()
        self.grams: set[str] = set()
        self.weak_grams: set[str] = set()
        self.contents: list[str] = []
        for content in contents:
            self.add(content)

    def add(self, content: str) -> None:
        self.contents.append(content)
        for variant in {content, " ".join(content.split())}:
            if len(variant.strip()) < WHOLE_MIN_CHARS:
                continue
            if len(variant) < QUOTE_MIN_CHARS:
                self.whole.add(variant)
                continue
            for start in range(len(variant) - QUOTE_MIN_CHARS + 1):
                gram = variant[start : start + QUOTE_MIN_CHARS]
                if not _WEAK.issuperset(gram):
                    self.grams.add(gram)
            if len(variant) < WEAK_QUOTE_MIN_CHARS:
                self.whole.add(variant)
            for start in range(len(variant) - WEAK_QUOTE_MIN_CHARS + 1):
                self.weak_grams.add(variant[start : start + WEAK_QUOTE_MIN_CHARS])

    def __bool__(self) -> bool:
        return bool(self.whole or self.grams or self.weak_grams)

    def _covered(self, text: str) -> list[bool]:
        covered = [False] * len(text)
        for start in range(len(text)):
            for size, grams in ((QUOTE_MIN_CHARS, self.grams), (WEAK_QUOTE_MIN_CHARS, self.weak_grams)):
                if start + size <= len(text) and text[start : start + size] in grams:
                    covered[start : start + size] = [True] * size
        for whole in self.whole:
            start = text.find(whole)
            while start != -1:
                covered[start : start + len(whole)] = [True] * len(whole)
                start = text.find(whole, start + 1)
        return covered

    def scrub(self, text: str) -> str:
        """`text` with every quoted run replaced by the mark (unchanged when it quotes nothing)."""
        if not text or not self:
            return text
        covered = self._covered(text)
        if not any(covered):
            return text
        parts: list[str] = []
        for index, char in enumerate(text):
            if not covered[index]:
                parts.append(char)
            elif index == 0 or not covered[index - 1]:
                parts.append(FORGOTTEN_MARK)
        return "".join(parts)

    def scrub_json(self, value: Any) -> Any:
        """A JSON value with its strings scrubbed (keys are field names, kept)."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, list):
            return [self.scrub_json(v) for v in value]
        if isinstance(value, dict):
            return {k: self.scrub_json(v) for k, v in value.items()}
        return value


def json_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from json_strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from json_strings(v)


# --- rows about a customer --------------------------------------------------------------------


def historical_models_with_customer() -> list[type[models.Model]]:
    """simple-history tables of account apps that reference a customer (found generically, so
    apps added later, such as session epochs, are covered without being imported here)."""
    found: list[type[models.Model]] = []
    for model in apps.get_models():
        field_names = {field.name for field in model._meta.get_fields()}
        if "history_id" in field_names and "customer" in field_names and is_account_model(model):
            found.append(model)
    return found


def _models_with_customer() -> list[type[models.Model]]:
    found: list[type[models.Model]] = []
    for model in apps.get_models():
        names = {field.name for field in model._meta.get_fields()}
        if "customer" in names and is_account_model(model):
            found.append(model)
    return found


# Not words about the customer: identifiers (their digit runs would match unrelated numbers in
# reasons), the context trace (ids, versions, stage names), the sender, which is either the
# customer (their display name is collected) or our staff, and reasons and errors, which are
# what gets scrubbed, not what a quote is taken from.
_NOT_WORDS = frozenset(
    {
        "conversation_id",
        "external_id",
        "idempotency_key",
        "upstream_id",
        "session_id",
        "parent_session_id",
        "sha256",
        "key",
        "client",
        "key_fingerprint",
        "value_fingerprint",
        "context_trace",
        # A draft's prompt is assembled from the rows collected here (messages, memory, profile,
        # business state) plus our own instructions, whose words are not the customer's.
        "prompt",
        "sender",
        "reason",
        "error",
        "last_error",
    }
)


def _text_fields(model: type[models.Model]) -> list[str]:
    """Fields that hold words rather than states or bookkeeping: text without choices, JSON."""
    names: list[str] = []
    for field in model._meta.concrete_fields:
        if field.name.startswith("history_") or field.name in _NOT_WORDS:
            continue  # the change reason is a reason (scrubbed), not content; the rest is bookkeeping
        if isinstance(field, models.JSONField) or (
            isinstance(field, models.CharField | models.TextField) and not field.choices
        ):
            names.append(field.name)
    return names


def customer_texts(customer: Customer) -> Iterator[str]:
    """Every word stored about a customer: text and JSON values of their rows and history rows."""
    yield customer.display_name
    for model in [*_models_with_customer(), Customer.history.model]:
        fields = _text_fields(model)
        if not fields:
            continue
        rows = model._default_manager.filter(
            **({"id": customer.pk} if model is Customer.history.model else {"customer_id": customer.pk})
        )
        for values in rows.values_list(*fields):
            for value in values:
                yield from json_strings(value)


def _scrub_column(queryset: models.QuerySet[Any], field: str, quotes: Quotes, *, is_json: bool = False) -> int:
    return column_rewrite(queryset, field, quotes.scrub_json if is_json else quotes.scrub)


def column_rewrite(queryset: models.QuerySet[Any], field: str, rewrite: Callable[[Any], Any]) -> int:
    """Rewrite one column where `rewrite` changes it; queryset updates, so no history row records
    the old value."""
    changed = 0
    for pk, value in queryset.values_list("pk", field):
        if value in (None, "", [], {}):
            continue
        rewritten = rewrite(value)
        if rewritten != value:
            queryset.model._default_manager.filter(pk=pk).update(**{field: rewritten})
            changed += 1
    return changed


def audit_scrub(conversation_id: str, quotes: Quotes) -> int:
    """Replace quotes in a conversation's audit rows (reason and payload); returns rows changed.
    The audit is append-only in the database: this is the one rewrite it lets through
    (`audit_words_rewrite`, unlocked inside this transaction), and each row keeps its chain."""
    if not quotes:
        return 0
    rewritten: list[tuple[int, str, Any]] = []
    rows = AuditEvent.objects.filter(conversation_id=conversation_id).order_by("pk")
    for pk, reason, payload in rows.values_list("pk", "reason", "payload"):
        new_reason, new_payload = quotes.scrub(reason), quotes.scrub_json(payload)
        if new_reason != reason or new_payload != payload:
            rewritten.append((pk, new_reason, new_payload))
    if not rewritten:
        return 0
    return audit_words_rewrite(rewritten, using=current_alias())


def reasons_scrub(customer: Customer, quotes: Quotes) -> int:
    """Replace quotes in the reasons and explanations kept about a customer; returns rows changed.

    Audit rows (reason and payload), snapshot reasons, every history row's change reason, draft
    reasons, replies, final texts, errors and the model's raw error words in their traces (and their
    history), capture job errors, and the prompts kept on drafts (`prompts_scrub`).
    """
    if not quotes:
        return 0
    changed = audit_scrub(customer.conversation_id, quotes)
    changed += _scrub_column(MemorySnapshot.objects.filter(customer_id=customer.pk), "reason", quotes)
    changed += _scrub_column(CaptureJob.objects.filter(customer_id=customer.pk), "last_error", quotes)
    for history_model in historical_models_with_customer():
        rows = history_model._default_manager.filter(customer_id=customer.pk)
        changed += _scrub_column(rows, "history_change_reason", quotes)
    drafts: list[models.QuerySet[Any]] = [
        Draft.objects.filter(customer_id=customer.pk),
        Draft.history.filter(customer_id=customer.pk),
    ]
    for rows in drafts:
        changed += _scrub_column(rows, "reasons", quotes, is_json=True)
        changed += _scrub_column(rows, "error", quotes)
        # a model's reply may quote what was forgotten (a supervisor's note read in its prompt)
        changed += _scrub_column(rows, "reply", quotes)
        changed += _scrub_column(rows, "final_text", quotes)
        changed += column_rewrite(rows, "context_trace", lambda trace: _error_detail_scrub(trace, quotes))
    changed += prompts_scrub(customer, quotes)
    return changed


def _error_detail_scrub(trace: Any, quotes: Quotes) -> Any:
    """A draft's trace with the model's raw error words (`model.error_detail`, which may echo the
    customer's words back) scrubbed of the quotes; the rest of the trace is ids and offsets."""
    model = trace.get("model") if isinstance(trace, dict) else None
    if not isinstance(model, dict):
        return trace
    detail = model.get("error_detail")
    if not isinstance(detail, str) or (scrubbed := quotes.scrub(detail)) == detail:
        return trace
    return {**trace, "model": {**model, "error_detail": scrubbed}}


# The sections of a stored prompt that are ours (the knowledge base and the output contract), not
# the customer's: a forget leaves them as they were sent.
_OWN_PROMPT_SECTIONS = frozenset({"instructions", "output_contract"})


def _prompt_quotes(quotes: Quotes) -> Quotes:
    """The quotes as the prompt renders them too: quoted text is masked and NFKC-folded
    (memory.context.builder.quoted_text), so「预算４５００」reads「预算4500」there."""
    from qiwei_site.reading.quoting import quoted_text

    return Quotes([*quotes.contents, *(quoted_text(content) for content in quotes.contents)])


def prompt_redact(prompt: str, trace: dict[str, Any], scrub: Callable[[str], str]) -> tuple[str, dict[str, Any]]:
    """(prompt, trace) with the customer's sections rewritten by `scrub` (a forget's quotes replaced
    by `FORGOTTEN_MARK`, or a secret masked). Each section is scrubbed on its own and the trace's
    offsets are recomputed, so the sections still split the stored prompt; the trace says it was
    redacted. A prompt without section offsets is scrubbed whole."""
    sections = trace.get("prompt_sections")
    layout_ok = isinstance(sections, list) and all(
        isinstance(entry, dict)
        and isinstance(entry.get("start"), int)
        and isinstance(entry.get("end"), int)
        and 0 <= entry["start"] <= entry["end"] <= len(prompt)
        for entry in sections
    )
    if not layout_ok or not sections:
        scrubbed = scrub(prompt)
        return scrubbed, ({**trace, "prompt_redacted": True} if scrubbed != prompt else trace)
    parts: list[str] = []
    entries: list[dict[str, Any]] = []
    cursor = 0  # position in the old prompt
    for entry in sorted(sections, key=lambda e: (e["start"], e["end"])):
        start, end = entry["start"], entry["end"]
        parts.append(prompt[cursor:start] if start >= cursor else "")  # separators between sections
        text = prompt[start:end]
        if entry.get("key") not in _OWN_PROMPT_SECTIONS:
            text = scrub(text)
        new_start = sum(len(part) for part in parts)
        parts.append(text)
        entries.append({**entry, "start": new_start, "end": new_start + len(text), "chars": len(text)})
        cursor = max(cursor, end)
    parts.append(prompt[cursor:])
    scrubbed = "".join(parts)
    if scrubbed == prompt:
        return prompt, trace
    return scrubbed, {**trace, "prompt_sections": entries, "prompt_redacted": True}


def prompts_scrub(customer: Customer, quotes: Quotes) -> int:
    """Replace quotes of forgotten content in the prompts kept on the customer's drafts (the
    prompt is not in the drafts' history); returns drafts changed. Queryset updates: no history."""
    if not quotes:
        return 0
    prompt_quotes = _prompt_quotes(quotes)
    changed = 0
    rows = Draft.objects.filter(customer_id=customer.pk).exclude(prompt="")
    for pk, prompt, trace in rows.values_list("pk", "prompt", "context_trace"):
        scrubbed, new_trace = prompt_redact(prompt, trace if isinstance(trace, dict) else {}, prompt_quotes.scrub)
        if scrubbed != prompt:
            Draft.objects.filter(pk=pk).update(prompt=scrubbed, context_trace=new_trace)
            changed += 1
    return changed


# --- storage: SQLite free pages, WAL, full-text index; the loopback outbox ------------------------


def _sqlite(alias: str) -> bool:
    return connections[alias].vendor == "sqlite"


def secure_delete_on(alias: str | None = None) -> None:
    """Deleted rows are overwritten with zeros instead of left in free pages (per connection;
    memory/apps.py sets it on every account connection, this makes a service independent of it)."""
    alias = alias or current_alias()
    if _sqlite(alias):
        with connections[alias].cursor() as cursor:
            cursor.execute("PRAGMA secure_delete=ON")


def search_index_purge(alias: str | None = None) -> None:
    """Deleting from an FTS5 index only adds delete markers: the old segments keep the trigrams until
    they are merged. 'optimize' merges every segment into one without the deleted entries.
    (FTS5's own 'secure-delete' option needs SQLite ≥ 3.42 and changes the file format.)"""
    alias = alias or current_alias()
    if not _sqlite(alias):
        return  # PostgreSQL: the pg_trgm index entries go with VACUUM (README, production deployment)
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [FTS_TABLE])
        if cursor.fetchone() is not None:
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('optimize')")


def wal_truncate(alias: str) -> bool:
    """Copy the WAL into the database file and truncate it to zero bytes: the WAL keeps the old
    images of every page written since the last checkpoint. Waits for readers (the connection's
    busy timeout); returns False when one still held the WAL."""
    if not _sqlite(alias):
        return True
    with connections[alias].cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        row = cursor.fetchone()
    busy = bool(row and row[0])
    if busy:
        logger.warning("erasure: WAL checkpoint of %s blocked by a reader; old pages remain until the next", alias)
    return not busy


def storage_purge_on_commit(
    *, conversation_id: str, drop: bool = False, redact: Callable[[str], str] | None = None, cause: str = "forget"
) -> None:
    """After the transaction commits: scrub the conversation's lines in the loopback outbox (drop
    them, or redact quotes), then truncate the WAL. Files are not transactional, so nothing here
    runs if the deletion rolls back. A checkpoint a reader blocks is recorded as a pending scrub
    (`StorageScrub`, audited) and retried in the background (`storage_scrubs_retry`)."""
    alias = current_alias()

    def purge() -> None:
        LoopbackGateway.outbox_scrub(conversation_id=conversation_id, drop=drop, redact=redact)
        if not wal_truncate(alias):
            _scrub_pending(alias, conversation_id=conversation_id, cause=cause)

    on_account_commit(purge)


# A blocked checkpoint is retried once a minute for this many minutes; after that it stays pending
# (and visible) until an operator ends the reader that holds the WAL.
STORAGE_SCRUB_MAX_ATTEMPTS = 60


def _scrub_pending(alias: str, *, conversation_id: str, cause: str) -> None:
    with transaction.atomic(using=alias):
        scrub = StorageScrub.objects.using(alias).create(cause=cause, conversation_id=conversation_id)
        # After the commit, with the alias named: the selection may be gone by then.
        audit_record(
            action=AuditAction.STORAGE_SCRUB_PENDING,
            conversation_id=conversation_id,
            actor="storage",
            reason="有读取占用数据库，旧数据页暂留在 WAL 文件中，后台每分钟重试清理",
            payload={"scrub_id": scrub.pk, "cause": cause},
            using=alias,
        )


def storage_scrubs_retry(*, now: datetime | None = None) -> int:
    """In the selected account: one more checkpoint for the pending scrubs that have attempts left;
    returns how many completed."""
    alias = current_alias()
    pending = list(
        StorageScrub.objects.filter(done_at__isnull=True, attempts__lt=STORAGE_SCRUB_MAX_ATTEMPTS).order_by("pk")
    )
    if not pending:
        return 0
    now = now or timezone.now()
    if not wal_truncate(alias):
        StorageScrub.objects.filter(pk__in=[scrub.pk for scrub in pending]).update(
            attempts=F("attempts") + 1, last_attempt_at=now
        )
        return 0
    with transaction.atomic(using=alias):
        StorageScrub.objects.filter(pk__in=[scrub.pk for scrub in pending]).update(done_at=now, last_attempt_at=now)
        for scrub in pending:
            audit_record(
                action=AuditAction.STORAGE_SCRUBBED,
                conversation_id=scrub.conversation_id,
                actor="storage",
                reason="WAL 已清空，旧数据页不再保留",
                payload={"scrub_id": scrub.pk, "cause": scrub.cause, "attempts": scrub.attempts + 1},
            )
    wal_truncate(alias)  # the rows just written leave nothing to keep either
    return len(pending)


def storage_scrubs_pending() -> int:
    """Scrubs of the selected account still waiting for a checkpoint."""
    return StorageScrub.objects.filter(done_at__isnull=True).count()
