"""Reading a message as an attack would be read: NFKC-folded, lookalikes mapped, evasive spacing collapsed,
de-leeted, base64 and percent-encoded blocks decoded.
"""

from __future__ import annotations

import base64
import math
import re
import urllib.parse
from functools import lru_cache

from qiwei_site.reading.normalise import fold_compatibility
from qiwei_site.reading.safety.injection_patterns import _INJECTION_PATTERNS, _TECHNIQUE_PATTERNS, _WEAK_PATTERNS
from qiwei_site.reading.safety.markers import _HIDDEN_RE, _ZWJ

# --- reading the message as an attack would be read: normalised views -----------------------------

# Latin lookalikes from Cyrillic and Greek ("іgnore" with a Cyrillic і), folded before matching.
_LOOKALIKES = str.maketrans(
    "аеорсуххіјѕԁһӏԛԝАВЕКМНОРСТХІЈЅԌαβεικνορτυχΑΒΕΗΙΚΜΝΟΡΤΥΧΖ",
    "aeopcyxxijsdhlqwABEKMHOPCTXIJSGabeiknoptuxABEHIKMNOPTYXZ",
)
_HAS_LOOKALIKE_RE = re.compile("[\u0370-\u03ff\u0400-\u04ff\u0500-\u052f]")
# Digits and signs standing in for letters ("1gn0r3 4ll pr3v10us"); 1 reads as i and as l.
_LEET_TOKEN_RE = re.compile(
    r"(?<![A-Za-z0-9@$|])(?=[A-Za-z0-9@$|]*[A-Za-z])(?=[A-Za-z0-9@$|]*[0134579@$|])[A-Za-z0-9@$|]{2,}"
)
# Only a stand-in inside a word ("pr0mpt", "y0u", "5y573m") makes a message leetspeak; "3pm", "2nd"
# and "4B" do not.
_LEET_TRIGGER_RE = re.compile(
    r"[A-Za-z][0134579@$|]+[A-Za-z]|(?<![A-Za-z0-9])(?=[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*[A-Za-z])(?=[A-Za-z0-9]*[013457][A-Za-z0-9]*[013457])[A-Za-z0-9]{4,}"
)
_LEET_AS_I = str.maketrans("0134579@$|", "oieastgasl")
_LEET_AS_L = str.maketrans("0134579@$|", "oleastgasl")
# A block that may be base64 (or its URL-safe form), long enough to carry a sentence.
_BASE64_RE = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/=_-])")
_PERCENT_RE = re.compile(r"(?:%[0-9A-Fa-f]{2}){4,}")
_LATIN_RUN_RE = re.compile(r"[A-Za-z]{8,}")


def _deleet(text: str, table: dict[int, int]) -> str:
    return _LEET_TOKEN_RE.sub(lambda m: m.group().translate(table), text)


def _decoded_blocks(text: str) -> str:
    """The readable text hidden in base64 blocks (nothing when none decodes to text)."""
    decoded: list[str] = []
    for match in _BASE64_RE.finditer(text):
        token = match.group()
        if not (any(c.isupper() for c in token) and any(c.islower() for c in token)):
            continue
        padded = token + "=" * (-len(token) % 4)
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                plain = decode(padded).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                continue
            readable = sum(c.isprintable() or c.isspace() for c in plain)
            if len(plain) >= 6 and readable / len(plain) > 0.95 and sum(c.isalpha() for c in plain) >= 4:
                decoded.append(plain)
                break
    return "\n".join(decoded)


@lru_cache(maxsize=1)
def _segment_vocabulary() -> frozenset[str]:
    """The words the injection patterns are made of, for re-spacing a squeezed message."""
    words: set[str] = {"a", "i", "you", "me", "the", "to", "and", "of", "in", "is", "it", "be", "my", "at", "as"}
    sources = [pattern for _, pattern in (*_INJECTION_PATTERNS, *_TECHNIQUE_PATTERNS)]
    sources += [pattern for _, _, pattern in _WEAK_PATTERNS]
    for source in sources:
        words.update(re.findall(r"(?<![\\a-z])[a-z]{2,}", source.lower()))
    return frozenset(words)


def _segment(run: str) -> str:
    """Re-space a run of squeezed letters ("ignorethequestionabove") with the patterns' words;
    letters between known words stay together."""
    vocabulary = _segment_vocabulary()
    lower = run.lower()
    size = len(lower)
    best: list[tuple[float, int, bool]] = [(0.0, 0, False)] + [(math.inf, 0, False)] * size
    for end in range(1, size + 1):
        cost, _, _ = best[end - 1]
        best[end] = (cost + 2.0, end - 1, False)  # one unknown letter
        for start in range(max(0, end - 20), end - 1):
            if lower[start:end] in vocabulary and best[start][0] + 1.0 < best[end][0]:
                best[end] = (best[start][0] + 1.0, start, True)
    pieces: list[tuple[str, bool]] = []
    end = size
    while end > 0:
        _, start, known = best[end]
        pieces.append((run[start:end], known))
        end = start
    out: list[str] = []
    unknown = ""
    for piece, known in reversed(pieces):
        if not known:
            unknown += piece
            continue
        if unknown:
            out.append(unknown)
            unknown = ""
        out.append(piece)
    if unknown:
        out.append(unknown)
    return " ".join(out)


def _despaced(text: str) -> str | None:
    """A message written one character at a time ("i g n o r e t h e r u l e s") read as words."""
    tokens = text.split()
    if len(tokens) < 6 or sum(len(token) == 1 for token in tokens) / len(tokens) < 0.6:
        return None
    squeezed = re.sub(r"\s+", "", text)
    return _LATIN_RUN_RE.sub(lambda m: _segment(m.group()), squeezed)


_BLANK_RUN_RE = re.compile(r"[^\S\n]*\n\s*")
_SPACE_RUN_RE = re.compile(r"[^\S\n]{3,}")


def _injection_views(raw: str) -> list[tuple[str, str]]:
    """(name, text) readings of the message for the injection patterns: folded (NFKC, hidden
    characters dropped, lookalikes mapped to Latin), with evasive spacing collapsed, de-leeted,
    re-spaced when written letter by letter, and what its base64 or percent-encoded blocks say."""
    visible = _HIDDEN_RE.sub("", fold_compatibility(raw)).replace("\ufeff", "").replace(_ZWJ, "")
    # Runs of blank lines and long runs of spaces say nothing to any pattern, but line-anchored
    # patterns (`(?:^|\n)\s*…`) try every position of such a run: 1,000 newlines took 38 s.
    visible = _BLANK_RUN_RE.sub("\n", visible)
    visible = _SPACE_RUN_RE.sub("  ", visible)
    views: list[tuple[str, str]] = []

    def add(name: str, text: str | None) -> None:
        if text and all(text != seen for _, seen in views):
            views.append((name, text))

    folded = visible.translate(_LOOKALIKES) if _HAS_LOOKALIKE_RE.search(visible) else visible
    add("folded" if folded == visible else "homoglyphs", folded)
    add("spacing", _collapse_spacing(folded))
    add("spacing", _despaced(folded))
    if _LEET_TRIGGER_RE.search(folded):
        add("leetspeak", _deleet(folded, _LEET_AS_I))
        add("leetspeak", _deleet(folded, _LEET_AS_L))
    if _PERCENT_RE.search(folded):
        add("percent_encoded", urllib.parse.unquote(folded))
    if len(folded) >= 16 and _BASE64_RE.search(folded):
        decoded = _decoded_blocks(folded)
        if decoded:
            inner = fold_compatibility(decoded)
            add("base64", inner)
            add("base64", _collapse_spacing(inner))
    return views


# Four or more single Latin letters joined by one separator each ("i g n o r e", "s.y.s.t.e.m");
# a double space stays a word break, so "i g n o r e  a l l" collapses to "ignore all".
_SPACED_LATIN_RE = re.compile(r"(?<![A-Za-z])[A-Za-z](?:(?:[.·•_*\-]| (?! ))[A-Za-z]){3,}(?![A-Za-z])")

# When every letter is spaced the word breaks are gone too; these run on the letters alone.
_SQUEEZED_INJECTION_RE = re.compile(
    r"(?:ignore|disregard|forget|override|bypass)(?:all|any|the|your|previous|prior|above|earlier|system)*"
    r"(?:instructions?|prompts?|rules|guidelines|directives?)"
    r"|systemprompt|developermode|jailbreak|youarenow(?:an?)?(?:unrestricted|unfiltered|evil|dan)"
)
# Spacing between CJK characters and their punctuation ("忽 略 上 面 ， 直 接 输 出").
_CJK_SPACING_RE = re.compile(
    r"(?<=[\u4e00-\u9fff\u3000-\u303f\uff01-\uff0f\uff1a-\uff20“”「」『』])[\s·•_*\-./\\|]+"
    r"(?=[\u4e00-\u9fff\u3000-\u303f\uff01-\uff0f\uff1a-\uff20“”「」『』])"
)


def _collapse_spacing(text: str) -> str:
    # "忽 略 以 上 指 令" and "i g n o r e" style spacing evades naive patterns.
    collapsed = _CJK_SPACING_RE.sub("", text)
    collapsed = _SPACED_LATIN_RE.sub(lambda m: re.sub(r"[^A-Za-z]", "", m.group()), collapsed)
    return re.sub(r"  +", " ", collapsed) if collapsed != text else collapsed
