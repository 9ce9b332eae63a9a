"""One clause to candidates: a form of address, profile facts, or a preference/constraint on its objects;
also coordinated statements ("不要顶楼也不要一楼") and a past statement reversed ("现在不要了")."""

from __future__ import annotations

import re

from memory.capture.extract._common import CJK_RE, CONSTRAINT, PREFERENCE, Candidate
from memory.capture.extract.address import ADDRESS_PHRASE_RE, address_candidate
from memory.capture.extract.clauses import EN_REVERSAL_RE, THIRD_PARTY_RE
from memory.capture.extract.constraints import EN_CONSTRAINT_TRIGGERS, ZH_CONSTRAINT_TRIGGERS
from memory.capture.extract.objects import object_key, objects_for, valid_object
from memory.capture.extract.preferences import (
    EN_PREFERENCE_TRIGGERS,
    NEGATED_PREFERENCE_PREFIX,
    ZH_PREFERENCE_TRIGGERS,
)
from memory.capture.extract.profile_facts import profile_facts
from memory.capture.guard import object_refusal, value_refusal

# Constraints before preferences, so "不喜欢" never reads as "喜欢".
_COMPILED_ZH = tuple((re.compile(p), t, c, i) for p, t, c, i in (*ZH_CONSTRAINT_TRIGGERS, *ZH_PREFERENCE_TRIGGERS))
_COMPILED_EN = tuple(
    (re.compile(p, re.IGNORECASE), t, c, i) for p, t, c, i in (*EN_CONSTRAINT_TRIGGERS, *EN_PREFERENCE_TRIGGERS)
)


def find_trigger(clause: str, is_english: bool) -> tuple[re.Match[str], str, float, int] | None:
    """The first trigger in the clause, as (match, type, confidence, importance)."""
    table = _COMPILED_EN if is_english else _COMPILED_ZH
    for regex, memory_type, confidence, importance in table:
        match = regex.search(clause)
        if match is None:
            continue
        if memory_type == PREFERENCE and not is_english and NEGATED_PREFERENCE_PREFIX.search(clause[: match.start()]):
            continue
        return match, memory_type, confidence, importance
    return None


def _polar_candidate(
    memory_type: str, obj: str, key_obj: str, *, is_english: bool, confidence: float, importance: int, clause: str
) -> Candidate:
    """A preference or constraint on `obj`; it supersedes the opposite statement on the same object."""
    if memory_type == PREFERENCE:
        content, opposite = (f"Prefers: {obj}" if is_english else f"偏好：{obj}"), f"{CONSTRAINT}:{key_obj}"
    else:
        content, opposite = (f"Excludes: {obj}" if is_english else f"不考虑：{obj}"), f"{PREFERENCE}:{key_obj}"
    return Candidate(
        type=memory_type,
        key=f"{memory_type}:{key_obj}",
        content=content,
        confidence=confidence,
        importance=importance,
        supersedes_keys=(opposite,),
        clause=clause,
    )


def statement_candidates(clause: str, *, hedged: bool) -> list[Candidate]:
    """What one clause states: a form of address, or profile facts and a preference/constraint."""
    is_english = not CJK_RE.search(clause)
    candidates: list[Candidate] = []
    address = address_candidate(clause)
    if address is not None:
        return [address]
    if ADDRESS_PHRASE_RE.search(clause):
        return []  # a refused or judged form of address ("不要叫我老王") is no statement about the home
    trigger = find_trigger(clause, is_english)
    # Profile facts only from positive statements: "不要两居室" is a constraint, not a layout.
    positive = trigger is None or trigger[1] == PREFERENCE
    facts: list[Candidate] = []
    spans: list[tuple[int, int]] = []
    if positive:
        facts, spans = profile_facts(clause, confidence=0.9)
        if facts and THIRD_PARTY_RE.search(clause[: min(start for start, _ in spans)]):
            facts, spans = [], []
        if hedged:
            facts = []  # facts must be firm; a hedged value is at most something to ask about
        candidates += [fact for fact in facts if not value_refusal(fact.field or "", fact.value)]
    if trigger is None:
        return candidates
    match, memory_type, confidence, importance = trigger
    if THIRD_PARTY_RE.search(clause[: match.start()]):
        return candidates
    if hedged:
        confidence, importance = min(confidence, 0.5), max(1, importance - 1)
    # Remove what the profile facts already cover ("想要地铁附近的两居室" → layout + "地铁附近").
    remainder = clause
    for start, end in sorted(spans, reverse=True):
        if start >= match.end():
            remainder = remainder[:start] + " " + remainder[end:]
    sub = find_trigger(remainder, is_english) if remainder != clause else trigger
    if sub is None:
        return candidates
    for obj in objects_for(remainder, sub[0], is_english):
        if not valid_object(obj) or object_refusal(obj):
            continue
        key_obj = object_key(obj)
        if not key_obj:
            continue
        candidates.append(
            _polar_candidate(
                memory_type,
                obj,
                key_obj,
                is_english=is_english,
                confidence=confidence,
                importance=importance,
                clause=clause,
            )
        )
    return candidates


# "不要顶楼也不要一楼", "我要整租不要合租": a second trigger inside one clause starts a second statement with
# its own polarity, so the clause is cut there (only when the first part already holds a trigger:
# "顶楼也不要" keeps its fronted object).
_COORDINATED_SPLIT_RE = re.compile(
    r"(?=(?:也|又|还|而且|并且|同时)(?:不要|不考虑|不想|不喜欢|不能|不接受|别|要|想要|喜欢|希望|需要|必须|最好))|"
    r"(?<![不没别也又还就都可])(?=不要(?!紧|钱|客气|急|着急)|不考虑|不想要|不喜欢|不能接受|不接受)"
)

_CONNECTOR_RE = re.compile(r"^(?:也|又|还|而且|并且|同时)")


def _complete(piece: str) -> bool:
    """A piece states something on its own: a trigger with an object, or a profile fact."""
    trigger = find_trigger(piece, False)
    if trigger is None:
        return False
    return bool(objects_for(piece, trigger[0], False)) or bool(profile_facts(piece, confidence=0.0)[0])


def coordinated(clause: str) -> list[str]:
    """The clause cut into its coordinated statements (one piece when there is only one)."""
    if not CJK_RE.search(clause):
        return [clause]
    first = find_trigger(clause, False)
    if first is None or THIRD_PARTY_RE.search(clause[: first[0].start()]):
        return [clause]  # the subject of the first part governs the rest; keep it together
    pieces: list[str] = []
    buffer = ""
    for raw in _COORDINATED_SPLIT_RE.split(clause):
        buffer += raw
        if pieces:
            buffer = _CONNECTOR_RE.sub("", buffer)
        # "最好" + "不要顶楼", "顶楼" + "也不要": a part with nothing to say joins its neighbour.
        if _complete(buffer):
            pieces.append(buffer)
            buffer = ""
    if buffer and pieces:
        pieces[-1] += buffer
    elif buffer:
        pieces.append(buffer)
    return pieces


def _object_of(candidate: Candidate) -> str:
    return re.split(r"：|: ", candidate.content, maxsplit=1)[-1]


def reversed_candidates(carried: list[Candidate], clause: str, *, hedged: bool) -> list[Candidate]:
    """A past statement's objects under the polarity of "现在不要了" / "现在喜欢了" / "not anymore"."""
    is_english = not CJK_RE.search(clause)
    trigger = None if is_english and EN_REVERSAL_RE.search(clause) else find_trigger(clause, is_english)
    if trigger is None and not (is_english and EN_REVERSAL_RE.search(clause)):
        return []
    if trigger is None:
        memory_type, confidence, importance = CONSTRAINT, 0.6, 3
    else:
        _, memory_type, confidence, importance = trigger
        if THIRD_PARTY_RE.search(clause[: trigger[0].start()]):
            return []
    if hedged:
        confidence, importance = min(confidence, 0.5), max(1, importance - 1)
    reversed_: list[Candidate] = []
    for past in carried:
        obj = _object_of(past)
        reversed_.append(
            _polar_candidate(
                memory_type,
                obj,
                object_key(obj),
                is_english=is_english,
                confidence=confidence,
                importance=importance,
                clause=clause,
            )
        )
    return reversed_
