"""Evidence-gated extraction (spec §3): explicit sentence patterns over the customer's own words.

Only firm first-person statements count. Questions, conditionals, reported speech ("我老婆说…"),
double negation ("不是不考虑") and strong hedges ("还没想好") produce nothing; weak hedges
("可能", "maybe") lower the confidence. Keys derive from the normalised object, so the same
statement twice maps to one key and a preference and a constraint on one object share it.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from dataclasses import dataclass

PREFERENCE = "preference"
CONSTRAINT = "constraint"
FACT = "fact"

ADDRESS_KEY = "profile:preferred_name"  # a form of address is the profile's 称呼
PROFILE_LABELS = {
    "preferred_name": "称呼",
    "city": "城市",
    "budget": "预算",
    "district": "意向区域",
    "layout": "户型",
    "move_in_date": "入住时间",
}
MAX_OBJECT_CHARS = 30
MAX_VALUE_CHARS = 50


@dataclass(frozen=True)
class Candidate:
    type: str
    key: str
    content: str
    confidence: float = 0.8
    importance: int = 3
    # For profile facts: the declared field and its value (key is `profile:<field>`).
    field: str | None = None
    value: str = ""
    supersedes_keys: tuple[str, ...] = ()
    clause: str = dataclasses.field(default="", compare=False)


# --- clause splitting ---------------------------------------------------------------------

_SENTENCE_RE = re.compile(r"[^。！？!?\n]+[。！？!?]*|[。！？!?]+")
_CLAUSE_SPLIT_RE = re.compile(
    r"[，,；;：:]|(?<!Mr)(?<!Mrs)(?<!Ms)(?<!Dr)(?:(?<!\d)\.|\.(?!\d))|(?<!不)但是|(?<!不)但(?!是)|不过|可是|然而|只是说|"
    r"(?<!anything\s)(?<!all\s)\bbut\b|\bhowever\b|\balthough\b|\bthough\b|\band\s+(?=(?:i|i'd|i'm|we|we'd|no|not|don't|please)\b)",
    re.IGNORECASE,
)


def _clauses(text: str) -> list[tuple[list[str], bool]]:
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


# --- clause filters -----------------------------------------------------------------------

_QUESTION_RE = re.compile(
    r"[吗嘛]|(?<![一么])么\s*$|呢\s*$|有没有|是否|能否|能不能|可不可以|可以吗|行不行|好不好|是不是|会不会|要不要|"
    r"多少|多久|多长时间|谁|难道|岂|几[个套间室楼号点层居房]|什么|啥|哪|(?<!不)怎么|如何|为什么|为啥|咋|"
    r"^\s*(?:do|does|did|is|are|was|were|can|could|would|will|have|has|any|what|which|where|when|how|why|who|"
    r"should|shall|may)\b",
    re.IGNORECASE,
)
# Someone other than the customer as the subject ("我朋友喜欢…", "房东希望…"); checked on the words
# before the trigger, so "不要中介费" stays the customer's own constraint.
_THIRD_PARTY_RE = re.compile(
    r"朋友|老婆|老公|妻子|丈夫|爱人|媳妇|太太|我妈|妈妈|母亲|我爸|爸爸|父亲|父母|爸妈|家人|家里人|同事|室友|"
    r"女朋友|男朋友|女友|男友|对象|孩子|儿子|女儿|闺蜜|哥哥|姐姐|弟弟|妹妹|邻居|房东|中介|老板|领导|别人|有人|"
    r"人家|大家|他们|她们|(?<!其)他|她|亲戚|公婆|岳父|岳母|老人|(?<!老实)(?<!坦白)(?<!坦白地)说(?!实话|真的)|觉得|认为|听|"
    r"\bmy\s+(?:wife|husband|partner|friend|friends|mom|mother|dad|father|parents|boss|colleague|colleagues|"
    r"roommate|roommates|girlfriend|boyfriend|son|daughter|kids|children|family|sister|brother)\b|"
    r"\b(?:he|she|they|his|her|their|someone|somebody|people|others|landlord|agent|said|says|thinks)\b",
    re.IGNORECASE,
)
# Reported speech or hearsay: the rest of the sentence is someone else's words.
_REPORTING_RE = re.compile(
    # "现在不想要了" ends like "我老婆想要，" but refuses instead of reporting.
    r"(?<!不)(?:说|讲|觉得|认为|表示|建议|要求|希望|想要|交代|提到)[了过]?\s*$|听说|据说|听人说|听别人说|网上说|"
    r"\b(?:said|says|told\s+me|thinks|wants|heard|apparently)\b",
    re.IGNORECASE,
)
# The customer's own saying ("我跟你说，…", "forget what I said earlier, …") introduces their own words.
_FIRST_PERSON_SAYING_RE = re.compile(
    r"^(?:那|嗯|好|哦|就是|其实|这样|还有)*(?:我|我们)(?:再|先|就|刚才|刚刚|之前|前面|跟你们?|和你们?|给你们?|想)*"
    r"(?:说|讲|补充|强调)(?:一下|一句|下)?[了过]{0,2}$|"
    r"^(?:(?:please|so|ok|okay|sorry|actually|just)\s+)*(?:forget|ignore|disregard|scratch|never\s+mind)\b"
    r"[^.]*\b(?:i|we)(?:'ve|\s+have|\s+just)?\s+(?:said|told\s+you|wrote|mentioned)\b[\w\s]*$|"
    r"^(?:like|as)\s+(?:i|we)(?:'ve|\s+have)?\s+(?:said|mentioned|told\s+you)(?:\s+(?:before|earlier))?$",
    re.IGNORECASE,
)
_CONDITIONAL_RE = re.compile(
    r"如果|假如|假设|万一|倘若|(?<![主就还要])要是|的话|若是|\bif\b|\bunless\b|\bsuppose\b|\bin\s+case\b|\bwhat\s+if\b",
    re.IGNORECASE,
)
_STRONG_HEDGE_RE = re.compile(
    r"不是非要|不是一定要|不是必须|不必|没必要|未必|不非得|不一定非要|还没想好|没想好|还没定|没定|不确定|不一定|看情况|再说吧|说不准|不好说|随便|都行|都可以|无所谓|还在考虑|再考虑|"
    r"\bnot\s+sure\b|\bundecided\b|\bhaven't\s+decided\b|\bdepends\b|\bwhatever\b|\bdon't\s+mind\b|\bno\s+preference\b",
    re.IGNORECASE,
)
_WEAK_HEDGE_RE = re.compile(
    r"也许|(?<![尽不])可能|或许|估计|好像|似乎|应该|大概吧|说不定|暂时|先看看|\bmaybe\b|\bperhaps\b|\bprobably\b|"
    r"\bmight\b|\bpossibly\b|\bi\s+guess\b|\bi\s+think\b|\bkind\s+of\b|\bsort\s+of\b",
    re.IGNORECASE,
)
_DOUBLE_NEGATION_RE = re.compile(
    r"不是不|并非不|并不是不|没有不|也不是不|不能不|不会不|\bnot\s+that\s+i\s+(?:don't|do\s+not)\b|"
    r"\bit's\s+not\s+that\s+i\s+(?:don't|do\s+not)\b|\bdon't\s+mind\b",
    re.IGNORECASE,
)
# A negated aversion ("不介意一楼", "并不排斥老小区", "I don't hate the top floor") is acceptance, not a
# preference: writing one would overstate what was said, so these clauses yield nothing.
_NEGATED_AVERSION_RE = re.compile(
    r"(?:不|没|并不|也不|从不|倒不)(?:是|太|是很|怎么|大|那么|算)?(?:讨厌|反感|嫌弃|拒绝|排斥|介意|在意|在乎|害怕|怕|抗拒|"
    r"排除|忌讳|讲究|挑)|没(?:什么|啥)?(?:意见|要求|讲究)|"
    r"\b(?:don't|do\s+not|doesn't|never|wouldn't|would\s+not)\s+(?:really\s+)?(?:hate|dislike|mind|object\s+to|rule\s+out)\b|"
    r"\bnot\s+(?:against|opposed\s+to|bothered\s+by|fussy|picky)\b|\bwouldn't\s+say\s+no\b|\bopen\s+to\b",
    re.IGNORECASE,
)

# A joke or irony ("开玩笑的", "…才怪", "just kidding") says the opposite of the words: the whole
# sentence yields nothing, and a sentence that is only the joke marker retracts the one before.
_JOKE_RE = re.compile(
    r"(?<![不没别])(?<!不是)(?<!没有)开(?:个|了个|了)?玩笑|逗你(?:的|玩)|说着玩|骗你的|才怪|"
    r"(?<!not\s)(?<!no\s)\bkidding\b|\bjk\b|(?<!not\s)\bjoking\b|\byeah\s+right\b|\bas\s+if\b",
    re.IGNORECASE,
)
# "不是我喜欢高层（是我老婆）", "it's not that I like…", "I wouldn't say I like…": the customer
# disowns the statement that follows.
_DISOWNED_RE = re.compile(
    r"^(?:又|并|也|倒)?不是(?:我|我们|咱们)(?!说|讲)|"
    r"\b(?:it's|it\s+is|its)\s+not\s+(?:that|me|us)\b|^not\s+that\b|"
    r"\b(?:wouldn't|would\s+not|won't|can't|cannot|couldn't)\s+(?:really\s+)?say\b|\bnot\s+(?:saying|to\s+say)\b",
    re.IGNORECASE,
)
# A past state ("我以前喜欢高层", "I used to want…") is no longer what the customer wants: it yields
# nothing itself, but its object carries to a following "现在不要了" / "not anymore".
_PAST_RE = re.compile(
    r"(?:^|我|我们|咱们|俺)(?:以前|之前|原来|原先|过去|曾经|本来(?!就)|原本|当初|早先|一开始|起初|刚开始)"
    r"(?!说|讲|提|跟|和|给|问|告诉)|"
    r"\b(?:used\s+to|previously|originally|initially|at\s+first)\b",
    re.IGNORECASE,
)
# "not anymore", "now I don't": a reversal with no object of its own.
_EN_REVERSAL_RE = re.compile(
    r"^(?:(?:and|so|but)\s+)?(?:(?:now|these\s+days)\s+)?(?:not\s+any\s*more|not\s+now|no\s+longer|"
    r"(?:i|we)\s+(?:don't|do\s+not|no\s+longer)(?:\s+any\s*more)?)$",
    re.IGNORECASE,
)
_ADDRESS_PHRASE_RE = re.compile(r"叫我|称呼我|喊我|\bcall\s+me\b|\baddress\s+me\b", re.IGNORECASE)

# --- triggers -----------------------------------------------------------------------------

# (regex, type, confidence, importance). Longer phrases first; constraints before preferences so
# "不喜欢" never reads as "喜欢".
_ZH_TRIGGERS: tuple[tuple[str, str, float, int], ...] = (
    # "不再喜欢高层" withdraws a preference: a constraint, held less firmly than "不要".
    (
        r"不再(?:喜欢|想要|要|需要|考虑|想住|想租|想买|希望|中意|倾向于?|偏好|接受)",
        CONSTRAINT,
        0.7,
        3,
    ),
    # A softened negated want ("不是很想要", "没那么喜欢") is still a constraint, held less firmly.
    (
        r"(?:不是很|不是太|不是特别|不是那么|并不是很|也不是很|不太|不怎么|不大|不算太|不算很|没那么|没有那么|没太|没有很|"
        r"没特别|没有特别)(?:想要|想住|想租|想买|喜欢|愿意|希望|需要|中意|倾向于?|能接受|接受得了|接受)|"
        r"(?<!不)(?:有点|有些|有一点)(?:介意|怕|嫌|不喜欢|抗拒|排斥)|"
        r"不用(?=配|带(?:家具|家电|装修|车位|阳台|电梯|花园|院子|露台|地下室|储藏室))",
        CONSTRAINT,
        0.55,
        2,
    ),
    # "最好不要顶楼" is a clear wish, but softer than "不要顶楼".
    (r"尽量别|最好别|最好不要|尽量不要|尽量避免|最好避开|尽量避开", CONSTRAINT, 0.7, 3),
    (r"绝对不要|坚决不要|千万不要|千万别|打死也不|死活不要|绝不", CONSTRAINT, 0.95, 5),
    (
        r"不考虑|不予考虑|不能接受|不可以接受|接受不了|无法接受|没法接受|没办法接受|不接受|受不了|排除|别推荐|不要推荐|别给我推荐|不要给我推荐",
        CONSTRAINT,
        0.9,
        4,
    ),
    (
        r"别给我看|不想看|不想要|不希望(?:是|有|在)?|不愿意(?:住|租|买|要)?|不想住|不想租|不想买|不要有|不想有|不能有|不能是|不能在|不要在|不要是|别是|不能要",
        CONSTRAINT,
        0.9,
        4,
    ),
    (r"不喜欢|讨厌|反感|嫌弃|拒绝|避开|避免|最怕|很怕|害怕|(?:比较|很|非常|特别|挺)介意", CONSTRAINT, 0.85, 4),
    (r"(?<![要要])不要(?!紧|钱|客气|急|着急)", CONSTRAINT, 0.85, 4),
    (r"不需要|不用考虑|(?:^|我|我们|也|就|都)不(?:住|租|买|看|选|找)", CONSTRAINT, 0.75, 3),
    (r"必须是|必须有|必须要|必须|一定要|一定得|务必|非要", PREFERENCE, 0.9, 4),
    (r"我更喜欢|更喜欢|比较喜欢|最喜欢|特别喜欢|很喜欢|挺喜欢|喜欢", PREFERENCE, 0.85, 3),
    (
        r"更想要?|比较想要?|更倾向于|更倾向|倾向于|倾向|偏好|偏爱|首选|优先考虑|中意|钟意|看中|看上|心仪",
        PREFERENCE,
        0.8,
        3,
    ),
    (r"最好是|最好能|最好有|最好(?!的)", PREFERENCE, 0.8, 3),
    (r"希望是|希望能|希望有|希望", PREFERENCE, 0.8, 3),
    (
        r"想要|想找|想租|想买|想住|要找|帮我找|给我找|帮忙找|打算租|打算买|准备租|准备买|需要|要求|(?:^|我|我们|咱们)要(?!是|不|求)",
        PREFERENCE,
        0.8,
        3,
    ),
)
_EN_TRIGGERS: tuple[tuple[str, str, float, int], ...] = (
    # Softened dislikes: still a constraint, held less firmly.
    (
        r"(?:don't|do\s+not)\s+(?:really|particularly|especially|exactly)\s+(?:want|like|need|love)|"
        r"not\s+(?:really\s+|much\s+of\s+|too\s+|that\s+|so\s+)?(?:a\s+)?(?:big\s+|huge\s+|great\s+)?fan\s+of|"
        r"not\s+(?:too\s+|that\s+|so\s+|very\s+|really\s+)?(?:keen\s+on|crazy\s+about|into)|"
        r"(?:i|we)(?:(?:\s+would|'d)\s+(?:rather|prefer)|\s+prefer)\s+not(?:\s+to)?(?=\s+(?:have|live|rent|buy|stay|be|get|"
        r"take|share|deal\s+with|a|an|the|any|too|on|in|near|with|facing)\b)|"
        r"no\s+longer\s+(?:want|need|like|love|prefer|consider)|(?:i'm|i\s+am|we're|we\s+are)\s+not\s+looking\s+for",
        CONSTRAINT,
        0.6,
        3,
    ),
    (r"absolutely\s+no|definitely\s+no|never\s+(?:want|accept)|under\s+no\s+circumstances", CONSTRAINT, 0.95, 5),
    (
        r"(?:don't|do\s+not|won't|will\s+not|wouldn't|would\s+not)\s+(?:want|consider|accept|take|like|need)|"
        r"(?:can't|cannot|couldn't|could\s+not)\s+(?:accept|stand|bear|do|live\s+with)|not\s+interested\s+in|no\s+interest\s+in|"
        r"(?:don't|do\s+not)\s+(?:show|recommend|send)\s+me|rule\s+out|exclude|avoid|dislike|hate|"
        r"anything\s+but|(?:i|we)\s+(?:want|need|would\s+like|'d\s+like)\s+neither|^neither",
        CONSTRAINT,
        0.85,
        4,
    ),
    (
        r"^(?:please\s+)?no\s+(?!problem|worries|thanks|thank|idea|way|need|rush|hurry|doubt|matter|one|more\s+questions)",
        CONSTRAINT,
        0.8,
        4,
    ),
    (r"must\s+have|must\s+be|has\s+to\s+be|have\s+to\s+have|need\s+to\s+have|it\s+must", PREFERENCE, 0.9, 4),
    (
        r"(?:i|we)(?:\s+would|'d)\s+(?:(?:much|really|still)\s+)?(?:prefer|like|love)|"
        # "I'd rather talk tomorrow" is about the chat, not the flat: "rather" counts only before a home.
        r"(?:i|we)(?:\s+would|'d)\s+(?:much\s+)?rather(?=\s+(?:have|live|rent|buy|stay|be|get|take|a|an|the|go\s+with)\b)|"
        r"(?:i|we)\s+(?:(?:now|really|actually|still|also|definitely|strongly|do|only|just|mostly)\s+){0,2}"
        r"(?:prefer|love|like|want|need)|(?:i'm|i\s+am|we're|we\s+are)\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of|"
        r"(?:i'm|i\s+am|we're|we\s+are)\s+(?:looking\s+for|interested\s+in|after)|my\s+preference\s+is|"
        r"^(?:ideally|preferably)|^prefer|^looking\s+for",
        PREFERENCE,
        0.8,
        3,
    ),
)
_COMPILED_ZH = tuple((re.compile(p), t, c, i) for p, t, c, i in _ZH_TRIGGERS)
_COMPILED_EN = tuple((re.compile(p, re.IGNORECASE), t, c, i) for p, t, c, i in _EN_TRIGGERS)

_ZH_SUBJECT_FILLERS = re.compile(
    r"^(?:嗯+|哦+|啊+|呃+|那个|其实|反正|总之|另外|还有|然后|而且|并且|所以|我个人|个人|本人|我们|咱们|我这边|我|俺|自己|"
    r"也|都|还|就|真的|实在|确实|比较|更|最|主要|一般|肯定|绝对|真心|非常|特别|是|还是|这边|的话|总体上|整体上|"
    r"说实话|老实说|坦白说|目前|现在|暂时|这次|以前|之前|原来|原先|过去|曾经|本来|原本|当初|早先|一开始|起初|刚开始|"
    r"后来|如今|这会儿)+"
)
_ZH_TRAILING_FILLERS = re.compile(r"(?:我们|我|也|都|还|就|真的|是|的话|这种|那种|这类|那类|的)+$")
_DEICTIC = re.compile(
    r"^(?:这个|那个|这套|那套|这间|那间|这种|那种|它|这|那|it|this|that|them|these|those|this one|that one|one)$"
)

_OBJ_LEAD = re.compile(
    r"^(?:(?:至少|起码|最少|住在|住|租在|租|买在|买|找|选|要|是|在|个|一个|一套|一间|一处|那种|这种|有|能|可以|用|带个|到|给我|给|推荐|看|"
    r"考虑|接受|选择)\s*)+"
)
_OBJ_TRAIL = re.compile(
    r"(?:的房子|的房源|的房间|的房|的小区|的楼盘|的公寓|的|一点儿|一点|一些|点儿|点|些|啊|呀|吧|了|哦|呢|哈|嘛|就行|就好|"
    r"就可以|即可|为主|优先|最好|比较好|更好|好了|的话|啦|咯|谢谢|哈哈|为宜|为好|吧谢谢|之类|等等|这种|那种)+$"
)
_EN_OBJ_LEAD = re.compile(
    r"^(?:(?:to\s+)?(?:live|living|rent|renting|buy|buying|stay|staying|be|being|have|having|get|see|find|consider|"
    r"take|accept)(?:\s+(?:in|on|at))?\s+|at\s+least\s+|at\s+most\s+|no\s+(?:more|less|fewer)\s+than\s+|"
    r"(?:a|an|the|some|any|more|something|somewhere|anything|one|ones|place|places|apartment|apartments|flat|flats|"
    r"home|house|unit|units|property|properties|that\s+is|that's|which\s+is|with|for|and|or|nor)\s+)+",
    re.IGNORECASE,
)
_EN_OBJ_TRAIL = re.compile(
    r"(?:\s+(?:please|thanks|thank\s+you|if\s+possible|ideally|too|as\s+well|apartments?|flats?|units?|places?|"
    r"ones?|though|really|at\s+all|for\s+sure))+$",
    re.IGNORECASE,
)
_OBJ_SPLIT_RE = re.compile(r"、|和|或者|或是|或|及|以及|还有|跟|\s+and\s+|\s+n?or\s+|/", re.IGNORECASE)
_CJK_RE = re.compile(r"[\u4e00-\u9fff]")
_EN_STOP_OBJECTS = frozenset(
    {"to", "it", "a", "the", "some", "that", "this", "more", "one", "something", "anything", "them", "those", "these",
     "too", "that one", "this one", "to do", "to know", "to see", "to ask", "to check", "help", "you", "know",
     "apartment", "apartments", "flat", "flats", "place", "home", "house", "unit", "room", "property",
     "at least", "at most", "least", "minimum", "maximum"}
)  # fmt: skip


def normalise_text(text: str) -> str:
    return unicodedata.normalize("NFKC", text or "").replace("\u2019", "'").strip()


def object_key(obj: str) -> str:
    """The stable part of a key: the same object written twice maps to the same string."""
    value = normalise_text(obj).lower()
    if _CJK_RE.search(value):
        value = re.sub(r"\s+", "", value)
    value = re.sub(r"\b(?:a|an|the)\b", " ", value)
    value = re.sub(r"[^\w\u4e00-\u9fff+-]+", " ", value)
    return " ".join(value.split())[:MAX_OBJECT_CHARS]


def _clean_zh_object(obj: str) -> str:
    obj = obj.strip(" \"'“”‘’「」()（）")
    for _ in range(3):
        before = obj
        obj = _OBJ_LEAD.sub("", obj)
        obj = _OBJ_TRAIL.sub("", obj)
        obj = obj.strip(" \"'“”‘’「」()（）")
        if obj == before:
            break
    return obj


def _clean_en_object(obj: str) -> str:
    obj = obj.strip(" \"'“”‘’()")
    for _ in range(3):
        before = obj
        obj = _EN_OBJ_LEAD.sub("", obj)
        obj = _EN_OBJ_TRAIL.sub("", obj).strip(" \"'“”‘’()")
        if obj == before:
            break
    return obj


def _split_objects(obj: str) -> list[str]:
    return [part for part in (p.strip() for p in _OBJ_SPLIT_RE.split(obj)) if part]


# --- profile facts ------------------------------------------------------------------------

_NUM = r"\d+(?:\.\d+)?"
_BUDGET_ZH_RE = re.compile(
    r"(?:预算|月租预算|租金预算|房租预算|总预算|价位|月租|租金|房租|budget)\s*(?:大概|大约|差不多|约|在|是|为|控制在|能到|"
    r"最多|最高|不超过|不要超过|别超过|顶多|可以|能|就|也就|只有|有|改成|改为|调到|调整到|提到|提高到|加到|降到|涨到|变成|"
    r"增加到|放宽到|现在是|现在|了)*\s*[:：]?\s*"
    rf"(?P<low>{_NUM})\s*(?P<unit1>万|千|k|K|w|W)?\s*(?:(?:-|~|～|到|至)\s*(?P<high>{_NUM})\s*(?P<unit2>万|千|k|K|w|W)?)?"
    r"\s*(?:元|块钱|块|rmb|RMB)?\s*(?:/月|每月|一个月)?\s*(?P<qual>左右|以内|以下|之内|上下|出头|封顶|内)?"
)
_BUDGET_CAP_RE = re.compile(r"最多|最高|不超过|不要超过|别超过|顶多|封顶")
_BUDGET_EN_RE = re.compile(
    r"\bbudget\b\s*(?:is|of|:|=|around|about|roughly|approximately|up\s+to|max(?:imum)?|under|below|at\s+most|is\s+around|"
    r"is\s+about|is\s+up\s+to|is\s+under)*\s*(?:\$|¥|rmb|usd|cny)?\s*(?P<amount>\d[\d,]*(?:\.\d+)?)\s*(?P<unit>k|thousand|w)?",
    re.IGNORECASE,
)
_LAYOUT_ZH_RE = re.compile(
    r"(?P<rooms>[一二两三四五六1-6])\s*(?:室|居室|居|房(?!东|租|子|源|间|价|产|贷|本))(?:\s*(?P<halls>[一二两三1-3])\s*厅)?"
    r"(?:\s*(?P<baths>[一二两三1-3])\s*卫)?|(?P<special>单间|开间|一室户|复式|loft|LOFT|大平层)"
)
_LAYOUT_EN_RE = re.compile(
    r"\b(?P<n>\d|one|two|three|four|five)[\s-]*(?:bed(?:room)?s?|br|bd|b/r)\b|\b(?P<studio>studio)\b", re.IGNORECASE
)
_CN_DIGITS = {"1": "一", "2": "两", "3": "三", "4": "四", "5": "五", "6": "六", "二": "两"}
_EN_NUMBERS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5"}

_CITIES_ZH = (
    "北京|上海|广州|深圳|杭州|南京|苏州|成都|重庆|武汉|西安|天津|长沙|郑州|青岛|厦门|宁波|无锡|合肥|济南|福州|大连|沈阳|昆明|"
    "东莞|佛山|珠海|哈尔滨|长春|石家庄|太原|南昌|南宁|贵阳|海口|三亚|兰州|银川|西宁|乌鲁木齐|呼和浩特|拉萨|温州|绍兴|嘉兴|"
    "常州|南通|徐州|扬州|烟台|惠州|中山|香港|澳门|台北|泉州|金华|台州|洛阳|保定|廊坊|昆山"
)
_CITIES_EN = (
    "beijing|shanghai|guangzhou|shenzhen|hangzhou|nanjing|suzhou|chengdu|chongqing|wuhan|xi'an|xian|tianjin|changsha|"
    "zhengzhou|qingdao|xiamen|ningbo|wuxi|hefei|jinan|fuzhou|dalian|shenyang|kunming|dongguan|foshan|zhuhai|hong\\s+kong|"
    "macau|taipei|singapore"
)
_CITY_ZH_RE = re.compile(
    rf"(?:城市(?:是|在|选|定在)?\s*[:：]?\s*|(?:在|到|去|来|回)\s*|人在|坐标|base在|定居在?|工作在)(?P<city>{_CITIES_ZH})(?:市)?"
    r"(?P<ctx>租|买|找|看|工作|上班|定居|生活|发展|住|安家|落户|读书|上学|这边|那边|的房|买房|租房)?"
)
_CITY_EN_RE = re.compile(
    rf"\b(?:moving\s+to|relocating\s+to|move\s+to|based\s+in|live\s+in|living\s+in|work\s+in|working\s+in|looking\s+in|"
    rf"(?:rent|buy|find)\s+(?:a\s+\w+\s+)?in|city\s+is)\s+(?P<city>{_CITIES_EN})\b",
    re.IGNORECASE,
)
_DISTRICT_ZH_RE = re.compile(
    r"(?:意向区域|意向片区|区域|片区|板块|地段)\s*(?:是|在|选|最好是|最好在|定在)?\s*[:：]?\s*(?P<area>[\u4e00-\u9fff]{2,8}?)"
    r"(?:这边|那边|附近|一带|周边|$)"
    r"|(?:在|住|租|买|找|看|选|考虑|去|到|是)\s*(?P<named>[\u4e00-\u9fff]{2,5}(?:新区|区|县))(?:这边|那边|附近|一带|周边)?"
)
_NOT_DISTRICT = re.compile(
    r"(?:小区|社区|学区|园区|城区|市区|郊区|景区|校区|街区|片区|厂区|生活区|商业区|老区|地区|山区|景区)$"
)

_DATE_ZH = (
    r"下下?个?月(?:\s*\d{1,2}\s*[日号]|初|中旬|中|底)?|"
    r"(?:\d{4}\s*年\s*)?\d{1,2}\s*月(?:\s*\d{1,2}\s*[日号])?(?:初|中旬|上旬|下旬|中|底)?|\d{1,2}\s*[日号]|这个?月(?:底|中)|月底|月初|下下?周[一二三四五六日天末]?|这周[一二三四五六日天末]?|周末|"
    r"年底|年前|年后|春节[前后]|国庆[前后]|过年[前后]|开学前|马上|尽快|随时|明天|后天|\d{4}-\d{1,2}-\d{1,2}"
)
_MOVE_ZH_RE = re.compile(
    rf"(?:入住|搬进来|搬进去|搬过去|搬家|起租|住进去|搬)(?:时间|日期)?\s*(?:是|在|大概|预计|想|打算|定在|就)?\s*[:：]?\s*"
    rf"(?P<date1>{_DATE_ZH})"
    rf"|(?P<date2>{_DATE_ZH})\s*(?:之前|以前|前后|左右|前)?\s*(?:就要|就想|要|想|能|可以|打算|准备|得|就|必须)?\s*"
    r"(?:入住|搬进去|搬过去|搬家|起租|住进去|搬进来|搬)"
)
_MONTHS_EN = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_DATE_EN = (
    rf"next\s+(?:month|week)|end\s+of\s+(?:the\s+|this\s+|next\s+)?(?:month|year)|asap|as\s+soon\s+as\s+possible|"
    rf"immediately|\d{{4}}-\d{{2}}-\d{{2}}|(?:early|mid|late)[\s-]+(?:{_MONTHS_EN})|"
    rf"(?:{_MONTHS_EN})(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS_EN})"
)
_MOVE_EN_RE = re.compile(
    rf"\bmov(?:e|ing)[\s-]+in\b(?:\s+date)?\s*(?:is|on|by|around|in|at|before|:)?\s*(?:the\s+)?(?P<date>{_DATE_EN})\b",
    re.IGNORECASE,
)

_NAME_BLOCK = re.compile(
    r"^(?:朋友|老婆|老公|家人|一下|过来|他|她|一声|回来|下来|起来|出来|人|同事|师傅|中介|房东|你|您|我|一起|去|来|吃饭|帮忙|"
    r"起床|看房|电话|一个|有人|爸|妈|孩子)"
)
_ADDRESS_ZH_RE = re.compile(
    r"(?:^|[^别不])(?:叫我|称呼我为?|喊我)\s*(?P<name>[\u4e00-\u9fffA-Za-z]{1,6}?)\s*(?:就行|就好|就可以|即可|好了|吧|就成|就ok|就OK)?$"
    r"|我(?:是|叫)(?P<full>[\u4e00-\u9fff]{1,3}(?:先生|女士|小姐|太太|总|老师|经理|工))$"
    r"|我叫(?P<given>[\u4e00-\u9fff]{2,4})$"
    r"|我姓(?P<surname>[\u4e00-\u9fff]{1,2})(?:先生|女士|小姐)?$"
)
_ADDRESS_EN_RE = re.compile(
    r"\b(?i:(?:please\s+|you\s+can\s+)?call\s+me|address\s+me\s+as|my\s+name\s+is|i'm|i\s+am)\s+"
    r"(?P<name>(?:(?i:mr|mrs|ms|miss|dr)\.?\s+)?[A-Z][a-zA-Z'-]{1,20}(?:\s+[A-Z][a-zA-Z'-]{1,20})?)\b"
)
_EN_NAME_BLOCK = frozenset(
    {"Back", "Later", "Tomorrow", "Looking", "Interested", "Not", "Sure", "Here", "Ready", "Fine"}
)


# "不要再叫我王总了", "don't call me Mr Wang": a refused form of address is no 称呼.
_ADDRESS_NEGATED_ZH = re.compile(r"不|别|甭|勿|莫|没")
_ADDRESS_NEGATED_EN = re.compile(r"\b(?:don't|do\s+not|never|stop|no\s+need\s+to|not)\b", re.IGNORECASE)
_NAME_TRAIL = re.compile(r"(?:了|吧|啊|呀|哈|啦|嘛|呢|哦|喔|就行|就好|就可以|即可|好了|就成|便可)+$")
# "叫我王总不太好" judges the name instead of choosing it.
_NAME_JUNK = re.compile(r"不|没|别|吗|么|好|行|对|错|怪|别扭")
# A city right after a negation ("我不在北京", "我不会搬到上海") is not where the customer is.
_NEGATED_PLACE_ZH = re.compile(r"(?:不|没|别|并非)[\u4e00-\u9fff]{0,3}$")
_NEGATED_PLACE_EN = re.compile(r"\bnot\b|n't\b|\bno\s+longer\b|\bnever\b", re.IGNORECASE)
_NO_LONGER_EN = re.compile(r"\bany\s*more\b|\bno\s+longer\b", re.IGNORECASE)
_NEGATED_LAYOUT_ZH = re.compile(r"(?:不|没)(?:是|再)?(?:要|想要|想|找|租|买|考虑)?$")


def _profile_candidate(field_name: str, value: str, *, confidence: float, clause: str) -> Candidate:
    value = " ".join(value.split())[:MAX_VALUE_CHARS]
    return Candidate(
        type=FACT,
        key=f"profile:{field_name}",
        content=f"{PROFILE_LABELS[field_name]}：{value}",
        confidence=confidence,
        importance=4,
        field=field_name,
        value=value,
        supersedes_keys=(f"constraint:{object_key(value)}",) if field_name in {"layout", "district"} else (),
        clause=clause,
    )


def _budget(clause: str) -> tuple[str, tuple[int, int]] | None:
    match = _BUDGET_ZH_RE.search(clause)
    if match:
        unit1 = (match.group("unit1") or "").lower().replace("w", "万").replace("k", "千")
        unit2 = (match.group("unit2") or "").lower().replace("w", "万").replace("k", "千")
        value = match.group("low") + (unit1 if not match.group("high") or unit1 != unit2 else "")
        if match.group("high"):
            value += "-" + match.group("high") + (unit2 or unit1)
        qual = match.group("qual") or ""
        if not qual and _BUDGET_CAP_RE.search(match.group(0)):
            qual = "以内"
        if qual in {"之内", "内", "封顶"}:
            qual = "以内"
        return value + qual, match.span()
    match = _BUDGET_EN_RE.search(clause)
    if match:
        amount = match.group("amount").replace(",", "")
        unit = (match.group("unit") or "").lower()
        if unit in {"k", "thousand"}:
            amount = str(int(float(amount) * 1000))
        elif unit == "w":
            amount += "万"
        capped = re.search(r"up\s+to|max|under|below|at\s+most", match.group(0), re.IGNORECASE)
        return amount + ("以内" if capped else ""), match.span()
    return None


def _layout(clause: str) -> tuple[str, tuple[int, int]] | None:
    match = _LAYOUT_ZH_RE.search(clause)
    if match:
        if match.group("special"):
            return match.group("special").lower() if match.group("special").isascii() else match.group(
                "special"
            ), match.span()
        rooms = _CN_DIGITS.get(match.group("rooms"), match.group("rooms"))
        if match.group("halls"):
            value = f"{rooms}室{_CN_DIGITS.get(match.group('halls'), match.group('halls'))}厅"
            if match.group("baths"):
                value += f"{_CN_DIGITS.get(match.group('baths'), match.group('baths'))}卫"
            return value.replace("两厅", "两厅").replace("两卫", "两卫"), match.span()
        return f"{rooms}居室", match.span()
    match = _LAYOUT_EN_RE.search(clause)
    if match:
        if match.group("studio"):
            return "studio", match.span()
        number = _EN_NUMBERS.get(match.group("n").lower(), match.group("n"))
        return f"{number}-bedroom", match.span()
    return None


def _profile_facts(clause: str, *, confidence: float) -> tuple[list[Candidate], list[tuple[int, int]]]:
    found: list[Candidate] = []
    spans: list[tuple[int, int]] = []
    budget = _budget(clause)
    if budget:
        found.append(_profile_candidate("budget", budget[0], confidence=confidence, clause=clause))
        spans.append(budget[1])
    layout = _layout(clause)
    if layout and _NEGATED_LAYOUT_ZH.search(clause[: layout[1][0]]):
        layout = None  # "我不是要两居室"
    if layout:
        found.append(_profile_candidate("layout", layout[0], confidence=confidence, clause=clause))
        spans.append(layout[1])
    city = _CITY_ZH_RE.search(clause) or _CITY_EN_RE.search(clause)
    if city and _CJK_RE.search(city.group("city")):
        if _NEGATED_PLACE_ZH.search(clause[: city.start("city")]):
            city = None
    elif city and (_NEGATED_PLACE_EN.search(clause[: city.start()]) or _NO_LONGER_EN.search(clause)):
        city = None
    if city:
        name = city.group("city")
        found.append(
            _profile_candidate("city", name.title() if name.isascii() else name, confidence=confidence, clause=clause)
        )
        spans.append(city.span())
    district = _DISTRICT_ZH_RE.search(clause)
    if district and _NEGATED_PLACE_ZH.search(
        clause[: district.start()] + clause[district.start() : district.start() + 1]
    ):
        district = None  # "我不在浦东新区": the lead "在" belongs to the negation window
    if district:
        area = district.group("area") or district.group("named") or ""
        if area and not _NOT_DISTRICT.search(area) and not _CITY_ZH_RE.fullmatch(area):
            found.append(_profile_candidate("district", area, confidence=confidence, clause=clause))
            spans.append(district.span())
    move = _MOVE_ZH_RE.search(clause)
    if move:
        date = re.sub(r"\s+", "", move.group("date1") or move.group("date2") or "")
        found.append(_profile_candidate("move_in_date", date, confidence=confidence, clause=clause))
        spans.append(move.span())
    else:
        move_en = _MOVE_EN_RE.search(clause)
        if move_en:
            found.append(
                _profile_candidate("move_in_date", move_en.group("date"), confidence=confidence, clause=clause)
            )
            spans.append(move_en.span())
    return found, spans


def _address(clause: str) -> Candidate | None:
    match = _ADDRESS_ZH_RE.search(clause)
    name = ""
    if match:
        if _ADDRESS_NEGATED_ZH.search(clause[: match.start() + 1]) or _ADDRESS_NEGATED_ZH.search(
            clause[match.start() : match.start() + 2]
        ):
            return None
        if match.group("name") is not None:
            name = match.group("name")
            if _NAME_BLOCK.match(name):
                return None
        elif match.group("full") is not None:
            name = match.group("full")
        elif match.group("given") is not None:
            name = match.group("given")
            if _NAME_BLOCK.match(name):
                return None
        elif match.group("surname") is not None:
            name = f"{match.group('surname')}（姓）"
    else:
        en = _ADDRESS_EN_RE.search(clause)
        if en is None:
            return None
        if _ADDRESS_NEGATED_EN.search(clause[: en.start()]) or _NO_LONGER_EN.search(clause):
            return None
        name = en.group("name")
        first = name.split()[0].rstrip(".")
        lead = en.group(0).lower()
        if first in _EN_NAME_BLOCK:
            return None
        # "I'm Wang" is a name only with a title; "I'm Looking" is not a name at all.
        if lead.startswith(("i'm", "i am")) and first.lower() not in {"mr", "mrs", "ms", "miss", "dr"}:
            return None
    name = _NAME_TRAIL.sub("", name.strip()).strip()
    if not name or (_CJK_RE.search(name) and _NAME_JUNK.search(name)):
        return None
    return Candidate(
        type=FACT,
        key=ADDRESS_KEY,
        content=f"称呼：{name}",
        confidence=0.95,
        importance=4,
        field="preferred_name",
        value=name,
        clause=clause,
    )


# --- preferences and constraints ----------------------------------------------------------

_NEGATED_PREF_PREFIX = re.compile(r"(?:不|没|别|并不|也不|从不|不再|不是|并不是|也不是)\s*$")
# "你最好早点联系我" is about us, but "麻烦你帮我找…" is the customer's own request.
_SECOND_PERSON_PREFIX = re.compile(r"^(?:你们|你|您)(?!帮|给|替)|它")


def _trigger(clause: str, is_english: bool) -> tuple[re.Match[str], str, float, int] | None:
    table = _COMPILED_EN if is_english else _COMPILED_ZH
    for regex, memory_type, confidence, importance in table:
        match = regex.search(clause)
        if match is None:
            continue
        if memory_type == PREFERENCE and not is_english and _NEGATED_PREF_PREFIX.search(clause[: match.start()]):
            continue
        return match, memory_type, confidence, importance
    return None


def _objects_for(clause: str, match: re.Match[str], is_english: bool) -> list[str]:
    before, after = clause[: match.start()], clause[match.end() :]
    if is_english:
        if re.search(r"\byou\b", before, re.IGNORECASE):
            return []
        obj = _clean_en_object(after)
        return [o for o in (_clean_en_object(part) for part in _split_objects(obj)) if o]
    prefix = _ZH_SUBJECT_FILLERS.sub("", before.strip())
    obj = _clean_zh_object(after)
    if not obj:
        # Object fronted: "顶楼就不考虑了", "一楼的话不要".
        fronted = _ZH_TRAILING_FILLERS.sub("", _ZH_SUBJECT_FILLERS.sub("", before.strip()))
        obj = _clean_zh_object(fronted)
    elif prefix and _SECOND_PERSON_PREFIX.search(prefix):
        return []
    return [o for o in (_clean_zh_object(part) for part in _split_objects(obj)) if o]


_BARE_AMOUNT_RE = re.compile(
    r"^(?:超过|超出|高于|低于|多于|少于|大于|小于)\s*[\d.,一二两三四五六七八九十百千万]+\s*(?:块钱|块|元|万|千|k|w)?$",
    re.IGNORECASE,
)


# Service requests ("我要投诉", "我想要退押金", "I want a refund") ask us to act; they say nothing
# about the home the customer wants.
_SERVICE_REQUEST_RE = re.compile(
    r"^(?:投诉|举报|退押金|退定金|退订金|退租金|退房租|退款|退钱|退费|退租|退房|换房|换租|换一套|维修|报修|修理|修一下|"
    r"开发票|开票|发票|开收据|收据|赔偿|索赔|转人工|人工|客服|经理|解约|解除合同|续租|续约|打电话|联系)|"
    r"^(?:my\s+)?(?:refund|deposit\s+back|money\s+back|invoice|receipt|repairs?|complain|complaint|manager|human|"
    r"supervisor|fix)\b",
    re.IGNORECASE,
)


def _valid_object(obj: str) -> bool:
    if not obj or len(obj) > MAX_OBJECT_CHARS or _DEICTIC.match(obj.lower()):
        return False
    if obj.startswith("的"):
        return False  # "我喜欢的不是高层", "我最讨厌的就是中介费": a cleft we do not parse
    if _SERVICE_REQUEST_RE.match(obj):
        return False
    if not re.search(r"[\u4e00-\u9fffA-Za-z]", obj):
        return False
    if not _CJK_RE.search(obj) and obj.lower().startswith("to "):
        return False  # "I want to know the price" asks for information, it states no preference
    if not _CJK_RE.search(obj) and (obj.lower() in _EN_STOP_OBJECTS or not re.search(r"[A-Za-z]{3,}", obj)):
        return False
    if _BARE_AMOUNT_RE.match(obj):
        return False  # "别超过5000" caps an amount we cannot attribute (rent? deposit?): not a constraint
    if re.match(r"(?:你|您|you\b)", obj, re.IGNORECASE):
        return False  # "不希望你们再打电话" is about us, not about the home
    # A lone CJK character ("好", "行") carries no stable meaning.
    return not (_CJK_RE.fullmatch(obj) and len(obj) == 1)


def _statement_candidates(clause: str, *, hedged: bool) -> list[Candidate]:
    is_english = not _CJK_RE.search(clause)
    candidates: list[Candidate] = []
    address = _address(clause)
    if address is not None:
        return [address]
    if _ADDRESS_PHRASE_RE.search(clause):
        return []  # a refused or judged form of address ("不要叫我老王") is no statement about the home
    trigger = _trigger(clause, is_english)
    # Profile facts only from positive statements: "不要两居室" is a constraint, not a layout.
    positive = trigger is None or trigger[1] == PREFERENCE
    facts: list[Candidate] = []
    spans: list[tuple[int, int]] = []
    if positive:
        facts, spans = _profile_facts(clause, confidence=0.9)
        if facts and _THIRD_PARTY_RE.search(clause[: min(start for start, _ in spans)]):
            facts, spans = [], []
        if hedged:
            facts = []  # facts must be firm; a hedged value is at most something to ask about
        candidates += facts
    if trigger is None:
        return candidates
    match, memory_type, confidence, importance = trigger
    if _THIRD_PARTY_RE.search(clause[: match.start()]):
        return candidates
    if hedged:
        confidence, importance = min(confidence, 0.5), max(1, importance - 1)
    # Remove what the profile facts already cover ("想要地铁附近的两居室" → layout + "地铁附近").
    remainder = clause
    for start, end in sorted(spans, reverse=True):
        if start >= match.end():
            remainder = remainder[:start] + " " + remainder[end:]
    sub = _trigger(remainder, is_english) if remainder != clause else trigger
    if sub is None:
        return candidates
    for obj in _objects_for(remainder, sub[0], is_english):
        if not _valid_object(obj):
            continue
        key_obj = object_key(obj)
        if not key_obj:
            continue
        if memory_type == PREFERENCE:
            content = f"Prefers: {obj}" if is_english else f"偏好：{obj}"
            opposite = f"{CONSTRAINT}:{key_obj}"
        else:
            content = f"Excludes: {obj}" if is_english else f"不考虑：{obj}"
            opposite = f"{PREFERENCE}:{key_obj}"
        candidates.append(
            Candidate(
                type=memory_type,
                key=f"{memory_type}:{key_obj}",
                content=content,
                confidence=confidence,
                importance=importance,
                supersedes_keys=(opposite,),
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
    trigger = _trigger(piece, False)
    if trigger is None:
        return False
    return bool(_objects_for(piece, trigger[0], False)) or bool(_profile_facts(piece, confidence=0.0)[0])


# "我说了不要顶楼", "I said no pets": the customer repeating themselves, not reporting someone else.
_FIRST_PERSON_LEAD_RE = re.compile(
    r"^(?:我|我们)(?:刚才|刚刚|之前|已经|前面|早就|都)*(?:说过|说了|讲过|讲了|说)了?\s*|"
    r"^(?:(?:as|like)\s+)?(?:i|we)(?:'ve|\s+have|\s+already|\s+just)?\s+(?:said|told\s+you|mentioned)"
    r"(?:\s+(?:before|earlier|already))?\s*",
    re.IGNORECASE,
)


def _coordinated(clause: str) -> list[str]:
    if not _CJK_RE.search(clause):
        return [clause]
    first = _trigger(clause, False)
    if first is None or _THIRD_PARTY_RE.search(clause[: first[0].start()]):
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


def _reversed(carried: list[Candidate], clause: str, *, hedged: bool) -> list[Candidate]:
    """A past statement's objects under the polarity of "现在不要了" / "现在喜欢了" / "not anymore"."""
    is_english = not _CJK_RE.search(clause)
    trigger = None if is_english and _EN_REVERSAL_RE.search(clause) else _trigger(clause, is_english)
    if trigger is None and not (is_english and _EN_REVERSAL_RE.search(clause)):
        return []
    if trigger is None:
        memory_type, confidence, importance = CONSTRAINT, 0.6, 3
    else:
        _, memory_type, confidence, importance = trigger
        if _THIRD_PARTY_RE.search(clause[: trigger[0].start()]):
            return []
    if hedged:
        confidence, importance = min(confidence, 0.5), max(1, importance - 1)
    reversed_: list[Candidate] = []
    for past in carried:
        obj = _object_of(past)
        key_obj = object_key(obj)
        if memory_type == PREFERENCE:
            content, opposite = (f"Prefers: {obj}" if is_english else f"偏好：{obj}"), f"{CONSTRAINT}:{key_obj}"
        else:
            content, opposite = (f"Excludes: {obj}" if is_english else f"不考虑：{obj}"), f"{PREFERENCE}:{key_obj}"
        reversed_.append(
            Candidate(
                type=memory_type,
                key=f"{memory_type}:{key_obj}",
                content=content,
                confidence=confidence,
                importance=importance,
                supersedes_keys=(opposite,),
                clause=clause,
            )
        )
    return reversed_


def _sentence_candidates(clauses: list[str], question_mark: bool) -> list[Candidate]:
    found: list[Candidate] = []
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
        if _FIRST_PERSON_SAYING_RE.search(clause):
            continue  # "我跟你说", "forget what I said earlier": the customer's own words follow
        clause = _FIRST_PERSON_LEAD_RE.sub("", clause) or clause
        if _REPORTING_RE.search(clause):
            # "我老婆说，不要顶楼": everything after the reporting verb is someone else's words.
            skip_rest = True
            continue
        if _CONDITIONAL_RE.search(clause):
            skip_next = not last and not re.search(r"(?:我|就).{0,4}(?:要|想|喜欢)", clause)
            continue
        if (last and question_mark) or _QUESTION_RE.search(clause):
            continue
        if (
            _DOUBLE_NEGATION_RE.search(clause)
            or _NEGATED_AVERSION_RE.search(clause)
            or _STRONG_HEDGE_RE.search(clause)
            or _DISOWNED_RE.search(clause)
        ):
            continue
        hedged = _WEAK_HEDGE_RE.search(clause) is not None
        if _PAST_RE.search(clause):
            # "I used to like X" reads as "I like X" once the past marker is gone.
            source = clause if _CJK_RE.search(clause) else " ".join(_PAST_RE.sub(" ", clause).split())
            carried = [
                candidate
                for piece in _coordinated(source)
                for candidate in _statement_candidates(piece, hedged=False)
                if candidate.type in {PREFERENCE, CONSTRAINT}
            ]
            continue
        own = [candidate for piece in _coordinated(clause) for candidate in _statement_candidates(piece, hedged=hedged)]
        if pending and not any(candidate.type in {PREFERENCE, CONSTRAINT} for candidate in own):
            own += _reversed(pending, clause, hedged=hedged)
        found += own
    return found


def extract_candidates(text: str) -> list[Candidate]:
    """Candidates from one customer message, in order, one per key (the last statement wins)."""
    text = normalise_text(text)
    per_sentence: list[list[Candidate]] = []
    for clauses, question_mark in _clauses(text):
        jokes = [index for index, clause in enumerate(clauses) if _JOKE_RE.search(clause)]
        if jokes:
            # The joke takes back what came before it; "开玩笑的" with nothing before it in its own
            # sentence takes back the previous sentence. What follows ("其实我喜欢低层") stands.
            joke = jokes[-1]
            said_before = any(_trigger(c, not _CJK_RE.search(c)) for c in clauses[: joke + 1])
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
