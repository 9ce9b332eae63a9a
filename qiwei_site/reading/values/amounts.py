"""Amounts with their shape: a number or a range, a bound (exact, at most, at least), whether it is
approximate, a unit, and the qualifiers a customer attaches (全款, 双税, 含税, 押一付三 …).

    六千 → 6000元 · 七千五左右 → 约7500元 · 五六千 → 约5000–6000元 · 两到三千 → 2000–3000元
    不超过八千 / 八千以内 / 最多八千 / 八千封顶 → ≤8000元 · 一万出头 → 约≥10000元
    总价两百万全款 → 200万元，全款 (topic 总价) · 30分钟以内 → ≤30分钟 · 80平以上 → ≥80平方米

A number with neither unit nor multiplier ("4500左右") has no unit here: only its context (预算,
a question about the budget) says it is money, and that is the caller's call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qiwei_site.reading.values.numbers import (
    CN_DIGITS,
    CN_UNITS,
    format_number,
    has_multiplier,
    parse_number,
    parse_pair,
    trailing_multiplier,
)

EXACT, AT_MOST, AT_LEAST, RANGE = "exact", "max", "min", "range"

# A negated comparative bounds the other way: "别超过" caps, "面积别小于六十平" sets a floor.
_NEGATED = r"(?:不|别|不要|不能|不可以|不得|不想|不会|不宜|最好别|最好不要|尽量别|尽量不要)(?:要|能|会)?"
_CAP_BEFORE = (
    rf"{_NEGATED}(?:超过|超出|高于|大于|多于)|不高于|不大于|最多|最高|顶多|至多|封顶|"
    r"控制在|压在|低于|少于|小于|不到"
)
_MIN_BEFORE = rf"{_NEGATED}(?:低于|小于|少于)|至少|最少|起码|最低|不低于|不少于|高于|大于|多于|超过"
_APPROX_BEFORE = r"大概|大约|约莫|约|差不多|估计|大致|大体|将近|接近|小"
# What stands between a bound and its number: "最多出到四千五", "最多能接受两百五十万".
_FILLER = r"(?:能出到|能给到|可以接受|能接受|接受|能出|出到|给到|能到|也就|在|是|为|到|就|有|个|了|给|出|花)?"
_RUN = rf"(?:\d|[一二两三四五六七八九十])(?:[\d.,{CN_DIGITS}{CN_UNITS}点]|(?<=\d)[kKwW](?![a-zA-Z]))*"
# The bound and filler words an amount's words may start with ("最多出到", "不要低于", "大概").
LEAD_WORDS = rf"(?:{_CAP_BEFORE}|{_MIN_BEFORE}|{_APPROX_BEFORE})?\s*(?:要|得)?{_FILLER}"
_UNIT = r"块钱|块|元|rmb|RMB|人民币|平方米|平米|平方|平(?![时常安方])|㎡|个小时|小时|分钟|分(?![钟之析别开期手享配])"
_PER = r"/月|每月|每个月|一个月|/晚|一晚|每晚|/平|每平|一平"
_MAX_AFTER = r"以内|以下|之内|内(?![容部外])|封顶|为限|打住|顶天|顶格|之下"
_MIN_AFTER = r"以上|起步|起(?![来码])|往上|之上"
_APPROX_AFTER = r"左右|上下|出头|附近|的样子"
_BETWEEN_AFTER = r"之间|中间"
_QUALIFIERS = (
    "全款|双税|含税|不含税|包税|税费各付|各付各税|满五唯一|满二唯一|满五|满二|包物业费|包物业|包水电|包网费|押一付一|"
    "押一付三|押二付一|押一付二|月付|季付|半年付|年付|一次性付清|净得|到手价|到手"
)
# Fees a customer pays beside the price, in any trade (issue 22): 运费, 差价, 学费, 安装费 …
FEE_TOPICS = (
    "快递费|运费|邮费|补差价|差价|学费|课时费|课费|培训费|报名费|教材费|资料费|材料费|安装费|维修费|上门费|手续费|"
    "停车费|水电费|网费|物业费"
)
# The terms of a deal, not what the customer pays for a thing: no limit on them is a budget.
DEAL_TERMS = "押金|定金|订金|中介费|服务费|管理费|违约金"
# What an amount is about, read from the words just before it (the nearest one wins).
_TOPIC = (
    r"总预算|月租预算|租金预算|房租预算|预算|月租金|月租|租金|房租|总价|单价|首付|月供|价位|价格|价钱|房价|售价|租价|"
    rf"{FEE_TOPICS}|{DEAL_TERMS}|人均消费|人均|门票|票价|通勤|面积|budget"
)
_AMOUNT_RE = re.compile(
    rf"(?:(?P<cap>{_CAP_BEFORE})|(?P<least>{_MIN_BEFORE})|(?P<about>{_APPROX_BEFORE}))?\s*"
    # "至少要七十平": a 要 only after a bound (alone it is the want's verb, "想要三千以内的")
    rf"(?:(?<=[多少码低高顶至])(?:要|得))?{_FILLER}\s*"
    rf"(?P<n1>{_RUN})(?P<more>多(?![少久长大远么]))?\s*(?P<u1>{_UNIT})?\s*"
    rf"(?:(?P<sep>-|~|～|—|－|到|至)\s*(?P<n2>{_RUN})\s*(?P<u2>{_UNIT})?\s*)?"
    rf"(?P<per>{_PER})?\s*(?:(?P<max>{_MAX_AFTER})|(?P<min>{_MIN_AFTER})|(?P<approx>{_APPROX_AFTER})|{_BETWEEN_AFTER})?"
)
_HALF_HOUR_RE = re.compile(
    rf"(?:(?P<cap>{_CAP_BEFORE})|(?P<about>{_APPROX_BEFORE}))?\s*{_FILLER}\s*(?P<n>[一两二三四五1-5]?)个?(?P<half>半)个?小时"
    rf"\s*(?:(?P<max>{_MAX_AFTER})|(?P<approx>{_APPROX_AFTER}))?"
)
_QUALIFIER_RE = re.compile(_QUALIFIERS)
_TOPIC_RE = re.compile(_TOPIC, re.IGNORECASE)
_MEASURE_AFTER_RE = re.compile(r"[个晚天年月次套间家位层楼号周期节堂课季]|学期")
_UNIT_NAMES = {
    "块钱": "元", "块": "元", "元": "元", "rmb": "元", "RMB": "元", "人民币": "元",
    "平方米": "平方米", "平米": "平方米", "平方": "平方米", "平": "平方米", "㎡": "平方米",
    "个小时": "分钟", "小时": "分钟", "分钟": "分钟", "分": "分",
}  # fmt: skip
_UNIT_FACTOR = {"个小时": 60.0, "小时": 60.0}


@dataclass(frozen=True)
class Amount:
    """An amount as the customer wrote it (`words`) and what it means."""

    words: str
    low: float | None
    high: float | None
    bound: str  # exact | max | min | range
    approx: bool = False
    unit: str = ""  # 元 | 平方米 | 分钟 | 分 | "" (no unit written: the context decides)
    per: str = ""  # 月 | 晚 | 平 (a rent per month, a room per night, a price per square metre)
    qualifiers: tuple[str, ...] = ()
    topic: str = ""  # what the words before it say it is about: 预算, 总价, 押金, 通勤 …
    start: int = 0
    end: int = 0

    @property
    def chinese_numerals(self) -> bool:
        """The words write the number in Chinese (六千, 五六千): not readable as digits as they stand."""
        return re.search(rf"[{CN_DIGITS}十百]", self.words) is not None

    def numbers(self) -> tuple[float, ...]:
        """The distinct numbers the amount names (one for an exact amount, two for a range)."""
        return tuple(dict.fromkeys(v for v in (self.low, self.high) if v is not None))

    def display(self) -> str:
        """A stable reading: "约7500元", "≤8000元", "5000–6000元", "200万元，全款"."""
        if self.bound == RANGE:
            high = self._fmt(self.high)
            unit = re.sub(r"^[\d.]+", "", high)
            low = self._fmt(self.low)
            text = (
                f"{low.removesuffix(unit)}–{high}"
                if unit and low.endswith(unit) and re.match(r"^[\d.]+$", low.removesuffix(unit))
                else f"{low}–{high}"
            )
        elif self.bound == AT_MOST:
            text = f"≤{self._fmt(self.high)}"
        elif self.bound == AT_LEAST:
            text = f"≥{self._fmt(self.low)}"
        else:
            text = self._fmt(self.low)
        if self.approx:
            text = f"约{text}"
        if self.per:
            text += f"/{self.per}"
        return "，".join([text, *self.qualifiers])

    def _fmt(self, value: float | None) -> str:
        if value is None:
            return "?"
        unit = self.unit or "元"
        if unit == "元" and value >= 100000 and value % 10000 == 0:
            return f"{format_number(value / 10000)}万元"
        return f"{format_number(value)}{unit}"


def _clean_run(run: str, after: str) -> str:
    run = run.rstrip(".,点")
    # "五千一个月", "4000一期", "3k一节": the 一 belongs to the measure word that follows, not to the number.
    if (
        len(run) >= 2
        and run[-1] in "一两"
        and (run[-2] in CN_UNITS or run[-2] in "0123456789kKwW")
        and _MEASURE_AFTER_RE.match(after)
    ):
        run = run[:-1]
    return run


def _number(run: str) -> float | None:
    for end in range(len(run), 0, -1):
        value = parse_number(run[:end])
        if value is not None:
            return value if end == len(run) else None
    return None


def _topic(text: str, start: int) -> str:
    window = re.split(r"[，,。！!？?；;\n]", text[max(0, start - 12) : start])[-1]
    found = list(_TOPIC_RE.finditer(window))
    return found[-1].group(0).lower() if found else ""


def _qualifiers(text: str, start: int, end: int) -> tuple[str, ...]:
    before = re.split(r"[，,。！!？?；;\n]", text[max(0, start - 6) : start])[-1]
    after = re.split(r"[，,。！!？?；;\n]", text[end : end + 8])[0]
    return tuple(dict.fromkeys(m.group(0) for m in _QUALIFIER_RE.finditer(before + " " + after)))


def _half_hours(text: str) -> list[Amount]:
    found = []
    for match in _HALF_HOUR_RE.finditer(text):
        hours = parse_number(match.group("n")) if match.group("n") else 0.0
        minutes = (hours or 0.0) * 60 + 30
        bound = AT_MOST if match.group("cap") or match.group("max") else EXACT
        found.append(
            Amount(
                words=match.group(0).strip(),
                low=None if bound == AT_MOST else minutes,
                high=minutes,
                bound=bound,
                approx=bool(match.group("about") or match.group("approx")),
                unit="分钟",
                topic=_topic(text, match.start()),
                start=match.start(),
                end=match.end(),
            )
        )
    return found


def amounts_in(text: str, *, bare: bool = False) -> list[Amount]:
    """The amounts in `text`, in order. Without `bare`, a number with neither a unit, a multiplier
    (千/万/k/w), a bound nor a topic is left out: "2号线", "三室一厅" and "一点" are no amounts."""
    found: list[Amount] = []
    taken: list[tuple[int, int]] = []
    for half in _half_hours(text):
        found.append(half)
        taken.append((half.start, half.end))
    for match in _AMOUNT_RE.finditer(text):
        if any(start < match.end() and match.start() < end for start, end in taken):
            continue
        amount = _amount(text, match)
        if amount is None:
            continue
        written_as_amount = (
            amount.unit
            or has_multiplier(re.sub(r"[十百]", "", match.group("n1")) + (match.group("n2") or ""))
            or amount.topic
            or amount.bound != EXACT
            or amount.approx
        )
        if not bare and not written_as_amount:
            continue
        lone = not amount.unit and amount.bound == EXACT and not amount.topic and amount.high is not None
        if not bare and lone and not has_multiplier(amount.words) and not re.search(r"\d", amount.words):
            continue  # "便宜一些", "十分": a lone Chinese numeral with nothing around it
        found.append(amount)
    found.sort(key=lambda a: a.start)
    return found


def _amount(text: str, match: re.Match[str]) -> Amount | None:
    after_n1 = text[match.end("n1") :]
    run1 = _clean_run(match.group("n1"), after_n1)
    lone_digit = not re.search(r"\d", run1) and len(run1) == 1 and run1 != "十" and not match.group("u1")
    if (not run1 or lone_digit) and not (match.group("sep") and match.group("n2")):
        return None
    unit_word = match.group("u2") or match.group("u1") or ""
    if unit_word == "分" and not re.search(r"\d", run1):
        return None  # "十分满意": an adverb, not a score
    pair = parse_pair(run1)
    low: float | None
    high: float | None
    if pair is not None:
        low, high = pair
        bound, approx = RANGE, True
    else:
        low = _number(run1)
        if low is None:
            return None
        high = low
        bound, approx = EXACT, False
        if match.group("n2"):
            run2 = _clean_run(match.group("n2"), text[match.end("n2") :])
            high_value = _number(run2)
            if high_value is None:
                return None
            if not has_multiplier(run1) and has_multiplier(run2) and low * trailing_multiplier(run2) <= high_value:
                low *= trailing_multiplier(run2)  # "两到三千": the low end takes the high end's unit
            if high_value < low:
                return None
            high = high_value
            bound = RANGE if high_value != low else EXACT
    if match.group("more") and bound == EXACT and not match.group("n2"):
        # "三千多", "一万多": from the number up to the next step of its last unit (3000–4000).
        step = _step(run1)
        if step:
            high, bound, approx = low + step, RANGE, True
    factor = _UNIT_FACTOR.get(unit_word, 1.0)
    low, high = (low * factor if low is not None else None), (high * factor if high is not None else None)
    if bound != RANGE:
        if match.group("cap") or match.group("max"):
            bound, low = AT_MOST, None
        elif match.group("least") or match.group("min"):
            bound, high = AT_LEAST, None
    if match.group("about") or match.group("approx"):
        approx = True
        if match.group("approx") == "出头" and bound == EXACT:
            bound, high = AT_LEAST, None
    end = match.end()
    if len(run1) < len(match.group("n1").rstrip(".,点")) and not match.group("n2"):
        end = match.start("n1") + len(run1)  # "五千一个月": the amount ends before the 一
    elif match.group("n2") and (kept := len(_clean_run(match.group("n2"), text[match.end("n2") :]))) < len(
        match.group("n2").rstrip(".,点")
    ):
        end = match.start("n2") + kept  # "3k到4k一期": the range ends before the 一
    per = match.group("per") or "" if end == match.end() else ""
    per = "月" if "月" in per else "晚" if "晚" in per else "平" if "平" in per else ""
    words = re.sub(r"\s+", "", text[match.start() : end])
    return Amount(
        words=words,
        low=low,
        high=high,
        bound=bound,
        approx=approx,
        unit=_UNIT_NAMES.get(
            unit_word, "元" if has_multiplier(re.sub(r"[十百]", "", run1 + (match.group("n2") or ""))) else ""
        ),
        per=per,
        qualifiers=_qualifiers(text, match.start(), end),
        topic=_topic(text, match.start()),
        start=match.start(),
        end=end,
    )


def _step(run: str) -> float:
    """The unit a "…多" counts in: 三千 → 1000, 一万 → 10000, 4000 → 1000 (0 when too small to mean a span)."""
    unit = re.search(r"[十百千万]$", run)
    if unit:
        return {"十": 10.0, "百": 100.0, "千": 1000.0, "万": 10000.0}[unit.group(0)]
    zeros = re.search(r"[1-9](0+)$", run)
    return float(10 ** len(zeros.group(1))) if zeros and len(zeros.group(1)) >= 2 else 0.0


def canonical_numbers(text: str) -> list[str]:
    """Every amount's numbers in digits, for matching 八千 with 8000: "五六千" → ["5000", "6000"]."""
    return [format_number(value) for amount in amounts_in(text) for value in amount.numbers()]
