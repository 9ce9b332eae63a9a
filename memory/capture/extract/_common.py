"""What extraction yields: the candidate record, its kinds and limits, shared by every extractor."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from conversations.profile_fields import PROFILE_FIELD_LABELS

PREFERENCE = "preference"
CONSTRAINT = "constraint"
FACT = "fact"

ADDRESS_KEY = "profile:preferred_name"  # a form of address is the profile's 称呼
PROFILE_LABELS = PROFILE_FIELD_LABELS  # the declared profile fields (plain data, no Django)
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
