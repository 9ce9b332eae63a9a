"""Evidence-gated extraction (spec §3): explicit sentence patterns over the customer's own words.

Only firm first-person statements count. Questions, conditionals, reported speech ("我老婆说…"),
double negation ("不是不考虑") and strong hedges ("还没想好") produce nothing; weak hedges
("可能", "maybe") lower the confidence. Keys derive from the normalised object, so the same
statement twice maps to one key and a preference and a constraint on one object share it.

Nothing instruction-like is extracted (`memory.capture.guard`): a message spoofing structure yields
nothing, an instruction-like clause yields nothing, and every object or value must pass the guard on
its own. A condition ("除非…", "如果…的话", "unless…") never becomes an absolute: it voids the clause it
governs.

This module reads a message sentence by sentence; `clauses` splits and guards, `statements` turns
one clause into candidates from `address`, `profile_facts` and the `constraints`/`preferences`
triggers on `objects`.
"""

from __future__ import annotations

from memory.capture.extract._common import (
    ADDRESS_KEY,
    CJK_RE,
    CONSTRAINT,
    FACT,
    MAX_OBJECT_CHARS,
    MAX_VALUE_CHARS,
    PREFERENCE,
    PROFILE_LABELS,
    Candidate,
)
from memory.capture.extract.clauses import (
    CONDITIONAL_RE,
    DISOWNED_RE,
    DOUBLE_NEGATION_RE,
    FIRST_PERSON_LEAD_RE,
    FIRST_PERSON_SAYING_RE,
    JOKE_RE,
    NEGATED_AVERSION_RE,
    PAST_RE,
    POSTPOSED_CONDITION_RE,
    QUESTION_RE,
    REPORTING_RE,
    STRONG_HEDGE_RE,
    WEAK_HEDGE_RE,
    has_own_consequent,
    split_sentences,
)
from memory.capture.extract.objects import object_key
from memory.capture.extract.statements import coordinated, find_trigger, reversed_candidates, statement_candidates
from memory.capture.guard import message_refusal, statement_refusal
from memory.text import normalise_statement, normalize_content

__all__ = [
    "ADDRESS_KEY",
    "CONSTRAINT",
    "FACT",
    "MAX_OBJECT_CHARS",
    "MAX_VALUE_CHARS",
    "PREFERENCE",
    "PROFILE_LABELS",
    "Candidate",
    "extract_candidates",
    "object_key",
]


def _sentence_candidates(clauses: list[str], question_mark: bool) -> list[Candidate]:
    """Candidates of one sentence's clauses; the guards void a clause, its neighbour, or the rest."""
    found: dict[int, list[Candidate]] = {}  # per clause, so a trailing condition can void the one before
    skip_rest = False
    skip_next = False
    # Preferences/constraints of a past clause ("我以前喜欢高层"), waiting for "现在不要了".
    carried: list[Candidate] = []
    for index, clause in enumerate(clauses):
        last = index == len(clauses) - 1
        pending, carried = carried, []
        if skip_rest:
            break
        if skip_next:
            skip_next = False
            continue
        if FIRST_PERSON_SAYING_RE.search(clause):
            continue  # "我跟你说", "forget what I said earlier": the customer's own words follow
        clause = FIRST_PERSON_LEAD_RE.sub("", clause) or clause
        if REPORTING_RE.search(clause):
            # "我老婆说，不要顶楼": everything after the reporting verb is someone else's words.
            skip_rest = True
            continue
        if statement_refusal(clause):
            continue  # an instruction to us or the model, not a statement about the customer's world
        if CONDITIONAL_RE.search(clause):
            # A condition never becomes an absolute item: it voids the clause it governs. "除非…" /
            # "unless…" and a condition with no consequent of its own ("我要三居室，如果预算够的话")
            # govern the clause before them when they close the sentence, the next one otherwise.
            if not has_own_consequent(clause, find_trigger(clause, not CJK_RE.search(clause)) is not None):
                if index > 0 and (last or POSTPOSED_CONDITION_RE.search(clause)):
                    found.pop(index - 1, None)
                elif not last:
                    skip_next = True
            continue
        if (last and question_mark) or QUESTION_RE.search(clause):
            continue
        if (
            DOUBLE_NEGATION_RE.search(clause)
            or NEGATED_AVERSION_RE.search(clause)
            or STRONG_HEDGE_RE.search(clause)
            or DISOWNED_RE.search(clause)
        ):
            continue
        hedged = WEAK_HEDGE_RE.search(clause) is not None
        if PAST_RE.search(clause):
            # "I used to like X" reads as "I like X" once the past marker is gone.
            source = clause if CJK_RE.search(clause) else normalize_content(PAST_RE.sub(" ", clause))
            carried = [
                candidate
                for piece in coordinated(source)
                for candidate in statement_candidates(piece, hedged=False)
                if candidate.type in {PREFERENCE, CONSTRAINT}
            ]
            continue
        own = [candidate for piece in coordinated(clause) for candidate in statement_candidates(piece, hedged=hedged)]
        if pending and not any(candidate.type in {PREFERENCE, CONSTRAINT} for candidate in own):
            own += reversed_candidates(pending, clause, hedged=hedged)
        found[index] = own
    return [candidate for candidates in found.values() for candidate in candidates]


def extract_candidates(text: str) -> list[Candidate]:
    """Candidates from one customer message, in order, one per key (the last statement wins)."""
    text = normalise_statement(text)
    if message_refusal(text):
        return []  # a message spoofing structure (role lines, fences, delimiters) states nothing of its own
    per_sentence: list[list[Candidate]] = []
    for clauses, question_mark in split_sentences(text):
        jokes = [index for index, clause in enumerate(clauses) if JOKE_RE.search(clause)]
        if jokes:
            # The joke takes back what came before it; "开玩笑的" with nothing before it in its own
            # sentence takes back the previous sentence. What follows ("其实我喜欢低层") stands.
            joke = jokes[-1]
            said_before = any(find_trigger(c, not CJK_RE.search(c)) for c in clauses[: joke + 1])
            if per_sentence and not said_before:
                per_sentence[-1] = []
            clauses = clauses[joke + 1 :]
        per_sentence.append(_sentence_candidates(clauses, question_mark) if clauses else [])
    found: dict[str, Candidate] = {}
    for candidates in per_sentence:
        for candidate in candidates:
            found.pop(candidate.key, None)
            found[candidate.key] = candidate
    return list(found.values())
