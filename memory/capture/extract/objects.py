"""The object of a preference or constraint: cut out of the clause, cleaned, validated, keyed."""

from __future__ import annotations

import re

from memory.capture.extract._common import CJK_RE, MAX_OBJECT_CHARS
from memory.text import normalise_statement, normalize_content

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
_EN_STOP_OBJECTS = frozenset(
    {"to", "it", "a", "the", "some", "that", "this", "more", "one", "something", "anything", "them", "those", "these",
     "too", "that one", "this one", "to do", "to know", "to see", "to ask", "to check", "help", "you", "know",
     "apartment", "apartments", "flat", "flats", "place", "home", "house", "unit", "room", "property",
     "at least", "at most", "least", "minimum", "maximum"}
)  # fmt: skip
# "你最好早点联系我" is about us, but "麻烦你帮我找…" is the customer's own request.
_SECOND_PERSON_PREFIX = re.compile(r"^(?:你们|你|您)(?!帮|给|替)|它")


def object_key(obj: str) -> str:
    """The stable part of a key: the same object written twice maps to the same string."""
    value = normalise_statement(obj).lower()
    if CJK_RE.search(value):
        value = re.sub(r"\s+", "", value)
    value = re.sub(r"\b(?:a|an|the)\b", " ", value)
    value = re.sub(r"[^\w\u4e00-\u9fff+-]+", " ", value)
    return normalize_content(value)[:MAX_OBJECT_CHARS]


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


def objects_for(clause: str, match: re.Match[str], is_english: bool) -> list[str]:
    """The objects a trigger governs: the words after it, or fronted before it ("顶楼就不考虑了")."""
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


def valid_object(obj: str) -> bool:
    """An object says something stable about the home (not "it", a service request or a bare amount)."""
    if not obj or len(obj) > MAX_OBJECT_CHARS or _DEICTIC.match(obj.lower()):
        return False
    if obj.startswith("的"):
        return False  # "我喜欢的不是高层", "我最讨厌的就是中介费": a cleft we do not parse
    if _SERVICE_REQUEST_RE.match(obj):
        return False
    if not re.search(r"[\u4e00-\u9fffA-Za-z]", obj):
        return False
    if not CJK_RE.search(obj) and obj.lower().startswith("to "):
        return False  # "I want to know the price" asks for information, it states no preference
    if not CJK_RE.search(obj) and (obj.lower() in _EN_STOP_OBJECTS or not re.search(r"[A-Za-z]{3,}", obj)):
        return False
    if _BARE_AMOUNT_RE.match(obj):
        return False  # "别超过5000" caps an amount we cannot attribute (rent? deposit?): not a constraint
    if re.match(r"(?:你|您|you\b)", obj, re.IGNORECASE):
        return False  # "不希望你们再打电话" is about us, not about the home
    # A lone CJK character ("好", "行") carries no stable meaning.
    return not (CJK_RE.fullmatch(obj) and len(obj) == 1)
