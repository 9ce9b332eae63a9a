"""What extraction yields: the candidate record, its kinds and limits, shared by every extractor."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from datetime import datetime

from qiwei_site.reading.fields import PROFILE_FIELD_LABELS
from qiwei_site.reading.values import Amount, DateSpan, Place, PlaceNames
from qiwei_site.reading.values.vocabulary import Vocabulary

PREFERENCE = "preference"
CONSTRAINT = "constraint"
FACT = "fact"
# Trigger kinds beyond the memory types: a must-have is written as a flagged preference, an
# acceptance only as a release of an earlier constraint.
MUST = "must"
ACCEPT = "accept"

ADDRESS_KEY = "profile:preferred_name"  # a form of address is the profile's 称呼
PROFILE_LABELS = PROFILE_FIELD_LABELS  # the declared profile fields (plain data, no Django)
# Labels of the item contents, beside 偏好/不考虑 (a preference and a constraint):
MUST_LABEL = "必须"  # a must-have: a preference flagged as a hard requirement (`Candidate.hard`)
ACCEPT_LABEL = "可以接受"  # an acceptance that relaxes an earlier constraint
RELAXED_LABEL = "不强求"  # a requirement the customer relaxed ("对装修没要求", "不一定要地铁附近")
VIEWING_KEY = "fact:viewing_time"
LEASE_END_KEY = "fact:lease_end"
MAX_OBJECT_CHARS = 30
MAX_VALUE_CHARS = 50
# A clause without a CJK ideograph is read as English.
CJK_RE = re.compile(r"[\u4e00-\u9fff]")


@dataclass(frozen=True)
class Candidate:
    type: str
    key: str
    content: str
    confidence: float = 0.8
    importance: int = 3
    # For profile facts: the declared field and its value (key is `profile:<field>`).
    field: str | None = None
    value: str = ""
    supersedes_keys: tuple[str, ...] = ()
    clause: str = dataclasses.field(default="", compare=False)
    # A must-have (必须/一定要/得有/只要): a preference held as a hard requirement.
    hard: bool = False
    # The values read from the customer's words (an amount, places, a date), beside the words the
    # content keeps; and when a time-bound fact stops being true (a move-in date that has passed).
    values: tuple[Amount | Place | DateSpan, ...] = ()
    expires_at: datetime | None = None
    # An alternative ("滨江那边也行"): the value adds to the profile field's current value (浦东 →
    # 浦东、滨江) instead of replacing it.
    extends: bool = False
    # Why capture may not write it by itself (`admission.HOLD_BACKS`: the row's name): a proposal for
    # a supervisor. Empty for a candidate capture writes.
    held_back: str = dataclasses.field(default="", compare=False)


@dataclass(frozen=True)
class ExtractContext:
    """What the message alone does not say: when it was sent (relative dates resolve against it, in
        the account's local time), what the agent asked just before (a bare "安静一点的" answers it), and
        the account's own place names (its knowledge base's 片区 list) on top of the gazetteer, and its trade
    vocabulary (`qiwei_site.reading.values.vocabulary`) on top of the built-in one."""

    sent_at: datetime | None = None
    previous_outbound: str = ""
    places: PlaceNames | None = None
    vocabulary: Vocabulary | None = None  # the account's trade terms (its knowledge base) beside the built-in ones


@dataclass(frozen=True)
class Extraction:
    """What one message states (`candidates`: capture writes them by itself), the acceptances in it
    (`releases`: "其实一楼也可以考虑" is no wish of its own, but relaxes an earlier "不考虑：一楼" — a
    release is written only where it supersedes an active item under one of its `supersedes_keys`),
    and what looks like a want but is held back for a supervisor (`proposals`, each with its
    `held_back` row)."""

    candidates: list[Candidate]
    releases: list[Candidate]
    proposals: list[Candidate] = dataclasses.field(default_factory=list)
    # Why nothing was read at all (`bound.TOO_LONG`: past the reader's bound), or "".
    unread: str = ""
