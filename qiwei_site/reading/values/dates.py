"""Dates as customers say them, resolved against the day the message was sent.

    下个月15号 (sent 2026-11-20) → 2026-12-15 · 下个月初 → 2026-12-01至2026-12-10 · 月底 → 2026-11-21至2026-11-30
    下周三 → the Wednesday of next week · 明天 / 后天 / 大后天 · 15号 → this month's, or next month's once past
    3月初 / 3月15日 → the next such date · 国庆前 → until 09-30 · 国庆后 → the two weeks after 10-07
    年前 / 春节前 → until the lunar new year (borax's lunar calendar) · 年后 → the two weeks after its holiday
    马上 / 尽快 / 随时 → no date, only "soon": the next 30 days

A span is a first and a last day; `expires_at` is the start of the day after the last day plus one day
of grace: a move-in date, a viewing time or a lease end that has passed stops being memory.
"""

from __future__ import annotations

import calendar
import functools
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo

from qiwei_site.reading.values.numbers import parse_number

GRACE_DAYS = 1
SOON_DAYS = 30  # "马上", "尽快": how long such a statement stays true
AFTER_DAYS = 14  # "国庆后", "年后": the weeks right after
_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_EN_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10,
    "nov": 11, "dec": 12,
}  # fmt: skip
_EN_WEEKDAYS = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}
_CN_SMALL = r"\d{1,2}|[一二两三四五六七八九十]{1,3}"
_PART = r"初|上旬|中旬|下旬|中|底|末"

_ZH_PATTERNS: tuple[tuple[str, str], ...] = (
    ("ymd", r"(?P<y>\d{4})\s*[-/.年]\s*(?P<m>\d{1,2})\s*[-/.月]\s*(?P<d>\d{1,2})\s*[日号]?"),
    (
        "rel_month",
        rf"(?P<rel>下下个?月|下个?月|这个?月|本月|当月)(?:份)?\s*(?:(?P<d>{_CN_SMALL})\s*[日号]|(?P<part>{_PART}))?",
    ),
    (
        "month",
        rf"(?P<y>明年|今年|\d{{4}}\s*年)?\s*(?P<m>1[0-2]|0?[1-9]|十[一二]|[一二三四五六七八九十])\s*月(?:份)?"
        rf"\s*(?:(?P<d>{_CN_SMALL})\s*[日号]|(?P<part>{_PART}))?",
    ),
    ("part", r"(?<![个月])月(?P<part>初|中旬|中|底|末)"),
    (
        "rel_week",
        r"(?P<rel>下下(?:个)?(?:周|星期|礼拜)|下(?:个)?(?:周|星期|礼拜)|这(?:个)?(?:周|星期|礼拜)|本周)(?P<wd>[一二三四五六日天末])?",
    ),
    ("weekday", r"(?<![下这本])(?:周|星期|礼拜)(?P<wd>[一二三四五六日天末])"),
    ("day_word", r"大后天|后天|明天|明早|明晚|明儿|今天|今晚|今儿"),
    ("after_n", rf"(?P<n>{_CN_SMALL}|半)\s*(?:个)?(?P<u>天|周|星期|礼拜|月)(?:之?后|以后)"),
    ("holiday", r"(?P<h>国庆节?|春节|过年|元旦|五一|劳动节|开学|年)(?P<rel>之前|以前|前后|之后|以后|前|后)"),
    ("holiday_alone", r"国庆(?:节|期间)?|春节(?:期间)?|年底|年末"),
    ("day", rf"(?<![月\d号])(?P<d>{_CN_SMALL})\s*[号日](?![线楼门院室座栋])"),
    ("soon", r"马上|尽快|尽早|越快越好|越早越好|早点|立刻|随时|现在就"),
)
_EN_PATTERNS: tuple[tuple[str, str], ...] = (
    ("ymd", r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"),
    ("en_rel_month", r"(?P<pos>end\s+of\s+|early\s+|mid[\s-]+|late\s+)?(?:the\s+)?(?P<rel>next|this)\s+month"),
    ("en_end_month", r"end\s+of\s+(?:the\s+)?month"),
    (
        "en_week",
        r"(?P<rel>next|this)\s+(?P<wd>week(?:end)?|mon(?:day)?|tue(?:sday)?|wed(?:nesday)?|thu(?:rsday)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?)",
    ),
    ("en_day_word", r"tomorrow|today|tonight"),
    (
        "en_month_day",
        r"(?P<pos>early\s+|mid[\s-]+|late\s+)?(?P<mon>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
        r"(?:\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?)?\b|(?P<d2>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?"
        r"(?P<mon2>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b",
    ),
    ("soon", r"asap|as\s+soon\s+as\s+possible|immediately|right\s+away"),
)
_ZH_RE = tuple((kind, re.compile(pattern)) for kind, pattern in _ZH_PATTERNS)
_EN_RE = tuple((kind, re.compile(rf"\b(?:{pattern})", re.IGNORECASE)) for kind, pattern in _EN_PATTERNS)


@dataclass(frozen=True)
class DateSpan:
    """A date or a span of days, as written (`words`) and resolved; `soon` has no date of its own."""

    words: str
    first: date
    last: date
    soon: bool = False
    start: int = 0
    end: int = 0

    def display(self) -> str:
        """ "2026-12-15", "2026-12-01至2026-12-10"; "" for "马上" (no date to show)."""
        if self.soon:
            return ""
        if self.first == self.last:
            return self.first.isoformat()
        return f"{self.first.isoformat()}至{self.last.isoformat()}"

    def expires_at(self, tz: tzinfo | None) -> datetime:
        """When a fact bound to this date stops being true: after its last day, plus grace."""
        return datetime.combine(self.last + timedelta(days=1 + GRACE_DAYS), time.min, tzinfo=tz)


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _add_months(day: date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def _part_of_month(year: int, month: int, part: str | None) -> tuple[date, date]:
    last = _month_end(year, month)
    if part in {"初", "上旬"}:
        return date(year, month, 1), date(year, month, 10)
    if part in {"中", "中旬"}:
        return date(year, month, 11), date(year, month, 20)
    if part in {"底", "末", "下旬"}:
        return date(year, month, 21), last
    return date(year, month, 1), last


def _small(words: str | None) -> int | None:
    value = parse_number(words or "")
    return int(value) if value is not None and value.is_integer() else None


def _safe_day(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


@functools.cache
def _lunar_new_year(year: int) -> date:
    from borax.calendars.lunardate import LunarDate

    solar: date = LunarDate(year, 1, 1).to_solar_date()
    return solar


def _next_lunar_new_year(today: date) -> date:
    this_year = _lunar_new_year(today.year)
    # Until its holiday is over, "年后" still means this year's new year.
    return this_year if today <= this_year + timedelta(days=6) else _lunar_new_year(today.year + 1)


def _holiday(name: str, today: date) -> tuple[date, date]:
    """The holiday's days, the next time it comes (today included while it lasts)."""
    if name.startswith("国庆"):
        year = today.year if today <= date(today.year, 10, 7) else today.year + 1
        return date(year, 10, 1), date(year, 10, 7)
    if name in {"五一", "劳动节"}:
        year = today.year if today <= date(today.year, 5, 5) else today.year + 1
        return date(year, 5, 1), date(year, 5, 5)
    if name == "元旦":
        year = today.year + 1 if today > date(today.year, 1, 1) else today.year
        return date(year, 1, 1), date(year, 1, 1)
    if name == "开学":
        day = date(today.year, 9, 1) if 3 <= today.month <= 8 else date(today.year + (today.month >= 9), 3, 1)
        return day, day
    new_year = _next_lunar_new_year(today)  # 春节, 过年, 年
    return new_year - timedelta(days=1), new_year + timedelta(days=6)


def _next_month_day(today: date, month: int, day: int | None, part: str | None, year: int | None) -> tuple[date, date]:
    if year is None:
        year = today.year
        last = _safe_day(year, month, day) if day else _part_of_month(year, month, part)[1]
        if last is not None and last < today:
            year += 1
    if day:
        found = _safe_day(year, month, day)
        if found is None:
            raise ValueError
        return found, found
    return _part_of_month(year, month, part)


def _resolve(kind: str, match: re.Match[str], today: date) -> tuple[date, date, bool] | None:
    group = match.groupdict()
    if kind == "ymd":
        found = _safe_day(int(group["y"]), int(group["m"]), int(group["d"]))
        return (found, found, False) if found else None
    if kind == "rel_month":
        rel = group["rel"]
        offset = 2 if rel.startswith("下下") else 1 if rel.startswith("下") else 0
        year, month = _add_months(today, offset)
        day_number = _small(group.get("d"))
        if day_number:
            found = _safe_day(year, month, day_number)
            return (found, found, False) if found else None
        first, last = _part_of_month(year, month, group.get("part"))
        return max(first, today) if offset == 0 else first, last, False
    if kind == "month":
        month_number = _small(group["m"])
        if month_number is None or not 1 <= month_number <= 12:
            return None
        year_words = (group.get("y") or "").replace(" ", "")
        written_year = today.year + 1 if year_words == "明年" else today.year if year_words == "今年" else None
        if year_words[:4].isdigit():
            written_year = int(year_words[:4])
        try:
            first, last = _next_month_day(today, month_number, _small(group.get("d")), group.get("part"), written_year)
        except ValueError:
            return None
        return first, last, False
    if kind == "part":
        first, last = _part_of_month(today.year, today.month, group["part"])
        if last < today:
            year, month = _add_months(today, 1)
            first, last = _part_of_month(year, month, group["part"])
        return max(first, today), last, False
    if kind == "rel_week":
        rel = group["rel"]
        weeks = 2 if rel.startswith("下下") else 1 if rel.startswith("下") else 0
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=weeks)
        weekday = group.get("wd")
        if weekday == "末":
            return monday + timedelta(days=5), monday + timedelta(days=6), False
        if weekday:
            day = monday + timedelta(days=_WEEKDAYS[weekday])
            return day, day, False
        return max(monday, today), monday + timedelta(days=6), False
    if kind == "weekday":
        weekday = group["wd"]
        if weekday == "末":
            saturday = today + timedelta(days=(5 - today.weekday()) % 7)
            if today.weekday() == 6:
                return today, today, False
            return saturday, saturday + timedelta(days=1), False
        day = today + timedelta(days=(_WEEKDAYS[weekday] - today.weekday()) % 7)
        return day, day, False
    if kind == "day_word":
        words = match.group(0)
        offset = 3 if words == "大后天" else 2 if words == "后天" else 1 if words.startswith("明") else 0
        day = today + timedelta(days=offset)
        return day, day, False
    if kind == "after_n":
        count = 0.5 if group["n"] == "半" else _small(group["n"])
        if not count:
            return None
        days = {"天": 1, "周": 7, "星期": 7, "礼拜": 7, "月": 30}[group["u"]] * count
        day = today + timedelta(days=int(days))
        return day, day + timedelta(days=6 if group["u"] != "天" else 0), False
    if kind == "holiday":
        first, last = _holiday(group["h"], today)
        rel = group["rel"]
        if rel in {"前", "之前", "以前"}:
            return today, max(today, first - timedelta(days=1)), False
        if rel == "前后":
            return first - timedelta(days=7), last + timedelta(days=7), False
        return last + timedelta(days=1), last + timedelta(days=AFTER_DAYS), False
    if kind == "holiday_alone":
        words = match.group(0)
        if words in {"年底", "年末"}:
            return max(today, date(today.year, 12, 1)), date(today.year, 12, 31), False
        first, last = _holiday("国庆" if words.startswith("国庆") else "春节", today)
        return first, last, False
    if kind == "day":
        day_number = _small(group["d"])
        if not day_number or day_number > 31:
            return None
        year, month = today.year, today.month
        if day_number < today.day:
            year, month = _add_months(today, 1)
        found = _safe_day(year, month, day_number)
        return (found, found, False) if found else None
    if kind == "soon":
        return today, today + timedelta(days=SOON_DAYS - 1), True
    return _resolve_en(kind, group, match, today)


def _resolve_en(
    kind: str, group: dict[str, str | None], match: re.Match[str], today: date
) -> tuple[date, date, bool] | None:
    if kind == "en_rel_month":
        year, month = _add_months(today, 1 if (group["rel"] or "").lower() == "next" else 0)
        pos = (group.get("pos") or "").strip().lower()
        part = (
            "底"
            if pos.startswith("end") or pos == "late"
            else "初"
            if pos == "early"
            else "中"
            if pos.startswith("mid")
            else None
        )
        first, last = _part_of_month(year, month, part)
        return max(first, today), last, False
    if kind == "en_end_month":
        first, last = _part_of_month(today.year, today.month, "底")
        return max(first, today), last, False
    if kind == "en_week":
        rel, what = (group["rel"] or "").lower(), (group["wd"] or "").lower()
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=1 if rel == "next" else 0)
        if what == "week":
            return max(monday, today), monday + timedelta(days=6), False
        if what == "weekend":
            return monday + timedelta(days=5), monday + timedelta(days=6), False
        day = monday + timedelta(days=_EN_WEEKDAYS[what[:3]])
        return day, day, False
    if kind == "en_day_word":
        day = today + timedelta(days=1 if match.group(0).lower() == "tomorrow" else 0)
        return day, day, False
    if kind == "en_month_day":
        month = _EN_MONTHS[(group.get("mon") or group.get("mon2") or "").lower()[:3]]
        pos = (group.get("pos") or "").strip().lower()
        part = "初" if pos == "early" else "中" if pos.startswith("mid") else "底" if pos == "late" else None
        day_words = group.get("d") or group.get("d2")
        try:
            first, last = _next_month_day(today, month, int(day_words) if day_words else None, part, None)
        except ValueError:
            return None
        return first, last, False
    return None


def dates_in(text: str, today: date) -> list[DateSpan]:
    """Every date expression in `text`, resolved against `today` (the day the message was sent)."""
    patterns = _ZH_RE if re.search(r"[\u4e00-\u9fff]", text) else _EN_RE
    found: list[DateSpan] = []
    taken: list[tuple[int, int]] = []
    for kind, regex in patterns:
        for match in regex.finditer(text):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            resolved = _resolve(kind, match, today)
            if resolved is None:
                continue
            first, last, soon = resolved
            found.append(
                DateSpan(
                    words=re.sub(r"\s+", "", match.group(0)) if patterns is _ZH_RE else match.group(0).strip(),
                    first=first,
                    last=max(first, last),
                    soon=soon,
                    start=match.start(),
                    end=match.end(),
                )
            )
            taken.append((match.start(), match.end()))
    found.sort(key=lambda span: span.start)
    return found


def resolve_date(words: str, today: date) -> DateSpan | None:
    """The one date the words say (the first, if they say several), or None."""
    spans = dates_in(words, today)
    return spans[0] if spans else None


# Every Chinese date shape above as one pattern without groups, for callers that look for a date
# after a verb ("入住时间是…", "…到期").
DATE_WORDS_ZH = "|".join(f"(?:{re.sub(r'[(][?]P<[a-z_0-9]+>', '(?:', pattern)})" for _, pattern in _ZH_PATTERNS)
TIME_OF_DAY_ZH = r"(?:上午|下午|晚上|中午|早上|傍晚|白天|早|晚)?(?:\d{1,2}\s*[点:：]\s*(?:\d{1,2}|半)?分?)?"
