"""Markers: hidden characters (zero-width, bidi controls, invisible separators, tag characters)
that hide text from a reader.
"""

from __future__ import annotations

import re
import unicodedata

# --- hidden characters -------------------------------------------------------------------

# Zero-width, bidi controls, invisible separators and Unicode tag characters.
_HIDDEN_RE = re.compile(
    "[\u200b\u200c\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\u206a-\u206f\u180e\u00ad\U000e0000-\U000e007f]"
)
_ZWJ = "\u200d"


def _is_pictographic(char: str) -> bool:
    if not char:
        return False
    code = ord(char)
    return (
        0x1F000 <= code <= 0x1FAFF
        or 0x2600 <= code <= 0x27BF
        or 0x1F3FB <= code <= 0x1F3FF
        or code == 0xFE0F
        or unicodedata.category(char) == "So"
    )


def _hidden_characters(text: str) -> bool:
    # A BOM at the very start is an encoding artefact, not an attack.
    body = text[1:] if text.startswith("\ufeff") else text
    if "\ufeff" in body or _HIDDEN_RE.search(body):
        return True
    # The zero-width joiner is legitimate inside emoji sequences (👨‍👩‍👧) and nowhere else.
    start = 0
    while (index := body.find(_ZWJ, start)) != -1:
        before = body[index - 1] if index > 0 else ""
        after = body[index + 1] if index + 1 < len(body) else ""
        if not (_is_pictographic(before) and _is_pictographic(after)):
            return True
        start = index + 1
    return False
