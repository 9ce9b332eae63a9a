"""Text normalisation shared by capture, memory writes and grounding; plain Python, no Django.

Each public function is one use's normal form, built from the same steps: NFKC folding first,
then what that use needs. They differ on purpose (the safety gate keeps whitespace and case that
its patterns read; stored content keeps case), so pick by use, not by name.
"""

from __future__ import annotations

import re
import unicodedata

_THOUSANDS_SEPARATOR_RE = re.compile(r"(?<=\d)[,，](?=\d{3})")
_WHITESPACE_RE = re.compile(r"\s+")
# A whole number written in thousands groups ("4,500", "１，２００，０００"); "5000，300" is two numbers.
_GROUPED_NUMBER_RE = re.compile(r"(?<![\d.])\d{1,3}(?:[,，]\d{3})+(?![\d])")


def fold_compatibility(text: str) -> str:
    """NFKC folds full-width letters and compatibility forms ("ｉｇｎｏｒｅ", "①") into plain ones.

    What the safety gate scans: spacing, case and punctuation stay, its patterns read them.
    """
    return unicodedata.normalize("NFKC", text or "")


def normalise_statement(text: str) -> str:
    """A customer message as extraction reads it: folded, curly apostrophes straight ("I’d" → "I'd"),
    numbers in thousands groups joined ("4,500元" → "4500元": the comma would split the clause), trimmed."""
    folded = fold_compatibility(text).replace("\u2019", "'")
    return _GROUPED_NUMBER_RE.sub(lambda match: re.sub(r"[,，]", "", match.group()), folded).strip()


def normalize_content(content: str) -> str:
    """Stored memory content and one-line values: each run of whitespace becomes one space, ends trimmed."""
    return " ".join((content or "").split())


def normalise_for_grounding(text: str) -> str:
    """Folded, case-folded, without whitespace or thousands separators: 「４，５００ 元」 → 「4500元」.

    For checking that a value appears in a message, never for storing it.
    """
    folded = fold_compatibility(text).casefold()
    return _WHITESPACE_RE.sub("", _THOUSANDS_SEPARATOR_RE.sub("", folded))


# Unicode categories typed text never needs: controls, format characters (zero-width, bidi
# controls), surrogates, private use and unassigned code points.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})


def has_invisible(text: str, allowed: frozenset[str] = frozenset()) -> bool:
    """True when `text` holds a control or invisible character other than those `allowed`."""
    return any(unicodedata.category(char) in _INVISIBLE_CATEGORIES and char not in allowed for char in text)
