"""Sensitive spans in the text as received: each detector runs on the folded and the squeezed views of the
message, mapped back to its characters; overlaps resolved by priority.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from qiwei_site.reading.safety.categories import (
    BANK_CARD,
    CARD_SECURITY_CODE,
    CREDENTIAL,
    ID_CARD,
    MOBILE,
    PERSONAL_NUMBER_CATEGORIES,
    VERIFICATION_CODE,
)
from qiwei_site.reading.safety.credentials import _secret_hits
from qiwei_site.reading.safety.markers import _HIDDEN_RE, _ZWJ
from qiwei_site.reading.safety.personal import _personal_hits

# --- views of the message, mapped back to its characters ----------------------------------------


@dataclass(frozen=True)
class _View:
    """A normalised reading of the message; `origin[i]` is the raw index of its i-th character."""

    text: str
    origin: tuple[int, ...]

    def raw_span(self, start: int, end: int) -> tuple[int, int]:
        return self.origin[start], self.origin[end - 1] + 1


# Separators between one-character tokens are spacing meant to evade ("密 码 是 a b c 1 2 3", "密/码/是",
# "验 / 证 / 码"): one separator, or one symbol with a space on either side.
_SQUEEZABLE = frozenset(" \t\u00a0·•_*.-/|\\~")
_SQUEEZABLE_RUN_RE = re.compile(r"[ \t\u00a0]?[·•_*.\-/|\\~][ \t\u00a0]?|[ \t\u00a0·•_*.\-/|\\~]")


def _is_cjk(char: str) -> bool:
    return "\u3400" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff"


def _folded_view(raw: str) -> _View:
    """NFKC one character at a time (full-width forms fold, indexes survive), hidden characters dropped."""
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(raw):
        if _HIDDEN_RE.match(char) or char == "\ufeff" or char == _ZWJ:
            continue
        for folded in unicodedata.normalize("NFKC", char):
            chars.append(folded)
            origin.append(index)
    return _View("".join(chars), tuple(origin))


def _squeezed_view(view: _View) -> _View:
    text = view.text
    size = len(text)

    def separator(i: int) -> bool:
        return text[i] in _SQUEEZABLE or text[i].isspace()

    def word(i: int) -> bool:
        return 0 <= i < size and text[i].isascii() and text[i].isalnum()

    def single(i: int) -> bool:
        # A character standing alone: a CJK character, or a letter or digit with no letter or digit
        # on either side. "am" in "I am" is not single, so words keep their spaces.
        if not 0 <= i < size or separator(i):
            return False
        if _is_cjk(text[i]):
            return True
        return not word(i - 1) and not word(i + 1)

    dropped: set[int] = set()
    i = 1
    while i < size - 1:
        if separator(i) and single(i - 1):
            run = _SQUEEZABLE_RUN_RE.match(text, i)
            if run and single(run.end()):
                dropped.update(range(i, run.end()))
                i = run.end()
                continue
        i += 1
    keep = [i for i in range(size) if i not in dropped]
    return _View("".join(text[i] for i in keep), tuple(view.origin[i] for i in keep))


# Chinese numerals that stand for one digit each, 小写 and 大写 alike and mixed with Arabic digits
# ("验证码四八二九一三", "壹叁捌…", "幺三8壹二3…"): read as digits in the plain view, so the same rules see
# "验证码482913". 两, 十/拾 and 百/佰 are not digits of a number read out digit by digit. cn2an reads
# whole numbers ("壹佰贰拾") but gives no position per character, which the spans need.
DIGIT_NUMERALS = str.maketrans("零〇一二三四五六七八九幺壹贰貳叁參肆伍陆陸柒捌玖", "001234567891122334566789")


@lru_cache(maxsize=1)
def _to_simplified() -> Any:
    import opencc

    return opencc.OpenCC("t2s")


def _modifier(char: str) -> bool:
    """What modifies the character before it: variation selectors, skin tones, the keycap ("1️⃣" is 1,
    U+FE0F and U+20E3)."""
    return "\ufe00" <= char <= "\ufe0f" or "\U0001f3fb" <= char <= "\U0001f3ff" or char == "\u20e3"


def _decoration(char: str) -> bool:
    """An emoji or symbol, or what modifies one."""
    return unicodedata.category(char) == "So" or _modifier(char)


def _plain_view(view: _View) -> _View:
    """The folded view as its keywords are meant: symbols and emoji between words dropped
    ("密码🔑是…"), keycaps read as their digits ("1️⃣3️⃣8️⃣" → "138"), traditional characters simplified
    ("密碼" → "密码"), Chinese digit numerals as digits. One character in, at most one out, so every
    index still maps back."""
    kept = [(char, origin) for char, origin in zip(view.text, view.origin, strict=True) if not _decoration(char)]
    text = "".join(char for char, _ in kept)
    simplified = _to_simplified().convert(text)
    if len(simplified) == len(text):
        text = simplified
    return _View(text.translate(DIGIT_NUMERALS), tuple(origin for _, origin in kept))


# The plain view is read only when it could hold what the other views missed: a keyword or a run
# of digits (most messages with 一 or a traditional character hold neither).
_PLAIN_TRIGGER_RE = re.compile(r"密码|口令|码|登|手机|电话|号|卡|\d{4,}|mi\s?ma|pin|pass|code|otp", re.IGNORECASE)


def _views(raw: str) -> list[_View]:
    folded = _folded_view(raw)
    views = [folded]
    squeezed = _squeezed_view(folded)
    if squeezed.text != folded.text:
        views.append(squeezed)
    if not folded.text.isascii():
        # Read after squeezing, so "密 / 码 / 是 柒柒捌捌" and "1️⃣ 3️⃣ 8️⃣…" are read whole.
        plain = _plain_view(views[-1])
        if all(plain.text != seen.text for seen in views) and _PLAIN_TRIGGER_RE.search(plain.text):
            views.append(plain)
    return views


@dataclass(frozen=True, order=True)
class Span:
    """Where a secret or a personal number sits in the message as received: `text[start:end]`."""

    start: int
    end: int
    category: str
    rule: str = ""


# When spans overlap, the stronger reading wins: a password that looks like a mobile is a password.
_PRIORITY = {
    CREDENTIAL: 0,
    VERIFICATION_CODE: 1,
    CARD_SECURITY_CODE: 2,
    BANK_CARD: 3,
    ID_CARD: 4,
    MOBILE: 5,
}


def _merge(spans: Iterable[Span]) -> tuple[Span, ...]:
    merged: list[Span] = []
    for span in sorted(spans):
        if merged and span.start < merged[-1].end:
            previous = merged[-1]
            stronger = previous if _PRIORITY[previous.category] <= _PRIORITY[span.category] else span
            merged[-1] = Span(previous.start, max(previous.end, span.end), stronger.category, stronger.rule)
        else:
            merged.append(span)
    return tuple(merged)


# The Workbench and the APIs re-quote the same recent messages on every poll.
@lru_cache(maxsize=1024)
def _find_sensitive(raw: str) -> tuple[Span, ...]:
    found: list[Span] = []
    for view in _views(raw):
        if not view.text:
            continue
        for hits in (_secret_hits(view.text), _personal_hits(view.text)):
            for rule, category, start, end in hits:
                if end > start:
                    raw_start, raw_end = view.raw_span(start, end)
                    while raw_end < len(raw) and _modifier(raw[raw_end]):  # the last keycap's U+FE0F U+20E3
                        raw_end += 1
                    found.append(Span(raw_start, raw_end, category, rule))
    return _merge(found)


def find_sensitive(text: str) -> list[Span]:
    """Every credential, one-time code, CVV, ID-card, bank-card and mobile number in `text`, as
    non-overlapping spans of the text as received (spaced-out and full-width forms included)."""
    return list(_find_sensitive(text or ""))


def without_personal_numbers(text: str, spans: Iterable[Span]) -> str:
    """What capture reads: the message with its ID-card, bank-card and mobile numbers cut out."""
    out: list[str] = []
    last = 0
    for span in sorted(spans):
        if span.category not in PERSONAL_NUMBER_CATEGORIES or span.start < last:
            continue
        out.append(text[last : span.start])
        out.append(" ")
        last = span.end
    out.append(text[last:])
    return "".join(out)
