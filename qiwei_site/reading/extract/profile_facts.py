"""Declared profile facts (budget, layout, city, district, move-in date) from a positive statement,
and the time-bound facts beside them (a viewing time, when the current lease ends).

Amounts, places and dates are read as values (`qiwei_site.reading.values`): the content keeps the customer's
words and, where they are not already plain, what they mean —
预算：七千五左右（约7500元） · 意向区域：浦东（浦东新区） · 入住时间：下个月15号（2026-12-15).
A dated fact carries `expires_at` (the day after its date, plus grace).
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime

from qiwei_site.reading.extract._common import (
    CJK_RE,
    FACT,
    LEASE_END_KEY,
    MAX_VALUE_CHARS,
    PROFILE_LABELS,
    VIEWING_KEY,
    Candidate,
    ExtractContext,
)
from qiwei_site.reading.extract.clauses import NO_LONGER_EN
from qiwei_site.reading.extract.objects import object_key
from qiwei_site.reading.fields import PROFILE_FIELD_SPECS
from qiwei_site.reading.normalise import normalize_content
from qiwei_site.reading.values import Amount, DateSpan, Place, PlaceNames, amounts_in, dates_in, places_in
from qiwei_site.reading.values.amounts import AT_LEAST, AT_MOST, EXACT, FEE_TOPICS, LEAD_WORDS, RANGE
from qiwei_site.reading.values.dates import DATE_WORDS_ZH, TIME_OF_DAY_ZH
from qiwei_site.reading.values.places import CITY, LOCAL, PROVINCE

# What the agent asked just before, when a bare answer ("六千左右", "浦东吧") answers it.
NEEDS, BUDGET, AREA, MOVE_IN, NAME = "needs", "budget", "area", "move_in", "name"
_FIELD_MAX = {spec.name: spec.max_length for spec in PROFILE_FIELD_SPECS}

# Amounts about these are the budget; about anything else (押金, 中介费, 通勤) they are not.
_BUDGET_TOPICS = frozenset(
    [
        "总预算",
        "月租预算",
        "租金预算",
        "房租预算",
        "预算",
        "月租金",
        "月租",
        "租金",
        "房租",
        "总价",
        "单价",
        "首付",
        "月供",
        "价位",
        "价格",
        "价钱",
        "房价",
        "售价",
        "租价",
        "人均消费",
        "人均",
        "门票",
        "票价",
        # what a course costs is the course's price (training, issue 22)
        "学费",
        "课时费",
        "课费",
        "培训费",
        "budget",
    ]
)
# Topics kept in the value: they are a part of the budget, not all of it.
_KEPT_TOPICS = frozenset(
    ["首付", "月供", "单价", "人均消费", "人均", "门票", "票价", "学费", "课时费", "课费", "培训费"]
)
# A fee beside the price (运费, 差价, 安装费 …): an amount about it is no budget, but a limit the
# customer sets on it ("运费最多出15", "差价三百以内我可以补") is one of its own (issue 22, item 3).
_FEES = frozenset(FEE_TOPICS.split("|")) - _BUDGET_TOPICS
# "多出两百以内都OK", "加一百左右": what the customer adds to the price is the difference (差价).
_DIFFERENCE_BEFORE_RE = re.compile(r"(?:多出|多花|多付|再加|加价|加|补)\s*$")
# The unit a price is said per, or the whole it sums: "每节课两百以内", "一年下来别超过两万",
# "3k到4k一期能接受", "总共一万块以内". With it, a limit on an amount is a budget without the word.
_PER_UNIT = r"(?:每|一)(?:个)?(?:节课?|堂课?|课时|次课?|期(?:课程?)?|学期|季度?|年|个?月|周|晚|天|单|件|人)"
_PER_UNIT_BEFORE_RE = re.compile(
    rf"(?:{_PER_UNIT}(?:下来)?|总共|一共|总计|合计|加起来|算下来|全部下来|整体)(?:的)?(?:费用|价格|价钱|花费)?(?:在|是)?\s*$"
)
_PER_UNIT_AFTER_RE = re.compile(rf"^\s*(?P<unit>{_PER_UNIT})")
# What makes an amount a limit the customer sets: a bound, a range, "左右", or words that accept it.
_ACCEPTED_AFTER_RE = re.compile(
    rf"^[的\s]*(?:{_PER_UNIT})?(?:我|我们)?(?:都|也|还)?(?:能接受|可以接受|接受|就行|就好|就可以|可以|行|OK|ok|没问题)"
)
_CAP_WORDS_RE = re.compile(rf"^{LEAD_WORDS}")
_BOUND_WORDS_RE = re.compile(
    r"(?:以内|以下|之内|内|封顶|为限|打住|顶天|顶格|之下|以上|起步|起|往上|之上|左右|上下|出头|附近|的样子|之间|中间)$"
)
_CURRENCY_RE = re.compile(r"(?:块钱|块|元|rmb|RMB|人民币)")
# "想要六千以内的两居室", "一个三千块的": an amount attached to the home the customer wants.
_ATTACHED_RE = re.compile(r"^\s*的")
_BUDGET_EN_RE = re.compile(
    r"\bbudget\b\s*(?:is|of|:|=|around|about|roughly|approximately|up\s+to|max(?:imum)?|under|below|at\s+most|is\s+around|"
    r"is\s+about|is\s+up\s+to|is\s+under)*\s*(?:\$|¥|rmb|usd|cny)?\s*(?P<amount>\d[\d,]*(?:\.\d+)?)\s*(?P<unit>k|thousand|w)?",
    re.IGNORECASE,
)
_CAP_FINE_EN_RE = re.compile(
    r"\b(?:up\s+to|at\s+most|no\s+more\s+than|max(?:imum)?(?:\s+of)?)\s+(?:\$|¥|rmb\s*)?(?P<amount>\d[\d,]*(?:\.\d+)?)\s*"
    r"(?P<unit>k|thousand)?\b(?:\s+(?:a|per)\s+month)?\s+(?:is|would\s+be|will\s+be|'s)\s+(?:fine|ok|okay|alright|acceptable)\b",
    re.IGNORECASE,
)
_LAYOUT_ZH_RE = re.compile(
    # "一室户" (a one-room flat with its own kitchen and bath) is a layout of its own, not 一居室.
    r"(?P<special>单间|开间|一室户|复式|loft|LOFT|大平层)|"
    r"(?<!第)(?P<rooms>[一二两三四五六1-6])\s*(?:室|居室|居|房(?!东|租|子|源|间|价|产|贷|本|屋|地产))(?:\s*(?P<halls>[一二两三1-3])\s*厅)?"
    r"(?:\s*(?P<baths>[一二两三1-3])\s*卫)?"
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
EN_CITY_RE = re.compile(_CITIES_EN, re.IGNORECASE)  # a city the English reader names
_CITY_ZH_RE = re.compile(
    rf"(?:城市(?:是|在|选|定在)?\s*[:：]?\s*|(?:在|到|去|来|回)\s*|人在|坐标|base在|定居在?|工作在)(?P<city>{_CITIES_ZH})(?:市)?"
    r"(?P<ctx>租|买|找|看|工作|上班|定居|生活|发展|住|安家|落户|读书|上学|这边|那边|的房|买房|租房)?"
    # "到北京饭店", "去北京四季天成酒店": the city opens a place's name, and is not where they are.
    r"(?(ctx)|(?![\u4e00-\u9fff]{0,6}?(?:饭店|酒店|宾馆|大厦|展览馆|博物馆|大学|学院|医院|火车站|南站|西站|北站|东站|站|机场|"
    r"餐厅|公园|广场|动物园|植物园|剧院|影城|商场|中心|宫|寺|塔|大楼|路|街|桥|门|村)))"
)
_CITY_EN_RE = re.compile(
    rf"\b(?:moving\s+to|relocating\s+to|move\s+to|based\s+in|live\s+in|living\s+in|work\s+in|working\s+in|looking\s+in|"
    rf"(?:rent|buy|find)\s+(?:a\s+\w+\s+)?in|city\s+is)\s+(?P<city>{_CITIES_EN})\b",
    re.IGNORECASE,
)
_DISTRICT_ZH_RE = re.compile(
    r"(?:意向区域|意向片区|区域|片区|板块|地段)\s*(?:是|在|选|最好是|最好在|定在)?\s*[:：]?\s*(?P<area>[\u4e00-\u9fff]{2,8}?)"
    r"(?:这边|那边|附近|一带|周边|[吧啊呀呢哦哈的]*$)"
    r"|(?:在|住|租|买|找|看|选|考虑|去|到|是)\s*(?P<named>[\u4e00-\u9fff]{2,5}(?:新区|区|县))(?:这边|那边|附近|一带|周边)?"
)
_NOT_DISTRICT = re.compile(
    r"(?:小区|社区|学区|园区|城区|市区|郊区|景区|校区|街区|片区|厂区|生活区|商业区|老区|地区|山区)$"
)

_MOVE_VERB = r"入住|搬进来|搬进去|搬过去|搬家|起租|住进去|搬"
_MOVE_ZH_RE = re.compile(
    rf"(?:{_MOVE_VERB})(?:时间|日期)?\s*(?:是|在|大概|预计|想|打算|定在|就|可以|能)?\s*[:：]?\s*(?P<date1>{DATE_WORDS_ZH})"
    rf"|(?P<date2>{DATE_WORDS_ZH})\s*(?:之前|以前|前后|左右|前|之后|以后|后)?\s*"
    rf"(?:就要|就想|就能|才能|最好能|希望能|要|想|能|可以|打算|准备|得|就|必须)?\s*(?:{_MOVE_VERB})"
)
# "看房时间定在周六上午", "约了周六下午看房": an appointment (not "明天下午可以看房", an offer of a time).
_VIEWING_ZH_RE = re.compile(
    rf"看房(?:的)?时间\s*(?:是|定在|约在|就|在|定)?\s*[:：]?\s*(?P<date1>(?:{DATE_WORDS_ZH}){TIME_OF_DAY_ZH})"
    rf"|约(?:了|好了?|的是|在)?\s*(?P<date2>(?:{DATE_WORDS_ZH}){TIME_OF_DAY_ZH})\s*(?:过来|过去|去|来)?看房"
)
# "现在的房子3月底到期", "租约下个月15号到期": when the current lease ends.
_LEASE_END_ZH_RE = re.compile(
    rf"(?:房子|租约|合同|租期|房租|住的|租的|这边)[^，,。；;]{{0,8}}?(?P<date>{DATE_WORDS_ZH})\s*(?:就|才|正好|刚好)?到期"
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

# A city right after a negation ("我不在北京", "我不会搬到上海") is not where the customer is.
_NEGATED_PLACE_ZH = re.compile(r"(?:不|没|别|并非)[\u4e00-\u9fff]{0,3}$")
_NEGATED_PLACE_EN = re.compile(r"\bnot\b|n't\b|\bno\s+longer\b|\bnever\b", re.IGNORECASE)
_CURRENT_HOME_RE = re.compile(
    r"现在住|目前住|住的是|租的是|现在租|目前租|原来住|以前住|之前住|这套|那套|这间|那间|这个|那个|它是|之前那|刚才那|上次那"
)
_NEGATED_LAYOUT_ZH = re.compile(r"(?:不|没)(?:是|再)?(?:要|想要|想|找|租|买|考虑)?$")


def _profile_candidate(
    field_name: str,
    words: str,
    *,
    confidence: float,
    clause: str,
    meaning: str = "",
    values: tuple[Amount | Place | DateSpan, ...] = (),
    expires_at: datetime | None = None,
) -> Candidate:
    words = normalize_content(words)
    value = f"{words}（{meaning}）" if meaning else words
    if len(value) > min(MAX_VALUE_CHARS, _FIELD_MAX.get(field_name, MAX_VALUE_CHARS)):
        value = words  # the words win over their reading when both do not fit
    value = value[:MAX_VALUE_CHARS]
    return Candidate(
        type=FACT,
        key=f"profile:{field_name}",
        content=f"{PROFILE_LABELS[field_name]}：{value}",
        confidence=confidence,
        importance=4,
        field=field_name,
        value=value,
        supersedes_keys=(f"constraint:{object_key(words)}",) if field_name in {"layout", "district"} else (),
        clause=clause,
        values=values,
        expires_at=expires_at,
    )


def _dated_fact(
    key: str, label: str, span: DateSpan, words: str, *, confidence: float, clause: str, context: ExtractContext | None
) -> Candidate:
    meaning, expires_at = _date_meaning(span, context)
    words = normalize_content(words)
    value = f"{words}（{meaning}）" if meaning else words
    return Candidate(
        type=FACT,
        key=key,
        content=f"{label}：{value[:MAX_VALUE_CHARS]}",
        confidence=confidence,
        importance=3,
        clause=clause,
        values=(span,),
        expires_at=expires_at,
    )


def _date_meaning(span: DateSpan, context: ExtractContext | None) -> tuple[str, datetime | None]:
    """The resolved date to show beside the words, and when the fact expires (only with a send time)."""
    if context is None or context.sent_at is None:
        return "", None
    return span.display(), span.expires_at(context.sent_at.tzinfo)


def _today(context: ExtractContext | None) -> datetime | None:
    return context.sent_at if context is not None else None


def _budget_words(amount: Amount) -> str:
    """The customer's amount as the budget shows it: caps and approximations as a suffix, no currency
    ("不超过五千" → "五千以内", "最多6000元" → "6000以内", "3000到4000" → "3000-4000")."""
    core = _CAP_WORDS_RE.sub("", amount.words)
    core = _BOUND_WORDS_RE.sub("", core)
    core = re.sub(r"(?:/月|每月|每个月|一个月|/晚|一晚|每晚|/平|每平|一平)$", "", core)
    core = _CURRENCY_RE.sub("", core)
    core = core.replace("k", "千").replace("K", "千").replace("w", "万").replace("W", "万")
    if re.fullmatch(r"[\d.]+[千万]?(?:到|至|~|～|—|－)[\d.]+[千万]?", core):
        core = re.sub(r"到|至|~|～|—|－", "-", core)
    suffix = ""
    written = re.search(r"(以下|上下|出头|以上)$", amount.words)
    if amount.bound == AT_MOST:
        suffix = "以下" if written and written.group(1) == "以下" else "以内"
    elif amount.bound == AT_LEAST:
        suffix = "出头" if written and written.group(1) == "出头" else "以上"
    elif amount.approx and amount.bound != RANGE:
        suffix = written.group(1) if written else "左右"
    return core + suffix


# A part of the price has its own key (issue 22, item 3): a down payment or a monthly instalment
# never replaces the total budget, nor the total them.
_BUDGET_PART_KEYS = {"首付": "fact:budget_down_payment", "月供": "fact:budget_monthly_payment"}


def _budget_candidate(amount: Amount, clause: str) -> Candidate:
    words = _budget_words(amount)
    if amount.topic in _KEPT_TOPICS:
        words = amount.topic + words
    meaning = amount.display() if amount.chinese_numerals else ""
    if amount.qualifiers:
        meaning = amount.display() if meaning else ""
        words = "，".join([words, *amount.qualifiers]) if not meaning else words
    candidate = _profile_candidate("budget", words, confidence=0.9, clause=clause, meaning=meaning, values=(amount,))
    part = _BUDGET_PART_KEYS.get(amount.topic or "")
    return dataclasses.replace(candidate, key=part, field=None, value="") if part else candidate


# A cap said with its limit ("八千是上限", "超过七千就不考虑了", "最多一万二，再多就算了"): the budget,
# even without the word 预算. The tail is what makes it one; a bare "不要超过八千" stays out.
_REFUSAL_TAIL = (
    r"(?:的话)?(?:我|我们)?(?:就|那就|也就|肯定|真的|实在|都)?(?:算了|不考虑了?|不予考虑|不看了?|不要了?|不行了?|不租了?|"
    r"不买了?|接受不了|不能接受|租不起|买不起|承受不了|负担不了|扛不住|吃不消|没办法|免谈|pass)"
)
_LIMIT_TAIL = (
    r"(?:是|就是|算是|为|已经是)?(?:我的|我们的|我这边的|我们这边的)?"
    r"(?:上限|极限|底线|最高|天花板|顶了|顶天了|封顶)(?:了|啦|哈)?"
)
_SAME_CLAUSE_TAIL_RE = re.compile(rf"^[的\s]*(?:{_LIMIT_TAIL}|{_REFUSAL_TAIL})")
_NEXT_CLAUSE_TAIL_RE = re.compile(
    rf"^(?:再(?:多|贵|高|往上|加)|多了|超了|超过了?|超出了?|贵了|高了|更贵的|多出来)(?:的话)?(?:一点|点)?[的了]?{_REFUSAL_TAIL}|"
    rf"^(?:这|这个|那)?{_LIMIT_TAIL}$"
)
_PER_MONTH_BEFORE_RE = re.compile(r"(?:一个月|每个月|每月|一月|月付)\s*$")


# "再贵就超预算了，最多五千", "太贵租不起，顶多三千": the limit said first.
_PREVIOUS_CLAUSE_TAIL_RE = re.compile(r"超预算|超出预算|预算有限|租不起|买不起|负担不了|承受不了")


def capped_budget(clause: str, following: str = "", preceding: str = "") -> Candidate | None:
    """The budget of a cap stated with its limit, in this clause or the next ("最多六千，再贵就不看了");
    a floor refused ("超过一万就算了", "五千以上的就不考虑了") is the same cap."""
    for amount in amounts_in(clause, bare=True):
        if amount.topic in _FEES and amount.bound == AT_LEAST and _SAME_CLAUSE_TAIL_RE.match(clause[amount.end :]):
            fee = _fee_or_unit_budget(amount, clause)  # "快递费超过二十我就不要了": a cap on the fee
            if fee is not None:
                return fee
        if amount.unit not in {"元", ""} or (amount.topic and amount.topic not in _BUDGET_TOPICS):
            continue
        if not amount.numbers() or max(amount.numbers()) < 300 or amount.bound == RANGE:
            continue  # "十点", "两天": no rent
        tail = _SAME_CLAUSE_TAIL_RE.match(clause[amount.end :])
        per_month_cap = amount.bound == AT_MOST and (
            amount.per == "月" or _PER_MONTH_BEFORE_RE.search(clause[: amount.start]) is not None
        )
        told = (
            tail is not None
            or _NEXT_CLAUSE_TAIL_RE.match(following) is not None
            or (amount.bound == AT_MOST and _PREVIOUS_CLAUSE_TAIL_RE.search(preceding) is not None)
        )
        if not told and not per_month_cap:
            continue
        if amount.bound == AT_LEAST:
            amount = dataclasses.replace(amount, bound=AT_MOST, low=None, high=amount.low)
        elif amount.bound == EXACT:
            amount = dataclasses.replace(amount, bound=AT_MOST, low=None)
        return _budget_candidate(amount, clause)
    return None


def amount_topic(words: str) -> bool:
    """Whether the words name what an amount is about: the budget or a part of it, or a fee."""
    return words in _BUDGET_TOPICS or words in _FEES or words == "补差价"


def _limit(amount: Amount, clause: str) -> Amount | None:
    """The amount as a limit the customer sets ("最多出15", "80到120之间", "一百五左右能接受",
    "超过二十就不要了" → at most 20), or None when it only states an amount ("押金两千")."""
    after = clause[amount.end :]
    if amount.bound == AT_LEAST:
        if _SAME_CLAUSE_TAIL_RE.match(after) is None:
            return None  # "至少五百": a floor on a fee is no limit the customer sets
        return dataclasses.replace(amount, bound=AT_MOST, low=None, high=amount.low)
    stated = (amount.bound == EXACT and not amount.approx) or re.search(r"多$", amount.words) is not None
    if stated and _ACCEPTED_AFTER_RE.match(after) is None:
        return None  # "物业费一年两千多": what it costs, not a limit
    return amount


def _per_unit_words(amount: Amount, clause: str) -> str | None:
    """The unit or whole the amount is said per ("每节课", "一年下来", "总共", "一期"), or None."""
    before = _PER_UNIT_BEFORE_RE.search(clause[max(0, amount.start - 10) : amount.start])
    if before is not None:
        return re.sub(r"(?:的)?(?:费用|价格|价钱|花费)?(?:在|是)?\s*$", "", before.group(0))
    after = _PER_UNIT_AFTER_RE.match(clause[amount.end :])
    return after.group("unit") if after is not None else None


def _fee_or_unit_budget(amount: Amount, clause: str) -> Candidate | None:
    """A limit on a fee (its own key) or on a price said per unit (the budget), without the word 预算."""
    if not amount.numbers() or (amount.unit == "" and max(amount.numbers()) < 10):
        return None  # "一两个", "三次": no money
    limit = _limit(amount, clause)
    if limit is None:
        return None
    topic = amount.topic
    lead = re.sub(r"[\d一二两三四五六七八九十].*$", "", amount.words)  # "出" of "多出两百"
    if not topic and _DIFFERENCE_BEFORE_RE.search(clause[max(0, amount.start - 4) : amount.start] + lead):
        topic = "差价"
    if topic in _FEES:
        fee = "差价" if topic == "补差价" else topic
        candidate = _budget_candidate(dataclasses.replace(limit, topic=""), clause)
        return dataclasses.replace(
            candidate,
            key=f"fact:budget_fee:{fee}",
            field=None,
            value="",
            content=f"{PROFILE_LABELS['budget']}：{fee}{candidate.value}",
        )
    unit = _per_unit_words(amount, clause)
    if topic or unit is None or (amount.unit == "" and max(amount.numbers()) < 10):
        return None
    candidate = _budget_candidate(limit, clause)
    return dataclasses.replace(
        candidate, value=unit + candidate.value, content=f"{PROFILE_LABELS['budget']}：{unit}{candidate.value}"
    )


# "我预算不是五千（是八千）": a value the customer denies is no budget.
_DENIED_AMOUNT_RE = re.compile(r"(?:不|并非|并不|不再|不算)\s*(?:是)?\s*$")


def _budget(clause: str, *, answers: frozenset[str], wanted: bool) -> tuple[Candidate, tuple[int, int]] | None:
    for amount in amounts_in(clause, bare=True):
        if amount.unit not in {"元", ""}:
            continue
        if _DENIED_AMOUNT_RE.search(clause[max(0, amount.start - 6) : amount.start + amount.words.startswith("是")]):
            continue
        topic = amount.topic
        if (topic and topic not in _BUDGET_TOPICS) or not topic:
            # "运费最多出15", "每节课两百以内": a fee's limit or a price per unit
            own = _fee_or_unit_budget(amount, clause)
            if own is not None:
                return own, (max(0, clause.rfind(topic, 0, amount.start) if topic else amount.start), amount.end)
        if topic and topic not in _BUDGET_TOPICS:
            continue  # 押金两千, 中介费一个月: an amount, but not the budget
        if not amounts_in(clause[amount.start : amount.end]) and not topic:
            continue  # a bare number with nothing that makes it money ("2号线")
        attached = amount.bound != "exact" or amount.approx or _ATTACHED_RE.match(clause[amount.end :]) is not None
        if not topic:
            if BUDGET in answers and (amount.unit == "元" or max(amount.numbers()) >= 100):
                pass  # "六千左右吧" answering "预算大概多少？"
            elif not (wanted and amount.unit == "元" and attached):
                continue
        start = clause.rfind(topic, 0, amount.start) if topic else amount.start
        return _budget_candidate(amount, clause), (max(0, start), amount.end)
    cap = _CAP_FINE_EN_RE.search(clause)
    if cap:
        # "actually up to 6000 is fine": a cap the customer accepts is the budget
        amount_text = cap.group("amount").replace(",", "")
        if (cap.group("unit") or "").lower() in {"k", "thousand"}:
            amount_text = str(int(float(amount_text) * 1000))
        return _profile_candidate("budget", amount_text + "以内", confidence=0.85, clause=clause), cap.span()
    match = _BUDGET_EN_RE.search(clause)
    if match:
        amount_text = match.group("amount").replace(",", "")
        unit = (match.group("unit") or "").lower()
        if unit in {"k", "thousand"}:
            amount_text = str(int(float(amount_text) * 1000))
        elif unit == "w":
            amount_text += "万"
        capped = re.search(r"up\s+to|max|under|below|at\s+most", match.group(0), re.IGNORECASE)
        value = amount_text + ("以内" if capped else "")
        return _profile_candidate("budget", value, confidence=0.9, clause=clause), match.span()
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
            return value, match.span()
        return f"{rooms}居室", match.span()
    match = _LAYOUT_EN_RE.search(clause)
    if match:
        if match.group("studio"):
            return "studio", match.span()
        number = _EN_NUMBERS.get(match.group("n").lower(), match.group("n"))
        return f"{number}-bedroom", match.span()
    return None


# A place is where the customer wants to live only in a place context: a locative or want verb before
# it ("想在浦东找", "考虑滨江"), or a list of places; "浦东的房价太贵了" and "在望京上班" are not.
_PLACE_BEFORE_RE = re.compile(
    r"(?:在|住|租|买|找|选|考虑|靠近|搬到|搬去|去|到|定在|选在|就在|想要|要|喜欢|倾向|首选|优先|或者|或是|或|和|跟|还是|、)\s*$"
)
# A branch of the business in a place ("福田校区", "天河的自提点", "长宁那家店"): where the customer
# wants to be served is their area, in any trade (issue 22).
FACILITY = r"(?:的)?(?:那家|这家|那个|这个)?(?:校区|分校|门店|分店|店|网点|自提点|取件点|取货点|服务点|营业厅|分部|点)"
_PLACE_AFTER_RE = re.compile(
    rf"^\s*(?:(?:这边|那边|附近|一带|周边|那块|这块|那片|这片|片区|板块|方向|沿线|区域)|{FACILITY})"
)
_PLACE_WORK_RE = re.compile(r"^\s*(?:这边|那边|附近)?(?:上班|工作|上学|读书|打工|办公|出差|开会)")
_PLACE_LIST_ONLY_RE = re.compile(
    r"^(?:[、，,和或者是跟及还\s]|都行|都可以|也行|都ok|都OK|都考虑|吧|啊|呀|的|这边|那边|附近|一带)*$"
)


def _place_words(place: Place) -> tuple[str, str]:
    """(words, their reading): 浦东 → (浦东, 浦东新区); a name as written or from the account's list → no reading."""
    if place.rank == LOCAL:
        return place.words, place.city
    return place.words, (place.name if place.shortened else "")


def _districts(
    clause: str, *, names: PlaceNames | None, answers: frozenset[str], wanted: bool
) -> tuple[list[Place], tuple[int, int]] | None:
    places = [p for p in places_in(clause, names) if p.rank not in {PROVINCE, CITY}]
    if not places:
        return None
    kept: list[Place] = []
    bare = bool(answers & {AREA, NEEDS}) and _PLACE_LIST_ONLY_RE.match(_without(clause, places)) is not None
    for place in places:
        before, after = clause[: place.start], clause[place.end :]
        if _NEGATED_PLACE_ZH.search(before + clause[place.start : place.start + 1]):
            continue
        if _PLACE_WORK_RE.match(after):
            continue  # "在望京上班": where they work, not where they want to live
        listed = bool(kept) and re.search(r"(?:或者|或是|或|和|跟|还是|、|，|,)\s*$", before) is not None
        if bare or listed or _PLACE_BEFORE_RE.search(before) or (wanted and _PLACE_AFTER_RE.match(after)):
            kept.append(place)
    if not kept:
        return None
    return kept, (kept[0].start, kept[-1].end)


def _without(clause: str, places: list[Place]) -> str:
    text = clause
    for place in sorted(places, key=lambda p: p.start, reverse=True):
        text = text[: place.start] + text[place.end :]
    return text


def _district_candidate(places: list[Place], clause: str, confidence: float) -> Candidate:
    words = "、".join(dict.fromkeys(_place_words(p)[0] for p in places))
    readings = [_place_words(p) for p in places]
    meaning = "、".join(reading for _, reading in readings if reading) if any(r for _, r in readings) else ""
    if meaning and len(places) > 1:
        meaning = "、".join(reading or word for word, reading in readings)
    return _profile_candidate(
        "district", words, confidence=confidence, clause=clause, meaning=meaning, values=tuple(places)
    )


# "滨江那边也行", "南山或者福田都行", "其实昌平也能接受", "嘉定也不是不能考虑": places, list glue and an
# acceptance, nothing else. Such a place is one more area the customer would live in.
_ALTERNATIVE_ACCEPT_RE = re.compile(
    r"也行|也可以|也能接受|可以接受|能接受|也考虑|都考虑|都行|都可以|都能接受|都ok|都OK|也不是不能考虑|也不是不行|"
    r"也不是不可以|也没问题|也成|也ok|也OK|都没问题|都成|也能考虑|能考虑|可以考虑|都能考虑"
)
_ALTERNATIVE_REST_RE = re.compile(
    r"^(?:[、，,和跟及与\s]|或者|或是|或|还是|要不|不然|其实|那|的话|这边|那边|附近|一带|那一带|那块|这块|那一块|那片|这片|"
    r"周边|片区|板块|方向|也能|能|也|都|校区|分校|门店|分店|店|网点|自提点|取件点|取货点|服务点|营业厅|分部|点|那家|这家|"
    r"也行|也可以|看看|看一下|考虑|也能接受|可以接受|能接受|也考虑|都考虑|都行|都可以|都能接受|都ok|都OK|也不是不能|"
    r"也不是不行|也不是不可以|也没问题|也成|也ok|也OK|都没问题|都成|吧|啊|呀|哈|的|我|我们)*$"
)
# An unknown name followed by 那边/一带… in the same frame ("张江那边也可以看看") is a place too,
# unless it is a landmark the home should be near ("地铁站那边也行").
_UNKNOWN_AREA_RE = re.compile(
    r"^(?:其实|那|要不)?(?P<where>[\u4e00-\u9fff]{2,4}?)(?:那边|这边|一带|附近|那块|这块|那片|这片|周边|片区|板块)"
)
_LANDMARK_RE = re.compile(
    r"地铁|站|学校|公司|单位|医院|商场|超市|公园|市区|市中心|郊区|城里|老家|家|这|那|小区|楼|房|附近|公寓|中心|大学|中学|小学|"
    r"幼儿园|广场|大厦|写字楼|园区|工业园|机场|火车|高铁|码头|银行|市场|景点|餐馆|酒店|饭店|餐厅|宾馆|酒楼|门店|店|单元|"
    r"以后|之后|结束|完|周边|哪|什么|其"
)
# "想在张江附近找", "要光谷那边的": a name the gazetteer does not know, in a frame only an area fills.
_UNKNOWN_AREA_FRAME_RE = re.compile(
    r"(?:在|到|去|要|考虑|住)(?P<where>[\u4e00-\u9fff]{2,4}?)(?:那边|这边|一带|附近|周边|那块|那片|片区|板块)"
)


def unknown_area(clause: str, *, wanted: bool) -> tuple[Candidate, tuple[int, int]] | None:
    """An area the gazetteer does not know, in a frame only an area fills ("想在张江附近找")."""
    match = _UNKNOWN_AREA_FRAME_RE.search(clause) if wanted else None
    if match is None:
        return None
    where = match.group("where")
    if _LANDMARK_RE.search(where) or re.match(r"[不没别也都就还在我你他她它]", where):
        return None
    if _PLACE_WORK_RE.match(clause[match.end() :]) or _NEGATED_PLACE_ZH.search(clause[: match.start() + 1]):
        return None
    candidate = _profile_candidate("district", where, confidence=0.8, clause=clause)
    return candidate, match.span("where")


def alternative_places(clause: str, names: PlaceNames | None) -> Candidate | None:
    """The areas a clause accepts as alternatives ("宝安那边也行" → 意向区域：宝安), flagged `extends`:
    they add to the areas the customer named before rather than replace them."""
    if not _ALTERNATIVE_ACCEPT_RE.search(clause):
        return None
    places = [p for p in places_in(clause, names) if p.rank not in {PROVINCE, CITY}]
    if places:
        if not _ALTERNATIVE_REST_RE.match(_without(clause, places)):
            return None
        candidate = _district_candidate(places, clause, 0.85)
    else:
        unknown = _UNKNOWN_AREA_RE.match(clause)
        if (
            unknown is None
            or _LANDMARK_RE.search(unknown.group("where"))
            or re.match(r"[不没别也都就还在]", unknown.group("where"))
        ):
            return None
        if not _ALTERNATIVE_REST_RE.match(clause[unknown.end("where") :]):
            return None
        candidate = _profile_candidate("district", unknown.group("where"), confidence=0.8, clause=clause)
    return dataclasses.replace(candidate, extends=True)


def _split_reading(value: str) -> tuple[list[str], list[str]]:
    match = re.fullmatch(r"(?P<words>[^（]*)(?:（(?P<meaning>[^）]*)）)?", value.strip())
    if match is None:
        return [value], []
    words = [w for w in match.group("words").split("、") if w]
    meaning = [m for m in (match.group("meaning") or "").split("、") if m]
    return words, meaning


def extended_value(current: str, candidate: Candidate) -> str:
    """The field value once an alternative is added to it (`Candidate.extends`): the profile's
    浦东（浦东新区） and "滨江那边也行" → 浦东、滨江（浦东新区、滨江区）. The candidate's own value when
    there is nothing to add to, it is already there, or both would not fit the field."""
    if not candidate.extends or not current.strip():
        return candidate.value
    old_words, old_meaning = _split_reading(current)
    new_words, new_meaning = _split_reading(candidate.value)
    added = [w for w in new_words if w not in old_words]
    if not added:
        return current
    words = old_words + added
    if old_meaning or new_meaning:
        # Each word's reading, or the word itself where it has none (an account's own name).
        readings = dict(zip(old_words, old_meaning if len(old_meaning) == len(old_words) else old_words, strict=False))
        readings.update(zip(new_words, new_meaning if len(new_meaning) == len(new_words) else new_words, strict=False))
        meaning = "、".join(dict.fromkeys(readings.get(w, w) for w in words))
        value = f"{'、'.join(words)}（{meaning}）"
    else:
        value = "、".join(words)
    limit = min(MAX_VALUE_CHARS, _FIELD_MAX.get(candidate.field or "", MAX_VALUE_CHARS))
    return value if len(value) <= limit else candidate.value


def merged_districts(earlier: Candidate, later: Candidate) -> Candidate:
    """Two areas of one message ("静安，或者长宁也行"): one item naming both."""
    places = [v for v in (*earlier.values, *later.values) if isinstance(v, Place)]
    if len(places) == len(earlier.values) + len(later.values) and places:
        merged = _district_candidate(places, later.clause, max(earlier.confidence, later.confidence))
    else:
        words = "、".join(dict.fromkeys(re.sub(r"（.*$", "", c.value) for c in (earlier, later)))
        merged = _profile_candidate("district", words, confidence=later.confidence, clause=later.clause)
    return dataclasses.replace(merged, extends=earlier.extends)


def _date_candidate(
    field_name: str, words: str, clause: str, confidence: float, context: ExtractContext | None
) -> Candidate:
    sent_at = _today(context)
    span = dates_in(words, sent_at.date()) if sent_at is not None else []
    if not span:
        return _profile_candidate(field_name, words, confidence=confidence, clause=clause)
    meaning, expires_at = _date_meaning(span[0], context)
    return _profile_candidate(
        field_name,
        words,
        confidence=confidence,
        clause=clause,
        meaning=meaning,
        values=(span[0],),
        expires_at=expires_at,
    )


def profile_facts(
    clause: str,
    *,
    confidence: float,
    context: ExtractContext | None = None,
    answers: frozenset[str] = frozenset(),
    wanted: bool = False,
    budget_only: bool = False,
) -> tuple[list[Candidate], list[tuple[int, int]]]:
    """The clause's declared profile facts, with the span each was read from.

    `answers` is what the agent's previous message asked (a bare "六千左右" then is the budget);
    `wanted` says the clause states a want (an amount or a place attached to it counts);
    `budget_only` reads only the budget (an acceptance: "总价两百万全款能接受").
    """
    found: list[Candidate] = []
    spans: list[tuple[int, int]] = []
    budget = _budget(clause, answers=answers, wanted=wanted)
    if budget:
        found.append(budget[0])
        spans.append(budget[1])
    if budget_only:
        return found, spans
    layout = _layout(clause)
    if layout and _NEGATED_LAYOUT_ZH.search(clause[: layout[1][0]]):
        layout = None  # "我不是要两居室"
    if layout and _CURRENT_HOME_RE.search(clause[: layout[1][0]]):
        layout = None  # "我现在住的是一室一厅", "那套两居室": a home that is, not the one wanted
    if layout:
        found.append(_profile_candidate("layout", layout[0], confidence=confidence, clause=clause))
        spans.append(layout[1])
    city = _CITY_ZH_RE.search(clause) or _CITY_EN_RE.search(clause)
    if city and CJK_RE.search(city.group("city")):
        if _NEGATED_PLACE_ZH.search(clause[: city.start("city")]):
            city = None
    elif city and (_NEGATED_PLACE_EN.search(clause[: city.start()]) or NO_LONGER_EN.search(clause)):
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
    area = (district.group("area") or district.group("named") or "") if district else ""
    if district and area and not _NOT_DISTRICT.search(area) and not _CITY_ZH_RE.fullmatch(area):
        named = district.group("named") is not None
        places = (
            _districts(clause, names=context.places if context else None, answers=answers, wanted=True)
            if named
            else None
        )
        named_places = [
            p for p in places_in(area, context.places if context else None) if p.rank not in {PROVINCE, CITY}
        ]
        if places and len(places[0]) > 1:
            found.append(_district_candidate(places[0], clause, confidence))
            spans.append(places[1])
        elif not named and len(named_places) == 1 and named_places[0].words == area:
            found.append(_district_candidate(named_places, clause, confidence))  # "区域的话，浦东吧" → 浦东新区
            spans.append(district.span())
        else:
            found.append(_profile_candidate("district", area, confidence=confidence, clause=clause))
            spans.append(district.span())
    elif CJK_RE.search(clause):
        places = _districts(clause, names=context.places if context else None, answers=answers, wanted=wanted)
        unknown = None if places else unknown_area(clause, wanted=wanted)
        if places:
            found.append(_district_candidate(places[0], clause, confidence))
            spans.append(places[1])
        elif unknown is not None:
            found.append(unknown[0])
            spans.append(unknown[1])
    move = _MOVE_ZH_RE.search(clause)
    if move:
        date = re.sub(r"\s+", "", move.group("date1") or move.group("date2") or "")
        found.append(_date_candidate("move_in_date", date, clause, confidence, context))
        spans.append(move.span())
    elif MOVE_IN in answers and CJK_RE.search(clause):
        spans_found = dates_in(clause, (_today(context) or datetime.now().astimezone()).date())
        if spans_found:
            found.append(_date_candidate("move_in_date", spans_found[0].words, clause, confidence, context))
            spans.append((spans_found[0].start, spans_found[0].end))
    else:
        move_en = _MOVE_EN_RE.search(clause)
        if move_en:
            found.append(_date_candidate("move_in_date", move_en.group("date"), clause, confidence, context))
            spans.append(move_en.span())
    found += _time_bound_facts(clause, confidence=confidence, context=context, spans=spans)
    return found, spans


def _time_bound_facts(
    clause: str, *, confidence: float, context: ExtractContext | None, spans: list[tuple[int, int]]
) -> list[Candidate]:
    """A viewing appointment and the end of the current lease: dated, so they expire."""
    found = []
    today = (_today(context) or datetime.now().astimezone()).date()
    for regex, key, label in ((_VIEWING_ZH_RE, VIEWING_KEY, "看房时间"), (_LEASE_END_ZH_RE, LEASE_END_KEY, "租约到期")):
        match = regex.search(clause)
        if match is None:
            continue
        words = re.sub(r"\s+", "", next(g for g in match.groups() if g))
        span = dates_in(words, today)
        if not span:
            continue
        found.append(_dated_fact(key, label, span[0], words, confidence=confidence, clause=clause, context=context))
        spans.append(match.span())
    return found
