"""Numbers as customers write them: 4500, 4,500, 5k, 1.2w, 6千, 1万2, 六千, 七千五, 一万二, 三百万.

Chinese numerals go through cn2an ("smart" mode reads the spoken shapes 七千五 and 一万二 and mixed
ones like 1万2); cn2an is imported on first use, so importing this module costs nothing.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import Any

CN_DIGITS = "零〇一二两三四五六七八九"
# Longer runs are ids or noise ("一万二一万二一万二…" once overflowed a float and failed capture).
MAX_NUMBER_CHARS = 24
CN_UNITS = "十百千万亿"
# A numeral run as it may appear in text: Arabic or Chinese digits, units, a decimal point.
NUMERAL_RUN = rf"(?:\d+(?:\.\d+)?|[{CN_DIGITS}{CN_UNITS}点])+"
_ASCII_RE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<mult>[kKwW千万]|千块|万块)?$")
_PAIR_RE = re.compile(rf"^(?P<a>[一二三四五六七八])(?P<b>[二三四五六七八九])(?P<unit>[十百千万][{CN_UNITS}]*)$")
_CN_DIGIT_VALUE = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_MULTIPLIER = {"k": 1000, "K": 1000, "千": 1000, "w": 10000, "W": 10000, "万": 10000, "千块": 1000, "万块": 10000}


@functools.cache
def _cn2an() -> Callable[..., Any]:
    import cn2an

    return cn2an.cn2an  # type: ignore[no-any-return]


def parse_number(words: str) -> float | None:
    """The number the words write, or None when they are not one number ("五六千" is two)."""
    text = re.sub(r"[\s,，]", "", words or "")
    if not text or len(text) > MAX_NUMBER_CHARS:
        return None  # an order number or a repeated run, not an amount a customer states
    ascii_match = _ASCII_RE.match(text)
    if ascii_match:
        value = float(ascii_match.group("n"))
        return value * _MULTIPLIER.get(ascii_match.group("mult") or "", 1)
    if not re.fullmatch(rf"[\d.{CN_DIGITS}{CN_UNITS}点]+", text) or _PAIR_RE.match(text):
        return None
    if text[0] in CN_UNITS and text[0] != "十":
        return None  # "万一", "千万": a word, not a number
    try:
        value = _cn2an()(text.replace("〇", "零"), "smart")
        number = float(value)
    except (ValueError, KeyError, IndexError, TypeError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def parse_pair(words: str) -> tuple[float, float] | None:
    """An approximate pair of neighbouring digits before a unit: 五六千 → (5000, 6000), 七八十万 → (70万, 80万)."""
    match = _PAIR_RE.match(re.sub(r"\s", "", words or ""))
    if match is None:
        return None
    first, second = _CN_DIGIT_VALUE[match.group("a")], _CN_DIGIT_VALUE[match.group("b")]
    if second != first + 1:
        return None
    low = parse_number(match.group("a") + match.group("unit"))
    high = parse_number(match.group("b") + match.group("unit"))
    if low is None or high is None:
        return None
    return low, high


def trailing_multiplier(words: str) -> float:
    """The multiplier a range's high end carries over to a bare low end: "两到三千" → 1000."""
    match = re.search(r"([kKwW]|[十百千万]+)$", re.sub(r"\s", "", words or ""))
    if match is None:
        return 1.0
    total = 1.0
    for char in match.group(1):
        total *= {"十": 10, "百": 100, "千": 1000, "万": 10000}.get(char, _MULTIPLIER.get(char, 1))
    return total


def has_multiplier(words: str) -> bool:
    return re.search(r"[kKwW十百千万]", words or "") is not None


def format_number(value: float) -> str:
    """4500.0 → "4500", 0.5 → "0.5"."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
