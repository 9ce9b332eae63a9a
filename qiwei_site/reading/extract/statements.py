"""One clause to candidates: a form of address, profile facts, or a preference/constraint on its objects;
also coordinated statements ("不要顶楼也不要一楼") and a past statement reversed ("现在不要了")."""

from __future__ import annotations

import re

from qiwei_site.reading.extract._common import (
    CJK_RE,
    CONSTRAINT,
    MUST,
    MUST_LABEL,
    PREFERENCE,
    Candidate,
    ExtractContext,
)
from qiwei_site.reading.extract.address import ADDRESS_PHRASE_RE, address_candidate
from qiwei_site.reading.extract.clauses import EN_REVERSAL_RE, THIRD_PARTY_RE
from qiwei_site.reading.extract.constraints import EN_CONSTRAINT_TRIGGERS, ZH_CONSTRAINT_TRIGGERS
from qiwei_site.reading.extract.household import household_candidates
from qiwei_site.reading.extract.objects import (
    GAP,
    clean_object,
    object_key,
    objects_for,
    split_objects,
    trim_object,
    valid_object,
)
from qiwei_site.reading.extract.preferences import (
    EN_PREFERENCE_TRIGGERS,
    NEGATED_PREFERENCE_PREFIX,
    ZH_PREFERENCE_TRIGGERS,
)
from qiwei_site.reading.extract.profile_facts import FACILITY, NEEDS, profile_facts, unknown_area
from qiwei_site.reading.extract.sizes import size_candidate
from qiwei_site.reading.guard import object_refusal, value_refusal
from qiwei_site.reading.values import amounts_in, places_in

# Constraints before preferences, so "不喜欢" never reads as "喜欢".
_COMPILED_ZH = tuple((re.compile(p), t, c, i) for p, t, c, i in (*ZH_CONSTRAINT_TRIGGERS, *ZH_PREFERENCE_TRIGGERS))
_COMPILED_EN = tuple(
    (re.compile(p, re.IGNORECASE), t, c, i) for p, t, c, i in (*EN_CONSTRAINT_TRIGGERS, *EN_PREFERENCE_TRIGGERS)
)


_CAP_AFTER_RE = re.compile(r"\s*(?:超过|超出|高于|多于|大于|过|低于|小于|少于)")


def find_trigger(clause: str, is_english: bool) -> tuple[re.Match[str], str, float, int] | None:
    """The first trigger in the clause, as (match, type, confidence, importance)."""
    table = _COMPILED_EN if is_english else _COMPILED_ZH
    for regex, memory_type, confidence, importance in table:
        match = regex.search(clause)
        if match is None:
            continue
        if (
            memory_type in {PREFERENCE, MUST}
            and not is_english
            and NEGATED_PREFERENCE_PREFIX.search(clause[: match.start()])
        ):
            continue
        if memory_type == CONSTRAINT and not is_english and _CAP_AFTER_RE.match(clause, match.end()):
            continue  # "月供不要超过一万二", "别超过五千": a cap on an amount, not a refusal of it
        return match, memory_type, confidence, importance
    return None


def _polar_candidate(
    memory_type: str, obj: str, key_obj: str, *, is_english: bool, confidence: float, importance: int, clause: str
) -> Candidate:
    """A preference, must-have or constraint on `obj`; it supersedes the opposite statement on the same
    object. A must-have is a preference (same key) flagged `hard`, shown as 必须：…"""
    hard = memory_type == MUST
    if hard:
        content, opposite = (f"Must have: {obj}" if is_english else f"{MUST_LABEL}：{obj}"), f"{CONSTRAINT}:{key_obj}"
        memory_type = PREFERENCE
    elif memory_type == PREFERENCE:
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
        hard=hard,
    )


# A requester inside the customer's own requirement is no hearsay: "房东必须能接受宠物" demands of the
# landlord, "家里人要求必须有电梯" relays the household's requirement. "房东希望…" and "我老婆说…" stay
# someone else's words.
_DEAL_PARTY_RE = re.compile(
    r"^(?:我们?|咱们|我这边)?(?:要求)?(?P<party>房东|业主|物业|小区|开发商|中介)(?:那边|这边)?(?:也|都)?\s*$"
)
_HOUSEHOLD_RE = re.compile(
    r"^(?:因为)?(?:我们?|咱们)?(?:家里人|家人|家里老人|家里|老人|父母|爸妈|孩子|老婆|老公|媳妇|爱人|太太|先生)(?:那边|这边)?"
    r"(?:的要求是|要求|需要|坚持)?\s*$"
)
_REQUIRING_TRIGGER_RE = re.compile(r"^(?:要求|需要)$")
_MUST_WORD_RE = re.compile(r"^(?:必须得?|一定要|一定得|务必|非要|非得|得|最好)")


# A naming cue followed by an errand is no form of address: "不要叫我去看房" refuses the errand.
_CALLED_TO_RE = re.compile(
    r"(?:不要|别|不用|不必)(?:再)?(?:叫|喊|约)我(?:们)?(?P<act>(?:去|来|过去|过来|到)[\u4e00-\u9fff]{1,6}?)[了吧啊呀]*$"
)
_NEAR_SOMEONE_RE = re.compile(r"^(?:离|靠近|距离|到|挨着|方便)(?!.*(?:说|觉得|认为|希望|想要|喜欢))")


def _postposed(clause: str, match: re.Match[str]) -> bool:
    """The trigger closes the clause ("…最重要"): what stands before it is its object."""
    return not clause[match.end() :].strip(" 的吧啊呀哈了呢哦嘛啦")


def _requester(prefix: str, trigger_text: str, memory_type: str) -> tuple[bool, str]:
    """Whether a third party before the trigger is a requester inside the customer's own requirement,
    and the words to keep in the object ("房东" in "房东能接受宠物")."""
    party = _DEAL_PARTY_RE.match(prefix)
    if party and memory_type in {MUST, PREFERENCE} and (memory_type == MUST or trigger_text.startswith("最好")):
        return True, party.group("party")
    household = _HOUSEHOLD_RE.match(prefix)
    if household and (re.search(r"要求|需要|坚持", prefix) or _REQUIRING_TRIGGER_RE.match(trigger_text)):
        return True, ""
    return False, ""


# "想在地铁站附近找个两居", "打算在公司旁边租": where the home should be, near a landmark that is no area.
_NEAR_FRAME_RE = re.compile(
    r"(?:想|打算|准备|希望|要|想要)(?:在|到)(?P<where>[\u4e00-\u9fff\dA-Za-z]{2,12}?(?:附近|周边|旁边|边上|一带|沿线))"
    r"(?:找|租|买|住|看)"
)


_NEAR_NOT_LANDMARK_RE = re.compile(
    r"这|那|其|它|该|此|上面|刚才|景点|餐馆|饭店|餐厅|酒店|宾馆|酒楼|房子|小区|以后|之后|结束|完|的周边|的附近"
)


def _near_candidate(clause: str, context: ExtractContext | None) -> tuple[Candidate, tuple[int, int]] | None:
    match = _NEAR_FRAME_RE.search(clause)
    if match is None:
        return None
    where = match.group("where")
    if _NEAR_NOT_LANDMARK_RE.search(where):
        return None  # "在这家酒店附近", "游玩结束以后在景点周边": near something named before, or a time
    if places_in(where, context.places if context else None) or object_refusal(where):
        return None  # a place is the area (意向区域), read with the profile facts
    area = unknown_area(clause, wanted=True)
    if area is not None:
        return area  # "想在张江附近找": a name that is no landmark is an area
    key_obj = object_key(where)
    candidate = _polar_candidate(
        PREFERENCE, where, key_obj, is_english=False, confidence=0.8, importance=3, clause=clause
    )
    return candidate, match.span("where")


def statement_candidates(
    clause: str,
    *,
    hedged: bool,
    context: ExtractContext | None = None,
    answers: frozenset[str] = frozenset(),
) -> list[Candidate]:
    """What one clause states: a form of address, or profile facts, household facts and a
    preference/constraint."""
    household = [] if hedged or not CJK_RE.search(clause) else household_candidates(clause)
    return household + _statement_candidates(clause, hedged=hedged, context=context, answers=answers)


def _statement_candidates(
    clause: str,
    *,
    hedged: bool,
    context: ExtractContext | None,
    answers: frozenset[str],
) -> list[Candidate]:
    is_english = not CJK_RE.search(clause)
    candidates: list[Candidate] = []
    address = address_candidate(clause)
    if address is not None:
        return [address]
    called = _CALLED_TO_RE.search(clause)
    if called is not None:
        # "不要叫我去看房", "别喊我过去了": no name, a refused errand
        act = called.group("act")
        return [
            _polar_candidate(
                CONSTRAINT, act, object_key(act), is_english=False, confidence=0.8, importance=3, clause=clause
            )
        ]
    if ADDRESS_PHRASE_RE.search(clause):
        return []  # a refused or judged form of address ("不要叫我老王") is no statement about the home
    trigger = find_trigger(clause, is_english)
    # Profile facts only from positive statements: "不要两居室" is a constraint, not a layout.
    positive = trigger is None or trigger[1] in {PREFERENCE, MUST}
    facts: list[Candidate] = []
    spans: list[tuple[int, int]] = []
    size: tuple[Candidate, tuple[int, int]] | None = None
    requester, kept_party = False, ""
    if trigger is not None:
        prefix = clause[: trigger[0].start()]
        if THIRD_PARTY_RE.search(prefix):
            requester, kept_party = _requester(prefix.strip(), trigger[0].group(0), trigger[1])
            # "离孩子学校近最重要": the fronted object places the home near someone's place; the want
            # is the customer's own.
            if not requester and _NEAR_SOMEONE_RE.match(prefix.strip()) and _postposed(clause, trigger[0]):
                requester = True
    if positive:
        facts, spans = profile_facts(
            clause, confidence=0.9, context=context, answers=answers, wanted=trigger is not None or bool(answers)
        )
        if facts and THIRD_PARTY_RE.search(clause[: min(start for start, _ in spans)]) and not requester:
            facts, spans = [], []
        if hedged:
            facts = []  # facts must be firm; a hedged value is at most something to ask about
        candidates += [fact for fact in facts if not value_refusal(fact.field or "", fact.value)]
        near = None if hedged or trigger is not None else _near_candidate(clause, context)
        if near is not None and not THIRD_PARTY_RE.search(clause[: near[1][0]]):
            candidates.append(near[0])  # "想在地铁站附近找个两居": near a landmark
        size = None if hedged else size_candidate(clause, wanted=trigger is not None, answered=NEEDS in answers)
        if size is not None and (requester or not THIRD_PARTY_RE.search(clause[: size[1][0]])):
            candidates.append(size[0])  # "至少要七十平", "一百平以上的三居": the floor area wanted
            spans.append(size[1])
    if trigger is None:
        return candidates
    match, memory_type, confidence, importance = trigger
    if THIRD_PARTY_RE.search(clause[: match.start()]) and not requester:
        return candidates
    if hedged:
        confidence, importance = min(confidence, 0.5), max(1, importance - 1)
    # Remove what the profile facts already cover ("想要地铁附近的两居室" → layout + "地铁附近"),
    # wherever they stand, unless a fact's words hold the trigger itself.
    remainder = clause
    for start, end in sorted(spans, reverse=True):
        if end <= match.start() or start >= match.end():
            remainder = remainder[:start] + GAP + remainder[end:]
    sub = find_trigger(remainder, is_english) if remainder != clause else trigger
    if sub is None:
        return candidates
    had_object = bool(clause[match.end() :].strip(" 的了吧啊呀呢"))
    objects = objects_for(remainder, sub[0], is_english, fronted=not had_object or remainder == clause)
    if facts:
        # "月供最好控制在一万以内": the amount is the fact's; an object restating it is no second item
        objects = [obj for obj in objects if not amounts_in(obj)]
    if kept_party:
        # "房东必须能接受宠物" → "房东能接受宠物": the demand on the party, as the customer put it.
        demanded = trim_object(_MUST_WORD_RE.sub("", clause[match.start() :]))
        objects = [kept_party + demanded] if demanded else []
    # "片区最好是望京": the fact holds the trigger, and its value is no second object.
    fact_words = {object_key(re.sub(r"（.*$", "", fact.value)) for fact in facts}
    for obj in objects:
        if not valid_object(obj) or object_refusal(obj):
            continue
        key_obj = object_key(obj)
        if not key_obj or key_obj in fact_words:
            continue
        if any(fact.field == "district" for fact in facts) and re.fullmatch(FACILITY, obj):
            continue  # "最好是海淀的校区": the branch only says where, and the area holds it
        if size is not None and any(amount.unit == "平方米" for amount in amounts_in(obj)):
            continue  # "面积最好在六十平以上": the size is its own item
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


# A bare want answering the agent's question about needs: a short noun or adjective phrase, not an
# action, a greeting or a "whatever".
_BARE_NOT_WANT_RE = re.compile(
    r"^(?:好的?|嗯+|哦+|噢|行|可以|没有|没了|暂时没有|暂时没|没什么|都行|随便|都可以|无所谓|谢谢|多谢|对|是的?|没问题|ok|OK|好吧|"
    r"不知道|不清楚|再说|还没想好|没想好|都一样|你看着办|你们定|差不多|一般)[的吧啊呀哈了呢哦嘛啦]*$"
)
_BARE_ACTION_RE = re.compile(
    r"我|你|您|他|她|咱|看看|看一下|问|约|去|来|联系|发|打电话|等|想想|商量|考虑|了解|咨询|帮|谢|[吗呢么]$|"
    r"今天|明天|后天|刚才|已经|正在|上班|下班|开会|在忙"
)
MAX_BARE_CHARS = 16


def bare_want_candidates(clause: str) -> list[Candidate]:
    """ "离学校近点的", "安静一些", "南向带阳台": wants stated as bare phrases, read only when they answer
    the agent's question about what the customer needs."""
    if not CJK_RE.search(clause) or len(clause) > MAX_BARE_CHARS:
        return []
    if _BARE_NOT_WANT_RE.match(clause) or _BARE_ACTION_RE.search(clause):
        return []
    found = []
    for obj in split_objects(clean_object(clause)):
        obj = clean_object(obj)
        if not valid_object(obj) or object_refusal(obj) or _BARE_NOT_WANT_RE.match(obj):
            continue
        key_obj = object_key(obj)
        if key_obj:
            found.append(
                _polar_candidate(
                    PREFERENCE, obj, key_obj, is_english=False, confidence=0.7, importance=3, clause=clause
                )
            )
    return found


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
    return bool(objects_for(piece, trigger[0], False)) or bool(profile_facts(piece, confidence=0.0, wanted=True)[0])


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
