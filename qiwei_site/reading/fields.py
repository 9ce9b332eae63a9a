"""The declared profile fields, the one list everything else reads: the model's columns, the
profile API, the Workbench, the model's output contract and the extractor's vocabulary.

Plain data with no Django import, so the extractor can use it standalone. A profile edit updates
the stable memory item `profile:<field>` (spec §3).
"""

from __future__ import annotations

from typing import NamedTuple

from qiwei_site.reading.normalise import normalize_content


class ProfileField(NamedTuple):
    name: str
    label: str
    max_length: int


PROFILE_FIELD_SPECS: tuple[ProfileField, ...] = (
    ProfileField("preferred_name", "称呼", 50),
    ProfileField("city", "城市", 50),
    ProfileField("budget", "预算", 50),
    ProfileField("district", "意向区域", 100),
    ProfileField("layout", "户型", 50),
    ProfileField("move_in_date", "入住时间", 50),
)
# (field name, Chinese label), in display order.
PROFILE_FIELDS: tuple[tuple[str, str], ...] = tuple((spec.name, spec.label) for spec in PROFILE_FIELD_SPECS)
PROFILE_FIELD_NAMES: tuple[str, ...] = tuple(spec.name for spec in PROFILE_FIELD_SPECS)
PROFILE_FIELD_LABELS: dict[str, str] = dict(PROFILE_FIELDS)

# --- profile items: `profile:<field>` renders as 「标签：值」 -----------------------------------

PROFILE_KEY_PREFIX = "profile:"


def profile_item_key(field: str) -> str:
    return f"{PROFILE_KEY_PREFIX}{field}"


def profile_field_of(key: str) -> str | None:
    """The declared profile field a key stands for (None for any other key)."""
    field = key.removeprefix(PROFILE_KEY_PREFIX)
    return field if key.startswith(PROFILE_KEY_PREFIX) and field in PROFILE_FIELD_LABELS else None


def profile_item_content(field: str, value: str) -> str:
    return f"{PROFILE_FIELD_LABELS[field]}：{value}"


def profile_item_value(field: str, content: str) -> str:
    """The bare value of a profile item's content (a supervisor may type it with or without the label)."""
    content = normalize_content(content)
    for separator in ("：", ":"):
        prefix = f"{PROFILE_FIELD_LABELS[field]}{separator}"
        if content.startswith(prefix):
            return content[len(prefix) :].strip()
    return content
