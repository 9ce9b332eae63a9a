"""Evidence-gated extraction (spec §3): explicit sentence patterns over the customer's own words.

Only firm first-person statements count. Questions, conditionals, reported speech ("我老婆说…"),
double negation ("不是不考虑") and strong hedges ("还没想好") produce nothing; weak hedges
("可能", "maybe") lower the confidence. Keys derive from the normalised object, so the same
statement twice maps to one key and a preference and a constraint on one object share it.

Nothing instruction-like is extracted (`memory.capture.guard`): a message spoofing structure yields
nothing, an instruction-like clause yields nothing, and every object or value must pass the guard on
its own. A condition ("除非…", "如果…的话", "unless…") never becomes an absolute: it voids the clause it
governs.

Customers' own shapes are read too (issue 15): must-haves (必须/一定要/得有/只要 → 必须：…, a
preference flagged `hard`); wants after their object (地铁口优先, 采光很重要); amounts, places and
dates as values (`memory.values`, with `ExtractContext.sent_at` for relative dates); a requester inside
the customer's own requirement (房东必须能接受宠物); bare answers to the agent's question
(`ExtractContext.previous_outbound`, also for a name after "怎么称呼您？"); and acceptances (一楼也可以
考虑), which are no candidates but *releases* of an earlier constraint (`Extraction.releases`).
Questions about stock state a want (有没有带阳台的两居 → `questions`); an accepted area is one more
area (滨江那边也行 → 意向区域, `Candidate.extends`); a cap said with its limit is the budget (八千是上限);
the floor area is one preference (`sizes`); who lives in the home is a fact (`household`).

This module reads a message sentence by sentence; `clauses` splits and guards, `statements` turns
one clause into candidates from `address`, `profile_facts`, `sizes`, `household` and the
`constraints`/`preferences` triggers on `objects`; `acceptance` reads what the customer lets go of.
The README ("What capture reads") lists every shape read and what it becomes.
"""

from __future__ import annotations

import re

from memory.capture.extract._common import (
    ACCEPT_LABEL,
    ADDRESS_KEY,
    CJK_RE,
    CONSTRAINT,
    FACT,
    LEASE_END_KEY,
    MAX_OBJECT_CHARS,
    MAX_VALUE_CHARS,
    MUST,
    MUST_LABEL,
    PREFERENCE,
    PROFILE_LABELS,
    RELAXED_LABEL,
    VIEWING_KEY,
    Candidate,
    ExtractContext,
    Extraction,
)
from memory.capture.extract.acceptance import (
    accepts,
    is_relaxed,
    release_candidates,
    release_targets,
    reversed_releases,
)
from memory.capture.extract.address import address_answer
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
    THIRD_PARTY_RE,
    TOPIC_CLAUSE_RE,
    WEAK_HEDGE_RE,
    has_own_consequent,
    split_sentences,
)
from memory.capture.extract.objects import object_key
from memory.capture.extract.profile_facts import (
    AREA,
    BUDGET,
    MOVE_IN,
    NAME,
    NEEDS,
    alternative_places,
    capped_budget,
    extended_value,
    merged_districts,
    profile_facts,
)
from memory.capture.extract.questions import stock_want
from memory.capture.extract.statements import (
    bare_want_candidates,
    coordinated,
    find_trigger,
    reversed_candidates,
    statement_candidates,
)
from memory.capture.guard import message_refusal, statement_refusal
from memory.text import normalise_statement, normalize_content

__all__ = [
    "ACCEPT_LABEL",
    "ADDRESS_KEY",
    "CONSTRAINT",
    "FACT",
    "LEASE_END_KEY",
    "MAX_OBJECT_CHARS",
    "MAX_VALUE_CHARS",
    "MUST_LABEL",
    "PREFERENCE",
    "PROFILE_LABELS",
    "RELAXED_LABEL",
    "VIEWING_KEY",
    "Candidate",
    "ExtractContext",
    "Extraction",
    "asked_for",
    "extended_value",
    "extract",
    "extract_candidates",
    "object_key",
    "release_targets",
]

# What the agent's last question asks for: a bare answer ("六千左右", "浦东吧", "安静一点的") is read
# as the budget, the area, the move-in date or a want only after such a question.
_ASKED = (
    (
        BUDGET,
        re.compile(
            r"预算|价位|多少钱|租金.{0,6}(?:多少|范围|区间)|价格.{0,4}(?:区间|范围|多少)|月租.{0,6}多少|\bbudget\b",
            re.I,
        ),
    ),
    (
        AREA,
        re.compile(
            r"哪个(?:区|片区|板块|位置|地段|商圈)|哪一?(?:带|片|边)|什么(?:位置|区域|地段|片区)|意向区域|在哪(?:里|儿)?(?:找|租|买|住)|\bwhere\b",
            re.I,
        ),
    ),
    (
        MOVE_IN,
        re.compile(
            r"什么时候.{0,6}(?:入住|搬|住|起租)|几号.{0,4}(?:入住|搬)|入住时间|哪天.{0,4}(?:入住|搬)|\bwhen\b.{0,20}\bmove",
            re.I,
        ),
    ),
    (NAME, re.compile(r"怎么称呼|如何称呼|贵姓|尊姓|叫什么名字|您的名字|你的名字|称呼您|称呼你|\byour\s+name\b", re.I)),
    (
        NEEDS,
        re.compile(
            r"要求|需求|偏好|看重|在意|什么样|哪种|哪些方面|条件|还有(?:别的|其他|什么)|有什么想法|想要(?:什么|怎样|哪)|"
            r"喜欢(?:什么|哪)|\brequirements?\b|\blooking\s+for\b|\bpreferences?\b",
            re.I,
        ),
    ),
)
_QUESTION_SHAPE_RE = re.compile(r"[?？]|吗|呢|哪|什么|多少|几|请问|\b(?:what|which|where|when|how|any)\b", re.I)


def asked_for(previous_outbound: str) -> frozenset[str]:
    """What the agent's message asked the customer about (empty when it asked nothing)."""
    text = normalise_statement(previous_outbound or "")
    questions = [s for s in re.split(r"(?<=[。！!？?\n])", text) if _QUESTION_SHAPE_RE.search(s)]
    if not questions:
        return frozenset()
    asked = questions[-1] if len(questions) == 1 else "".join(questions[-2:])
    return frozenset(kind for kind, regex in _ASKED if regex.search(asked))


# "大兴太远了，不考虑", "顶楼太热，算了": a complaint about an object, then a refusal with none.
_COMPLAINT_RE = re.compile(
    r"^(?:我觉得|感觉|其实)?(?P<obj>[\u4e00-\u9fff]{2,8}?)(?:的话)?(?:也)?(?:太|有点|有些|实在|真的太|离我太|离公司太)"
    r"(?:远|贵|吵|闹|热|冷|潮|旧|破|小|偏|乱|暗|高|低|晒|挤|窄|闷|脏|老|差|麻烦|不方便)"
)
_BARE_REFUSAL_RE = re.compile(
    r"^(?:那|那就|就|还是|所以)?(?:不考虑|不要|算了|pass|排除|不看|不行|不租|不买)[了吧啊呀哈]*$", re.I
)
_ANSWER_HEDGE_RE = re.compile(r"都行|都可以|也行|都ok|都OK|都考虑")
# A clause that only describes (has, comes with, near…) continues the want of the clause before.
_CONTINUED_WANT_RE = re.compile(
    r"^(?:还|也|并且|而且|另外|同时)?(?:要|得)?(?:能提供|提供|有(?!点|些|时|空|没有|人)|带(?!我|你|他|她|孩子)|能(?!不能)|可以(?!吗|的)|离|靠近)"
)


def _sentence_candidates(
    clauses: list[str],
    question_mark: bool,
    context: ExtractContext | None,
    answers: frozenset[str],
    releases: list[Candidate],
) -> list[Candidate]:
    """Candidates of one sentence's clauses; the guards void a clause, its neighbour, or the rest.
    Acceptances go to `releases`."""
    found: dict[int, list[Candidate]] = {}  # per clause, so a trailing condition can void the one before
    skip_rest = False
    skip_next = False
    # Preferences/constraints of a past clause ("我以前喜欢高层"), waiting for "现在不要了".
    carried: list[Candidate] = []
    want_open = False  # the clause before stated a want: a trigger-less "带电梯的" continues it
    topic = ""  # "价格的话，…": the topic the next clause is about
    stock_asked = False  # a clause before asked after stock ("有没有两居"): a want, not a question
    for index, clause in enumerate(clauses):
        last = index == len(clauses) - 1
        pending, carried = carried, []
        if skip_rest:
            break
        if skip_next:
            skip_next = False
            continue
        topic_clause = TOPIC_CLAUSE_RE.match(clause)
        if topic_clause and not last:
            topic = topic_clause.group("topic")
            continue
        if topic:
            clause, topic = topic + clause, ""
        if FIRST_PERSON_SAYING_RE.search(clause):
            continue  # "我跟你说", "forget what I said earlier": the customer's own words follow
        clause = FIRST_PERSON_LEAD_RE.sub("", clause) or clause
        if REPORTING_RE.search(clause):
            # "我老婆说，不要顶楼": everything after the reporting verb is someone else's words.
            skip_rest = True
            continue
        if statement_refusal(clause):
            continue  # an instruction to us or the model, not a statement about the customer's world
        is_question = (last and question_mark) or QUESTION_RE.search(clause)
        if not is_question and not THIRD_PARTY_RE.search(clause) and not WEAK_HEDGE_RE.search(clause):
            alternative = alternative_places(clause, context.places if context else None)
            if alternative is not None:
                found[index] = [alternative]  # "滨江那边也行", "南山或者福田都行": one more area
                continue
            capped = (
                None
                if CONDITIONAL_RE.search(clause)
                else capped_budget(clause, "" if last else clauses[index + 1], clauses[index - 1] if index > 0 else "")
            )
            if capped is not None:
                found[index] = [capped]  # "八千是上限", "最多六千，再贵就不看了"
                continue
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
            if stock_asked and not QUESTION_RE.search(clause):
                pass  # "有没有两居，预算五千？": the question was the clause before; this one states
            else:
                # "能帮我找一个两居室吗" (a request) and "有没有带阳台的两居" (asking after stock) are wants;
                # "这套有阳台吗" and "押金怎么退" stay questions.
                request = _polite_request(clause) or stock_want(clause, context.places if context else None)
                if request is None:
                    continue
                clause = request
                stock_asked = True
        is_english = not CJK_RE.search(clause)
        if accepts(clause) and (find_trigger(clause, is_english) is None or is_relaxed(clause)):
            # "其实一楼也可以考虑", "总价两百万全款能接受": no wish, but a release (and an accepted budget).
            if WEAK_HEDGE_RE.search(clause):
                continue  # "也许一楼也行": too loose to relax a firm exclusion
            own_releases = release_candidates(clause) or (reversed_releases(pending, clause) if pending else [])
            releases.extend(own_releases)
            if not THIRD_PARTY_RE.search(clause):
                found[index] = profile_facts(clause, confidence=0.9, context=context, wanted=True, budget_only=True)[0]
            continue
        if DOUBLE_NEGATION_RE.search(clause) or NEGATED_AVERSION_RE.search(clause) or DISOWNED_RE.search(clause):
            continue
        hedged = WEAK_HEDGE_RE.search(clause) is not None
        if NAME in answers and not is_english:
            address = address_answer(clause)  # "小方就行" answering "怎么称呼您？"
            if address is not None:
                found[index] = [address]
                continue
        if answers and not is_english and find_trigger(clause, False) is None:
            # A bare answer to the agent's question: "六千左右吧", "浦东或者闵行都行", "安静一点的".
            if STRONG_HEDGE_RE.search(_ANSWER_HEDGE_RE.sub("", clause)):
                continue
            own = statement_candidates(clause, hedged=hedged, context=context, answers=answers)
            if not own and NEEDS in answers and not hedged and not STRONG_HEDGE_RE.search(clause):
                own = bare_want_candidates(clause)
            if own:
                found[index] = own
            continue
        if STRONG_HEDGE_RE.search(clause):
            if _ANSWER_HEDGE_RE.search(clause) and not STRONG_HEDGE_RE.search(_ANSWER_HEDGE_RE.sub("", clause)):
                # "住静安或者徐汇都可以", "预算七八千都行": either is fine, so the span is what they look for.
                found[index] = [
                    fact
                    for fact in statement_candidates(clause, hedged=hedged, context=context)
                    if (fact.key == "profile:district" and "、" in fact.value) or fact.key == "profile:budget"
                ]
            continue
        if PAST_RE.search(clause):
            # "I used to like X" reads as "I like X" once the past marker is gone.
            source = clause if CJK_RE.search(clause) else normalize_content(PAST_RE.sub(" ", clause))
            carried = [
                candidate
                for piece in coordinated(source)
                for candidate in statement_candidates(piece, hedged=False, context=context)
                if candidate.type in {PREFERENCE, CONSTRAINT}
            ]
            continue
        complaint = _COMPLAINT_RE.match(clauses[index - 1]) if index > 0 and not found.get(index - 1) else None
        if complaint is not None and _BARE_REFUSAL_RE.match(clause):
            # "大兴太远了，不考虑": the refusal's object is what the clause before complained about.
            found[index] = statement_candidates(complaint.group("obj") + "不考虑", hedged=hedged, context=context)
            continue
        if want_open and not is_english and find_trigger(clause, False) is None and _CONTINUED_WANT_RE.match(clause):
            # "帮我找个两居室，带电梯的，离地铁近点": the want goes on after the comma.
            own = statement_candidates("要" + clause, hedged=hedged, context=context)
            found[index] = own
            want_open = bool(own)
            continue
        own = [
            candidate
            for piece in coordinated(clause)
            for candidate in statement_candidates(piece, hedged=hedged, context=context)
        ]
        trigger = find_trigger(clause, is_english)
        want_open = bool(own) and trigger is not None and trigger[1] in {PREFERENCE, MUST}
        if pending and not any(candidate.type in {PREFERENCE, CONSTRAINT} for candidate in own):
            own += reversed_candidates(pending, clause, hedged=hedged)
        found[index] = own
    return [candidate for candidates in found.values() for candidate in candidates]


# "能帮我找一个…吗", "可以给我推荐…吗": a polite request phrased as a question.
_POLITE_REQUEST_RE = re.compile(
    r"^(?P<lead>.*?)(?:你|您|你们)?(?:能|可以|能不能|可不可以|能否|可否|是否可以|麻烦)(?:再)?"
    r"(?P<ask>帮我们?|给我们?|帮忙|替我)(?P<rest>(?:找|推荐|介绍|留意|物色|搜|选).+?)"
    r"(?:吗|么|嘛|呢|不|好吗|行吗|可以吗|好不好|行不行|呗)?[?？]?$"
)


def _polite_request(clause: str) -> str | None:
    match = _POLITE_REQUEST_RE.match(clause)
    if match is None:
        return None
    rest = re.sub(
        r"^(找|推荐|介绍|留意|物色|搜|选)几(?=[个套家间处])", r"\1", match.group("rest")
    )  # "推荐几个…": a number
    statement = f"{match.group('lead')}{match.group('ask')}{rest}"
    return None if QUESTION_RE.search(statement) else statement


def extract(text: str, context: ExtractContext | None = None) -> Extraction:
    """What one customer message states, in order, one candidate per key (the last statement wins),
    and the acceptances in it."""
    text = normalise_statement(text)
    if message_refusal(text):
        return Extraction([], [])  # a message spoofing structure (role lines, fences, delimiters) states nothing
    answers = asked_for(context.previous_outbound) if context is not None else frozenset()
    per_sentence: list[list[Candidate]] = []
    releases: list[Candidate] = []
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
            releases.clear()
        per_sentence.append(_sentence_candidates(clauses, question_mark, context, answers, releases) if clauses else [])
    found: dict[str, Candidate] = {}
    for candidates in per_sentence:
        for candidate in candidates:
            earlier = found.pop(candidate.key, None)
            if earlier is not None and candidate.extends and candidate.field == "district":
                candidate = merged_districts(earlier, candidate)  # "静安，或者长宁也行": both
            found[candidate.key] = candidate
    # A release never overrides what the same message states outright about the same object.
    stated = {key for candidate in found.values() for key in (candidate.key, *candidate.supersedes_keys)}
    kept = {release.key: release for release in releases if release.key not in stated}
    return Extraction(list(found.values()), list(kept.values()))


def extract_candidates(
    text: str, context: ExtractContext | None = None, *, releases: list[Candidate] | None = None
) -> list[Candidate]:
    """Candidates from one customer message, in order, one per key (the last statement wins);
    its acceptances are appended to `releases` when the caller passes a list."""
    extraction = extract(text, context)
    if releases is not None:
        releases.extend(extraction.releases)
    return extraction.candidates
