"""The pure part of recall (spec §4): a text's features and the ranking of documents by them.

CJK character bigrams, English words and numbers read as values (八千, 8k, 8,000 and 0.8万 are all
the number 8000), weighted by rarity with BM25-style saturation; dates as days (昨天 said on 3 March
and 3月2号 are the same day, once each is read against the day it was sent); a question marked,
so a question asked again does not outrank the answer after it. Plain Python, no Django: the
product path reads features stored at ingest (`memory.context.recall`); `rank` (tools, benchmarks)
memoises the features of the texts it has seen, bounded.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
import sys
import threading
import unicodedata
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

# Bump when `features` changes: stored features of another version are recomputed when read and
# by `recall_features_backfill` (the `recall_features_backfill` command).
# 3: date mentions (t:) and the question mark (q:?), issue 22.
FEATURE_VERSION = 3

Feature = tuple[str, float, int]

# --- amounts -------------------------------------------------------------------------------

_CN_DIGIT_VALUES = dict(zip("零〇一二两三四五六七八九", (0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9), strict=True))
_CN_UNIT_VALUES = {"十": 10, "百": 100, "千": 1000, "万": 10_000, "亿": 100_000_000}
_CN_NUMERAL = "".join(_CN_DIGIT_VALUES) + "".join(_CN_UNIT_VALUES)
# A run of digits and Chinese numerals (3.5万, 1万2, 七千五, 8,000), then an optional k/w
# (thousand / 万, as Chinese chat writes 8k and 2w).
_NUMBER_RUN_RE = re.compile(rf"[\d{_CN_NUMERAL}](?:[\d{_CN_NUMERAL}]|[.,](?=\d))*(?P<suffix>[kw](?![a-z]))?")
_THOUSANDS_RE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_MIXED_PIECE_RE = re.compile(rf"[\d.]+[{''.join(_CN_UNIT_VALUES)}]*|[{_CN_NUMERAL}]+")
_RANGE_JOINERS = ("到", "至", "~", "-", "—", "～", "或")
# A bare Chinese digit is a number only before one of these (一楼, 两居, 三号线, 十分钟), never in
# words such as 一下, 一直, 二手, 三心二意; 一点 means "a little" more often than one o'clock.
_CLASSIFIERS = (
    "分钟", "小时", "个月", "公里", "号", "楼", "层", "室", "居", "厅", "卫", "套", "间", "户", "年", "月", "日",
    "天", "周", "岁", "元", "块", "平", "米", "栋", "座", "期", "站", "倍", "点", "人", "成", "折", "线",
)  # fmt: skip
_CLASSIFIER_CHARS = frozenset(classifier[0] for classifier in _CLASSIFIERS)
_MEASURES = ("个", "套", "间", "次", "晚", "年", "天", "周", "月", "位", "人", "室", "层", "楼")


@dataclass(frozen=True)
class _Number:
    start: int
    end: int
    values: tuple[float, ...]
    # The value of the unit the run ends with (千 → 1000, 8k → 1000), for 两到三千 → 2000–3000.
    unit: int = 1
    bare: bool = False  # a Chinese digit alone: a number only before a classifier or in a range


def _canonical(value: float) -> str:
    rounded = round(value, 6)
    if rounded == int(rounded):
        return str(int(rounded))
    return f"{rounded:f}".rstrip("0").rstrip(".")


# Longer runs of numerals are not amounts (and would make the cache below hold long keys); longer
# runs of digits are ids (order numbers), matched as written, since a float would round them.
_MAX_NUMERAL_RUN = 16
_MAX_DIGITS = 15


def _cn_value(run: str) -> float | None:
    """The value of a run of Chinese numerals (or digits with Chinese units: 3.5万, 1万2), or None."""
    return _cn_value_cached(run) if len(run) <= _MAX_NUMERAL_RUN else None


@lru_cache(maxsize=2048)  # keys are at most _MAX_NUMERAL_RUN characters: bounded in bytes, ~0.5 MiB
def _cn_value_cached(run: str) -> float | None:
    import cn2an  # 80 ms to import: only when a message has a Chinese numeral

    try:
        value = cn2an.cn2an(run, "smart")
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    return float(value)


def _unit_scale(run: str) -> int:
    """The scale of the units a run ends with: 三千 → 1000, 三百万 → 1,000,000, 七千五 → 1."""
    units = len(run) - len(run.rstrip("".join(_CN_UNIT_VALUES)))
    if not units:
        return 1
    scale = _cn_value("一" + run[-units:])
    return int(scale) if scale else 1


def _parse_run(run: str, suffix: str | None) -> tuple[tuple[float, ...], int, bool] | None:
    """(values, trailing unit scale, bare) of one numeral run; None when it is not a number (一五一十)."""
    if run.replace(".", "", 1).isdigit():
        if len(run) > _MAX_DIGITS:
            return None  # an id, not an amount: kept as written (see `features`)
        multiplier = {"k": 1000, "w": 10_000}.get(suffix or "", 1)
        return (float(run) * multiplier,), multiplier, False
    if run[0] in _CN_UNIT_VALUES and run[0] != "十":
        return None  # 万一, 千万, 百分之…: words, not amounts
    if len(run) == 1:
        value = _cn_value(run)
        return ((value,), _unit_scale(run), True) if value is not None else None
    digits = [char for char in run if char in _CN_DIGIT_VALUES]
    # 五六千, 两三万, 七八十: two neighbouring digits before units are a range.
    if len(digits) == 2 and run[:2] == "".join(digits) and run[2:] and all(c in _CN_UNIT_VALUES for c in run[2:]):
        low, high = _CN_DIGIT_VALUES[digits[0]], _CN_DIGIT_VALUES[digits[1]]
        scale = _unit_scale(run)
        if high == low + 1:
            return (low * scale, high * scale), scale, False
    if not any(char in _CN_UNIT_VALUES or char.isdigit() for char in run):
        # Chinese digits without a unit (二零二六, 五六): only before a classifier (二零二六年).
        value = _cn_value(run) if len(digits) > 2 else None
        return ((value,), 1, True) if value is not None else None
    value = _cn_value(run)
    return ((value,), _unit_scale(run), False) if value is not None else None


def _segments(run: str) -> list[tuple[int, int, str]]:
    """A run split where it holds several numbers (2026.12.15, 1,2,3; 3000一 → 3000 and 一): each
    part's offset and length in the run, and its text without thousands separators."""
    if _THOUSANDS_RE.fullmatch(run):
        return [(0, len(run), run.replace(",", ""))]
    separator = "," if "," in run else ("." if run.count(".") > 1 else "")
    if separator:
        parts: list[tuple[int, int, str]] = []
        offset = 0
        for part in run.split(separator):
            parts += [(offset + start, size, text) for start, size, text in _segments(part)] if part else []
            offset += len(part) + 1
        return parts
    if any(char.isdigit() for char in run) and any(char in _CN_DIGIT_VALUES for char in run):
        # Digits beside Chinese digits are not one number (3000一个月, 2室1厅 written 2两): each on
        # its own. Digits with Chinese units only are (3.5万, 1万2, 1万5千).
        return [(m.start(), len(m.group()), m.group()) for m in _MIXED_PIECE_RE.finditer(run)]
    return [(0, len(run), run)]


def _runs(text: str) -> list[tuple[int, str, str | None]]:
    """(start, run, k/w suffix) of each numeral run. A Chinese digit ending an amount before a
    measure word starts the next phrase: 两万一个月 is 20000 a month, 三四千一套 3000–4000 a flat
    (二零二六年 stays one number)."""
    runs: list[tuple[int, str, str | None]] = []
    for match in _NUMBER_RUN_RE.finditer(text):
        suffix = match.group("suffix")
        run = match.group()[: -len(suffix)] if suffix else match.group()
        ends_apart = (
            not suffix
            and run[-1] in _CN_DIGIT_VALUES
            and any(char in _CN_UNIT_VALUES or char.isdigit() for char in run[:-1])
            and text.startswith(_MEASURES, match.end())
        )
        if ends_apart:
            runs += [(match.start(), run[:-1], None), (match.end() - 1, run[-1], None)]
        else:
            runs.append((match.start(), run, suffix))
    return runs


def numbers(text: str) -> list[_Number]:
    """The numbers in a normalised (NFKC, lower-case) text, with their spans, as values."""
    found: list[_Number] = []
    for run_start, run, suffix in _runs(text):
        run_end = run_start + len(run) + len(suffix or "")
        for start, size, part in _segments(run):
            last = start + size == len(run)
            parsed = _parse_run(part, suffix if last else None)
            if parsed is None:
                continue
            values, unit, bare = parsed
            if not all(math.isfinite(value) and abs(value) < 10**_MAX_DIGITS for value in values):
                continue
            begin = run_start + start
            found.append(_Number(begin, run_end if last else begin + size, values, unit, bare))
    return _join_ranges(text, found)


def _join_ranges(text: str, found: list[_Number]) -> list[_Number]:
    """两到三千 and 3-5k: the left end takes the right end's unit; bare digits stay only before a
    classifier or as a range end."""
    result: list[_Number] = []
    for index, number in enumerate(found):
        following = found[index + 1] if index + 1 < len(found) else None
        joined = following is not None and text[number.end : following.start].strip() in _RANGE_JOINERS
        if joined and following is not None and number.unit == 1 and following.unit > 1:
            coefficient = max(following.values) / following.unit
            if all(value <= coefficient for value in number.values):
                number = _Number(number.start, number.end, tuple(v * following.unit for v in number.values))
        previous = result[-1] if result else None
        joined_before = previous is not None and text[previous.end : number.start].strip() in _RANGE_JOINERS
        if number.bare and not (joined or joined_before or _classifier_follows(text, number)):
            continue
        result.append(number)
    return result


def _classifier_follows(text: str, number: _Number) -> bool:
    rest = text[number.end : number.end + 2]
    if text[number.start : number.end] == "一" and rest.startswith("点"):
        return False
    return rest.startswith(_CLASSIFIERS)


# --- tokenisation ------------------------------------------------------------------------

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_TOKEN_RE = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<num>\d+(?:[.,]\d+)*)|(?P<word>[a-z]+(?:'[a-z]+)*)")

# Feature weights: a shared CJK bigram or English word is a real lexical match; a shared
# single CJK character is weak evidence (很多字单独出现没有意义); numbers (budgets, dates,
# floors) are strong when they match.
_W_BIGRAM = 1.0
_W_UNIGRAM = 0.3
_W_WORD = 1.0
_W_NUMBER = 1.2
# A day both texts name (read against the days they were sent) is strong evidence, the same week
# weak. Date tokens as written (t:) and the question marker (q:) are never matched as such: weight 0,
# so they leave a document's length as it was.
_W_DAY = 1.5
_W_WEEK = 0.5
_DATE_KINDS = frozenset("dk")
_WEIGHTS = {
    "b": _W_BIGRAM, "c": _W_UNIGRAM, "w": _W_WORD, "n": _W_NUMBER, "d": _W_DAY, "k": _W_WEEK, "t": 0.0, "q": 0.0,
}  # fmt: skip

# BM25-style term saturation and (mild) length normalisation: chat messages are short, so a
# long one is penalised less than a long web page would be.
_K1 = 0.9
_B = 0.4
# Documents are a conversation in time order, and a question and its answer sit side by side:
# a message gets this share of its best neighbour's score (only if it matches on its own).
_NEIGHBOUR_SHARE = 0.3
# A document must match at least this share of the query's rarity-weighted features.
_MIN_COVERAGE = 0.08
# When no document clears the coverage bar, the best lexical matches are returned instead of
# nothing, but only documents sharing a rare term with the query: a bigram, word or number whose
# IDF over the candidates is at least this (in at most ~13% of 240 messages), or a lone character
# rarer still (in at most ~5%: 猫, 狗, 车 are words too; 好, 想, 看 are everywhere).
_FALLBACK_MIN_IDF = 2.0
_FALLBACK_MIN_IDF_CHAR = 3.0
# Rarity is judged as if there were at least this many candidates: in a short history a bigram or
# word in one or two messages still counts as rare, a lone character never does.
_FALLBACK_PRIOR_DOCUMENTS = 20
# A short list of candidates sharing nothing with the query but a single character: the best
# `_CHAR_FALLBACK_LIMIT` sharing a character found in at most one in `_CHAR_FALLBACK_SPREAD` of them
# (at least one), and only up to `_CHAR_FALLBACK_MAX_DOCUMENTS` candidates.
_CHAR_FALLBACK_MAX_DOCUMENTS = _FALLBACK_PRIOR_DOCUMENTS
# Characters too common in chat to be evidence on their own (好 in 好的 and 您好, 看 in 看房 and
# 看一下), though kept in features and bigrams: the lone-character fallback never takes them.
_ZH_COMMON_CHARS = frozenset(
    "好想看要会能可以去来说做没不到给让用把被从等比为过得出人事样种些行问题知道觉太真最更已经先正当只才再"
    "下上中大小多少点时天年月日后前里一二三两对请谢您候回开起走找听啦喔"
)
_CHAR_FALLBACK_SPREAD = 3
_CHAR_FALLBACK_LIMIT = 2
# A stored question covering at least this share of the query asks the same thing; its answer is
# looked for in the next `_ANSWER_REACH` turns (the first that is not a question).
_ECHO_MIN_COVERAGE = 0.5
_ANSWER_REACH = 2

_EN_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before being below
    between both but by can could couldn't did didn't do does doesn't doing don't down during each few for from
    further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself
    his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most my myself no nor
    not of off on once only or other ought our ours ourselves out over own same she she'd she'll she's should so
    some such than that that's the their theirs them themselves then there there's these they they'd they'll
    they're they've this those through to too under until up very was wasn't we we'd we'll we're we've were
    weren't what what's when when's where where's which while who who's whom why why's with won't would wouldn't
    you you'd you'll you're you've your yours yourself yourselves also just really yeah yes oh hey hi hello ok
    okay so well got get gets getting will shall may might must u im ive dont thats lot lots thing things
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
# Characters that carry grammar rather than meaning, dropped both as single characters and from
# bigrams ("的房" in "3000的房子" is noise). Ambiguous ones stay: 地 (地铁), 对 (对面), 过 (过户).
_ZH_STOP_CHARS = frozenset("的了是我你他她它们在吗呢啊吧呀嘛哦哈和与及就也都很还又这那个有着么嗯呃哎")
_ZH_STOP_BIGRAMS = frozenset(
    """
    我们 你们 他们 她们 它们 什么 怎么 这个 那个 一个 一下 就是 还是 可以 没有 不是 这样 那样 然后 因为 所以
    但是 如果 我的 你的 他的 她的 是的 好的 谢谢 您好 你好 的话 一些 有点
    """.split()  # noqa: SIM905
)


# --- dates and questions ------------------------------------------------------------------

# A date a text names, as written ("t:" features, stored): a day relative to the day it was sent
# (t:d-1 昨天), a week (t:w-1 上周) or a weekday in one (t:w1.3 下周三), the latest such weekday
# before it (t:p3 last wednesday), a month and day (t:m3.2 3月2号) or a full date (t:y2026.3.2).
# Ranking reads them against each message's send date as days and weeks (`dated`), so 昨天 sent on
# 3 March and 3月2号 meet on d:2026-03-02. Stored unresolved: the features of a text do not depend
# on when it was sent, and ingest computes them from the text alone.
_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december",
)  # fmt: skip
_MONTH_NUMBERS = (
    {name: index for index, name in enumerate(_MONTHS, start=1)}
    | {name[:3]: index for index, name in enumerate(_MONTHS, start=1) if name != "may"}
    | {"sept": 9}
)
_MONTH_NAME = "|".join(sorted(_MONTH_NUMBERS, key=len, reverse=True))
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY_NAME = "|".join(_WEEKDAYS)
_ZH_WEEKDAYS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "日": 7, "天": 7}
_ZH_WEEK_OFFSETS = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}
_EN_WEEK_OFFSETS = {"last": -1, "this": 0, "next": 1}
_EN_SMALL_NUMBERS = dict(
    zip("one two three four five six seven eight nine ten".split(), range(1, 11), strict=True)  # noqa: SIM905
)
_ZH_SMALL = "一二两三四五六七八九十"


class _Groups:
    """A rule's view of the alternation's match: its own groups by their own names, "" for one
    that took no part."""

    def __init__(self, match: re.Match[str], index: int) -> None:
        self._match, self._prefix = match, f"g{index}_"

    def group(self, name: str) -> str:
        try:
            return self._match.group(self._prefix + name) or ""
        except IndexError:
            return ""


def _small_number(text: str) -> int | None:
    """1–99 written in digits, Chinese (十二, 二十三, 两) or English words (two)."""
    if text.isdigit():
        return int(text)
    if text in _EN_SMALL_NUMBERS:
        return _EN_SMALL_NUMBERS[text]
    digits = {char: _CN_DIGIT_VALUES[char] for char in _ZH_SMALL if char != "十"}
    tens, ten, ones = text.partition("十")
    if not ten:
        return digits.get(text) if len(text) == 1 else None
    if len(tens) > 1 or len(ones) > 1 or (tens and tens not in digits) or (ones and ones not in digits):
        return None
    return (digits[tens] if tens else 1) * 10 + (digits[ones] if ones else 0)


def _full_date(year: str, month: str, day: str) -> str | None:
    y, m, d = int(year), _small_number(month) or _MONTH_NUMBERS.get(month, 0), _small_number(day)
    return f"y{y}.{m}.{d}" if d and 1 <= m <= 12 and 1 <= d <= 31 else None


def _month_day(month: str, day: str) -> str | None:
    m, d = _small_number(month) or _MONTH_NUMBERS.get(month, 0), _small_number(day)
    return f"m{m}.{d}" if d and 1 <= m <= 12 and 1 <= d <= 31 else None


def _days_from(sign: int) -> Callable[[_Groups], str | None]:
    def token(match: _Groups) -> str | None:
        count = _small_number(match.group("n"))
        return f"d{sign * count}" if count else None

    return token


def _zh_week(match: _Groups) -> str | None:
    offset = _ZH_WEEK_OFFSETS.get(match.group("rel") or "这", 0)
    weekday = match.group("wd")
    return f"w{offset}.{_ZH_WEEKDAYS[weekday]}" if weekday else f"w{offset}"


def _en_named_date(match: _Groups) -> str | None:
    year, month, day = match.group("y"), match.group("mon"), match.group("n")
    return _full_date(year, month, day) if year else _month_day(month, day)


def _en_weekday(match: _Groups) -> str | None:
    weekday = _WEEKDAYS.index(match.group("wd")) + 1
    relation = match.group("rel")
    return f"p{weekday}" if relation == "last" else f"w{_EN_WEEK_OFFSETS[relation]}.{weekday}"


def _fixed(token: str) -> Callable[[_Groups], str | None]:
    return lambda _match: token


_N_ZH = rf"(?P<n>\d{{1,2}}|[{_ZH_SMALL}]{{1,3}})"
_N_EN = rf"(?P<n>\d{{1,2}}|{'|'.join(_EN_SMALL_NUMBERS)})"
_ORDINAL = r"(?:st|nd|rd|th)?"
# (name, pattern over the normalised text, its token, examples split by " / "): one alternation in this order,
# so at one place the earlier (longer) reading wins: 下周三 before 下周, 大前天 before 前天.
_DATE_RULES: tuple[tuple[str, str, Callable[[_Groups], str | None], str], ...] = (
    ("numeric date", r"(?<!\d)(?P<y>20\d\d)\s*[-/.年]\s*(?P<mon>\d{1,2})\s*[-/.月]\s*(?P<n>\d{1,2})(?!\d)",
     lambda m: _full_date(m.group("y"), m.group("mon"), m.group("n")), "2026-03-02 / 2026年3月2日"),
    ("zh month day", rf"(?<![\d{_ZH_SMALL}])(?P<mon>\d{{1,2}}|[{_ZH_SMALL}]{{1,2}})\s*月\s*{_N_ZH}\s*[日号]",
     lambda m: _month_day(m.group("mon"), m.group("n")), "3月2号 / 三月二日"),
    ("en month day", rf"\b(?P<mon>{_MONTH_NAME})\.?\s+(?P<n>\d{{1,2}}){_ORDINAL}\b(?:,?\s+(?P<y>20\d\d)\b)?",
     _en_named_date, "march 2nd / april 10, 2026"),
    ("en day month", rf"\b(?P<n>\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?(?P<mon>{_MONTH_NAME})\b(?:,?\s+(?P<y>20\d\d)\b)?",
     _en_named_date, "2 march / 8 may, 2023"),
    ("zh three days", r"大前天", _fixed("d-3"), "大前天"),
    ("zh three days on", r"大后天", _fixed("d3"), "大后天"),
    ("zh two days", r"(?<![目提当])前天(?![气然])", _fixed("d-2"), "前天"),
    ("zh two days on", r"(?<![然最先落以之])后天(?![气然台井花])", _fixed("d2"), "后天"),
    ("zh yesterday", r"昨[天日晚]", _fixed("d-1"), "昨天"),
    ("zh today", r"今[天日晚早](?![气然])", _fixed("d0"), "今天"),
    ("zh tomorrow", r"(?<![说证透表标阐声鲜聪简发])明[天日晚早](?![然气])", _fixed("d1"), "明天"),
    ("zh days ago", rf"{_N_ZH}\s*天(?:以|之)?前", _days_from(-1), "两天前"),
    ("zh days on", rf"{_N_ZH}\s*天(?:以|之)?后", _days_from(1), "三天后"),
    # Not inside other words: 一下周边, 这周边, 楼上周围, 本周天气.
    ("zh week", rf"(?<![一楼])(?P<rel>上上|下下|上|下|这|本)?个?(?:周|星期|礼拜)"
     rf"(?P<wd>[{''.join(_ZH_WEEKDAYS)}])(?![气然台空])|(?<![一楼])(?P<rel2>上上|下下|上|下|这|本)个?(?:周|星期|礼拜)(?![边围刊报])",
     lambda m: _zh_week(m) if m.group("wd") else f"w{_ZH_WEEK_OFFSETS[m.group('rel2')]}", "下周三 / 上周"),
    ("en two days", r"\bthe day before yesterday\b", _fixed("d-2"), "the day before yesterday"),
    ("en two days on", r"\bthe day after tomorrow\b", _fixed("d2"), "the day after tomorrow"),
    ("en yesterday", r"\byesterday\b", _fixed("d-1"), "yesterday"),
    ("en today", r"\b(?:today|tonight)\b", _fixed("d0"), "today"),
    ("en tomorrow", r"\btomorrow\b", _fixed("d1"), "tomorrow"),
    ("en days ago", rf"\b{_N_EN}\s+days?\s+ago\b", _days_from(-1), "two days ago"),
    ("en days on", rf"\bin\s+{_N_EN}\s+days?\b", _days_from(1), "in 3 days"),
    ("en weekday", rf"\b(?P<rel>last|this|next)\s+(?P<wd>{_WEEKDAY_NAME})\b", _en_weekday, "next wednesday"),
    ("en week", r"\b(?P<rel>last|this|next)\s+week\b", lambda m: f"w{_EN_WEEK_OFFSETS[m.group('rel')]}", "last week"),
)  # fmt: skip


def _date_alternation() -> re.Pattern[str]:
    # Each rule's groups renamed apart (g<rule>_<name>), so one pass finds them all.
    parts = []
    for index, (_name, pattern, _token, _example) in enumerate(_DATE_RULES):
        renamed = re.sub(r"\(\?P<(\w+)>", rf"(?P<g{index}_\1>", pattern)
        parts.append(f"(?P<r{index}>{renamed})")
    return re.compile("|".join(parts))


_DATE_RE = _date_alternation()
# Cheap guard: most messages name no date, and the alternation is long.
_DATE_HINT_RE = re.compile(
    rf"[天周期拜月]|\d{{4}}|\b(?:{_MONTH_NAME}|yesterday|today|tonight|tomorrow|ago|days?|week|{_WEEKDAY_NAME})\b"
)


def date_mentions(normalised: str) -> list[str]:
    """The dates a normalised (NFKC, lower-case) text names, as unresolved tokens (d-1, w1.3, m3.2)."""
    if not _DATE_HINT_RE.search(normalised):
        return []
    found: list[str] = []
    for match in _DATE_RE.finditer(normalised):
        rule = int((match.lastgroup or "r0")[1:])
        token = _DATE_RULES[rule][2](_Groups(match, rule))
        if token:
            found.append(token)
    return found


def _day_features(day: dt.date) -> list[str]:
    year, week, _weekday = day.isocalendar()
    return [f"d:{day.isoformat()}", f"k:{year}w{week:02d}"]


def _nearest_year(month: int, day: int, on: dt.date) -> dt.date | None:
    """A month and day without a year: the one nearest the day it was said."""
    candidates = []
    for year in (on.year - 1, on.year, on.year + 1):
        try:
            candidates.append(dt.date(year, month, day))
        except ValueError:
            continue
    return min(candidates, key=lambda candidate: abs((candidate - on).days), default=None)


def _resolve(token: str, on: dt.date | None) -> list[str]:
    """Day (d:) and ISO week (k:) features of one date token read on day `on`; a token that needs
    the day it was said gives nothing without it."""
    kind, rest = token[0], token[1:]
    try:
        if kind == "y":
            year, month, day = (int(part) for part in rest.split("."))
            return _day_features(dt.date(year, month, day))
        if on is None:
            return []
        if kind == "d":
            return _day_features(on + dt.timedelta(days=int(rest)))
        if kind == "m":
            month, day = (int(part) for part in rest.split("."))
            found = _nearest_year(month, day, on)
            return _day_features(found) if found else []
        if kind == "p":
            back = (on.isoweekday() - int(rest) - 1) % 7 + 1
            return _day_features(on - dt.timedelta(days=back))
        if kind == "w":
            offset, _dot, weekday = rest.partition(".")
            monday = on - dt.timedelta(days=on.weekday()) + dt.timedelta(weeks=int(offset))
            if weekday:
                return _day_features(monday + dt.timedelta(days=int(weekday) - 1))
            return _day_features(monday)[1:]
    except (ValueError, OverflowError):
        return []
    return []


def has_dates(counts: dict[str, int] | str) -> bool:
    """Whether a document (or its stored encoding) names a date: features hold no colon but after
    their kind, so "t:" is only ever a date token."""
    if isinstance(counts, str):
        return "t:" in counts
    return any(feature.startswith("t:") for feature in counts)


def dated(doc: Document, on: dt.date | None) -> Document:
    """A document with its date tokens read as days and weeks against the day it was sent."""
    counts, length = doc
    tokens = [(feature, count) for feature, count in counts.items() if feature[0] == "t" and feature[1] == ":"]
    if not tokens:
        return doc
    resolved = dict(counts)
    for feature, count in tokens:
        del resolved[feature]
        for day_feature in _resolve(feature[2:], on):
            resolved[day_feature] = resolved.get(day_feature, 0) + count
    return resolved, length


# A text is a question when its questions hold most of it ("Great. Does the rent include
# utilities?" is one; "I went there yesterday, it was lovely. How about you?" is not). Rules read
# one sentence each, in order.
_QUESTION_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("question mark", re.compile(r"[?？]"), "押金是多少？"),
    ("zh final particle", re.compile(r"[吗么呢]\W*$"), "能养狗吗"),
    ("zh question word", re.compile(
        r"什么|多少|几[点个号天年岁间楼层把次时]|哪|怎么|为什么|为啥|是否|有没有|能不能|可不可以|是不是|要不要|会不会"),
     "这边有没有健身房"),
    ("en question opening", re.compile(
        r"^\W*(?:what|when|where|who|whom|whose|which|why|how|is|are|am|was|were|do|does|did|can|could|will|would"
        r"|should|shall|have|has)\b"), "when can i move in"),
)  # fmt: skip
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[。！!？?；;\n])|(?<=\.)(?=\s)")
_LETTER_RE = re.compile(rf"[{_CJK}a-z0-9]")
# The question marker: a feature no query ever matches (weight 0), read by the ranking.
QUESTION = "q:?"
# The share of a text's letters its questions must hold.
_QUESTION_SHARE = 0.5


def is_question(normalised: str) -> bool:
    total = asked = 0
    for sentence in _SENTENCE_SPLIT_RE.split(normalised):
        letters = len(_LETTER_RE.findall(sentence))
        total += letters
        if letters and any(pattern.search(sentence.strip()) for _name, pattern, _example in _QUESTION_RULES):
            asked += letters
    return bool(total) and asked >= _QUESTION_SHARE * total


def _stem(word: str) -> str:
    """A light English stemmer: possessives, plurals, -ing/-ed and a final -e."""
    if word.endswith("'s"):
        word = word[:-2]
    word = word.replace("'", "")
    if len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "ches", "shes", "xes", "zes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if len(stem) >= 3 and re.search("[aeiouy]", stem):
                # Undouble: "running" → "run", but keep "ll"/"ss" ("calling" → "call").
                if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                    stem = stem[:-1]
                word = stem
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def features(text: str) -> tuple[Feature, ...]:
    """(feature, weight, count) for a text: CJK bigrams and single characters, stemmed English
    words without stopwords, numbers as values (八千 = 8k = 8,000 → n:8000; a range such as
    五六千 gives both ends), the dates it names as written (t:d-1 for 昨天) and whether it is a
    question (q:?). Not cached: stored features are read instead (`recall_for`)."""
    normalised = unicodedata.normalize("NFKC", text or "").lower()
    counts: Counter[str] = Counter()
    # Numbers first, cut out of the text, so 八千 is not also the bigram 八千 (nor 算八 in 预算八千).
    pieces: list[str] = []
    cursor = 0
    for number in numbers(normalised):
        pieces.append(normalised[cursor : number.start])
        cursor = number.end
        # With its classifier a number is a word of its own: 一楼 and 1楼 share "1楼", not only "1".
        classifier = normalised[number.end : number.end + 1]
        for value in dict.fromkeys(_canonical(v) for v in number.values):
            counts["n:" + value] += 1
            if classifier in _CLASSIFIER_CHARS:
                counts["b:" + value + classifier] += 1
    pieces.append(normalised[cursor:])
    for match in _TOKEN_RE.finditer(" ".join(pieces)):
        if match.lastgroup == "cjk":
            run = match.group()
            for char in run:
                if char not in _ZH_STOP_CHARS:
                    counts["c:" + char] += 1
            for i in range(len(run) - 1):
                bigram = run[i : i + 2]
                if (
                    bigram not in _ZH_STOP_BIGRAMS
                    and bigram[0] not in _ZH_STOP_CHARS
                    and bigram[1] not in _ZH_STOP_CHARS
                ):
                    counts["b:" + bigram] += 1
        elif match.lastgroup == "num":  # what numbers() left: ids too long to be amounts
            digits = match.group().replace(",", "")
            counts["n:" + (digits.lstrip("0") or "0")] += 1
        else:
            word = match.group()
            if word in _EN_STOPWORDS or len(word) < 2:
                continue
            stem = _stem(word)
            if stem and stem not in _EN_STOPWORDS:
                counts["w:" + stem] += 1
    for token in date_mentions(normalised):
        counts["t:" + token] += 1
    if is_question(normalised):
        counts[QUESTION] = 1
    return tuple(sorted((feature, _WEIGHTS[feature[0]], count) for feature, count in counts.items()))


def tokens(text: str) -> list[str]:
    """The features of a text as a flat token list (what a BM25 baseline would index): not the
    dates as written nor the question marker, which only ranking reads."""
    return [feature for feature, weight, count in features(text) if weight for _ in range(count)]


# A document as ranking reads it: feature → count, and its weighted length.
Document = tuple[dict[str, int], float]


def _length(text_features: Iterable[Feature]) -> float:
    return sum(weight * count for _feature, weight, count in text_features)


def document(text_features: Sequence[Feature]) -> Document:
    return {feature: count for feature, _weight, count in text_features}, _length(text_features)


def features_encode(text_features: Sequence[Feature]) -> str:
    """Features as stored: the weighted length, then the features space-separated, a count above
    one after `*` ("5.6|b:地铁 c:地 c:铁 n:8000*2"). Features hold no space, `|` or `*`."""
    body = " ".join(feature if count == 1 else f"{feature}*{count}" for feature, _weight, count in text_features)
    return f"{_canonical(_length(text_features))}|{body}"


def document_decode(encoded: str) -> Document:
    """A stored document, read as cheaply as Python allows. Raises ValueError on a malformed row.

    The features are interned: recall keeps decoded documents per process (memory.context.recall),
    and the same few thousand features recur across every message, so a kept document holds
    references, not copies (2.2 → 0.7 KiB a document, for ~1 µs more a decode)."""
    head, bar, body = encoded.partition("|")
    if not bar:
        raise ValueError("stored recall features without a length")
    tokens = body.split()
    if "*" not in body:
        return dict.fromkeys(map(sys.intern, tokens), 1), float(head)
    counts: dict[str, int] = {}
    for token in tokens:
        feature, _star, count = token.partition("*")
        counts[sys.intern(feature)] = int(count) if count else 1
    return counts, float(head)


def features_decode(encoded: str) -> tuple[Feature, ...]:
    """The stored features as `features` returns them."""
    counts, _ = document_decode(encoded)
    return tuple(sorted((feature, _WEIGHTS[feature[0]], count) for feature, count in counts.items()))


def text_fingerprint(text: str) -> str:
    """Identifies the text the stored features were computed from: a changed (scrubbed) text is
    tokenised again rather than recalled by words it no longer holds."""
    return hashlib.blake2b((text or "").encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


# --- ranking -----------------------------------------------------------------------------


# `rank` is called with the same texts again and again (a benchmark's questions over one
# conversation, a tool's corpus): a text's document is kept by its text, and a list of texts as an
# inverted index (feature → the documents that have it), so a query touches only the documents
# sharing one of its features. Both bounded.
RANK_MEMO_SIZE = 16_384
RANK_CORPORA = 8


@lru_cache(maxsize=RANK_MEMO_SIZE)
def _memo_document(text: str) -> Document:
    return document(features(text))


@dataclass(frozen=True)
class _Corpus:
    documents: tuple[Document, ...]
    postings: dict[str, tuple[int, ...]]
    average_length: float


_corpora: OrderedDict[tuple[str, ...], _Corpus] = OrderedDict()


_corpora_lock = threading.Lock()


def _corpus(texts: tuple[str, ...]) -> _Corpus:
    with _corpora_lock:
        corpus = _corpora.get(texts)
        if corpus is not None:
            _corpora.move_to_end(texts)
            return corpus
    documents = tuple(_memo_document(text) for text in texts)
    postings: dict[str, list[int]] = {}
    for index, (counts, _length) in enumerate(documents):
        for feature in counts:
            postings.setdefault(feature, []).append(index)
    average_length = (sum(length for _counts, length in documents) / len(documents)) or 1.0
    corpus = _Corpus(documents, {feature: tuple(ids) for feature, ids in postings.items()}, average_length)
    with _corpora_lock:
        _corpora[texts] = corpus
        while len(_corpora) > RANK_CORPORA:
            _corpora.popitem(last=False)
    return corpus


def rank(query: str, documents: Sequence[str], limit: int) -> list[int]:
    """Indexes of the documents most relevant to `query`, best first, at most `limit`: the same
    answer as `rank_documents` over the documents' features, read through the memoised corpus."""
    if limit <= 0 or not documents:
        return []
    corpus = _corpus(tuple(documents))
    query_weights = _query_weights(features(query))
    if not query_weights:
        return []
    shared: dict[int, list[str]] = {}
    for feature in sorted(query_weights):
        for index in corpus.postings.get(feature, ()):
            shared.setdefault(index, []).append(feature)
    return _ranked(query_weights, corpus.documents, shared, corpus.average_length, limit)


def rank_features(
    query_features: Sequence[Feature], doc_features: Sequence[Sequence[Feature]], limit: int
) -> list[int]:
    """`rank` over features already computed (as `features` returns them)."""
    return rank_documents(query_features, [document(text_features) for text_features in doc_features], limit)


def _query_weights(query_features: Sequence[Feature], on: dt.date | None = None) -> dict[str, float]:
    """What a query looks for: its weighted features, its dates read against the day it was asked
    (`on`); never a date as written nor the question marker."""
    weights = {feature: weight for feature, weight, _count in query_features if weight}
    for feature, _weight, _count in query_features:
        if feature.startswith("t:"):
            for day_feature in _resolve(feature[2:], on):
                weights[day_feature] = _WEIGHTS[day_feature[0]]
    return weights


def rank_documents(
    query_features: Sequence[Feature],
    documents: Sequence[Document],
    limit: int,
    *,
    sent_on: Sequence[dt.date | None] | None = None,
    query_on: dt.date | None = None,
) -> list[int]:
    """`rank` over documents already tokenised (stored ones in `recall_for`).

    `sent_on` (one per document) and `query_on` are the days the documents and the query were
    sent: the dates they name are read against them (昨天 sent on 3 March is 3月2号). A document
    without a day is ranked as it is, its dates unread (a caller passes None for the documents that
    name none, sparing the look); a query without one matches by full dates (2026-03-02) only.

    Score: for each distinct query feature, its weight × IDF over the candidate documents ×
    a BM25 saturation of its count in the document, with length normalisation so a long
    message does not win by size. Documents that match less than `_MIN_COVERAGE` of the
    query's rarity-weighted features are not returned. Documents are taken to be in time order:
    a matching message also gets a share of its best neighbour's score, because in a chat the
    answer sits next to the question. Ties go to the later index (the newer message).

    When no document clears the coverage bar (a short question sharing a few rare words with the
    right message), the documents sharing a rare term with the query are ranked by the same score
    instead; a query sharing only common terms, or too few documents to tell, still gets nothing.

    A question does not answer itself: a stored question asking mostly what the query asks (a
    customer asking again) hands its score to the turn after it, which then ranks first. A short
    list sharing no term with the query but a single character gives its best match or two.
    """
    if limit <= 0 or not documents:
        return []
    query_weights = _query_weights(query_features, query_on)
    if not query_weights:
        return []
    if sent_on is not None:
        documents = [doc if on is None else dated(doc, on) for doc, on in zip(documents, sent_on, strict=True)]
    query_keys = query_weights.keys()
    # Only the shared features matter: a C-level set intersection per document, then a loop over few.
    shared: dict[int, list[str]] = {}
    for index, (counts, _length) in enumerate(documents):
        common = counts.keys() & query_keys
        if common:
            shared[index] = sorted(common)
    average_length = (sum(length for _counts, length in documents) / len(documents)) or 1.0
    return _ranked(query_weights, documents, shared, average_length, limit)


def _ranked(
    query_weights: dict[str, float],
    documents: Sequence[Document],
    shared: dict[int, list[str]],
    average_length: float,
    limit: int,
) -> list[int]:
    """The ranking of `rank_documents`, given each document's shared features (sorted; documents
    sharing none absent)."""
    document_frequency: Counter[str] = Counter()
    for features_shared in shared.values():
        document_frequency.update(features_shared)
    total = len(documents)
    idf = {
        feature: math.log(1.0 + (total - document_frequency[feature] + 0.5) / (document_frequency[feature] + 0.5))
        for feature in query_weights
    }
    # A day or week the query names counts only where some document names it too: a date is
    # evidence when it matches, not a word the other documents are missing.
    query_mass = (
        sum(
            query_weights[feature] * idf[feature]
            for feature in query_weights
            if document_frequency[feature] or feature[0] not in _DATE_KINDS
        )
        or 1.0
    )
    prior_total = max(total, _FALLBACK_PRIOR_DOCUMENTS)
    rare = {
        feature
        for feature in query_weights
        if document_frequency[feature]
        and math.log(1.0 + (prior_total - document_frequency[feature] + 0.5) / (document_frequency[feature] + 0.5))
        >= (_FALLBACK_MIN_IDF_CHAR if feature[0] == "c" else _FALLBACK_MIN_IDF)
    }

    raw: dict[int, float] = {}
    echoes: list[int] = []  # questions asking mostly what the query asks
    eligible: list[int] = []
    fallback: list[int] = []
    for index in sorted(shared):
        features_shared = shared[index]
        counts, length = documents[index]
        norm = _K1 * (1.0 - _B + _B * length / average_length)
        score = 0.0
        matched_mass = 0.0
        for feature in features_shared:
            term = query_weights[feature] * idf[feature]
            count = counts[feature]
            score += term * count * (_K1 + 1.0) / (count + norm)
            matched_mass += term
        raw[index] = score
        coverage = matched_mass / query_mass
        if coverage >= _MIN_COVERAGE:
            eligible.append(index)
            if coverage >= _ECHO_MIN_COVERAGE and QUESTION in counts:
                echoes.append(index)
        if not rare.isdisjoint(features_shared):
            fallback.append(index)
    if not eligible:
        eligible = fallback or _single_character_matches(shared, document_frequency, total, raw)

    final: dict[int, float] = {}
    for index in eligible:
        neighbour = max(raw.get(index - 1, 0.0), raw.get(index + 1, 0.0))
        final[index] = raw[index] + _NEIGHBOUR_SHARE * neighbour
    if echoes:
        _answers_after_questions(final, echoes, documents)
    scored = sorted(((score, index) for index, score in final.items()), key=lambda pair: (-pair[0], -pair[1]))
    return [index for _score, index in scored[:limit]]


def _answers_after_questions(final: dict[int, float], echoes: list[int], documents: Sequence[Document]) -> None:
    """A question asking mostly what the query asks (`echoes`) is the customer asking again, not the
    answer: the first turn after it that is not a question itself (within `_ANSWER_REACH`) takes
    its score when that is higher, and so ranks above it (ties go to the later turn)."""
    for index in echoes:
        for after in range(index + 1, min(index + 1 + _ANSWER_REACH, len(documents))):
            if QUESTION not in documents[after][0]:
                final[after] = max(final.get(after, 0.0), final[index])
                break


def _single_character_matches(
    shared: dict[int, list[str]], document_frequency: Counter[str], total: int, raw: dict[int, float]
) -> list[int]:
    """In a short list (a few facts about a customer) sharing no term with the query, the best
    documents sharing a character the others mostly lack (猫 in 我养了一只猫 for 你家有宠物猫吗),
    never a common one (好 in 好的); nothing in a longer history, where a lone character is noise."""
    if total > _CHAR_FALLBACK_MAX_DOCUMENTS:
        return []
    if any(not feature.startswith("c:") for features_shared in shared.values() for feature in features_shared):
        return []  # a real term is shared, though too common or too slight to count: not this case
    most = max(1, total // _CHAR_FALLBACK_SPREAD)
    matches = [
        index
        for index, features_shared in shared.items()
        if any(
            document_frequency[feature] <= most and feature[2:] not in _ZH_COMMON_CHARS for feature in features_shared
        )
    ]
    matches.sort(key=lambda index: (-raw[index], -index))
    return matches[:_CHAR_FALLBACK_LIMIT]
