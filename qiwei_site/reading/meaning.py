"""What a memory value means, spelling aside: the form a supervisor's decision is keyed by, so that
no other spelling of a rejected, forgotten, expired or replaced value comes back.

`meaning("预算：8000元左右")`, `meaning("预算：八千")` and `meaning("预算: 8k")` are one meaning; so
are `入住时间：下个月15号（2026-12-15）` and `入住时间：下个月15号` said in November 2026, and
`区域：浦东` and `区域：浦东新区`. It reads the value as the reader reads customers' words — dates
resolved against `today` (an ISO date written in the value wins over a relative one beside it),
then amounts, then places — and keeps, beside what they mean, the label before 「：」 and whatever
other words remain (letters and digits only, case-folded, without the decoration a value may carry:
units, bounds, particles). Values with none of these are their words, so read.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from datetime import date

from qiwei_site.reading.normalise import normalise_statement
from qiwei_site.reading.values import amounts_in, dates_in, places_in

# What may stand beside a value's amount, dates or places and still be that value: units, bounds,
# brackets and separators ("4500元/月", "下个月15号（2026-06-15）", "浦东、徐汇"). Grounding uses it
# to check that a proposal is nothing but its value; meaning drops it, with a few particles.
DECORATION = frozenset(
    "元块圆万千百kw每月年左右以内上下约大概不超过至到之间起套号日周天前后初中底入住搬家区市附近一带那边和或及"
)
_PARTICLES = frozenset("的了吧啊呢哦呀嘛")
# What meaning drops beside a value: decoration and particles, but never a bound or a negation
# (以内, 以上, 不超过, 不要: they change what the value says).
_DROPPED = (DECORATION | _PARTICLES) - frozenset("以内上下不超过至到之间起前后")
_ISO_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_LABEL_SEPARATORS = ("：", ":")


def words_only(text: str) -> str:
    """Letters, digits and CJK characters only: punctuation, symbols, emoji and spaces dropped."""
    return "".join(char for char in text if unicodedata.category(char)[0] in "LN")


def _blank(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        for index in range(start, end):
            chars[index] = " "
    return "".join(chars)


def _number(value: float) -> str:
    return f"{value:g}"


def meaning(content: str, *, today: date | None) -> str:
    """The canonical form of a memory value (`today`: the day relative dates are read against;
    None reads none)."""
    text = normalise_statement(content)
    label, value = "", text
    for separator in _LABEL_SEPARATORS:
        if separator in text:
            label, _, value = text.partition(separator)
            break
    parts: list[str] = []
    if today is not None:
        dates = [span for span in dates_in(value, today) if not span.soon]
        written = [span for span in dates if _ISO_DATE_RE.fullmatch(span.words)]
        chosen = written or dates
        if chosen:
            parts.append("date=" + ",".join(sorted({span.display() for span in chosen})))
        value = _blank(value, ((span.start, span.end) for span in dates))
    amounts = amounts_in(value, bare=True)
    if amounts:
        # Each amount with its bound, in the order written: 8000以内 = 不超过8000 ≠ 8000以上, and
        # 2室1厅 ≠ 1室2厅.
        # The same numbers again restate the value ("七千五以内（≤7500元）"): the first reading stands.
        read: dict[tuple[float, ...], str] = {}
        for amount in amounts:
            numbers = tuple(amount.numbers())
            read.setdefault(numbers, f"{amount.bound}:" + "-".join(_number(number) for number in numbers))
        parts.append("amount=" + ",".join(read.values()))
        value = _blank(value, ((amount.start, amount.end) for amount in amounts))
    places = places_in(value)
    rest_names: list[str] = []
    if places:
        names = sorted({place.name for place in places})
        parts.append("place=" + ",".join(names))
        value = _blank(value, ((place.start, place.end) for place in places))
        rest_names = names
    rest = words_only(value).casefold()
    for name in rest_names:  # a short form beside the full one: 静安（静安区）
        for size in range(len(name), 1, -1):
            rest = rest.replace(name[:size].casefold(), "")
    if parts:
        rest = "".join(char for char in rest if char not in _DROPPED)
    return f"{words_only(label).casefold()}|{';'.join(parts)}|{rest}"


__all__ = ["DECORATION", "meaning", "words_only"]
