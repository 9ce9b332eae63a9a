"""The declared profile fields, the one list everything else reads: the model's columns, the
profile API, the Workbench, the model's output contract and the extractor's vocabulary.

Plain data with no Django import, so the extractor can use it standalone. A profile edit updates
the stable memory item `profile:<field>` (spec §3).
"""

from __future__ import annotations

from typing import NamedTuple


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
