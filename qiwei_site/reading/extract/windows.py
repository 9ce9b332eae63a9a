"""When the customer can be reached, served or taught (issue 22, item 2): a time window with what it
is for, in any trade — "晚上联系我", "快递下午六点以后送", "孩子周六上午有空", "工作日下午都行",
"周三晚上不行", "call me after 6pm".

A window is days and times of day ("周末", "工作日下午", "晚上七点以后", "12点到两点之间"), read
only with what it is for (contacting, delivering, a visit, a class) or with the customer's own
availability (有空, 方便, 都行); a window the customer rules out ("周三晚上不行") is a constraint.
One key per purpose, so a later window replaces the earlier one ("时间改成周日下午"). Appointments
with a date ("周六下午看房") stay the viewing time (`profile_facts`).
"""

from __future__ import annotations

import re

from qiwei_site.reading.extract._common import CONSTRAINT, PREFERENCE, Candidate
from qiwei_site.reading.extract.objects import object_key
from qiwei_site.reading.normalise import normalize_content

_NUM = r"[零一二两三四五六七八九十\d]{1,3}"
_DAY = (
    r"(?:周[一二三四五六日天末]|星期[一二三四五六日天]|礼拜[一二三四五六日天]|工作日|双休日?|节假日|休息日|每天|平时|平常|"
    r"暑假|寒假|假期|白天)"
)
_PART = r"(?:早上|上午|中午|午休|下午|傍晚|晚上|晚间|夜里|早晚)"
_CLOCK = rf"(?:{_NUM}\s*(?:点|:\d\d|：\d\d)(?:半|钟|{_NUM}分?)?)"
_POINT = rf"(?:{_DAY}{{0,2}}{_PART}?{_CLOCK}?)"
_BOUND = r"(?:以后|之后|后|以前|之前|前|左右)"
_WINDOW = (
    rf"(?P<window>(?:{_DAY}|{_PART}|{_CLOCK})(?:{_DAY}|{_PART}|{_CLOCK}|和|、|或者?)*{_BOUND}?"
    rf"(?:(?:到|至|-|~|－){_POINT}{_BOUND}?(?:之间)?)?)"
)
# What the window is for: one key per purpose.
_PURPOSES = (
    ("contact", r"联系|打电话|打给我|来电|回电话?|电话联系|打我电话|电话|call|contact"),
    ("delivery", r"送货|送到|送过来|送|派送|配送|发货|上门|取件|收货|安装|寄"),
    ("class", r"上课|开课|上|学|补课|试听"),
)
_PURPOSE_RE = re.compile(
    rf"^(?:再|都|就|请|麻烦)?(?:给我|跟我)?(?P<verb>{'|'.join(f'(?P<{name}>{words})' for name, words in _PURPOSES)})"
)
_AVAILABLE_RE = re.compile(
    r"^(?:我|我们)?(?:都|也|比较|会|一般)?(?:有空|有时间|方便|可以|行|都行|都可以|ok|OK|没问题|合适|有人)(?:一些|一点|些)?"
    r"[的吧啊呀哈了呢哦嘛啦]*$"
)
_UNAVAILABLE_RE = re.compile(
    r"^(?:都|也|可能|肯定|真的)?(?:不行|不可以|不方便|没空|没时间|不在家|不在|没法|不太行|不合适|排不开|有事)[的吧啊呀哈了呢哦嘛啦]*$"
)
# "上午送到的", "周末送过来的那个坏了", "下午寄出的": what happened, not when the customer wants it.
_PAST_AFTER_VERB_RE = re.compile(r"^(?:到|出|过来|过去|好|完)?(?:的|了|过)")
_LEAD_RE = re.compile(
    r"^(?:我|我们|孩子|他|她|小孩|本人|其实|那|那就|就|最好|希望|尽量|一般|只有|只能|得|要|时间|时间上|(?P<change>改成|换成|改到|换到)|"
    r"(?:[\u4e00-\u9fff]{2}的话)|(?:预约|上门|安装|送货|维修)?(?:时间)?(?:尽量|最好)?(?P<placed>安排|放|定|约)(?:在|到)|"
    r"快递|电话|打电话的话|送货的话|的话|平时|能|可以|请|麻烦)*"
)
_WINDOW_RE = re.compile(_WINDOW)


def _window_at(clause: str) -> tuple[re.Match[str], bool] | None:
    """The window right after the clause's lead words, and whether the lead changes or places it
    ("改成周日下午", "尽量安排在周末下午": the window is the one wanted, with nothing after it)."""
    lead = _LEAD_RE.match(clause)
    assert lead is not None  # every part of the lead is optional
    match = _WINDOW_RE.match(clause, lead.end())
    if match is None or not re.search(rf"{_DAY}|{_PART}|{_CLOCK}", match.group("window")):
        return None
    return match, lead.group("change") is not None or lead.group("placed") is not None


def _candidate(kind: str, words: str, clause: str, purpose: str, confidence: float) -> Candidate:
    words = normalize_content(words)
    if kind == CONSTRAINT:
        return Candidate(
            type=CONSTRAINT,
            key=f"{CONSTRAINT}:{object_key(words)}",
            content=f"不考虑：{words}",
            confidence=confidence,
            importance=3,
            clause=clause,
        )
    return Candidate(
        type=PREFERENCE,
        key=f"{PREFERENCE}:time:{purpose}",
        content=f"偏好：{words}",
        confidence=confidence,
        importance=3,
        clause=clause,
    )


def time_window(clause: str, *, asked_when: bool = False) -> Candidate | None:
    """The window a clause states, with its purpose; None when it states none. `asked_when`: the
    agent just asked when ("什么时间方便？"), so a bare window answers it."""
    if re.search(r"如果|假如|要是|万一|除非", clause):
        return None  # a condition, read by the condition rule
    found = _window_at(clause)
    if found is None:
        return None
    match, changed = found
    window = match.group("window")
    rest = clause[match.end() :].strip()
    purpose = _PURPOSE_RE.match(rest)
    if purpose is not None:
        name = next(name for name, _ in _PURPOSES if purpose.group(name))
        verb = purpose.group("verb")
        if name == "class" and verb in {"上", "学"} and not re.match(r"^(?:上|学)(?:课|吧|就行|也行|都行|的)?$", rest):
            return None  # "晚上上班", "周末学车": not a class time
        if _PAST_AFTER_VERB_RE.match(rest[purpose.end() :]):
            return None
        shown = "联系" if name == "contact" else verb
        return _candidate(PREFERENCE, window + shown, clause, name, 0.85)
    if _UNAVAILABLE_RE.match(rest):
        return _candidate(CONSTRAINT, window, clause, "", 0.8)
    bare = not rest.strip("的吧啊呀哈了呢哦嘛啦 ")
    if _AVAILABLE_RE.match(rest) or (bare and (asked_when or changed)):
        return _candidate(PREFERENCE, window, clause, "available", 0.8)
    return None


__all__ = ["time_window"]
