"""Evidence-gated extraction (spec §3): explicit sentence patterns over the customer's own words.

Only firm first-person statements count. Questions, conditionals, reported speech ("我老婆说…"),
double negation ("不是不考虑") and strong hedges ("还没想好") produce nothing; weak hedges
("可能", "maybe") lower the confidence. Keys derive from the normalised object, so the same
statement twice maps to one key and a preference and a constraint on one object share it.

Nothing instruction-like is extracted (`qiwei_site.reading.guard`): a message spoofing structure yields
nothing, an instruction-like clause yields nothing, and every object or value must pass the guard on
its own. A condition ("除非…", "如果…的话", "unless…") never becomes an absolute: it voids the clause it
governs.

Customers' own shapes are read too (issue 15): must-haves (必须/一定要/得有/只要 → 必须：…, a
preference flagged `hard`); wants after their object (地铁口优先, 采光很重要); amounts, places and
dates as values (`qiwei_site.reading.values`, with `ExtractContext.sent_at` for relative dates); a requester inside
the customer's own requirement (房东必须能接受宠物); bare answers to the agent's question
(`ExtractContext.previous_outbound`, also for a name after "怎么称呼您？"); and acceptances (一楼也可以
考虑), which are no candidates but *releases* of an earlier constraint (`Extraction.releases`) when
admission would write them by itself (one forwarded, someone else's, hedged or under a condition is
proposed instead, and relaxes nothing).
Questions about stock state a want (有没有带阳台的两居 → `questions`); an accepted area is one more
area (滨江那边也行 → 意向区域, `Candidate.extends`); a cap said with its limit is the budget (八千是上限);
the floor area is one preference (`sizes`); who lives in the home is a fact (`household`).

Issue 22's second pass, each a family read by shape: a limit on a fee (运费最多出15, 差价三百以内)
is a budget of its own key and a limit on a price said per unit (一节课最多两百, 一年下来不超过三万)
is the budget (`profile_facts`); a request opened in one clause goes on over the clauses after it
("能帮我找一个两居，带电梯的吗"); the company the customer brings ("带女朋友找…") is no other speaker;
an outcome the account offers said as a verb ("想退了", "直接退钱吧") is that outcome
(`values.vocabulary`); a branch named by its place ("福田校区都行") gives the area.

This module reads a message sentence by sentence; `clauses` splits and guards, `statements` turns
one clause into candidates from `address`, `profile_facts`, `sizes`, `household` and the
`constraints`/`preferences` triggers on `objects`; `acceptance` reads what the customer lets go of.
The README ("What capture reads") lists every shape read and what it becomes.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from qiwei_site.reading.extract._common import (
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
from qiwei_site.reading.extract.acceptance import (
    accepts,
    is_relaxed,
    release_candidates,
    release_targets,
    reversed_releases,
)
from qiwei_site.reading.extract.address import address_answer
from qiwei_site.reading.extract.admission import (
    DROPPED_ROWS,
    HOLD_BACKS,
    RELEASE_ALONE,
    ClauseReading,
    SentenceShape,
    hold_back,
    hold_back_label,
    junk,
)
from qiwei_site.reading.extract.bound import READ_LIMIT_CHARS, TOO_LONG, unreadable
from qiwei_site.reading.extract.choices import term_choices
from qiwei_site.reading.extract.clauses import (
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
    conditions_acceptance_before,
    has_own_consequent,
    opens_condition,
    split_sentences,
)
from qiwei_site.reading.extract.household import CHILDREN_KEY
from qiwei_site.reading.extract.kinds import (
    ClauseKind,
    clause_kind,
    forward_header,
    pasted,
    record_stamp,
    speaker_line,
    without_pasted_spans,
)
from qiwei_site.reading.extract.objects import object_key, valid_object
from qiwei_site.reading.extract.profile_facts import (
    AREA,
    BUDGET,
    MOVE_IN,
    NAME,
    NEEDS,
    alternative_places,
    amount_topic,
    capped_budget,
    extended_value,
    merged_districts,
    profile_facts,
    unknown_area,
)
from qiwei_site.reading.extract.questions import stock_want
from qiwei_site.reading.extract.statements import (
    bare_want_candidates,
    coordinated,
    find_trigger,
    reversed_candidates,
    statement_candidates,
)
from qiwei_site.reading.extract.windows import time_window
from qiwei_site.reading.guard import message_refusal, object_refusal, statement_refusal
from qiwei_site.reading.normalise import normalise_statement, normalize_content
from qiwei_site.reading.values import Place, PlaceNames, amounts_in, places_in
from qiwei_site.reading.values.vocabulary import BUILT_IN, Vocabulary

__all__ = [
    "ACCEPT_LABEL",
    "ADDRESS_KEY",
    "CLAUSE_RULES",
    "CONSTRAINT",
    "FACT",
    "HOLD_BACKS",
    "LEASE_END_KEY",
    "MAX_OBJECT_CHARS",
    "MAX_VALUE_CHARS",
    "MUST_LABEL",
    "PREFERENCE",
    "PROFILE_LABELS",
    "READ_LIMIT_CHARS",
    "RELAXED_LABEL",
    "RELEASE_ALONE",
    "TOO_LONG",
    "VIEWING_KEY",
    "Candidate",
    "ClauseRule",
    "ExtractContext",
    "Extraction",
    "asked_for",
    "extended_value",
    "extract",
    "extract_candidates",
    "hold_back_label",
    "object_key",
    "release_targets",
    "unreadable",
]

WHEN = "when"  # the agent asked when: a bare time window answers it
ANY = "any"  # the agent asked something: a bare trade term ("京东的吧", "M") answers it
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
            r"哪个(?:区|片区|板块|位置|地段|商圈|校区|门店|分店|店|网点|自提点|营业厅)|哪(?:家|个)(?:校区|门店|店|网点)|哪一?(?:带|片|边)|什么(?:位置|区域|地段|片区)|意向区域|在哪(?:里|儿)?(?:找|租|买|住)|\bwhere\b",
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
    # "什么时间方便？", "几点送货？": a bare window answers it (`windows`).
    (WHEN, re.compile(r"什么时(?:间|候)|几点|哪天|哪个时间|哪个时段|时间段|\bwhen\b|\bwhat\s+time\b", re.I)),
    (
        NEEDS,
        re.compile(
            r"要求|需求|偏好|看重|在意|什么样|哪种|哪些方面|条件|还有(?:别的|其他|什么)|有什么想法|想要(?:什么|怎样|哪)|"
            r"喜欢(?:什么|哪)|\brequirements?\b|\blooking\s+for\b|\bpreferences?\b",
            re.I,
        ),
    ),
)
# The agent asked what happened ("哪天到的？", "收到的是什么颜色？", "在哪个平台下单的？"), not
# what the customer wants.
_PAST_QUESTION_RE = re.compile(
    r"(?:到|收|买|发|寄|拿|订|签|货)的[吗呢呀啊]?\s*[？?]?\s*$|收到|下单|签收|\b(?:did|was|were)\b", re.I
)
# The agent asked the customer to choose: a bare term ("M", "京东的吧") is the choice.
_CHOICE_QUESTION_RE = re.compile(
    r"(?:要|想|用|选|换|需要|改)(?:成)?(?:哪|什么)|哪(?:个|种|家|款|一)|什么(?:颜色|尺码|码|型号|款式|规格|材质|方式)|"
    r"尺码|颜色|快递|还是|\bwhich\b",
    re.I,
)
_QUESTION_SHAPE_RE = re.compile(r"[?？]|吗|呢|哪|什么|多少|几|请问|\b(?:what|which|where|when|how|any)\b", re.I)


def asked_for(previous_outbound: str) -> frozenset[str]:
    """What the agent's message asked the customer about (empty when it asked nothing)."""
    text = normalise_statement(previous_outbound or "")
    questions = [s for s in re.split(r"(?<=[。！!？?\n])", text) if _QUESTION_SHAPE_RE.search(s)]
    if not questions:
        return frozenset()
    asked = questions[-1] if len(questions) == 1 else "".join(questions[-2:])
    kinds = {kind for kind, regex in _ASKED if regex.search(asked)}
    if _PAST_QUESTION_RE.search(asked):
        kinds.discard(WHEN)  # "您哪天到的？": a bare "下午" tells what happened, no preference
    elif _CHOICE_QUESTION_RE.search(asked):
        kinds.add(ANY)  # "换什么尺码？", "用哪家快递？": a bare term answers it
    return frozenset(kinds)


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


@dataclass
class _Sentence:
    """What the clauses of one sentence tell the ones after them."""

    clauses: list[str]
    question_mark: bool
    context: ExtractContext | None
    answers: frozenset[str]
    found: dict[int, list[Candidate]] = field(default_factory=dict)  # per clause: a condition may void the one before
    skip_rest: bool = False  # a reporting verb: the rest is someone else's words
    skip_next: bool = False  # a condition governs the next clause
    carried: list[Candidate] = field(default_factory=list)  # a past clause's items, waiting for "现在不要了"
    want_open: bool = False  # the clause before stated a want: a trigger-less "带电梯的" continues it
    topic: str = ""  # "价格的话，…": the topic the next clause is about
    stock_asked: bool = False  # a clause before asked after stock ("有没有两居"): a want, not a question
    extra: dict[int, list[Candidate]] = field(default_factory=dict)  # facts a rule that passes on found
    conditional: set[int] = field(default_factory=set)  # clauses a condition governs: only proposed
    # per clause: the acceptances it states, judged by admission once the whole sentence is read (a
    # condition after them, "一楼也可以，如果便宜的话", governs them too)
    accepted: dict[int, list[Candidate]] = field(default_factory=dict)
    # per clause that yielded candidates: (its text as the deciding rule read it, its kind, that rule)
    readings: dict[int, tuple[str, ClauseKind, str]] = field(default_factory=dict)

    @property
    def places(self) -> PlaceNames | None:
        return self.context.places if self.context else None

    @property
    def vocabulary(self) -> Vocabulary:
        return (self.context.vocabulary if self.context else None) or BUILT_IN


@dataclass
class _Clause:
    index: int
    text: str
    last: bool
    pending: list[Candidate]  # what the past clause before carried

    @property
    def english(self) -> bool:
        return not CJK_RE.search(self.text)

    @property
    def hedged(self) -> bool:
        return WEAK_HEDGE_RE.search(self.text) is not None

    kind: ClauseKind = ClauseKind.STATEMENT  # `kinds.clause_kind`, decided once before the rules


# A rule reads one clause in its sentence: True when the clause is decided (the rules after it do
# not see it), False to pass it on. A rule may rewrite the clause for the rules after it.
ClauseRead = Callable[[_Sentence, _Clause], bool]


@dataclass(frozen=True)
class ClauseRule:
    name: str
    example: str  # a message whose reading this rule decides (the table test runs each one)
    read: ClauseRead
    asked: str = ""  # the agent's message before the example, when the rule needs one
    # A rule that only prepares the clause or tells the clauses after it (True when it applied):
    # the rules after it still read the clause.
    passes_on: bool = False


def _voided_by_condition(sentence: _Sentence, clause: _Clause) -> bool:
    # "如果预算够的话，我要三居室": the clause a condition governs is read, but only ever proposed
    # (admission's hypothetical row): a want under a condition is no absolute.
    if sentence.skip_next:
        sentence.skip_next = False
        sentence.conditional.add(clause.index)
        return True  # applied; the clause is still read by the rules after it
    return False


# "补差价的话两百以内能接受", "自提的话天河或者越秀的点都行": a topic named with 的话 inside the
# clause is what the clause is about, not a condition, when it is a money topic or a term of the
# trade (a condition has a verb of its own: "有电梯的话", "下雨的话").
_INLINE_TOPIC_RE = re.compile(r"^(?:那|至于|关于)?(?P<topic>[\u4e00-\u9fff]{2,4}?)的话(?:，|,)?(?P<rest>.+)$")


def _inline_topic(text: str, vocabulary: Vocabulary) -> str | None:
    match = _INLINE_TOPIC_RE.match(text)
    if match is None:
        return None
    topic, rest = match.group("topic"), match.group("rest")
    if amount_topic(topic):
        return topic + rest  # the amount after it is about it
    terms = vocabulary.terms_in(topic) + vocabulary.verbs_in(topic)
    if len(terms) == 1 and terms[0].end - terms[0].start == len(topic) and vocabulary.is_account_word(terms[0].word):
        return rest  # "退货的话，…": what follows is said about that outcome
    return None


# "预算不是三千，是每人五千": the value denied names the topic the next clause restates.
_DENIED_TOPIC_RE = re.compile(
    r"^(?:我的?|我们的?)?(?P<topic>预算|价格|价位|租金|房租|月租|总价|首付|月供|面积|户型|区域|尺码|时间)(?:也)?(?:不是|并不是|并非)"
)


def _topic_lead(sentence: _Sentence, clause: _Clause) -> bool:
    topic_clause = TOPIC_CLAUSE_RE.match(clause.text)
    if topic_clause and not clause.last:
        sentence.topic = topic_clause.group("topic")
        return True
    denied = _DENIED_TOPIC_RE.match(clause.text)
    if denied and not clause.last and re.match(r"^(?:而|就|应该)?是", sentence.clauses[clause.index + 1]):
        sentence.topic = denied.group("topic")
        return True  # the denied value is no want; the next clause says the real one
    if sentence.topic:
        clause.text, sentence.topic = sentence.topic + clause.text, ""
    clause.text = _inline_topic(clause.text, sentence.vocabulary) or clause.text
    return False


def _first_person_saying(sentence: _Sentence, clause: _Clause) -> bool:
    if FIRST_PERSON_SAYING_RE.search(clause.text):
        return True  # "我跟你说", "forget what I said earlier": the customer's own words follow
    clause.text = FIRST_PERSON_LEAD_RE.sub("", clause.text) or clause.text
    return False


# "我想带女朋友找一家…", "想和家人一起去…": the company the customer brings is no part of the want,
# and no other speaker; the clause is read without it.
_COMPANY_RE = re.compile(
    r"(?:带着?|和|跟|陪着?|同|给|帮|替)(?:我的|我)?(?:几个|两个)?(?:女朋友|男朋友|女友|男友|老婆|老公|妻子|丈夫|爱人|媳妇|太太|家人|"
    r"家里人|孩子|小孩|儿子|女儿|闺女|父母|爸妈|爸爸|妈妈|老人|朋友们?|同事们?|同学们?|闺蜜|客户|对象|宝宝)(?:一起|一块儿?)?"
    r"(?=找|订|预定|预订|报|买|选|挑|去)"
)


_CHILD_RE = re.compile(r"(?:给|帮|替|为)(?:我的|我)?(?P<kid>儿子|女儿|孩子|闺女|小孩|宝宝)")


def _company(sentence: _Sentence, clause: _Clause) -> bool:
    if clause.english:
        return False
    child = _CHILD_RE.search(clause.text)
    clause.text, removed = _COMPANY_RE.subn("", clause.text)
    if removed and child is not None:
        # "想给女儿报个钢琴班": what the child is signed up for is the want, and the child is family
        sentence.extra.setdefault(clause.index, []).append(
            Candidate(
                type=FACT,
                key=CHILDREN_KEY,
                content=f"家庭情况：有{child.group('kid')}",
                confidence=0.85,
                clause=clause.text,
            )
        )
    return removed > 0


def _reported_speech(sentence: _Sentence, clause: _Clause) -> bool:
    if REPORTING_RE.search(clause.text):
        sentence.skip_rest = True  # "我老婆说，不要顶楼": everything after the verb is someone else's
        return True
    return False


def _instruction(sentence: _Sentence, clause: _Clause) -> bool:
    # An instruction to us or the model, not a statement about the customer's world.
    if not statement_refusal(clause.text):
        return False
    # "直接退款吧", "希望能尽快退款": an outcome the account offers (its vocabulary names it) is the
    # customer's choice, not a promise asked of us; the clause is an instruction only without it.
    vocabulary = sentence.context.vocabulary if sentence.context else None
    if vocabulary is None:
        return True
    terms = [t for t in vocabulary.terms_in(clause.text) + vocabulary.verbs_in(clause.text) if t.group != "颜色"]
    own = [t for t in terms if vocabulary.is_account_word(t.word)]
    if not own:
        return True
    masked = clause.text
    for term in sorted(own, key=lambda t: t.start, reverse=True):
        masked = masked[: term.start] + "这个" + masked[term.end :]
    return bool(statement_refusal(masked))


# "之前说的一居改成两居吧", "刚才说南山，改成宝安吧", "时间改成周日下午吧": a change says the new value;
# the clause is read as wanting it (the old value before the verb is what it replaces).
_CORRECTION_RE = re.compile(r"^(?P<topic>.*?)(?:改成|换成|改为|换为|改到|换到)(?P<new>[^，,。]+)$")
_CORRECTION_TOPIC_RE = re.compile(r"(?:预算|价格|租金|时间|区域|位置|户型|面积|入住|尺码|颜色|快递)$")


def _correction(sentence: _Sentence, clause: _Clause) -> bool:
    match = _CORRECTION_RE.match(clause.text)
    if match is None or clause.english or clause.kind is ClauseKind.QUESTION:
        return False
    topic = _CORRECTION_TOPIC_RE.search(match.group("topic"))
    clause.text = (topic.group(0) if topic else "") + "想要" + match.group("new")
    return True


def _pasted(sentence: _Sentence, clause: _Clause) -> bool:
    return clause.kind is ClauseKind.PASTED  # a share card's or a notice's words are nobody's


def _plain_statement(sentence: _Sentence, clause: _Clause) -> bool:
    return clause.kind in (ClauseKind.STATEMENT, ClauseKind.REQUEST) and not (
        THIRD_PARTY_RE.search(clause.text) or WEAK_HEDGE_RE.search(clause.text)
    )


# "我不会租三居", "不打算要三居", "我并不打算住南山", "没想过要住闵行": a want negated before its verb
# is a refusal of what follows (a denial, "我没有要住浦东", is left to admission, which drops it).
_NEGATED_WANT_RE = re.compile(
    r"^(?P<lead>[^，,。]*?)(?:不会|也不会|绝不会|不打算|没打算|没有打算|并不打算|从没打算|从来没打算|不准备|没准备|没有准备|"
    r"不计划|没计划|没想过|没有想过|从没想过|从来没想过|从不|从来不|不可能)(?:再|去|要|会|打算|想)?"
    r"(?:要(?!求)|租|买|住|考虑|找|选|接受|在)(?P<rest>[^，,。]+)$"
)
_NEGATED_REST_LEAD_RE = re.compile(r"^(?:要|去|在|到|住|租|买|找|选)+")
_NEGATED_REST_TAIL_RE = re.compile(r"(?:买房|租房|买房子|租房子|买|租|住|找|看)?[的了吧啊呀哈呢]*$")
# what a negated verb rules out is a thing or a place, not how long or how much ("不会住太久")
_NEGATED_NOT_OBJECT_RE = re.compile(r"太|很|久|那么|这么|几|一直|多少|什么|哪")


def _negated_want(sentence: _Sentence, clause: _Clause) -> bool:
    if clause.kind not in (ClauseKind.STATEMENT, ClauseKind.REQUEST) or clause.english:
        return False
    match = _NEGATED_WANT_RE.match(clause.text)
    if match is None or THIRD_PARTY_RE.search(match.group("lead")):
        return False
    rest = _NEGATED_REST_TAIL_RE.sub("", _NEGATED_REST_LEAD_RE.sub("", match.group("rest")))
    if not rest or _NEGATED_NOT_OBJECT_RE.search(rest):
        return False
    sentence.found[clause.index] = [
        candidate
        for candidate in statement_candidates(
            f"{match.group('lead')}不考虑{rest}", hedged=False, context=sentence.context
        )
        if candidate.type == CONSTRAINT
    ]
    return True


def _alternative_area(sentence: _Sentence, clause: _Clause) -> bool:
    if not _plain_statement(sentence, clause):
        return False
    alternative = alternative_places(clause.text, sentence.places)
    if alternative is None:
        return False
    sentence.found[clause.index] = [alternative]  # "滨江那边也行", "南山或者福田都行": one more area
    return True


def _budget_cap(sentence: _Sentence, clause: _Clause) -> bool:
    if not _plain_statement(sentence, clause) or CONDITIONAL_RE.search(clause.text):
        return False
    clauses, index = sentence.clauses, clause.index
    capped = capped_budget(clause.text, "" if clause.last else clauses[index + 1], clauses[index - 1] if index else "")
    if capped is None:
        return False
    sentence.found[index] = [capped]  # "八千是上限", "最多六千，再贵就不看了"
    return True


def _condition(sentence: _Sentence, clause: _Clause) -> bool:
    if not CONDITIONAL_RE.search(clause.text):
        # "等我老婆同意，我就要三居", "只要有电梯，我就要高层": a condition with no 如果 governs the
        # clause after it
        if clause.last or clause.english or not opens_condition(clause.text, sentence.clauses[clause.index + 1]):
            return False
        sentence.skip_next = True
        return True
    # A condition never becomes an absolute item: it voids the clause it governs. "除非…" / "unless…"
    # and a condition with no consequent of its own ("我要三居室，如果预算够的话") govern the clause
    # before them when they close the sentence, the next one otherwise.
    if not has_own_consequent(clause.text, find_trigger(clause.text, clause.english) is not None):
        if clause.index > 0 and (clause.last or POSTPOSED_CONDITION_RE.search(clause.text)):
            sentence.conditional.add(clause.index - 1)
        elif not clause.last:
            sentence.skip_next = True
        return True
    # "有电梯的话我要高层", "要是便宜我就要一楼": what follows the condition is read as the want it
    # would be, only ever proposed.
    consequent = _CONSEQUENT_SPLIT_RE.split(clause.text, maxsplit=1)
    if len(consequent) == 2 and consequent[1].strip() and not clause.english:
        sentence.conditional.add(clause.index)
        sentence.found[clause.index] = statement_candidates(consequent[1], hedged=False, context=sentence.context)
    return True


# Where a condition's own consequent starts: "有电梯的话｜我要高层", "要是便宜｜我就要一楼".
_CONSEQUENT_SPLIT_RE = re.compile(r"的话(?:，|,)?|(?<=[\u4e00-\u9fff])(?=我就|就要|那就|才要)")


# "你可以帮我找一个评分高的，人均一百左右的餐馆吗", "给我推荐一套，带车位和电梯的三居吧": the
# request opens a sentence whose want goes on over the clauses after it; the particle closing the
# last one is politeness, not a question.
_REQUEST_OPENER_RE = re.compile(
    r"(?:帮|给|替)(?:我|我们)?(?:找|推荐|介绍|挑|挑选|选|物色|安排|留意|预定|预订|订)|帮忙(?:找|推荐|介绍|物色)|"
    r"(?:^|我|我们)(?:想|要|打算|准备|计划)(?:再)?(?:找|预定|预订|订|报)(?:一|个|家|套|间|款)"
)


def _request_opener(sentence: _Sentence, clause: _Clause) -> bool:
    if clause.kind not in (ClauseKind.STATEMENT, ClauseKind.REQUEST) or clause.last:
        return False
    if not _REQUEST_OPENER_RE.search(clause.text) or THIRD_PARTY_RE.search(clause.text):
        return False
    sentence.stock_asked = True  # what follows goes on stating the request; this clause is read below
    return True


def _question(sentence: _Sentence, clause: _Clause) -> bool:
    if clause.kind is not ClauseKind.QUESTION:
        return False
    if sentence.stock_asked:
        # "有没有两居，预算五千？", "能帮我找个经济型的，并且提供洗衣服务的酒店呢？": the request was
        # the clause before; this one goes on stating it, whatever particle closes the sentence.
        closed = re.sub(r"(?:吗|呢|么|嘛)[呀啊]?\s*$", "", clause.text)
        # "…，有合适的吗": a new question whether there is any, not the request going on
        if not QUESTION_RE.search(closed) and not re.match(r"^(?:那)?(?:还)?有", closed):
            clause.text = closed
            return False
    # "能帮我找一个两居室吗" (a request) and "有没有带阳台的两居" (asking after stock) are wants;
    # "这套有阳台吗" and "押金怎么退" stay questions.
    request = _polite_request(clause.text) or stock_want(clause.text, sentence.places)
    if request is None:
        # "这款有没有XXL的黑色", "江北那边有没有校区": what a question names of the trade's terms or
        # the place vocabulary is no statement, but it may be a want: proposed (admission holds it
        # back as a question), never written by itself.
        sentence.found[clause.index] = _asked_values(clause.text, sentence)
        return True
    clause.text = request
    sentence.stock_asked = True
    return False


# A question about the process or the service, not about what the customer wants ("退款多久到账",
# "运费险能赔多少", "哪个更值得去"): nothing it names is proposed.
_PROCESS_QUESTION_RE = re.compile(
    r"多久|多长时间|怎么(?:办|弄|退|处理|算|收费)|流程|手续|进度|到账|赔|是真的|哪个更|哪个好|值不值|几星|"
    r"保修|延保|发票|优惠|多少钱|价格|费用|运费"
)


def _asked_values(text: str, sentence: _Sentence) -> list[Candidate]:
    """The trade terms, places and layouts a question names, as wants to propose."""
    if _PROCESS_QUESTION_RE.search(text) or THIRD_PARTY_RE.search(text) or _ASKED_DEICTIC_RE.search(text):
        return []
    probe = text.replace("有没有", "有有有")  # the question's own 没 refuses nothing
    terms = [
        term
        for term in sorted(
            sentence.vocabulary.terms_in(text) + sentence.vocabulary.verbs_in(text), key=lambda t: t.start
        )
        if not _NOT_ASKED_VALUE_RE.search(probe[max(0, term.start - 3) : term.start])
    ]
    found = [
        Candidate(
            type=PREFERENCE,
            key=f"{PREFERENCE}:{object_key(term.word)}",
            content=f"偏好：{term.word}",
            confidence=0.6,
            supersedes_keys=(f"{CONSTRAINT}:{object_key(term.word)}",),
            clause=text,
        )
        for term in terms
    ]
    asked = re.sub(r"^(?:请问|问下|问一下|那)+", "", QUESTION_TAIL_RE.sub("", text))
    stated = "想要" + re.sub(r"(?:现在|目前)?(?:还)?(?:有没有|有)", "", asked, count=1)
    found += [
        candidate
        for candidate in statement_candidates(stated, hedged=False, context=sentence.context)
        # a place only when the place vocabulary knows it by a name that says it is a place (a
        # question's "X周边" names anything, "清水" is also a bare-shell flat, "东区" a block)
        if candidate.field == "layout" or (candidate.field == "district" and _asked_place(candidate, text))
    ]
    return [dataclasses.replace(candidate, clause=text) for candidate in found]


_NOT_ASKED_VALUE_RE = re.compile(r"不|没|别|发成|发错|收到")
_BLOCK_NAME_RE = re.compile(r"^[东南西北中][区院]$")


def _asked_place(candidate: Candidate, text: str) -> bool:
    places = [value for value in candidate.values if isinstance(value, Place)]
    if not places or any(_BLOCK_NAME_RE.match(place.words) for place in places):
        return False
    return all(
        re.search(r"[区县市镇]$", place.words)
        or re.search(re.escape(place.words) + r"(?:那边|附近|一带|周边|片区|这边)", text)
        for place in places
    )


# A question about what was shown or said ("这在南区还是北区", "临街这边吗"): it names no want.
_ASKED_DEICTIC_RE = re.compile(r"这(?!款|件|双)|那(?!家门店)|该|此|上面|刚才|之前")
QUESTION_TAIL_RE = re.compile(r"(?:吗|么|嘛|呢|没有|没)?[呀啊]?[?？]?\s*$")


def _reason(sentence: _Sentence, clause: _Clause) -> bool:
    if clause.kind is not ClauseKind.REASON:
        return False
    # "不要一楼，因为太潮", "要朝南的，因为我喜欢晒太阳": a reason is no wish; a fact it states
    # ("因为预算只有五千", "因为家里有老人") still is one.
    sentence.found[clause.index] = [
        candidate
        for candidate in statement_candidates(clause.text, hedged=clause.hedged, context=sentence.context)
        if candidate.type == FACT
    ]
    return True


def _time_window(sentence: _Sentence, clause: _Clause) -> bool:
    if clause.kind not in (ClauseKind.STATEMENT, ClauseKind.REQUEST) or clause.english:
        return False  # "周末上门吗", "晚上送还是白天送": questions are read by the question rule
    if THIRD_PARTY_RE.search(re.sub(r"^(?:孩子|小孩)", "", clause.text)):
        return False
    window = time_window(clause.text, asked_when=WHEN in sentence.answers)
    if window is None:
        return False
    sentence.found[clause.index] = [window]  # "晚上联系我", "工作日下午都行", "周三晚上不行"
    return True


def _trade_terms(sentence: _Sentence, clause: _Clause) -> bool:
    # A hedged clause is read too: admission holds what it says back for a supervisor.
    if clause.kind not in (ClauseKind.STATEMENT, ClauseKind.REQUEST):
        return False
    if clause.english and re.search(r"[A-Za-z]{3,}", clause.text):
        return False  # English is read by the English rules; a bare "M" or "XL" is a term
    if THIRD_PARTY_RE.search(clause.text):
        return False
    # "换黑色", "别给我发中通", "必须是纯棉", "京东的吧" (answering "用哪家快递？"): the trade's terms
    asked = sentence.context.previous_outbound if sentence.context and ANY in sentence.answers else ""
    choices = term_choices(clause.text, sentence.vocabulary, asked=asked)
    if not choices:
        return False
    facts = [
        candidate
        for candidate in statement_candidates(clause.text, hedged=False, context=sentence.context)
        if candidate.type == FACT
    ]
    sentence.found[clause.index] = facts + choices
    return True


def _acceptance(sentence: _Sentence, clause: _Clause) -> bool:
    text = clause.text
    if not accepts(text) or (find_trigger(text, clause.english) is not None and not is_relaxed(text)):
        return False
    # "其实一楼也可以考虑", "总价两百万全款能接受": no wish, but a release (and an accepted budget).
    # Admission judges it like any candidate once the sentence is read: an acceptance under a
    # condition ("如果便宜，一楼也可以"), hedged ("也许一楼也行"), forwarded or someone else's relaxes
    # nothing by itself; it is proposed.
    pending = clause.pending
    accepted = release_candidates(text) or (reversed_releases(pending, text) if pending else [])
    if accepted:
        sentence.accepted[clause.index] = accepted
    if not THIRD_PARTY_RE.search(text):
        facts = profile_facts(text, confidence=0.9, context=sentence.context, wanted=True, budget_only=True)[0]
        sentence.found[clause.index] = facts
    return True


def _negated_or_disowned(sentence: _Sentence, clause: _Clause) -> bool:
    text = clause.text
    return bool(DOUBLE_NEGATION_RE.search(text) or NEGATED_AVERSION_RE.search(text) or DISOWNED_RE.search(text))


def _name_answer(sentence: _Sentence, clause: _Clause) -> bool:
    if NAME not in sentence.answers or clause.english:
        return False
    address = address_answer(clause.text)  # "小方就行" answering "怎么称呼您？"
    if address is None:
        return False
    sentence.found[clause.index] = [address]
    return True


def _bare_answer(sentence: _Sentence, clause: _Clause) -> bool:
    answers, text = sentence.answers - {WHEN, ANY}, clause.text
    if not answers or clause.english or find_trigger(text, False) is not None:
        return False
    # A bare answer to the agent's question: "六千左右吧", "浦东或者闵行都行", "安静一点的".
    if STRONG_HEDGE_RE.search(_ANSWER_HEDGE_RE.sub("", text)):
        return True
    own = statement_candidates(text, hedged=clause.hedged, context=sentence.context, answers=answers)
    if not own and NEEDS in answers and not clause.hedged and not STRONG_HEDGE_RE.search(text):
        own = bare_want_candidates(text)
    if own:
        sentence.found[clause.index] = own
    return True


def _either_is_fine(sentence: _Sentence, clause: _Clause) -> bool:
    text = clause.text
    if not STRONG_HEDGE_RE.search(text):
        return False
    if _ANSWER_HEDGE_RE.search(text) and not STRONG_HEDGE_RE.search(_ANSWER_HEDGE_RE.sub("", text)):
        # "住静安或者徐汇都可以", "预算七八千都行": either is fine, so the span is what they look for.
        sentence.found[clause.index] = [
            fact
            for fact in statement_candidates(text, hedged=clause.hedged, context=sentence.context)
            if (fact.key == "profile:district" and "、" in fact.value) or fact.key == "profile:budget"
        ]
    return True


def _past(sentence: _Sentence, clause: _Clause) -> bool:
    text = clause.text
    if not PAST_RE.search(text):
        return False
    # "I used to like X" reads as "I like X" once the past marker is gone.
    source = text if CJK_RE.search(text) else normalize_content(PAST_RE.sub(" ", text))
    sentence.carried = [
        candidate
        for piece in coordinated(source)
        for candidate in statement_candidates(piece, hedged=False, context=sentence.context)
        if candidate.type in {PREFERENCE, CONSTRAINT}
    ]
    return True


def _refusal_of_a_complaint(sentence: _Sentence, clause: _Clause) -> bool:
    index = clause.index
    if index == 0 or sentence.found.get(index - 1):
        return False
    complaint = _COMPLAINT_RE.match(sentence.clauses[index - 1])
    if complaint is None or not _BARE_REFUSAL_RE.match(clause.text):
        return False
    # "大兴太远了，不考虑": the refusal's object is what the clause before complained about.
    sentence.found[index] = statement_candidates(
        complaint.group("obj") + "不考虑", hedged=clause.hedged, context=sentence.context
    )
    return True


def _continued_want(sentence: _Sentence, clause: _Clause) -> bool:
    text = clause.text
    if not sentence.want_open or clause.english or find_trigger(text, False) is not None:
        return False
    if not _CONTINUED_WANT_RE.match(text):
        return False
    # "帮我找个两居室，带电梯的，离地铁近点": the want goes on after the comma.
    stated = "要" + re.sub(r"^(?:还|也|并且|而且|另外|同时)(?:要|得)?(?:可以|能)?(?=提供|有|带)", "", text)
    own = statement_candidates(stated, hedged=clause.hedged, context=sentence.context)
    sentence.found[clause.index] = own
    sentence.want_open = bool(own)
    return True


# "我想了解一下锦江的房子", "帮我介绍下观湖苑的房子", "帮我约几个龙门的", "约个90多方的看看": the
# customer explores or asks to be shown; what they name (a place, a size, a kind of home) is a want
# for a supervisor to confirm (`admission` holds it back as an inquiry).
_INQUIRY_RE = re.compile(
    r"(?:了解|介绍|咨询|打听|看看|看一下|看下|约)(?:一下|下)?(?:个|几个|几套|一些|些|一套|一个)?"
    r"(?P<what>[\u4e00-\u9fffA-Za-z0-9]{2,10}?)的(?:房子|房源|楼盘|小区|二手房|新房|房|公寓)?(?:看看|看一下|看下)?$"
)
_INQUIRY_NOT_WHAT_RE = re.compile(
    r"^(?:这|那|其他|其它|别的|周边|附近|旁边|你们|你|您|他|她|它|现在|最近|目前|新|老|好)"
)


def _inquiry(sentence: _Sentence, clause: _Clause) -> bool:
    if clause.kind not in (ClauseKind.STATEMENT, ClauseKind.REQUEST) or clause.english:
        return False
    match = _INQUIRY_RE.search(clause.text)
    if match is None or _INQUIRY_NOT_WHAT_RE.match(match.group("what")):
        return False
    what = match.group("what")
    found = statement_candidates(f"想要{what}的", hedged=False, context=sentence.context)
    if not found and not amounts_in(what) and CJK_RE.search(what):
        area = unknown_area(f"想在{what}附近找", wanted=True)  # a name the gazetteer does not know
        found = [area[0]] if area else []
    sentence.found[clause.index] = [dataclasses.replace(candidate, clause=clause.text) for candidate in found]
    return True


# "配套好一些", "离地铁近一点": a bare comparison said on its own, with no 想要 or 最好, may be a want
# or a remark on what was shown; a supervisor decides (`admission` holds it back).
_BARE_COMPARATIVE_RE = re.compile(
    r"^(?P<request>(?:请|麻烦)?(?:帮我|给我)?)?(?P<obj>[\u4e00-\u9fff]{1,6}?)(?P<asked>安排得?|弄得?|做得?|定得?)?(?:要|能|再|得)?"
    r"(?P<adj>好|大|近|新|安静|便宜|亮|宽敞|方便|齐全|齐|高|低|清淡|轻松|宽松|舒服|舒适|干净|实惠|早|晚|快)"
    r"(?:一些|一点儿?|点儿?|些)[的吧啊呀哈了呢哦嘛啦]*$"
)


def _comparative(sentence: _Sentence, clause: _Clause, *, requested: bool) -> bool:
    if clause.kind is not ClauseKind.STATEMENT or clause.english:
        return False
    match = _BARE_COMPARATIVE_RE.match(clause.text)
    if match is None or find_trigger(clause.text, False) is not None:
        return False
    if requested != bool(match.group("asked") or match.group("request")):
        return False
    if not requested and len(sentence.clauses) > 1:
        return False  # a remark among others ("户型不错，采光好一些"): no want
    obj = match.group("obj") + match.group("adj")
    if not valid_object(obj) or object_refusal(obj):
        return False
    sentence.found[clause.index] = [
        Candidate(
            type=PREFERENCE,
            key=f"{PREFERENCE}:{object_key(obj)}",
            content=f"偏好：{obj}",
            confidence=0.8 if requested else 0.6,
            supersedes_keys=(f"{CONSTRAINT}:{object_key(obj)}",),
            clause=clause.text,
        )
    ]
    return True


def _requested_comparative(sentence: _Sentence, clause: _Clause) -> bool:
    # "餐食安排清淡一点吧", "行程安排轻松一点": asked of us, a request: a want.
    return _comparative(sentence, clause, requested=True)


def _bare_comparative(sentence: _Sentence, clause: _Clause) -> bool:
    # "配套好一些" said alone: a want, or a remark on what was shown; a supervisor decides.
    return _comparative(sentence, clause, requested=False)


# "师傅来之前请先打电话", "来之前麻烦先发个短信": how the customer wants to be reached first.
_CONTACT_FIRST_RE = re.compile(
    r"(?:请|麻烦|记得|务必|最好|一定)?(?:提前|先)(?P<act>打(?:个)?电话|电话联系|联系(?:我|一下)?|发(?:个)?(?:短信|消息|微信)|"
    r"说一声|通知(?:我|一下)?|打声招呼|预约)"
)


def _contact_first(sentence: _Sentence, clause: _Clause) -> bool:
    if clause.kind is ClauseKind.QUESTION or clause.english:
        return False
    match = _CONTACT_FIRST_RE.search(clause.text)
    if match is None or re.search(r"不用|不必|别|不要", clause.text[: match.start()]):
        return False
    act = match.group("act")
    sentence.found[clause.index] = [
        Candidate(
            type=PREFERENCE,
            key=f"{PREFERENCE}:contact_first",
            content=f"偏好：先{act}",
            confidence=0.8,
            clause=clause.text,
        )
    ]
    return True


# "想十月份带爸妈去云南玩", "打算下个月去桂林旅游": a trip the customer plans, to a place the
# vocabulary knows. A want in a travel trade, an aside in others: admission holds it back (a trip).
_TRIP_WANT_RE = re.compile(
    r"(?:想|要|打算|准备|计划)[^，,。！？]{0,10}?(?:去|到)(?P<where>[\u4e00-\u9fff]{2,6}?)(?P<verb>玩|旅游|旅行|度假|出游|自驾|转转|逛逛)"
)


def _trip(sentence: _Sentence, clause: _Clause) -> bool:
    if clause.kind is ClauseKind.QUESTION or clause.english:
        return False
    match = _TRIP_WANT_RE.search(clause.text)
    if match is None or re.search(r"不|没|别", clause.text[: match.start("where")]):
        return False
    where = match.group("where")
    places = places_in(where, sentence.places)
    known = bool(places) and places[0].words == where
    # "国庆想去日本玩": a destination abroad is no place of the gazetteer, but still a trip's
    if not known and (len(where) > 4 or _TRIP_NOT_PLACE_RE.search(where) or object_refusal(where)):
        return False
    # What else the clause says (a budget, who comes along) stands; nothing read out of the trip itself
    # ("我想去云南玩" → 偏好：云南玩) is a second want beside the destination.
    others = [
        candidate
        for candidate in statement_candidates(clause.text, hedged=False, context=sentence.context)
        if candidate.field not in {"city", "district"} and where not in candidate.content
    ]
    sentence.found[clause.index] = [
        *others,
        Candidate(
            type=PREFERENCE,
            key=f"{PREFERENCE}:destination",
            content=f"偏好：去{where}{match.group('verb')}",
            confidence=0.8,
            values=tuple(places[:1]) if known else (),
            clause=clause.text,
        ),
    ]
    return True


# A destination the gazetteer does not know is read only when it looks like a country's or a
# region's name ("日本", "新加坡"), not a kind of place or a phrase: "想去一个景点游玩", "要去玩一玩",
# "想去外面玩", "去别的景点再转转", "去龙脉温泉度假村", "去名叫…的景点".
_TRIP_NOT_PLACE_RE = re.compile(
    r"[一个几些这那哪别某外里边附近周楼玩游去找可能想要再名叫的我你他她它]|景点|景区|地方|公园|商场|广场|温泉|度假|酒店|"
    r"餐厅|饭店|朋友|同学|家"
)


def _statement(sentence: _Sentence, clause: _Clause) -> bool:
    text = clause.text
    # A hedged clause ("也许想要带阳台的，预算可能5000") is read as said, facts too: admission holds
    # every candidate of it back as hedged, so a supervisor sees it and memory never takes it by itself.
    own = [
        candidate
        for piece in coordinated(text)
        for candidate in statement_candidates(piece, hedged=False, context=sentence.context)
    ]
    if clause.hedged:
        own = [dataclasses.replace(candidate, confidence=min(candidate.confidence, 0.5)) for candidate in own]
    trigger = find_trigger(text, clause.english)
    sentence.want_open = bool(own) and trigger is not None and trigger[1] in {PREFERENCE, MUST}
    if clause.pending and not any(candidate.type in {PREFERENCE, CONSTRAINT} for candidate in own):
        own += reversed_candidates(clause.pending, text, hedged=clause.hedged)
    sentence.found[clause.index] = own
    return True


# The clause rules, in precedence order: the first rule that decides a clause is the only one that
# does. A new phrasing family is a row here (with its example), not a branch somewhere else.
CLAUSE_RULES: tuple[ClauseRule, ...] = (
    ClauseRule("pasted", "我喜欢朝南的，【翠湖湾·3室2厅·128㎡】", _pasted),
    ClauseRule("voided_by_condition", "如果预算够的话，我要三居室", _voided_by_condition, passes_on=True),
    ClauseRule("topic_lead", "价格的话，五千以内", _topic_lead),  # also "补差价的话两百以内能接受"
    ClauseRule("first_person_saying", "我跟你说，我喜欢高层", _first_person_saying),
    ClauseRule("company", "我想带女朋友找一家安静的酒店", _company, passes_on=True),
    ClauseRule("reported_speech", "我老婆说，不要顶楼", _reported_speech),
    ClauseRule("instruction", "我希望你以后自动发送回复", _instruction),
    ClauseRule("correction", "刚才说南山，改成宝安吧", _correction, passes_on=True),
    ClauseRule("request_opener", "能帮我找一个两居，带电梯的吗", _request_opener, passes_on=True),
    ClauseRule("negated_want", "我不打算租三居", _negated_want),
    ClauseRule("alternative_area", "浦东的房子我想看看，滨江那边也行", _alternative_area),
    ClauseRule("budget_cap", "八千是上限", _budget_cap),
    ClauseRule("time_window", "打电话的话晚上联系我", _time_window),
    ClauseRule("condition", "我要三居室，如果预算够的话", _condition),
    ClauseRule("question", "这套有阳台吗？", _question),
    ClauseRule("reason", "不要一楼，因为太潮", _reason),
    ClauseRule("trade_terms", "别给我发中通", _trade_terms),
    ClauseRule("acceptance", "其实一楼也可以考虑", _acceptance),
    ClauseRule("negated_or_disowned", "我不是不喜欢高层", _negated_or_disowned),
    ClauseRule("name_answer", "小方就行", _name_answer, asked="请问怎么称呼您？"),
    ClauseRule("bare_answer", "六千左右吧", _bare_answer, asked="您的预算大概多少？"),
    ClauseRule("either_is_fine", "住静安或者徐汇都可以", _either_is_fine),
    ClauseRule("past", "我以前喜欢高层", _past),
    ClauseRule("refusal_of_a_complaint", "大兴太远了，不考虑", _refusal_of_a_complaint),
    ClauseRule("continued_want", "帮我找个两居室，带电梯的", _continued_want),
    ClauseRule("contact_first", "师傅来之前请先打电话", _contact_first),
    ClauseRule("trip", "打算下个月去桂林玩", _trip),
    ClauseRule("inquiry", "我想了解一下锦江的房子", _inquiry),
    ClauseRule("requested_comparative", "餐食安排清淡一点吧", _requested_comparative),
    ClauseRule("bare_comparative", "配套好一些", _bare_comparative),
    ClauseRule("statement", "我比较喜欢朝南的房子", _statement),
)


def _sentence_candidates(
    clauses: list[str],
    question_mark: bool,
    context: ExtractContext | None,
    answers: frozenset[str],
    releases: list[Candidate],
    decided_by: list[str] | None = None,
    *,
    line: str = "",
    forwarded: bool = False,
) -> list[Candidate]:
    """Candidates of one sentence's clauses, each read by the first rule of CLAUSE_RULES that decides
    it and judged by `admission` (a candidate held back carries its row's name in `held_back`);
    acceptances are judged by the same rows: those admission lets through go to `releases`, the
    others are proposed like any candidate. The rule names that decided clauses (or, passing them on,
    applied to them) go to `decided_by`."""
    sentence = _Sentence(clauses, question_mark, context, answers)
    kinds = [
        clause_kind(text, closes_question=index == len(clauses) - 1 and question_mark)
        for index, text in enumerate(clauses)
    ]
    # "有没有前滩的房子，带车位的": the clauses of a sentence that asks go on asking
    question_sentence = question_mark or any(
        kind is ClauseKind.QUESTION and not TOPIC_CLAUSE_RE.match(text)
        for kind, text in zip(kinds, clauses, strict=True)
    )
    for index, text in enumerate(clauses):
        pending, sentence.carried = sentence.carried, []
        # after a reporting verb ("我老婆说，不要顶楼") the rest is someone else's words: read, but
        # only ever proposed (admission's third party row)
        reported = sentence.skip_rest
        last = index == len(clauses) - 1
        clause = _Clause(index, text, last=last, pending=pending)
        clause.kind = kinds[index]
        for rule in CLAUSE_RULES:
            if rule.read(sentence, clause):
                if decided_by is not None:
                    decided_by.append(rule.name)
                if not rule.passes_on:
                    sentence.readings[index] = (clause.text, clause.kind, "reported" if reported else rule.name)
                    break
    for index, extra in sentence.extra.items():
        if index in sentence.found:  # a clause voided by a condition keeps nothing it carried
            sentence.found[index] = extra + sentence.found[index]
    judged: list[Candidate] = []
    shape = SentenceShape(tuple(clauses))  # read once for every clause of the sentence

    def reading_of(index: int) -> ClauseReading:
        text, kind, rule_name = sentence.readings.get(index, (clauses[index], ClauseKind.STATEMENT, ""))
        return ClauseReading(
            text=text,
            kind=kind,
            rule="conditional" if index in sentence.conditional else rule_name,
            sentence=tuple(clauses),
            question_sentence=question_sentence,
            line=line,
            forwarded=forwarded,
            context=context,
            shape=shape,
            index=index,
        )

    for index in sentence.accepted:
        if index + 1 < len(clauses) and conditions_acceptance_before(clauses[index + 1]):
            sentence.conditional.add(index)  # "一楼也可以，只要有电梯": accepted under a condition
    for index, candidates in sentence.found.items():
        reading = reading_of(index)
        for candidate in candidates:
            if junk(candidate):
                continue
            row = hold_back(candidate, reading)
            if row is None:
                judged.append(candidate)
            elif row.name not in DROPPED_ROWS:
                # a proposal quotes the customer's clause as written, not as a rule rewrote it
                judged.append(dataclasses.replace(candidate, held_back=row.name, clause=clauses[index]))
    # Acceptances pass admission too (issue 35 review, H1): only the customer's own, firm, unconditional
    # acceptance relaxes an earlier refusal; one held back is a proposal, never a release.
    for index, accepted in sentence.accepted.items():
        reading = reading_of(index)
        for release in accepted:
            row = hold_back(release, reading)
            if row is None:
                releases.append(release)
            elif row.name not in DROPPED_ROWS:
                judged.append(dataclasses.replace(release, held_back=row.name, clause=clauses[index]))
    return judged


# "能帮我找一个…吗", "可以给我推荐…吗": a polite request phrased as a question.
_POLITE_REQUEST_RE = re.compile(
    r"^(?P<lead>.*?)(?:你|您|你们)?(?:能|可以|能不能|可不可以|能否|可否|是否可以|麻烦|请)(?:再)?"
    r"(?P<ask>帮我们?|给我们?|帮忙|替我)(?P<rest>(?:找|推荐|介绍|留意|物色|搜|选|挑|安排|预定|预订|订).+?)"
    r"(?:吗|么|嘛|呢|不|好吗|行吗|可以吗|好不好|行不行|呗)?[?？]?$"
)


def _polite_request(clause: str) -> str | None:
    match = _POLITE_REQUEST_RE.match(clause)
    if match is None:
        return None
    rest = re.sub(
        r"^(找|推荐|介绍|留意|物色|搜|选|挑|安排|预定|预订|订)几(?=[个套家间处])", r"\1", match.group("rest")
    )  # "推荐几个…": a number
    statement = f"{match.group('lead')}{match.group('ask')}{rest}"
    return None if QUESTION_RE.search(statement) else statement


def _lines(text: str) -> list[tuple[str, bool]]:
    """The message's lines to read, each with whether it is part of a forwarded record: a pasted line
    (a share card, a notice, an app's template) is nobody's words and is not read at all; after a
    record's header every line is somebody else's, and so is a line opening with a speaker's label."""
    lines: list[tuple[str, bool]] = []
    in_record = False
    for raw in text.split("\n"):
        if record_stamp(raw):
            in_record = True  # "张三 2024-05-01 10:00": a merged-forward record; its lines are that person's
            continue
        header = forward_header(raw)
        if header is not None:
            in_record, raw = True, header
        spoken = speaker_line(raw)
        if spoken is not None:
            raw = spoken
        if not raw.strip() or pasted(raw):
            continue
        lines.append((without_pasted_spans(raw), in_record or spoken is not None))
    return lines


def extract(text: str, context: ExtractContext | None = None, *, decided_by: list[str] | None = None) -> Extraction:
    """What one customer message states, in order, one candidate per key (the last statement wins),
    the acceptances in it, and what looks like a want but waits for a supervisor (`proposals`, one
    per key not stated outright); the names of the clause rules that decided its clauses go to
    `decided_by` when the caller passes a list. A message past the reader's bound
    (`bound.READ_LIMIT_CHARS`) is not read: nothing, with `unread` saying why."""
    too_long = unreadable(text)
    if too_long:
        return Extraction([], [], [], unread=too_long)
    text = normalise_statement(text)
    if message_refusal(text):
        return Extraction([], [])  # a message spoofing structure (role lines, fences, delimiters) states nothing
    answers = asked_for(context.previous_outbound) if context is not None else frozenset()
    per_sentence: list[list[Candidate]] = []
    releases: list[Candidate] = []
    for line, forwarded in _lines(text):
        for clauses, question_mark in split_sentences(line):
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
            per_sentence.append(
                _sentence_candidates(
                    clauses, question_mark, context, answers, releases, decided_by, line=line, forwarded=forwarded
                )
                if clauses
                else []
            )
    found: dict[str, Candidate] = {}
    proposed: dict[str, Candidate] = {}
    for candidates in per_sentence:
        for candidate in candidates:
            into = proposed if candidate.held_back else found
            earlier = into.pop(candidate.key, None)
            if earlier is not None and candidate.extends and candidate.field == "district":
                candidate = merged_districts(earlier, candidate)  # "静安，或者长宁也行": both
            into[candidate.key] = candidate
    # A release never overrides what the same message states outright about the same object.
    stated = {key for candidate in found.values() for key in (candidate.key, *candidate.supersedes_keys)}
    kept = {release.key: release for release in releases if release.key not in stated}
    # What the message states outright is not proposed again beside it.
    proposals = [candidate for key, candidate in proposed.items() if key not in found]
    return Extraction(list(found.values()), [r for r in kept.values() if not r.held_back], proposals)


def extract_candidates(
    text: str,
    context: ExtractContext | None = None,
    *,
    releases: list[Candidate] | None = None,
    proposals: list[Candidate] | None = None,
) -> list[Candidate]:
    """What capture writes by itself from one customer message: candidates in order, one per key
    (the last statement wins); its acceptances are appended to `releases` and what waits for a
    supervisor to `proposals` when the caller passes lists."""
    extraction = extract(text, context)
    if releases is not None:
        releases.extend(extraction.releases)
    if proposals is not None:
        proposals.extend(extraction.proposals)
    return extraction.candidates
