"""A confirmed guess's wording (issue 39, item 3): what a supervisor is offered to keep when a
hypothesis 「客户可能在张江上班」 becomes a fact — the same words without the guess's hedge.

The hedges are one ordered table, each row named with its example (a row, not a branch). The
result is only a suggestion: the supervisor sees it pre-filled and may change it before confirming.
It reads a model's or a supervisor's words, never a customer's message, so it is not the reader's
(`qiwei_site.reading`) business; it is pure Python all the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Hedge:
    name: str
    pattern: re.Pattern[str]
    replacement: str
    example: tuple[str, str]  # (a guess, the wording offered)


def _cn(words: str) -> re.Pattern[str]:
    # Not the negation 「不可能」「不应该」 and not 「可能性」: those state something, they do not guess.
    return re.compile(rf"(?<![不没])(?:{words})(?![性])")


_CN_HEDGES = "也许|或许|可能|大概|估计|似乎|好像|貌似|看起来|看样子"

HEDGES: tuple[Hedge, ...] = (
    # A clause that opens with the guess and 是 has no subject to keep the 是 for.
    Hedge(
        "cn_opening_possibly_is",
        re.compile(rf"(?:^|(?<=[，。；,;]))(?:{_CN_HEDGES})是"),
        "",
        ("可能是为孩子上学换房", "为孩子上学换房"),
    ),
    # Chinese: a hedge word (with a following 是/会 kept: 「可能会」 → 「会」).
    Hedge(
        "cn_possibly",
        _cn(_CN_HEDGES),
        "",
        ("客户可能在张江上班", "客户在张江上班"),
    ),
    # 应该 is also 'ought to' (「房子应该朝南」): a guess only before 是/有/在/会/已 or at the start.
    Hedge(
        "cn_should_be",
        re.compile(r"(?<![不没])应该(?=是|有|在|会|已|也|还)"),
        "",
        ("客户应该有学龄孩子", "客户有学龄孩子"),
    ),
    # English: modal + be/have reads as a plain verb; hedging adverbs go.
    Hedge(
        "en_may_be",
        re.compile(r"\b(?:may|might|could)\s+be\b", re.I),
        "is",
        ("The customer may be a teacher", "The customer is a teacher"),
    ),
    Hedge(
        "en_may_have",
        re.compile(r"\b(?:may|might|could)\s+have\b", re.I),
        "has",
        ("The customer might have a car", "The customer has a car"),
    ),
    Hedge(
        "en_seems_to_be",
        re.compile(r"\b(?:seems|appears)\s+to\s+be\b", re.I),
        "is",
        ("He seems to be moving in June", "He is moving in June"),
    ),
    Hedge(
        "en_is_likely_to",
        re.compile(r"\b(?:is|are)\s+(?:likely|probably)\s+to\s+", re.I),
        "will ",
        ("She is likely to move in June", "She will move in June"),
    ),
    Hedge(
        "en_modal",
        re.compile(r"\b(?:may|might)\s+", re.I),
        "",
        ("They may prefer metro access", "They prefer metro access"),
    ),
    Hedge(
        "en_adverb",
        re.compile(r"\b(?:probably|likely|possibly|perhaps|maybe|presumably|apparently)\b,?\s*", re.I),
        "",
        ("The customer probably works in Zhangjiang", "The customer works in Zhangjiang"),
    ),
)

_SPACES = re.compile(r"[ \t]{2,}")


def confirmed_wording(guess: str) -> str:
    """The guess's words without its hedges, in the table's order; the guess itself when nothing
    would be left."""
    text = guess
    for hedge in HEDGES:
        text = hedge.pattern.sub(hedge.replacement, text)
    text = _SPACES.sub(" ", text).strip()
    if text[:1].islower() and guess[:1].isupper():
        text = text[:1].upper() + text[1:]
    return text or guess
