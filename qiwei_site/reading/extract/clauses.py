"""Clause splitting and the guards that decide whether a clause is the customer's own firm statement:
questions, conditionals, reported speech, third parties, hedges, negations, jokes, past states."""

from __future__ import annotations

import re

# --- splitting ----------------------------------------------------------------------------

_SENTENCE_RE = re.compile(r"[^。！？!?\n]+[。！？!?]*|[。！？!?]+")
_CLAUSE_SPLIT_RE = re.compile(
    # A space between two Chinese words is a chat's comma ("希望是电梯房哈 家里老人腿脚不太好").
    r"(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])|"
    r"[，,；;：:]|(?<!Mr)(?<!Mrs)(?<!Ms)(?<!Dr)(?:(?<!\d)\.|\.(?!\d))|(?<!不)但是|(?<!不)但(?!是)|不过|可是|然而|只是说|"
    r"(?<!anything\s)(?<!all\s)\bbut\b|\bhowever\b|\balthough\b|\bthough\b|\band\s+(?=(?:i|i'd|i'm|we|we'd|no|not|don't|please)\b)",
    re.IGNORECASE,
)


def split_sentences(text: str) -> list[tuple[list[str], bool]]:
    """Sentences as (clauses, ends_with_question_mark)."""
    sentences: list[tuple[list[str], bool]] = []
    for sentence in _SENTENCE_RE.findall(text):
        question = bool(re.search(r"[?？]\s*$", sentence))
        body = sentence.rstrip("。！？!? ")
        parts = [p.strip() for p in _CLAUSE_SPLIT_RE.split(body)]
        parts = [p for p in parts if p]
        if parts:
            sentences.append((parts, question))
    return sentences


# --- guards -------------------------------------------------------------------------------

QUESTION_RE = re.compile(
    r"[吗嘛]|(?<![一么])么\s*$|呢\s*$|(?:对|是)吧[?？]?\s*$|对不对|(?<!现)([\u4e00-\u9fff])不\1|有没有|是否|能否|能不能|可不可以|可以吗|行不行|好不好|是不是|会不会|要不要|"
    r"多少|多久|多长时间|谁|难道|岂|(?<![了过好找约选挑荐绍])几[个套间室楼号点层居房]|(?<!没)什么|(?<!没)啥|哪|(?<!不)怎么|如何|为什么|为啥|咋|"
    r"^\s*(?:do|does|did|is|are|was|were|can|could|would|will|have|has|any|what|which|where|when|how|why|who|"
    r"should|shall|may)\b",
    re.IGNORECASE,
)
# Someone other than the customer as the subject ("我朋友喜欢…", "房东希望…"); checked on the words
# before the trigger, so "不要中介费" stays the customer's own constraint.
# A companion or the one it is for ("带女朋友去…", "给孩子报…", "陪爸妈住") is no subject: the
# customer still speaks for themselves; "带女朋友" is one companion, not a 朋友 after 女.
_COMPANION = r"(?<![带陪给帮替为])(?<![带陪给帮替为]我)(?<![带陪给帮替为]我的)(?<![带陪给帮替为]我们)"
THIRD_PARTY_RE = re.compile(
    rf"{_COMPANION}(?:(?<![女男])朋友|老婆|老公|妻子|丈夫|爱人|媳妇|太太|我妈|妈妈|母亲|我爸|爸爸|父亲|父母|爸妈|家人|家里人|同事|室友|"
    r"女朋友|男朋友|女友|男友|对象|孩子|儿子|女儿|闺蜜|哥哥|姐姐|弟弟|妹妹|邻居|亲戚|公婆|岳父|岳母|老人|小孩|客户)|"
    r"房东|中介|老板|领导|别人|有人|"
    r"人家|大家|他们|她们|(?<!其)(?<![带陪给帮替为])他|(?<![带陪给帮替为])她|"
    r"(?<!老实)(?<!坦白)(?<!坦白地)(?<!来)(?<!刚)(?<!刚才)说(?!实话|真的)|觉得|认为|听|"
    r"\bmy\s+(?:wife|husband|partner|friend|friends|mom|mother|dad|father|parents|boss|colleague|colleagues|"
    r"roommate|roommates|girlfriend|boyfriend|son|daughter|kids|children|family|sister|brother)\b|"
    r"\b(?:he|she|they|his|her|their|someone|somebody|people|others|landlord|agent|said|says|thinks)\b",
    re.IGNORECASE,
)
# Reported speech or hearsay: the rest of the sentence is someone else's words.
REPORTING_RE = re.compile(
    # "现在不想要了" ends like "我老婆想要，" but refuses instead of reporting.
    r"(?<![不没无么啥有来])(?:说|讲|觉得|认为|表示|建议|要求|希望|想要|交代|提到)[了过]?\s*$|听说|据说|听人说|听别人说|网上说|"
    r"\b(?:said|says|told\s+me|thinks|wants|heard|apparently)\b",
    re.IGNORECASE,
)
# The customer's own saying ("我跟你说，…", "forget what I said earlier, …") introduces their own words.
FIRST_PERSON_SAYING_RE = re.compile(
    r"^(?:那|嗯|好|哦|就是|其实|这样|还有)*(?:我|我们)(?:再|先|就|刚才|刚刚|之前|前面|跟你们?|和你们?|给你们?|想)*"
    r"(?:说|讲|补充|强调)(?:一下|一句|下)?[了过]{0,2}$|"
    r"^(?:(?:please|so|ok|okay|sorry|actually|just)\s+)*(?:forget|ignore|disregard|scratch|never\s+mind)\b"
    r"[^.]*\b(?:i|we)(?:'ve|\s+have|\s+just)?\s+(?:said|told\s+you|wrote|mentioned)\b[\w\s]*$|"
    r"^(?:like|as)\s+(?:i|we)(?:'ve|\s+have)?\s+(?:said|mentioned|told\s+you)(?:\s+(?:before|earlier))?$",
    re.IGNORECASE,
)
CONDITIONAL_RE = re.compile(
    # "评分要是5分" is "must be 5", not "if". "只要有电梯，我就要高层" is a condition, "只要有电梯就行" a must.
    r"如果|假如|假设|万一|倘若|(?<![主就还要])要是(?![\d一二三四五六七八九十两])|的话|若是|除非|只有.{0,12}才|"
    r"一旦|假使|如若|前提是|条件是|只要[^，,。]{1,12}?(?<!不)就(?!行|好|可以|够|ok|OK)|"
    r"\bif\b|\bunless\b|\bsuppose\b|\bin\s+case\b|\bwhat\s+if\b|\bprovided\s+(?:that\b)?|\bas\s+long\s+as\b|"
    r"\bon\s+condition\b",
    re.IGNORECASE,
)
# "价格的话，两千八以内最好", "面积呢，九十平左右": a topic named on its own is no condition; it is
# what the next clause is about.
TOPIC_CLAUSE_RE = re.compile(
    r"^(?:那|嗯|还有|另外|至于|关于)?(?P<topic>预算|价格|价位|租金|房租|月租|总价|首付|月供|面积|大小|户型|区域|位置|地段|片区|"
    r"楼层|朝向|装修|交通|通勤|入住时间|入住|时间)(?:方面|这块|这一块|这方面|上面|上)?"
    # "预算不高，两千出头", "预算有限，三千以内": a remark on the topic introduces it too
    r"(?:的话|呢|嘛|吧|啊|(?:不太|不算|比较|很|也)?(?:不高|不多|有限|一般|紧张|紧|少|低)[的了啊呀吧]*)$"
)
# A condition that governs another clause, never itself: "不要顶楼，除非有电梯", "no pets unless…".
POSTPOSED_CONDITION_RE = re.compile(
    r"除非|(?:^|，|,)(?:前提|前提条件|条件)是|\bunless\b|\bprovided\b|\bas\s+long\s+as\b|\bonly\s+if\b|\bon\s+condition\b",
    re.IGNORECASE,
)
# What a condition clause says once its condition is met: "如果有地铁的话更好", "要是便宜就要一楼".
_CONSEQUENT_ZH_RE = re.compile(
    r"(?:如果|假如|假设|万一|倘若|要是|若是|的话|一旦|假使|如若|只要).*?(?:就|才|更好|最好|也行|也可以|那|便(?!宜)|则)"
)
# A clause that opens a condition the next clause completes, with no 如果 (issue 35 review): "等我老婆
# 同意，我就要三居", "等明年涨工资了，预算可以到一万", "只要有电梯，我就要高层" (not "只要整租，不要合租":
# a must-have, whose next clause says no 就 of its own).
_WAITING_FOR_RE = re.compile(
    r"^(?:那|那就|就)?(?:等到?|待到?)(?!一下|一会|会儿|会|等|下|你|您|通知|消息|回复|电话)[\u4e00-\u9fff]{2,}"
)
_AS_LONG_AS_RE = re.compile(r"^(?:那|而且)?(?:我)?只要(?!不|别)[\u4e00-\u9fff]{1,12}$")
_COMPLETES_RE = re.compile(r"^(?:我们?|那)?(?:就|才|便(?!宜)|也就)|也(?:行|可以|能接受|ok|OK)|都(?:行|可以)")


# "一楼也可以，只要有电梯", "临街也行，只要不吵": 只要 after an acceptance is the acceptance's condition
# (after a want, "我要三居室，只要有电梯就行", it is one more must-have).
_AS_LONG_AS_AFTER_RE = re.compile(r"^(?:但|但是|不过)?只要")


def conditions_acceptance_before(clause: str) -> bool:
    """The clause, following an acceptance, is the condition it is accepted under."""
    return _AS_LONG_AS_AFTER_RE.match(clause) is not None


def opens_condition(clause: str, following: str) -> bool:
    """The clause is a condition (without 如果) that the following clause of its sentence completes."""
    if _WAITING_FOR_RE.match(clause):
        return True
    return _AS_LONG_AS_RE.match(clause) is not None and _COMPLETES_RE.search(following) is not None


def has_own_consequent(clause: str, has_trigger: bool) -> bool:
    """Whether a conditional clause carries its own consequent (then it voids only itself), or is a
    bare condition ("如果预算够的话", "if possible", "除非…") that governs a neighbouring clause."""
    if POSTPOSED_CONDITION_RE.search(clause):
        return False
    return has_trigger or _CONSEQUENT_ZH_RE.search(clause) is not None


STRONG_HEDGE_RE = re.compile(
    r"不是非要|不是一定要|不是必须|不必|没必要|未必|不非得|不一定非要|还没想好|没想好|还没定|没定|不确定|不一定|看情况|再说吧|说不准|不好说|随便|都行|都可以|无所谓|还在考虑|再考虑|"
    r"拿不准|说不好|还没决定|没决定|拿不定主意|定不下来|"
    r"\bnot\s+sure\b|\bundecided\b|\bhaven't\s+decided\b|\bdepends\b|\bwhatever\b|\bdon't\s+mind\b|\bno\s+preference\b",
    re.IGNORECASE,
)
WEAK_HEDGE_RE = re.compile(
    r"也许|(?<![尽不])可能|或许|估计|好像|似乎|应该|大概吧|说不定|暂时|先看看|\bmaybe\b|\bperhaps\b|\bprobably\b|"
    r"\bmight\b|\bpossibly\b|\bi\s+guess\b|\bi\s+think\b|\bkind\s+of\b|\bsort\s+of\b",
    re.IGNORECASE,
)
DOUBLE_NEGATION_RE = re.compile(
    r"不是不|并非不|并不是不|没有不|也不是不|不能不|不会不|\bnot\s+that\s+i\s+(?:don't|do\s+not)\b|"
    r"\bit's\s+not\s+that\s+i\s+(?:don't|do\s+not)\b|\bdon't\s+mind\b",
    re.IGNORECASE,
)
# A negated aversion ("不介意一楼", "并不排斥老小区", "I don't hate the top floor") is acceptance, not a
# preference: writing one would overstate what was said, so these clauses yield nothing.
NEGATED_AVERSION_RE = re.compile(
    r"(?:不|没|并不|也不|从不|倒不)(?:是|太|是很|怎么|大|那么|算)?(?:讨厌|反感|嫌弃|拒绝|排斥|介意|在意|在乎|害怕|怕|抗拒|"
    r"排除|忌讳|讲究|挑)|没(?:什么|啥)?(?:意见|要求|讲究)|"
    r"\b(?:don't|do\s+not|doesn't|never|wouldn't|would\s+not)\s+(?:really\s+)?(?:hate|dislike|mind|object\s+to|rule\s+out)\b|"
    r"\bnot\s+(?:against|opposed\s+to|bothered\s+by|fussy|picky)\b|\bwouldn't\s+say\s+no\b|\bopen\s+to\b",
    re.IGNORECASE,
)

# A joke or irony ("开玩笑的", "…才怪", "just kidding") says the opposite of the words: the whole
# sentence yields nothing, and a sentence that is only the joke marker retracts the one before.
JOKE_RE = re.compile(
    r"(?<![不没别])(?<!不是)(?<!没有)开(?:个|了个|了)?玩笑|逗你(?:的|玩)|说着玩|骗你的|才怪|"
    r"(?<!not\s)(?<!no\s)\bkidding\b|\bjk\b|(?<!not\s)\bjoking\b|\byeah\s+right\b|\bas\s+if\b",
    re.IGNORECASE,
)
# "不是我喜欢高层（是我老婆）", "it's not that I like…", "I wouldn't say I like…": the customer
# disowns the statement that follows.
DISOWNED_RE = re.compile(
    r"^(?:又|并|也|倒)?不是(?:我|我们|咱们)(?!说|讲)|"
    r"\b(?:it's|it\s+is|its)\s+not\s+(?:that|me|us)\b|^not\s+that\b|"
    r"\b(?:wouldn't|would\s+not|won't|can't|cannot|couldn't)\s+(?:really\s+)?say\b|\bnot\s+(?:saying|to\s+say)\b",
    re.IGNORECASE,
)
# A past state ("我以前喜欢高层", "I used to want…") is no longer what the customer wants: it yields
# nothing itself, but its object carries to a following "现在不要了" / "not anymore".
PAST_RE = re.compile(
    r"(?:^|我|我们|咱们|俺)(?:以前|之前|原来|原先|过去|曾经|本来(?!就)|原本|当初|早先|一开始|起初|刚开始)"
    r"(?!说|讲|提|跟|和|给|问|告诉)|"
    r"\b(?:used\s+to|previously|originally|initially|at\s+first)\b",
    re.IGNORECASE,
)
# "not anymore", "now I don't": a reversal with no object of its own.
EN_REVERSAL_RE = re.compile(
    r"^(?:(?:and|so|but)\s+)?(?:(?:now|these\s+days)\s+)?(?:not\s+any\s*more|not\s+now|no\s+longer|"
    r"(?:i|we)\s+(?:don't|do\s+not|no\s+longer)(?:\s+any\s*more)?)$",
    re.IGNORECASE,
)
# "我说了不要顶楼", "I said no pets": the customer repeating themselves, not reporting someone else.
FIRST_PERSON_LEAD_RE = re.compile(
    r"^(?:我|我们)(?:刚才|刚刚|之前|已经|前面|早就|都)*(?:说过|说了|讲过|讲了|说)了?\s*|"
    r"^(?:(?:as|like)\s+)?(?:i|we)(?:'ve|\s+have|\s+already|\s+just)?\s+(?:said|told\s+you|mentioned)"
    r"(?:\s+(?:before|earlier|already))?\s*",
    re.IGNORECASE,
)
# "not anymore", "no longer": what the clause names (a name, a city) is over.
NO_LONGER_EN = re.compile(r"\bany\s*more\b|\bno\s+longer\b", re.IGNORECASE)


# --- negated statements (for grounding) ------------------------------------------------------

# What a negation rules out runs from the cue to the next affirmative verb ("不要两居室要三居室"),
# or, when nothing follows the cue, back to the previous one ("两居室不考虑", "两居室就算了").
_NEGATION_CUE_RE = re.compile(
    r"不是|并非|不要|不想要?|不考虑|不接受|不能接受|接受不了|受不了|不喜欢|不需要|不用|不在|不去|不住|不租|不买|不找|不选|不看|"
    r"不打算|不准备|不愿意?|不希望|(?<![特区分性识告级类个离差辨])别(?![墅的人处])|没有|没(?!问题|关系|事)|拒绝|排除|避开|避免|"
    r"讨厌|反感|嫌弃|算了|(?<![a-z])(?:not|no|never|don't|doesn't|won't|can't|cannot|without|except|avoid|exclude|"
    r"hate|dislike)(?![a-z])|n't\b|\bno\s+longer\b|\brather\s+not\b",
    re.IGNORECASE,
)
# "不超过4500", "别超过5000", "no more than 5000": a cap states the amount, it does not refuse it.
_CAP_AFTER_CUE_RE = re.compile(  # used with .match(clause, position): anchored there
    r"\s*(?:要|能|可以|得|会)?\s*(?:超过|超出|高于|多于|大于|过|到|低于|小于|少于)|\s*(?:more|higher|over|above)\s+than\b|\s*over\b",
    re.IGNORECASE,
)
_AFFIRMATIVE_CUE_RE = re.compile(
    r"(?<![不没别])(?:而是|还是|倒是|就是|是|只要|想要|要|喜欢|希望|需要|最好|必须|改成|换成|倾向)|"
    r"(?<![给帮替让叫为])(?:我|我们|咱们)(?:在|住|找|租|买|选|考虑)|"  # "别给我找…" stays negated
    r"\b(?:but|instead|i\s+(?:want|prefer|need|like)|we\s+(?:want|prefer|need|like)|rather)\b",
    re.IGNORECASE,
)
_EMPTY_SCOPE_RE = re.compile(r"^[\s了的吧啊呀哦哈啦嘛呢就也都还吧。！!.]*$")


def affirmed_text(clause: str) -> str:
    """The clause without what it negates: "我不要两居室" → "我", "不是两居室是三居室" → "是三居室".

    Double negation ("不是不要两居室") affirms, so the clause is kept whole.
    """
    if DOUBLE_NEGATION_RE.search(clause):
        return clause
    kept: list[str] = []
    position = 0
    while True:
        cue = _NEGATION_CUE_RE.search(clause, position)
        if cue is None:
            kept.append(clause[position:])
            break
        if _CAP_AFTER_CUE_RE.match(clause, cue.end()):
            kept.append(clause[position : cue.end()])
            position = cue.end()
            continue
        # A cue's own verb ("不要在…", "不想要…") is part of the negation, not a new statement.
        start = cue.end()
        following = _AFFIRMATIVE_CUE_RE.search(clause, start)
        while following is not None and not clause[start : following.start()].strip():
            start = following.end()
            following = _AFFIRMATIVE_CUE_RE.search(clause, start)
        end = following.start() if following else len(clause)
        if _EMPTY_SCOPE_RE.match(clause[start:end]):
            # Fronted object: the negation reaches back to the previous affirmative cue.
            before = [m.end() for m in _AFFIRMATIVE_CUE_RE.finditer(clause, position, cue.start())]
            kept.append(clause[position : before[-1]] if before else "")
        else:
            kept.append(clause[position : cue.start()])
        kept.append(" ")
        position = end
    return "".join(kept)
