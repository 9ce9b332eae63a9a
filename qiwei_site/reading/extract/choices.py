"""Choices among a trade's terms (issue 22, item 2): "换黑色", "京东的吧", "别给我发中通", "必须是
纯棉", "L码改成XL", "线上吧" — the generic rules (want, exclusion, must-have, bare answer,
correction) with the objects from the trade's vocabulary (`qiwei_site.reading.values.vocabulary`).

A term is kept with the stance the words around it give it: a refusal before it ("别给我发中通")
or after it ("PU的我不要") rules it out; a must-have word before it makes it a must; a want, a
change ("改成", "换成") or a bare answer to the agent's question makes it a preference. A term in
a clause with no stance ("中通到了") is nothing.
"""

from __future__ import annotations

import re

from qiwei_site.reading.extract._common import CONSTRAINT, MUST_LABEL, PREFERENCE, Candidate
from qiwei_site.reading.extract.objects import object_key
from qiwei_site.reading.values.vocabulary import VERB_GROUP, Term, Vocabulary

_REFUSED_BEFORE_RE = re.compile(
    r"(?:不要|不想要|不想用|不想|别(?:再)?(?:给我)?(?:们)?(?:发|寄|推荐|推|选|用|安排|派|换成|换|走|来|退到|退回|退|打到|转到)?"
    r"(?:那个|这个|那种|这种)?|"
    r"不考虑|拒绝|不喜欢|讨厌|不能(?:是|用|发|走)|不接受|排除)\s*$"
)
_REFUSED_AFTER_RE = re.compile(
    r"^[的\s]*(?:我|我们)?(?:就|也|都|可|真)?(?:不要|不想要|别给我|别发|不考虑|不行|免了|算了|不喜欢|不接受|pass)"
)
_MUST_BEFORE_RE = re.compile(r"(?:必须|一定要|一定得|得是|务必|非要|只要|只能(?:是|用|发|走))[^，,]*$")
# A want word right before the term (a few characters between at most): "倾向换黑色", "改成XL",
# "想要纯棉的"; not a verb earlier in the clause ("我要投诉顺丰", "发错了，发成XL了").
_WANT_BEFORE_RE = re.compile(
    # a request: "给我补发吧", "帮我申请一下退货退款", "麻烦安排上门取件", "给我补寄一个配件就行"
    r"(?:给我|帮我|替我|麻烦|请|劳驾)(?:们)?(?:再)?(?:申请|安排|办理|处理|操作|走|做)?(?:一下|下)?(?:个|一个)?$|"
    # "想请师傅上门修一下", "要找人上门维修": a visit asked for, the outcome after it
    r"(?:想|要|希望|需要)(?:请|约|找|让)?(?:个|一个)?(?:师傅|人|工程师|技师)?(?:上门|到家|过来)$|"
    # "我平时穿M码", "以后都发顺丰吧": what the customer wears, how they want it sent
    r"(?:平时|一般|都|通常)?穿$|(?:都|就|请|只|以后都|以后)发$|"
    r"(?:想要|想|要|希望|倾向于?|最好是?|喜欢|改成|换成|改为|换为|换个|换|改|用|走|选|还是|直接|就|报|学|买|订)"
    r"(?:能|可以)?(?:尽快|赶紧|马上|快点|早点|直接)?(?:个|成|用|发|寄|走|是|要|换|选)?[^，,。！？\s]{0,2}$|"
    # where the money goes back to: "退支付宝吧", "退回原来的银行卡", "钱退到微信"
    r"(?:退|退回|退到|退给|打到|转到|返到|返回)(?:原来的|原来|我的|我)?$"
)
# Words that make the term something that happened or a complaint, not a wish.
_NOT_A_WISH_RE = re.compile(
    r"已经|已申请|申请了|办了|投诉|发成|发错|错发|收到|来了|掉色|坏|破|差评|不是我|弄错|寄过|发过|寄出|发出|寄来|发来|昨天|前天|上次"
)
# After the term only a closing acceptance counts ("京东的吧", "XL就行"): a verb after it belongs to
# what follows ("换货别再发那个荧光绿了").
_WANT_AFTER_RE = re.compile(
    r"^[的\s]*(?:就|也|都)?(?:就行|就好|可以|也行|也可以|刚好|合适|挺好|好了)[的吧啊呀哈了呢哦嘛啦]*(?:\s|$)"
)
# What a question must name for a bare term to answer it: the term's group, by its usual words.
_GROUP_CUES = {"尺码": r"尺码|码|大小|号|size", "颜色": r"颜色|色", "快递": r"快递|物流|寄|发货|配送"}
_NON_NEED_BEFORE_RE = re.compile(r"(?:不需要|不用|无需|用不着|不必)[^，,]{0,4}$")
_FILLER_RE = re.compile(r"[的吧啊呀哈了呢哦嘛啦就行可以好\s、和或者还是也都那就那]+")


def _answers(term: Term, vocabulary: Vocabulary, asked: str) -> bool:
    """Whether the agent's question asked for a term of this one's group ("换什么尺码？" → M)."""
    if not asked:
        return False
    cue = _GROUP_CUES.get(term.group)
    if cue is not None and re.search(cue, asked, re.IGNORECASE):
        return True
    return term.group in asked or any(word in asked for word in vocabulary.groups.get(term.group, ()))


def _stance(text: str, term: Term, *, answering: bool, chosen: bool = False) -> str | None:
    before, after = text[: term.start], text[term.end :]
    if _REFUSED_BEFORE_RE.search(before) or _REFUSED_AFTER_RE.match(after):
        return CONSTRAINT
    if _NON_NEED_BEFORE_RE.search(before) and re.match(r"^[了啦]+\s*$", after):
        return CONSTRAINT  # "不用换了", "不需要补发了": settled, the outcome is refused
    if _NON_NEED_BEFORE_RE.search(before) or re.match(r"^[的\s]*(?:也|都|就)?(?:不需要|不用|用不着)", after):
        return None  # "赠品不需要补发": a non-need rules nothing out and wants nothing
    if _MUST_BEFORE_RE.search(before):
        if re.search(r"(?:不一定|不必|未必|没必要|不是)(?:非要|非得|必须|一定要|要)?[^，,]{0,4}$", before):
            return None  # "不一定非要退": a must-have let go of, no wish
        return MUST_LABEL
    if _NOT_A_WISH_RE.search(before) or _NOT_A_WISH_RE.search(after):
        return None
    if term.group != VERB_GROUP and re.match(r"^[的\s]*(?:那|这)(?:件|个|双|条|款|套|单)", after):
        return None  # "我要退黑色那件": the term tells which item, it is no wish ("想换这个" is one)
    if _WANT_BEFORE_RE.search(before) or _WANT_AFTER_RE.match(after):
        return PREFERENCE
    if chosen and re.match(r"^[的\s]*吧", after):
        return PREFERENCE  # "线上吧": the account's own choice, named and settled on
    if (
        term.group == VERB_GROUP
        and re.search(r"(?:我|我们)(?:就|还是|打算|准备|会|先)?$", before)
        and not re.match(r"^[了过]", after)
    ):
        return PREFERENCE  # "我自己寄回去": what the customer will do is the outcome they choose
    return PREFERENCE if answering else None


def _candidate(term: Term, stance: str, clause: str) -> Candidate:
    key_obj = object_key(term.word)
    if stance == CONSTRAINT:
        return Candidate(
            type=CONSTRAINT,
            key=f"{CONSTRAINT}:{key_obj}",
            content=f"不考虑：{term.word}",
            confidence=0.85,
            importance=4,
            supersedes_keys=(f"{PREFERENCE}:{key_obj}",),
            clause=clause,
        )
    hard = stance == MUST_LABEL
    return Candidate(
        type=PREFERENCE,
        key=f"{PREFERENCE}:{key_obj}",
        content=f"{MUST_LABEL if hard else '偏好'}：{term.word}",
        confidence=0.85 if hard else 0.8,
        importance=4 if hard else 3,
        supersedes_keys=(f"{CONSTRAINT}:{key_obj}",),
        clause=clause,
        hard=hard,
    )


# "想约个师傅上门维修", "要上门安装": a service at the customer's home is a want of its own kind,
# kept in the customer's words (上门维修), under the outcome's key.
_AT_HOME_RE = re.compile(r"上门(?:来)?$")


def _at_home(term: Term, clause: str) -> Term:
    if term.word.startswith("上门") or not _AT_HOME_RE.search(clause[max(0, term.start - 3) : term.start]):
        return term
    return Term(f"上门{term.word}", term.group, term.start, term.end)


def term_choices(clause: str, vocabulary: Vocabulary, *, asked: str = "") -> list[Candidate]:
    """The trade terms the clause takes a stance on. `asked`: the agent's question when it asked the
    customer to choose; a bare term of the group it names answers it ("京东的吧" after "用哪家快递？")."""
    terms = sorted(vocabulary.terms_in(clause) + vocabulary.verbs_in(clause), key=lambda term: term.start)
    terms = [_at_home(term, clause) for term in terms]
    if not terms:
        return []
    bare = not _FILLER_RE.sub("", _without(clause, terms))
    found = []
    for term in terms:
        stance = _stance(
            clause,
            term,
            answering=bare and _answers(term, vocabulary, asked),
            chosen=(bare or term.group == VERB_GROUP) and vocabulary.is_account_word(term.word),
        )
        if stance is not None:
            found.append(_candidate(term, stance, clause))
    return found


def _without(clause: str, terms: list[Term]) -> str:
    for term in sorted(terms, key=lambda t: t.start, reverse=True):
        clause = clause[: term.start] + clause[term.end :]
    return clause


__all__ = ["term_choices"]
