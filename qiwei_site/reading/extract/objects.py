"""The object of a preference or constraint: cut out of the clause, cleaned, validated, keyed."""

from __future__ import annotations

import re

from qiwei_site.reading.extract._common import CJK_RE, MAX_OBJECT_CHARS
from qiwei_site.reading.normalise import normalise_statement, normalize_content
from qiwei_site.reading.values import amounts_in

# Where a profile fact was cut out of a clause: an object holding one is no object.
GAP = "\x1f"
_ZH_SUBJECT_FILLERS = re.compile(
    r"^(?:嗯+|哦+|啊+|呃+|那个|其实|反正|总之|另外|还有|然后|而且|并且|所以|我个人|个人|本人|我们|咱们|我这边|我|俺|自己|"
    r"也|都|还|就|真的|实在|确实|比较|更|最|主要|一般|肯定|绝对|真心|非常|特别|是|还是|这边|的话|总体上|整体上|"
    r"说实话|老实说|坦白说|目前|现在|暂时|这次|以前|之前|原来|原先|过去|曾经|本来|原本|当初|早先|一开始|起初|刚开始|"
    r"后来|如今|这会儿)+"
)
_ZH_TRAILING_FILLERS = re.compile(
    r"(?:对(?:我|我们|咱们|我们家)(?:来说|而言)|(?:我|我们)(?:来说|而言)|我们|我|也|都|还|就|真的|是|的话|这种|那种|这类|那类|的|当然)+$"
)
_DEICTIC = re.compile(
    r"^(?:这个|那个|这套|那套|这间|那间|这种|那种|它|这|那|it|this|that|them|these|those|this one|that one|one)$"
)

_OBJ_LEAD = re.compile(
    # a verb that starts a word stays ("住宿", "租金", "看房"): only the verb of the statement goes
    r"^(?:(?:至少|起码|最少|住在|住(?![宿户址])|租在|租(?![金期客约车])|买在|买(?![单房])|找|选|要(?![求])|是|在|个|一个|一套|一间|一处|一家|几个|几套|几家|"
    r"那种|这种|有|能|可以|用|带个|到|给我|给|推荐|看(?![房点])|考虑|接受|选择)\s*)+"
)
_OBJ_LEAD_VERB = re.compile(r"^(?:个|一个|先|再|去|赶紧|马上|尽快)+")
_OBJ_TRAIL = re.compile(
    r"(?:的房子|的房源|的房间|的房|的小区|的楼盘|的公寓|"
    # the kind of place sought in other trades, and what the customer will do there (issue 22)
    r"的(?:酒店|宾馆|民宿|餐馆|餐厅|饭店|饭馆|景点|地方|店|课|课程|班)(?:住宿|入住|住下|住|用餐|吃饭|游玩|玩|休息)?|的|一点儿|一点|一些|点儿|(?<![景地站网据观焦亮重特起终优缺卖糕甜茶餐])点|些|啊|呀|吧|呗|了|哦|呢|哈|嘛|就行|就好|"
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
_OBJ_SPLIT_RE = re.compile(
    # "评分4.5分以上有宽带上网": a bound closes one want, and what it has starts the next
    r"、|和|或者|或是|或|及|以及|还有|跟|(?<=以上|以下|以内)(?=有|提供|带)|\s+and\s+|\s+n?or\s+|/",
    re.IGNORECASE,
)
_EN_STOP_OBJECTS = frozenset(
    {"to", "it", "a", "the", "some", "that", "this", "more", "one", "something", "anything", "them", "those", "these",
     "too", "that one", "this one", "to do", "to know", "to see", "to ask", "to check", "help", "you", "know",
     "apartment", "apartments", "flat", "flats", "place", "home", "house", "unit", "room", "property",
     "at least", "at most", "least", "minimum", "maximum"}
)  # fmt: skip
# "你最好早点联系我" is about us, but "麻烦你帮我找…" is the customer's own request.
_SECOND_PERSON_PREFIX = re.compile(r"^(?:你们|你|您)(?!(?:可以|能|能不能|可不可以|再)?(?:帮|给|替))|它")


def object_key(obj: str) -> str:
    """The stable part of a key: the same object written twice maps to the same string."""
    value = normalise_statement(obj).lower()
    if CJK_RE.search(value):
        value = re.sub(r"\s+", "", value)
    value = re.sub(r"\b(?:a|an|the)\b", " ", value)
    value = re.sub(r"[^\w\u4e00-\u9fff+-]+", " ", value)
    return normalize_content(value)[:MAX_OBJECT_CHARS]


def _clean_zh_object(obj: str) -> str:
    obj = obj.strip(GAP + " \"'“”‘’「」()（）")
    for _ in range(3):
        before = obj
        obj = _OBJ_LEAD.sub("", obj)
        obj = _OBJ_TRAIL.sub("", obj)
        obj = obj.strip(GAP + " \"'“”‘’「」()（）")
        if obj == before:
            break
    return obj


def _clean_en_object(obj: str) -> str:
    obj = obj.strip(GAP + " \"'“”‘’()")
    for _ in range(3):
        before = obj
        obj = _EN_OBJ_LEAD.sub("", obj)
        obj = _EN_OBJ_TRAIL.sub("", obj).strip(GAP + " \"'“”‘’()")
        if obj == before:
            break
    return obj


def _split_objects(obj: str) -> list[str]:
    return [part for part in (p.strip() for p in _OBJ_SPLIT_RE.split(obj)) if part]


def split_objects(obj: str) -> list[str]:
    """Coordinated objects: "南向、带阳台" → ["南向", "带阳台"]."""
    return _split_objects(obj)


def trim_object(obj: str) -> str:
    """Only the trailing particles off ("能接受宠物的就行" → "能接受宠物"): the verbs stay."""
    return _OBJ_TRAIL.sub("", obj.strip(" \"'“”‘’「」()（）")).strip()


def clean_object(obj: str) -> str:
    """A Chinese object without its lead verbs, fillers and trailing particles."""
    return _clean_zh_object(_ZH_TRAILING_FILLERS.sub("", _ZH_SUBJECT_FILLERS.sub("", obj.strip())))


def objects_for(clause: str, match: re.Match[str], is_english: bool, *, fronted: bool = True) -> list[str]:
    """The objects a trigger governs: the words after it, or fronted before it ("顶楼就不考虑了");
    `fronted=False` when the words after it were there but a profile fact took them."""
    before, after = clause[: match.start()], clause[match.end() :]
    if not is_english:
        after = re.sub(r"^\s*的(?:就是|还是|一定是|是)", "", after)  # "我最看重的是安静": the cleft's object
    if is_english:
        if re.search(r"\byou\b", before, re.IGNORECASE):
            return []
        obj = _clean_en_object(after)
        if not obj:
            # Object fronted: "a balcony is a must", "a short commute is important".
            obj = _clean_en_object(re.sub(r"^(?:(?:and|but|also|so)\s+)+", "", before.strip(), flags=re.IGNORECASE))
        return [o for o in (_clean_en_object(part) for part in _split_objects(obj)) if o]
    prefix = _ZH_SUBJECT_FILLERS.sub("", before.strip())
    if _SERVICE_REQUEST_RE.match(_OBJ_LEAD_VERB.sub("", after.strip())) or _ACTIVITY_RE.match(after.strip()):
        return []  # "我要考虑一下", "想要过去看看", "我要做饭": a request, the talk, or what they will do
    if GAP in after:
        # What a profile fact left: "地铁附近的▯" keeps "地铁附近"; "一个最低▯" (of "最低价格…") is
        # part of the fact's own phrase and goes with it.
        return [o for part in _detached(after) for o in (_clean_zh_object(p) for p in _split_objects(part)) if o]
    obj = _clean_zh_object(after)
    if not obj and not fronted:
        return []
    if not obj:
        # Object fronted: "顶楼就不考虑了", "一楼的话不要".
        obj = _clean_zh_object(_ZH_TRAILING_FILLERS.sub("", _ZH_SUBJECT_FILLERS.sub("", before.strip())))
    elif prefix and _SECOND_PERSON_PREFIX.search(prefix + match.group(0)):  # "你可以帮我找…" asks for the customer
        return []
    elif prefix and _is_quantity(obj):
        # "通勤最好半小时以内": a bare quantity belongs to the topic named before the trigger.
        topic = _ZH_TRAILING_FILLERS.sub("", prefix)
        if 1 < len(topic) <= 6 and CJK_RE.search(topic):
            return [topic + obj]
    return [o for o in (_clean_zh_object(part) for part in _split_objects(obj)) if o]


_DETACHED_BEFORE_RE = re.compile(r"(?:的|和|、|或者|或|及|以及|还有|跟|，|,)\s*$")
_DETACHED_AFTER_RE = re.compile(
    r"^\s*(?:(?:这边|那边|附近|一带|周边|那块)?的|和|、|或者|或|及|以及|还有|跟|，|,|带|有|离|靠近|能|可以|要)"
)


# The start of the fact's own phrase ("最低▯" of "最低价格五百", "门票▯"), or a connector: no modifier.
_TOPIC_TAIL_RE = re.compile(
    r"最低|最高|最少|至少|起码|大概|大约|差不多|价格|预算|租金|房租|总价|月租|门票|票价|人均|面积|并且|而且|还有|或者|和|跟|以及|"
    r"\d|[一二两三四五六七八九十]"
)


_DETACHED_LEAD_RE = re.compile(r"^\s*(?:(?:这边|那边|附近|一带|周边|那块)?的|和|、|或者|或|及|以及|还有|跟|，|,)")


def _detached(after: str) -> list[str]:
    """The pieces around cut-out facts that stand on their own."""
    pieces = after.split(GAP)
    kept = []
    if _DETACHED_BEFORE_RE.search(pieces[0]):
        kept.append(pieces[0])
    elif "的" in pieces[0] and len(pieces) == 2 and not pieces[1].strip(" 的吧啊呀呢"):
        # "带电梯的老小区▯" (of "…老小区两居"): the fact closes the clause, and the words before it are
        # a modified modifier; both parts describe the home.
        head, _, tail = pieces[0].rpartition("的")
        if not _TOPIC_TAIL_RE.search(tail):
            kept.append(head + "的")
            if re.fullmatch(r"[\u4e00-\u9fff]{2,6}", tail):
                kept.append(tail)
    for middle in pieces[1:-1]:
        # "▯附近的精装的▯" (of "滨江附近的精装的两居"): the words between two facts describe the home.
        inner = re.sub(r"^\s*(?:这边|那边|附近|一带|周边|左右|以内|以上)?的", "", middle)
        if inner == middle or len(inner) < 2:
            continue
        # "…的带阳台的▯", or a bare modifier right before the next fact ("…的合租▯单间")
        if inner.endswith("的") or (re.fullmatch(r"[\u4e00-\u9fff]{2,6}", inner) and not _TOPIC_TAIL_RE.search(inner)):
            kept.append(inner)
    if len(pieces) > 1 and _DETACHED_AFTER_RE.match(pieces[-1]):
        kept.append(_DETACHED_LEAD_RE.sub("", pieces[-1]))
    return kept


def _is_quantity(obj: str) -> bool:
    """The object is an amount and nothing else ("半小时以内", "五千以内", "80平以上")."""
    found = amounts_in(obj)
    return len(found) == 1 and found[0].start == 0 and not obj[found[0].end :].strip("的 ")


_BARE_AMOUNT_RE = re.compile(
    r"^(?:超过|超出|高于|低于|多于|少于|大于|小于)\s*[\d.,一二两三四五六七八九十百千万]+\s*(?:块钱|块|元|万|千|k|w)?$",
    re.IGNORECASE,
)


# Service requests ("我要投诉", "我想要退押金", "I want a refund") ask us to act; they say nothing
# about the home the customer wants.
_SERVICE_REQUEST_RE = re.compile(
    r"^(?:投诉|举报|退押金|退定金|退订金|退租金|退房租|退款|退钱|退费|退租|退房|换房|换租|换一套|维修|报修|修理|修一下|"
    r"开发票|开票|发票|开收据|收据|赔偿|索赔|转人工|人工|客服|经理|解约|解除合同|续租|续约|打电话|联系|"
    # service and moving requests, viewing requests and talk about the talk: none says what the home is
    r"退(?!休)|换货|取消|办理|办手续|签合同|签约|交定金|付定金|交押金|付押金|交钱|付款|付钱|转账|"
    r"搬进去|搬进来|搬过去|搬家|搬东西|入住手续|办入住|过户|"
    r"(?:过去|过来|去|来|上门|实地|现场|亲自|先)?(?:看看|看一看|看一下|看下|瞧瞧|瞧一瞧|瞅瞅|瞅一眼|转转|转一转|逛逛|看房|看一眼)|"
    r"约(?:个|一个)?时间|预约|"
    r"了解|咨询|问问|问一下|打听|商量|想想|想一想|考虑考虑|考虑一下|再看看|再说|加微信|加个微信|回电话|回个电话|聊聊|"
    r"知道|确认一下|核实)|"
    r"^(?:my\s+)?(?:refund|deposit\s+back|money\s+back|invoice|receipt|repairs?|complain|complaint|manager|human|"
    r"supervisor|fix)\b",
    re.IGNORECASE,
)


# What the customer will do, right after the trigger ("我要做饭", "我要上班"): no feature of the home
# ("能做饭的单间" keeps its 能 and is one).
_ACTIVITY_RE = re.compile(
    r"^(?:做饭|上班|上学|睡觉|吃饭|工作|加班|出差|开车|接孩子|送孩子|带孩子|休息|开会|出门|回家|回去)"
)


# Words that point elsewhere or say nothing on their own: "附近" (near what?), "再多" (more than the
# budget just named), "一下" (what is left of "考虑一下").
_EMPTY_OBJECT_RE = re.compile(
    r"^(?:附近|周边|旁边|这边|那边|这里|那里|这儿|那儿|一带|再多|再贵|再高|再往上|更多|更贵|太贵|贵的|多了|高了|贵了|超了|超出|超过的?|"
    r"不高|不多|不大|不严|"
    r"一下|一下子|下|"
    r"一点|一些|看看|问问|别的|其他|其它|这样|那样|这么|那么|下来|下去|进去|进来|之间|中间|"
    r"[一两几](?:个|家|套|间|处|款|种|下))$"
)
# A request to us ("最好帮我看一下", "把地址发给我") or a trip somewhere ("去这里住"): no home feature.
_REQUEST_OBJECT_RE = re.compile(
    r"帮我|帮忙|麻烦你|麻烦您|告诉我|发给我|发我|给我发|通知我|商量|考虑一下|考虑考虑|想一想|想想|问问|问一下|了解一下|咨询|"
    r"^(?:去|来|出去|回去|回来)(?![年])|^回(?=[\u4e00-\u9fff]{0,4}(?:家|老家|公司|学校|单位))|^把|(?:这|那)(?:套|间|个|家|栋)$|"
    # "有这道菜的餐馆", "给她个惊喜": what it is stands elsewhere, or it is about someone else
    r"(?:这|那)(?:两|几)?(?:道|种|款|样)|^(?:他|她|它)(?![们])|^(?:他们|她们)|"
    # "这套两居我挺喜欢": an opinion of one listing or item shown, not a want
    r"^(?:这|那)(?:套|间|个|家|栋|件|款|条|双)"
)


# The kind of thing sought, bare or with what the customer will do there ("酒店", "餐馆用餐", "地方
# 吃饭", "景点游玩一下"): the request's head, not a preference; the wants are its modifiers. And a
# purpose with company ("我朋友出去吃饭", "请同学吃饭"): what they will do, not what they want.
_SOUGHT_HEAD = (
    r"(?:地方|房子|房源|房间|住处|住的地方|酒店|宾馆|旅馆|民宿|餐馆|饭店|餐厅|饭馆|馆子|景点|景区|店|商品|东西|宝贝|产品|"
    r"课程|课|机构|学校)"
)
_PURPOSE = (
    r"(?:用餐|就餐|吃饭|吃东西|吃|住宿|入住|住下|住|休息|游玩|(?<!好)玩一?玩?|出去玩|去玩|走走|逛逛|转转|溜溜|溜达|放松|看看|上课|学习|"
    r"品尝|订房|订餐|订票)"
    r"(?:一下|一晚|几天|几晚|一圈|一会儿?|一趟)?"
)
_SOUGHT_RE = re.compile(
    rf"^(?:[一二两几]?[个家座间处所]|明天|今天|晚上|周末)*{_SOUGHT_HEAD}(?:[一二两几]?[个家座间处所]|明天|今天|晚上|周末|出去|去)*"
    rf"(?:{_PURPOSE})?$|^(?:可以|能)?(?:{_PURPOSE})的{_SOUGHT_HEAD}$|^(?:{_PURPOSE})$|^(?:请|和|跟|带)?.{{0,6}}?(?:朋友|同学|家人|父母|爸妈|孩子|同事|客户|女朋友|男朋友|老婆|老公)"
    rf".{{0,4}}?(?:出去|去|一起)?{_PURPOSE}$"
)


def valid_object(obj: str) -> bool:
    """An object says something stable about the home (not "it", a service request or a bare amount)."""
    if not obj or len(obj) > MAX_OBJECT_CHARS or _DEICTIC.match(obj.lower()) or _EMPTY_OBJECT_RE.match(obj):
        return False
    if _REQUEST_OBJECT_RE.search(obj) or GAP in obj:
        return False  # a request to us; or an object with a gap where a profile fact was cut out
    if CJK_RE.search(obj) and _is_quantity(obj):
        return False  # "两千": an amount of what? (the budget has its own words: 预算, 租金 …)
    if obj.startswith("的"):
        return False  # "我喜欢的不是高层", "我最讨厌的就是中介费": a cleft we do not parse
    if _SERVICE_REQUEST_RE.match(obj) or _SOUGHT_RE.match(obj):
        return False
    if not re.search(r"[\u4e00-\u9fffA-Za-z]", obj):
        return False
    if not CJK_RE.search(obj) and obj.lower().startswith("to "):
        return False  # "I want to know the price" asks for information, it states no preference
    if re.fullmatch(r"(?!OK$|NO$|HI$)[A-Z]{2,4}", obj):
        return True  # an abbreviation customers choose by: "PU", "LED", "XL"
    if not CJK_RE.search(obj) and (obj.lower() in _EN_STOP_OBJECTS or not re.search(r"[A-Za-z]{3,}", obj)):
        return False
    if _BARE_AMOUNT_RE.match(obj):
        return False  # "别超过5000" caps an amount we cannot attribute (rent? deposit?): not a constraint
    if re.match(r"(?:你|您|you\b)", obj, re.IGNORECASE):
        return False  # "不希望你们再打电话" is about us, not about the home
    # A lone CJK character ("好", "行") carries no stable meaning.
    return not (CJK_RE.fullmatch(obj) and len(obj) == 1)
