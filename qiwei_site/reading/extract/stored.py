"""A reading kept (issue 36, item 9): what extraction read in one message as JSON data, and the keys
that say whether it still holds. Plain Python.

Capture reads a message once and keeps the reading beside it (`memory.models.MessageReading`), so
grounding a model's values, re-capture and backfill read the reading instead of the words again.
A kept reading holds while both its keys match:

- `reader_version()`: a digest of this reading package's source (the gate, the extractor, the
  values), so any change to how words are read makes every older reading stale — read again once;
- `context_key(context)`: a digest of what extraction read beside the words (the local send time,
  the agent's message before, the account's own place names and trade vocabulary).

`extraction_data` / `extraction_of` turn an `Extraction` into JSON and back, exactly: every
candidate with its values (amounts, places, dates), so a kept reading is read the way a fresh one
is. The data holds the values and clauses the reader read (the customer's words, gate-passed and
without personal numbers); it lives and dies with its message.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import weakref
from datetime import date, datetime
from pathlib import Path
from typing import Any

from qiwei_site.reading.extract._common import Candidate, ExtractContext, Extraction
from qiwei_site.reading.values import Amount, DateSpan, Place, PlaceNames
from qiwei_site.reading.values.vocabulary import Vocabulary

READING_PACKAGE = Path(__file__).resolve().parent.parent


@functools.cache
def reader_version() -> str:
    """A digest of every source file of the reading package: what reads words decides a reading."""
    digest = hashlib.sha256()
    for path in sorted(READING_PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        digest.update(str(path.relative_to(READING_PACKAGE)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


# Fingerprints of an account's places and vocabulary, one per object (they are built once per
# knowledge-index version and shared by every message read with them).
_fingerprints: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def _fingerprint(thing: PlaceNames | Vocabulary | None) -> str:
    if thing is None:
        return ""
    known = _fingerprints.get(thing)
    if known is not None:
        return known
    if isinstance(thing, PlaceNames):
        parts = sorted(f"{name}\t{entry.city}" for name, entry in thing.local.items())
    else:
        parts = sorted(f"{group}\t{' '.join(words)}" for group, words in thing.groups.items())
    value = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    _fingerprints[thing] = value
    return value


def context_key(context: ExtractContext | None) -> str:
    """A digest of what extraction reads beside the words ("" for no context)."""
    if context is None:
        return ""
    sent_at = context.sent_at.isoformat() if context.sent_at is not None else ""
    parts = [sent_at, context.previous_outbound, _fingerprint(context.places), _fingerprint(context.vocabulary)]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


# --- an extraction as data ------------------------------------------------------------------------

_VALUE_TYPES: dict[str, type[Amount] | type[Place] | type[DateSpan]] = {
    "amount": Amount,
    "place": Place,
    "date": DateSpan,
}
_VALUE_NAMES = {kind: name for name, kind in _VALUE_TYPES.items()}


def _value_data(value: Amount | Place | DateSpan) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": _VALUE_NAMES[type(value)]}
    for item in dataclasses.fields(value):
        field_value = getattr(value, item.name)
        if isinstance(field_value, date):
            field_value = field_value.isoformat()
        elif isinstance(field_value, tuple):
            field_value = list(field_value)
        data[item.name] = field_value
    return data


def _value_of(data: dict[str, Any]) -> Amount | Place | DateSpan:
    kind = _VALUE_TYPES[data["kind"]]
    arguments: dict[str, Any] = {}
    for item in dataclasses.fields(kind):
        if item.name not in data:
            continue
        field_value = data[item.name]
        if kind is DateSpan and item.name in {"first", "last"}:
            field_value = date.fromisoformat(field_value)
        elif isinstance(field_value, list):
            field_value = tuple(field_value)
        arguments[item.name] = field_value
    return kind(**arguments)


def candidate_data(candidate: Candidate) -> dict[str, Any]:
    """One candidate as JSON data (see `candidate_of`)."""
    data: dict[str, Any] = {}
    for item in dataclasses.fields(candidate):
        field_value = getattr(candidate, item.name)
        if item.name == "values":
            field_value = [_value_data(value) for value in field_value]
        elif item.name == "expires_at":
            field_value = field_value.isoformat() if field_value is not None else None
        elif isinstance(field_value, tuple):
            field_value = list(field_value)
        data[item.name] = field_value
    return data


def candidate_of(data: dict[str, Any]) -> Candidate:
    """The candidate `candidate_data` made (fields this code no longer has are left out)."""
    arguments: dict[str, Any] = {}
    for item in dataclasses.fields(Candidate):
        if item.name not in data:
            continue
        field_value = data[item.name]
        if item.name == "values":
            field_value = tuple(_value_of(value) for value in field_value)
        elif item.name == "expires_at":
            field_value = datetime.fromisoformat(field_value) if field_value else None
        elif isinstance(field_value, list):
            field_value = tuple(field_value)
        arguments[item.name] = field_value
    return Candidate(**arguments)


def extraction_data(extraction: Extraction) -> dict[str, Any]:
    """An extraction as JSON data: its candidates, releases and proposals, and why it read nothing."""
    return {
        "candidates": [candidate_data(candidate) for candidate in extraction.candidates],
        "releases": [candidate_data(candidate) for candidate in extraction.releases],
        "proposals": [candidate_data(candidate) for candidate in extraction.proposals],
        "unread": extraction.unread,
    }


def extraction_of(data: dict[str, Any]) -> Extraction:
    """The extraction `extraction_data` made."""
    return Extraction(
        candidates=[candidate_of(item) for item in data.get("candidates") or []],
        releases=[candidate_of(item) for item in data.get("releases") or []],
        proposals=[candidate_of(item) for item in data.get("proposals") or []],
        unread=str(data.get("unread") or ""),
    )


__all__ = [
    "candidate_data",
    "candidate_of",
    "context_key",
    "extraction_data",
    "extraction_of",
    "reader_version",
]
