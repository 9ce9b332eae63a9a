"""What kind of clause the customer wrote (issue 22): the one decision every clause rule asks.

- `STATEMENT`: the customer's own words about their world ("我要朝南的", "预算五千").
- `QUESTION`: asks something — a question mark closing it, a question word, or an either/or
  ("是浦东还是徐汇的", "退款还是换货快"). A question states no want, unless a rule reads it as a
  request or as asking after stock ("能帮我找个两居吗", "有没有带阳台的两居").
- `REQUEST`: asks us to act ("帮我找…", "给我推荐…"); what it asks for is a want.
- `REASON`: why the customer wants something ("因为太潮", "主要是采光好", "because it's noisy"): a
  reason is not a wish; only the facts it states (a budget, who lives there) may be kept.
- `PASTED`: a line the customer pastes or an app's template produces (a shared listing, an order
  or shipping notice, a product title, a link): nobody's words, so nothing is read from it.

The kind is decided on the clause alone (and whether its sentence ends with a question mark); the
sentence-level reading (a reported speech, a condition governing the next clause) stays with the
rules in `qiwei_site.reading.extract`.
"""

from __future__ import annotations

import re
from enum import StrEnum

from qiwei_site.reading.extract.address import SURNAME
from qiwei_site.reading.extract.clauses import QUESTION_RE


class ClauseKind(StrEnum):
    STATEMENT = "statement"
    QUESTION = "question"
    REQUEST = "request"
    REASON = "reason"
    PASTED = "pasted"


# "是浦东还是徐汇", "退款还是换货", "A or B?": two options offered for the other side to pick. Not
# "我还是喜欢高层" (还是 = still / rather), nor "浦东还是徐汇都行" (either is fine: an answer).
_EITHER_OR_RE = re.compile(
    r"[\u4e00-\u9fffA-Za-z0-9](?<!我)(?<!我们)(?<!你)(?<!您)(?<!就)(?<!也)(?<!都)(?<!那)"
    r"还是(?!要|想|喜欢|希望|觉得|倾向|选|比较|算了|不|没|别|先|等|得|挺|很|有点|老|那|这|按|以|用|照)"
    r"[\u4e00-\u9fffA-Za-z0-9]"
)
_EITHER_FINE_RE = re.compile(r"都(?:行|可以|好|ok|OK|考虑|能接受|没问题)|随便|无所谓")

_REQUEST_RE = re.compile(
    r"^(?:那|那就|就|麻烦|请|劳驾|辛苦)?(?:你|您|你们)?(?:再)?(?:帮我们?|给我们?|替我|帮忙)(?:再)?"
    r"(?:找|推荐|介绍|留意|物色|搜|选|看看|挑|安排|发)|"
    r"^(?:please\s+)?(?:find|recommend|show|send|get)\s+me\b",
    re.IGNORECASE,
)

_REASON_RE = re.compile(
    r"^(?:主要|其实|就|也|还)?(?:是)?(?:因为|由于|毕竟|原因是|理由是|为了|因(?!素)|主要是)|"
    r"^(?:mainly\s+|just\s+|partly\s+)?(?:because|since|cause|'cause|as\s+(?:i|we|it)|due\s+to|the\s+reason\s+is)\b",
    re.IGNORECASE,
)

# A pasted or templated line: app share cards ("我正在看某某的房源：…", "分享房源"), order and
# shipping notices, a listing title with a price per unit and no word of the customer's own. Labelled
# fields alone are not: a customer fills in the form an agent sent.
_PASTED_LINE_RE = re.compile(
    r"(?:我|我正|我在|我正在)(?:在)?(?:看|浏览|关注)(?:了)?[^，,。]{0,20}?(?:的)?(?:房源|房子|二手房|新房|宝贝|商品|链接|笔记|视频|课程)[：:]|"
    r"(?:分享|转发)(?:了)?(?:一个|一套|个)?(?:房源|宝贝|商品|链接|笔记|课程)|来自.{1,12}的分享|点击(?:查看|链接|打开)|"
    r"(?:房源|宝贝|商品|链接|笔记|课程)(?:分享|推荐)】|"
    r"您的(?:快件|包裹|订单)(?:已|正在)|"
    # An app's line sent in the customer's name: "您好，我正在看某某的房子", "我想了解某某即将上架的3室房源报价",
    # "我想咨询#小区名#小区" (a listing card's or a button's words, not the customer's).
    r"^(?:hi|hello|您好|你好)?[\s，,。!！]*(?:您好|你好)?[\s，,]*我正在看[^，,。？?！!]{1,40}?(?:的房子|的房源|小区|楼盘)[。！!]?$|"
    r"即将上架的[^，,。]{0,12}房源|我想咨询\s*#[^#]{1,20}#|"
    # a listing card: an app's tag opening it, "房源分享", a price per month or per square metre
    r"(?:房源|宝贝|商品|链接|笔记|视频)分享|"
    r"^(?=[^\n]*(?:[一二两三四五六1-6]室|[一二两1-3]厅|㎡|平米))[^\n]*(?:^【[^】]{1,12}】|\d+(?:\.\d+)?\s*(?:元|万)\s*/\s*(?:月|平|㎡))|"
    r"\b(?:i\s*(?:'m|\s+am)\s+(?:looking\s+at|viewing)\s+[^.,]{1,40}'s\s+(?:flat|listing|apartment|house|home|post)|"
    r"shared\s+(?:a\s+)?(?:listing|link|post)|check\s+out\s+this\s+(?:listing|link|flat))\b",
    re.IGNORECASE,
)
# Within a line of the customer's own words, a clause that is a link or a bracketed title.
# Within a line of the customer's own words, a bracketed listing or product title
# ("我正在看【翠湖湾·3室2厅·128㎡】，想咨询一下"); a short bracket ("【急】") is the customer's own.
_PASTED_CLAUSE_RE = re.compile(r"【(?=[^】]*(?:室|厅|㎡|平米|元|·|¥|￥))[^】]{6,60}】")
# Spans nobody typed as words, cut out of a line before it is read: links, order and tracking numbers.
_PASTED_SPAN_RE = re.compile(
    r"https?://\S+|www\.\S+|(?:订单|运单|快递单|物流单|退货单)(?:编)?号\s*[:：]?\s*[A-Za-z]*\d{6,}", re.IGNORECASE
)


# A forwarded chat record: a header ("[聊天记录]", "【转发】", "以下是聊天记录") makes the rest of the
# message somebody else's words; a line opening with a speaker's label ("张先生：", "客户: ") is one
# line of such a record. The header and the label are cut before the line is read.
_FORWARD_HEADER_RE = re.compile(
    r"^\s*(?:[\[【(（]\s*(?:聊天记录|转发|转发消息|引用|合并转发)\s*[\]】)）]|(?:聊天记录|转发(?:消息)?|以下是[^：:]{0,12}(?:聊天记录|对话))\s*[:：]|"
    # "转发一下我老公发的：…", "我同事写的：…": somebody's words, introduced
    r"(?:转发|转给你|转你|发你看|你看看)[^：:]{0,12}[:：]|[^：:，,。]{1,12}(?:发的|说的|写的|的原话|发来的)[:：])\s*"
)
# Family and people the customer would forward as a record's speaker ("老婆：我要三居室", "我妈：…").
KIN = (
    r"老婆|老公|媳妇|爱人|太太|丈夫|妻子|老妈|老爸|妈妈|爸爸|我妈|我爸|爸妈|父母|婆婆|公公|岳父|岳母|丈母娘|老丈人|"
    r"姐姐|哥哥|弟弟|妹妹|姐夫|嫂子|弟媳|妹夫|表哥|表姐|表弟|表妹|堂哥|堂姐|堂弟|堂妹|舅舅|舅妈|姑姑|姑父|姨妈|姨父|小姨子?|"
    r"大姨子?|小舅子|叔叔|婶婶|伯伯|伯母|阿姨|爷爷|奶奶|外公|外婆|姥姥|姥爷|侄子|侄女|外甥女?|儿媳|女婿|男朋友|女朋友|"
    r"男友|女友|对象|闺蜜|室友|同事|同学|朋友|领导|老板|合伙人|邻居|亲戚|家人|家里人"
)
# A bare name as a speaker's label ("张三：…", "陈晓：…"), never a field the customer fills in
# ("预算：八千", "高层：不要"): a surname and one or two characters that are no such word.
_FIELD_LABEL_RE = re.compile(
    r"^(?:预算|户型|房型|区域|面积|楼层|高层|低层|朝向|装修|位置|地址|地段|电话|手机|要求|需求|备注|时间|价格|价位|租金|房租|月租|"
    r"单价|总价|首付|月供|入住|称呼|城市|意向|小区|方式|数量|颜色|尺码|型号|规格|车位|学区|地铁|交通|通勤|宠物|人数|周边|配套|"
    r"环境|家具|家电|电梯|阳台|付款|押金|周期|租期|预定|预订|日期|车型|房间|费用|包括|包含|其他|其它|另外|补充|重点|方向|问题)"
)
_SPEAKER_LABEL_RE = re.compile(
    r"^\s*(?:\d{1,2}[:：]\d{2}\s*)?(?P<who>[\u4e00-\u9fff]{1,3}(?:先生|女士|小姐|太太|老师|经理|总|姐|哥|阿姨|叔叔|师傅)|"
    rf"客户|顾客|客服|中介|房东|业主|经纪人|买家|卖家|顾问|店员|租客|{KIN}|{SURNAME}[\u4e00-\u9fff]{{1,2}})\s*[:：]\s*(?=\S)"
)
# A merged-forward record's stamp line: who spoke and when, alone on its line ("张三 2024-05-01 10:00",
# "刘洋  14:05"); the lines after it are that person's. Not a time the customer answers with ("明天 14:00").
_RECORD_STAMP_RE = re.compile(
    r"^\s*(?!今天|明天|后天|昨天|前天|周|星期|礼拜|上午|下午|中午|晚上|早上|今晚|明早|明晚|每天)"
    r"(?P<who>[\u4e00-\u9fff]{2,4}|[A-Za-z][A-Za-z .'_-]{0,20})\s+"
    r"(?:(?:\d{4}[-/.年])?\d{1,2}[-/.月]\d{1,2}日?\s*)?\d{1,2}[:：]\d{2}(?:[:：]\d{2})?\s*$"
)


def forward_header(line: str) -> str | None:
    """The line after a forwarded record's header ("[聊天记录] …" → "…"), or None when it has none."""
    match = _FORWARD_HEADER_RE.match(line)
    return line[match.end() :] if match else None


def speaker_line(line: str) -> str | None:
    """The words of a line that opens with a speaker's label ("张先生：我想…", "老婆：…", "张三：…" →
    the words after it), or None."""
    match = _SPEAKER_LABEL_RE.match(line)
    if match is None or _FIELD_LABEL_RE.match(match.group("who")):
        return None
    return line[match.end() :]


def record_stamp(line: str) -> bool:
    """The line is a merged-forward record's stamp (a speaker and a time, alone on the line)."""
    return _RECORD_STAMP_RE.match(line) is not None


def without_pasted_spans(line: str) -> str:
    """The line with links and order numbers cut out (each a space): nobody's words."""
    return _PASTED_SPAN_RE.sub(" ", line)


def pasted(line: str) -> bool:
    """A line nobody typed as their own words: a share card, a notice, labelled fields, a title.
    Read per line of a message, before it is split into clauses (a card's "：" would split it)."""
    return _PASTED_LINE_RE.search(line) is not None


def is_either_or(clause: str) -> bool:
    return _EITHER_OR_RE.search(clause) is not None and _EITHER_FINE_RE.search(clause) is None


def clause_kind(clause: str, *, closes_question: bool = False) -> ClauseKind:
    """The kind of one clause; `closes_question` when it ends a sentence that ends with "？"."""
    if _PASTED_CLAUSE_RE.search(clause):
        return ClauseKind.PASTED
    # "…的景点吧？": a suggestion closed with a question mark asks nothing
    suggestion = re.search(r"吧\s*$", clause) is not None and re.search(r"是|会|又|该不", clause) is None
    if (closes_question and not suggestion) or QUESTION_RE.search(clause) or is_either_or(clause):
        return ClauseKind.QUESTION
    if _REASON_RE.search(clause):
        return ClauseKind.REASON
    if _REQUEST_RE.search(clause):
        return ClauseKind.REQUEST
    return ClauseKind.STATEMENT


__all__ = [
    "ClauseKind",
    "clause_kind",
    "forward_header",
    "is_either_or",
    "pasted",
    "record_stamp",
    "speaker_line",
    "without_pasted_spans",
]
