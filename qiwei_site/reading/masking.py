"""Masking for what is stored and every place a message is quoted to a person or a model: the
secrets and personal numbers the safety gate finds are replaced, what is left reads as before.
Ingest stores the masked text and seals the original (`conversations.received`); a supervisor sees
the original only through the audited reveal. Masking a masked text changes nothing.

密码是abc123 → 密码是••••••  ·  11010519491231002X → 1101**********002X  ·  6222…0123 → ****0123
13812345678 → 138****5678  ·  验证码482913 → 验证码••••••  ·  护照号E12345678 → 护照号E******78
壹叁捌壹贰叁肆伍陆柒捌 and 1️⃣3️⃣8️⃣… → 138****5678
"""

from __future__ import annotations

import re
import unicodedata

from qiwei_site.reading.safety import (
    BANK_CARD,
    ID_CARD,
    MOBILE,
    Span,
    announced_secret,
    bare_secret,
    find_sensitive,
)
from qiwei_site.reading.safety.personal import PASSPORT_RULE
from qiwei_site.reading.safety.spans import DIGIT_NUMERALS

# A fixed width, so the mask tells nothing about the secret's length.
HIDDEN = "••••••"
_COUNTRY_CODE_RE = re.compile(r"^(?:\+|00)?86")


def _number(value: str) -> str:
    folded = unicodedata.normalize("NFKC", value).translate(DIGIT_NUMERALS)
    return re.sub(r"[^0-9X]", "", folded.upper())


def _mask_id_card(value: str) -> str:
    digits = _number(value)
    return f"{digits[:4]}{'*' * (len(digits) - 8)}{digits[-4:]}"


def _mask_document(value: str) -> str:
    # A passport or permit number keeps its letters: the first character and the last two show.
    kept = re.sub(r"[^0-9A-Za-z]", "", unicodedata.normalize("NFKC", value)).upper()
    return f"{kept[:1]}{'*' * max(len(kept) - 3, 1)}{kept[-2:]}"


def _mask_bank_card(value: str) -> str:
    return f"****{_number(value)[-4:]}"


def _mask_mobile(value: str) -> str:
    folded = unicodedata.normalize("NFKC", value).strip()
    digits = _number(folded)
    national = digits[-11:]
    prefix = "+86 " if len(digits) > 11 and _COUNTRY_CODE_RE.match(folded) else ""
    return f"{prefix}{national[:3]}****{national[-4:]}"


def mask_span(text: str, span: Span) -> str:
    """The replacement for one span: partial digits for personal numbers, a fixed mask for secrets."""
    value = text[span.start : span.end]
    if span.category == ID_CARD:
        return _mask_document(value) if span.rule == PASSPORT_RULE else _mask_id_card(value)
    if span.category == BANK_CARD:
        return _mask_bank_card(value)
    if span.category == MOBILE:
        return _mask_mobile(value)
    return HIDDEN  # credentials, one-time codes, CVVs


def mask_sensitive(text: str) -> str:
    """`text` with every credential, code, CVV, ID-card, bank-card and mobile number masked."""
    return masked_with_categories(text)[0]


def masked_with_categories(text: str) -> tuple[str, tuple[str, ...]]:
    """(`text` masked as `mask_sensitive` masks it, the categories of what was masked, sorted): what
    ingest stores, and what it seals the original for when the categories are not empty."""
    if not text:
        return text, ()
    spans = find_sensitive(text)
    if not spans:
        return text, ()
    return _masked(text, spans), tuple(sorted({span.category for span in spans}))


def masked_after(text: str, previous: str | None) -> tuple[str, tuple[str, ...]]:
    """As `masked_with_categories`, knowing the customer's message before: after "密码发你" or
    "验证码等下发你", a message that is nothing but a value is that secret, masked whole."""
    masked, categories = masked_with_categories(text)
    if categories or not previous:
        return masked, categories
    category = announced_secret(previous)
    if category is not None and bare_secret(text, category):
        return HIDDEN, (category,)
    return masked, categories


def _masked(text: str, spans: list[Span]) -> str:
    parts: list[str] = []
    last = 0
    for span in spans:
        parts.append(text[last : span.start])
        parts.append(mask_span(text, span))
        last = span.end
    parts.append(text[last:])
    return "".join(parts)


__all__ = ["HIDDEN", "mask_sensitive", "mask_span", "masked_after", "masked_with_categories"]
