"""Shared context for the table-driven extraction tests: a message sent on Wednesday 2027-03-10 at
09:30 Shanghai time, and an account whose knowledge base names its own 片区 (酒仙桥, 大望路)."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from qiwei_site.reading.extract import ExtractContext, extract
from qiwei_site.reading.values import PlaceNames

SHANGHAI = ZoneInfo("Asia/Shanghai")
SENT_AT = dt.datetime(2027, 3, 10, 9, 30, tzinfo=SHANGHAI)  # a Wednesday
ACCOUNT_PLACES = PlaceNames(["酒仙桥", "大望路（朝阳区）", "前滩（浦东新区）"])


def context(previous_outbound: str = "") -> ExtractContext:
    return ExtractContext(sent_at=SENT_AT, previous_outbound=previous_outbound, places=ACCOUNT_PLACES)


def contents(text: str, previous_outbound: str = "") -> set[str]:
    return {candidate.content for candidate in extract(text, context(previous_outbound)).candidates}


def proposed(text: str, previous_outbound: str = "") -> set[str]:
    """What the reader holds back for a supervisor (issue 35): it looks like a want, but capture does
    not write it by itself."""
    return {candidate.content for candidate in extract(text, context(previous_outbound)).proposals}


def released(text: str, previous_outbound: str = "") -> set[str]:
    return {release.content for release in extract(text, context(previous_outbound)).releases}
