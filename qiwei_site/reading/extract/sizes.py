"""The floor area a customer wants ("九十平左右", "至少要七十平", "面积别小于六十平", "一百平以上的三居"):
a preference under one key (`preference:面积`), so a later size supersedes the earlier one, with the
customer's words and, in brackets, the area as a value (面积九十平左右（约90平方米）).
"""

from __future__ import annotations

import dataclasses
import re

from qiwei_site.reading.extract._common import CONSTRAINT, PREFERENCE, Candidate
from qiwei_site.reading.values import Amount, amounts_in
from qiwei_site.reading.values.amounts import AT_LEAST, AT_MOST, LEAD_WORDS, RANGE

SIZE_KEY = f"{PREFERENCE}:面积"
_LEAD_RE = re.compile(rf"^{LEAD_WORDS}")
_BOUND_RE = re.compile(r"(?:以内|以下|之内|内|以上|起步|起|往上|之上|左右|上下|出头|附近|的样子|之间|中间)$")
# A size of a listing, or of the home the customer has now: no want.
_NOT_WANTED_BEFORE_RE = re.compile(
    r"这套|那套|这间|那间|这个|那个|这房|那房|它|之前|刚才|上次|现在住|目前住|原来|以前|住的是|租的是|我家|我们家|实际|只有"
)
# "…的三居", "…的房子": the size describes the home asked for.
_ATTACHED_RE = re.compile(
    r"^\s*(?:的|左右的|以上的|以内的)?\s*(?:[一二两三四五六1-6](?:室|居|房)|房|户型|小户型|大户型|公寓|单间|开间|套)"
)


def _words(amount: Amount) -> str:
    core = _BOUND_RE.sub("", _LEAD_RE.sub("", amount.words))
    if amount.bound == AT_MOST:
        return f"{core}以内"
    if amount.bound == AT_LEAST:
        return f"{core}以上"
    if amount.approx and amount.bound != RANGE:
        return f"{core}左右"
    return core


def size_candidate(clause: str, *, wanted: bool, answered: bool) -> tuple[Candidate, tuple[int, int]] | None:
    """The floor area the clause asks for, with the span it was read from; `wanted` when the clause
    states a want, `answered` when it answers the agent's question about needs."""
    for amount in amounts_in(clause, bare=True):
        if amount.per or amount.unit not in {"平方米", ""}:
            continue
        if not amount.unit and not (
            amount.topic == "面积" and amount.numbers() and 10 <= max(amount.numbers()) <= 1000
        ):
            continue
        if not amount.unit:
            amount = dataclasses.replace(amount, unit="平方米")  # "面积一百左右": the topic says square metres
        if _NOT_WANTED_BEFORE_RE.search(clause[: amount.start]):
            return None
        topic = amount.topic == "面积" or re.search(r"(?:面积|大小)\s*(?:要|在|是|得)?\s*$", clause[: amount.start])
        bounded = amount.bound != "exact" or amount.approx
        attached = _ATTACHED_RE.match(clause[amount.end :]) is not None
        if not (topic or bounded or wanted or attached or answered):
            continue
        words = _words(amount)
        meaning = amount.display() if amount.chinese_numerals or amount.bound != "exact" else ""
        content = f"偏好：面积{words}" + (f"（{meaning}）" if meaning else "")
        start = clause.rfind("面积", 0, amount.start) if topic else amount.start
        return (
            Candidate(
                type=PREFERENCE,
                key=SIZE_KEY,
                content=content,
                confidence=0.85,
                importance=3,
                supersedes_keys=(f"{CONSTRAINT}:面积",),
                clause=clause,
                values=(amount,),
            ),
            (max(0, start), amount.end),
        )
    return None
