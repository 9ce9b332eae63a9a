"""Declared profile facts (budget, layout, city, district, move-in date) from a positive statement."""

from __future__ import annotations

import re

from memory.capture.extract._common import CJK_RE, FACT, MAX_VALUE_CHARS, PROFILE_LABELS, Candidate
from memory.capture.extract.clauses import NO_LONGER_EN
from memory.capture.extract.objects import object_key
from memory.text import normalize_content

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

# A city right after a negation ("我不在北京", "我不会搬到上海") is not where the customer is.
_NEGATED_PLACE_ZH = re.compile(r"(?:不|没|别|并非)[\u4e00-\u9fff]{0,3}$")
_NEGATED_PLACE_EN = re.compile(r"\bnot\b|n't\b|\bno\s+longer\b|\bnever\b", re.IGNORECASE)
_NEGATED_LAYOUT_ZH = re.compile(r"(?:不|没)(?:是|再)?(?:要|想要|想|找|租|买|考虑)?$")


def _profile_candidate(field_name: str, value: str, *, confidence: float, clause: str) -> Candidate:
    value = normalize_content(value)[:MAX_VALUE_CHARS]
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


def profile_facts(clause: str, *, confidence: float) -> tuple[list[Candidate], list[tuple[int, int]]]:
    """The clause's declared profile facts, with the span each was read from."""
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
