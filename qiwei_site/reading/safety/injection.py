"""Injection signals: every reading of the message through the technique patterns and the lexicon."""

from __future__ import annotations

import re

from qiwei_site.reading.safety.injection_patterns import (
    _CJK_RE,
    _COMPILED_INJECTION,
    _COMPILED_WEAK,
    _FLOOD_CHAR,
    _LATIN_WORD_RE,
    _SELF_RETRACTION,
    _WORDS,
)
from qiwei_site.reading.safety.lexicon import _lexical_rules
from qiwei_site.reading.safety.readings import _SPACED_LATIN_RE, _SQUEEZED_INJECTION_RE, _injection_views

# "Just reply 'yes' or 'no': is it still free?" asks for a short answer; forcing a text needs a text.
_QUOTED_RE = re.compile(r"[\"'“‘「『]([^\"'”’」』]{1,80})[\"'”’」』]")
_SHORT_ANSWER_RE = re.compile(
    r"^\s*(?:yes|no|y|n|ok|okay|sure|true|false|是|否|对|不对|是的|不是|可以|不可以|行|不行|有|没有|好|好的|要|不要)\s*[.!。！]?\s*$",
    re.IGNORECASE,
)


def _asks_for_a_short_answer(text: str) -> bool:
    # A choice of short answers ("'yes' or 'no'"); a single forced answer ("答案必须是“没有”") is forcing.
    quoted = _QUOTED_RE.findall(text)
    return len({q.strip().lower() for q in quoted}) >= 2 and all(_SHORT_ANSWER_RE.match(q) for q in quoted)


# One symbol 40 or more times (spaces allowed between), found once per run (possessive: never
# re-read at a shorter length), then words looked for beside it in plain code.
_FLOOD_RUN_RE = re.compile(rf"({_FLOOD_CHAR})(?:\s?\1){{39,}}+")
_WORD_RE = re.compile(_WORDS)
_WORD_END_RE = re.compile(rf"{_WORDS}[^A-Za-z\u4e00-\u9fff]{{0,200}}$")


def _flooded(text: str) -> bool:
    """A flood of one symbol beside words it pushes out of view: words within 2,000 characters
    after the run, or a word right before it with nothing but symbols between (≤ 200)."""
    for run in _FLOOD_RUN_RE.finditer(text):
        if _WORD_RE.search(text, run.end(), run.end() + 2000):
            return True
        if _WORD_END_RE.search(text[max(0, run.start() - 210) : run.start()]):
            return True
    return False


def _injection_rules(text: str) -> tuple[list[str], dict[str, str]]:
    """(strong rules, {weak family: rule}) firing on one view."""
    hits: list[str] = []
    retraction = _SELF_RETRACTION.search(text) is not None
    # Running only the patterns the text's scripts can match keeps the gate fast on long turns.
    skip = {script for script, regex in (("zh", _CJK_RE), ("en", _LATIN_WORD_RE)) if not regex.search(text)}
    for name, script, regex in _COMPILED_INJECTION:
        if script in skip or regex.search(text) is None:
            continue
        if retraction and name in {
            "override_zh_above",
            "override_en_above",
            "override_en_everything",
            "override_then_output",
        }:
            continue
        hits.append(name)
    weak: dict[str, str] = {}
    for family, name, script, regex in _COMPILED_WEAK:
        if family not in weak and script not in skip and regex.search(text):
            weak[family] = name
    hits += [rule for rule in _lexical_rules(text, weak) if rule not in hits]
    if _flooded(text):
        hits.append("flood_symbols")
    if _asks_for_a_short_answer(text):
        hits = [rule for rule in hits if not rule.startswith(("output_", "lex_output"))]
        weak.pop("output", None)
    return hits, weak


def _spaced_latin_rules(text: str) -> list[str]:
    if not _SPACED_LATIN_RE.search(text):
        return []
    squeezed = re.sub(r"[^a-z]", "", text.lower())
    return ["spaced_letters"] if _SQUEEZED_INJECTION_RE.search(squeezed) else []


def injection_signals(text: str) -> tuple[list[str], dict[str, str]]:
    """(strong rules, {weak family: rule}) the injection patterns find in any reading of `text`; a
    rule found only in a normalised reading is followed by the view's name ("leetspeak", "base64")."""
    strong: list[str] = []
    weak: dict[str, str] = {}
    for view, reading in _injection_views(text):
        hits, signals = _injection_rules(reading)
        for rule in hits:
            if rule not in strong:
                strong.append(rule)
                if view not in {"folded", "spacing"} and view not in strong:
                    strong.append(view)
        for family, rule in signals.items():
            weak.setdefault(family, rule)
        if view == "folded":
            strong += [rule for rule in _spaced_latin_rules(reading) if rule not in strong]
    return strong, weak


def _weak_signals_combine(weak: dict[str, str]) -> bool:
    # "..., now <something>" is a signal only after an override of what came before.
    families = set(weak)
    if "override" not in families:
        families.discard("sequel")
    return len(families) >= 2
