"""Questions that state a want: a customer asking after stock ("两居有吗", "有没有带阳台的一居",
"天河附近有没有便宜点的公寓", in any trade "有没有周末的雅思班") is saying what they look for;
a question about one listing ("这套有阳台吗"), about the process ("押金怎么退") or about something
that is no home ("有没有视频") is not.

`stock_want` turns such a question into the plain want it carries ("想要带阳台的一居"), which the
statement reader then reads like any other; everything else stays a question (None).
"""

from __future__ import annotations

import re

from qiwei_site.reading.extract.objects import trim_object
from qiwei_site.reading.values import PlaceNames, places_in

# A question about one listing or one thing already shown: never a want about stock.
_DEICTIC_RE = re.compile(
    r"这套|那套|这间|那间|这个|那个|这栋|那栋|这户|那户|这家|那家|这处|那处|这房|那房|该房|此房|它|刚才|刚刚|上次|"
    r"之前|前面|昨天|你发的|发的那|那几套|这几套|他家|它家|她家|他的|它的|该|这儿|那儿|这里|那里"
)
# "景点周边有酒店吗", "餐馆附近有没有景点": what lies near a place already shown is a question about it.
_SHOWN_PLACE_RE = re.compile(r"酒店|宾馆|餐馆|餐厅|饭馆|饭店|景点|景区|店|门店|校区")
_QUESTION_TAIL = r"[呢啊呀吗么嘛哈]*[?？]*$"
_STOCK_RES = (
    # "有没有带阳台的两居", "徐汇有没有四千以内的开间"
    re.compile(rf"^(?P<lead>.*?)(?:现在|目前)?还?有没有(?P<obj>.+?){_QUESTION_TAIL}"),
    # "有可以养狗的房源吗", "请问还有两室的房子吗"
    re.compile(r"^(?P<lead>.*?)(?:现在|目前)?还?有(?!没|点|些|人|空|时间)(?P<obj>.+?)(?:吗|么|嘛)[呢啊呀]*[?？]*$"),
    # "三千左右的一居室有吗", "两千五以下的合租单间还有吗", "一万以内的整租有没有"
    re.compile(rf"^(?P<obj>.+?)(?:现在|目前)?还?有(?:吗|么|嘛|没有|没)(?P<lead>){_QUESTION_TAIL}"),
    # "八千以内的三居能找到吗", "六七千能租到两居吗": can the customer get what they want
    re.compile(
        r"^(?P<lead>)(?P<obj>.+?)(?:能|可以|能不能|可不可以)?(?:找到|找得到|租到|租得到|买到|买得到)(?P<tail>.*?)"
        r"(?:吗|么|嘛|不)[呢啊呀]*[?？]*$"
    ),
)
# What the customer asks after is a home: a home noun, a layout, or a nominal "…的" ("带电梯的").
_HOME_HEAD_RE = re.compile(
    r"(?:房子|房源|房间|好房|公寓|单间|开间|一室户|卧室|主卧|次卧|套房|小区|楼盘|二手房|新房|整租|合租|loft|LOFT|复式|别墅|"
    r"洋房|平层|户型|[一二两三四五六1-6](?:室|居室|居|房)(?:[一二两三1-3]厅)?(?:[一二两三1-3]卫)?|[^的]的|"
    # what other trades' customers ask after (issue 22): a place to stay or eat, a product, a class
    r"酒店|宾馆|民宿|餐馆|餐厅|饭店|景点|店|款|同款|商品|产品|课|课程|班)$"
)
# Any trade's thing, described by what it should have ("带独立卫生间的单间", "周六上午上课的钢琴班",
# "38码的白色运动鞋"): the description says it is a want, whatever the noun.
_DESCRIBED_RE = re.compile(
    r"[\u4e00-\u9fffA-Za-z0-9]{2,}的(?!.*(?:地方|推荐|选择|东西|去处|安排))[\u4e00-\u9fffA-Za-z]{1,8}$"
)
# Asked after, but no want: information, the process, people, media, and "something better" that
# compares with a listing already shown.
_NOT_STOCK_RE = re.compile(
    r"什么|啥|哪|多少|几|怎么|优惠|活动|折扣|材料|资料|视频|照片|图片|实拍|手续|合同|发票|人(?!车)|推荐的|合适的|适合的|"
    r"别的|其他|其它|更|空房|钥匙|问题|消息|通知|时间|名额|号码|电话|微信"
)
# Words before the question that say nothing about the want.
_LEAD_FILLER_RE = re.compile(
    r"^(?:请问|想问下|想问一下|问一下|问下|我想问下|我想问一下|你好|您好|那|嗯|哦|还有|另外|现在|目前|你们|您们|咱们|贵司|"
    r"这边|那边|这里|店里|平台上|二手房|新房|租房|出租|这块|那就|就是|我想看看|我想问|麻烦问下)*"
)
# A lead that names where: a place, or a landmark the home should be near ("地铁口附近").
_NEAR_RE = re.compile(
    r"^(?P<where>[\u4e00-\u9fff\dA-Za-z]{2,10}?)(?:这边|那边|附近|周边|旁边|边上|一带|沿线|那块|这块|那片)$"
)


def _lead(lead: str, names: PlaceNames | None) -> str | None:
    """The lead as words for the want ("龙华那边", "地铁口附近"), "" when it says nothing, None when it
    says something else ("合同里", "最近")."""
    lead = _LEAD_FILLER_RE.sub("", lead.strip(" ，,"))
    if not lead:
        return ""
    places = places_in(lead, names)
    if places and places[0].start == 0 and (places[-1].end == len(lead) or _NEAR_RE.match(lead)):
        return lead
    near = _NEAR_RE.match(lead)
    if near is None or _DEICTIC_RE.search(near.group("where")) or _SHOWN_PLACE_RE.search(near.group("where")):
        return None
    return lead


def stock_want(clause: str, names: PlaceNames | None = None) -> str | None:
    """The want a question about stock carries ("有没有带阳台的两居" → "想要带阳台的两居"), or None."""
    text = clause.strip()
    if _DEICTIC_RE.search(text):
        return None
    for regex in _STOCK_RES:
        match = regex.match(text)
        if match is None:
            continue
        raw = match.group("obj").strip(" ，,")
        tail = match.groupdict().get("tail") or ""
        if tail:
            raw = f"{raw}的{tail.strip(' ，,')}"  # "六七千能租到两居" → "六七千的两居"
        raw = re.sub(r"(?:可以|能)?(?:给我)?(?:推荐|介绍)(?:一下|下|推荐|几套|几个)?$", "", raw)
        raw = re.sub(r"(?:出租|出售|在租|在卖|可租|招租|转租)$", "", raw)  # "有没有朝南的主卧出租"
        obj = trim_object(raw)
        obj = re.sub(r"^(?:那种|这种|那些|一些|一套|一个|一间|个|套|间)", "", obj)
        if not obj or _NOT_STOCK_RE.search(raw) or not (_HOME_HEAD_RE.search(raw) or _DESCRIBED_RE.search(raw)):
            return None
        lead = _lead(match.group("lead"), names)
        if lead is None:
            return None
        if re.match(r"不|没|无|别|免", obj):
            # "有不要中介费的房子吗", "有没有不临街的": the refusal is the statement.
            refusal = re.sub(r"^(?:不要|不用|不带|没有|没|无|免|别|不)", "不要", obj)
            return f"{lead}的{refusal}" if lead else refusal
        return f"想要{lead}的{obj}" if lead else f"想要{obj}"
    return None
