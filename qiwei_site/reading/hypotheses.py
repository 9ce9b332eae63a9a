"""What a model's hypothesis may be about (issue 35). Plain Python, table-driven.

A hypothesis (an inference to confirm with the customer) is kept only when it is about what the
messages it cites talk about: it shares a topic with them (`TOPICS`, one named row per topic, or a
place or a trade term both name). Some things are never a hypothesis, whatever the evidence:

- the sensitive personal information of PIPL art. 28 (`SENSITIVE`): criminal records, health,
  religion, ethnicity, sexual orientation, biometrics, financial accounts, precise whereabouts and
  minors — a model guessing at them is exactly what a customer must be protected from;
- claims that a transaction is done (signed, paid, a deposit handed over): that is the business
  state, which a person records, never a guess.

Each row carries its example, and the table tests read every one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from qiwei_site.reading.normalise import fold_compatibility
from qiwei_site.reading.values import PlaceNames, places_in
from qiwei_site.reading.values.vocabulary import BUILT_IN, Vocabulary


class Row(NamedTuple):
    name: str
    label: str  # in Chinese, for the trace and the review queue
    pattern: re.Pattern[str]
    example: str


def _row(name: str, label: str, pattern: str, example: str) -> Row:
    return Row(name, label, re.compile(pattern, re.IGNORECASE), example)


# What a customer's words and an inference can both be about. A hypothesis shares a topic with its
# evidence when one row matches both (or both name the same place or trade term).
TOPICS: tuple[Row, ...] = (
    _row(
        "budget",
        "预算与价格",
        r"预算|价|钱|租金|房租|月租|总价|首付|月供|贵|便宜|[万千]|元|块|\bbudget\b|\bprice\b|\brent\b|\bcost",
        "预算五千",
    ),
    _row(
        "area",
        "区域与位置",
        r"区|附近|周边|片区|板块|位置|地段|商圈|沿线|\barea\b|\bnear\b|\bdistrict\b",
        "想在浦东附近找",
    ),
    _row(
        "commute",
        "通勤与上班",
        r"上班|下班|工作|公司|单位|通勤|地铁|公交|[0-9一二三四五六七八九十]+号线|站|调到|\bwork(?:s|ing)?\b|\bcommut|\boffice\b|\bjob\b",
        "上班方便一点",
    ),
    _row(
        "layout",
        "户型与面积",
        r"[一二两三四五六1-6](?:居|室|房)|户型|厅|卫|面积|平米|平方|[0-9]+平|大小|单间|开间|整租|合租|\bbedroom|\bstudio\b",
        "想要两居室",
    ),
    _row(
        "household",
        "同住的人",
        r"一家|家人|家里|几口|老婆|老公|爱人|父母|爸妈|老人|室友|同住|一个人|独居|两个人|\bfamily\b|\bwife\b|\bhusband\b|\balone\b|\broommate",
        "一家三口",
    ),
    _row("pets", "宠物", r"宠物|猫|狗|养|\bpets?\b|\bcats?\b|\bdogs?\b", "希望能养猫"),
    _row("car", "车与车位", r"车|停车|车位|\bcar\b|\bparking\b", "小区有车位吗"),
    _row("school", "学校与学区", r"学校|学区|上学|小学|中学|幼儿园|\bschool\b", "希望有学区"),
    _row(
        "move",
        "入住与搬家",
        r"入住|搬|起租|租期|到期|下个月|月底|几号|\bmov(?:e|ing)\b|\blease\b",
        "下个月15号之前要入住",
    ),
    _row(
        "floor",
        "楼层与朝向",
        r"楼层|层|顶楼|一楼|高层|低层|电梯|朝南|朝北|朝向|[东南西北]向|向阳|南北|通透|采光|\bfloor\b|\belevator\b",
        "不考虑顶楼",
    ),
    _row("quiet", "环境", r"安静|吵|噪音|环境|绿化|小区|配套|\bquiet\b|\bnoise\b", "比较喜欢安静的小区"),
    _row("decoration", "装修与家具", r"装修|家具|家电|精装|简装|毛坯|\bfurnish", "要精装修的"),
    _row("viewing", "看房", r"看房|看看|带看|约看|\bviewing\b", "周六上午可以看房"),
    _row("after_sales", "售后", r"退|换|修|补发|售后|质量|坏|\breturn\b|\brefund\b|\brepair\b", "想换个大一码的"),
    _row(
        "study",
        "学习与课程",
        r"课|培训|补习|辅导|报名|报班|小班|大班|老师|考试|\bcourse\b|\bclass\b|\blesson",
        "想报个英语培训",
    ),
    _row(
        "travel",
        "出行",
        r"旅游|旅行|出行|出游|行程|玩|度假|酒店|机票|航班|团|\btrip\b|\bhotel\b|\bflight\b|\btravel",
        "想十月份去云南玩",
    ),
)

# PIPL art. 28 (sensitive personal information), and completed transactions: never a hypothesis.
SENSITIVE: tuple[Row, ...] = (
    _row(
        "criminal",
        "犯罪记录",
        r"犯罪|前科|案底|坐牢|服刑|判刑|刑满|违法记录|被捕|拘留|吸毒|\bcriminal\b|\bconvict|\bprison\b|\barrest",
        "客户有犯罪记录",
    ),
    _row(
        "health",
        "健康状况",
        r"病|癌|孕|残疾|抑郁|焦虑症|精神|心理疾病|艾滋|乙肝|糖尿|高血压|住院|手术|体检|吃药|\bpregnan|\bdisease\b|\billness|\bcancer\b|\bhiv\b|\bdisabilit|\bdepress|\bmental\b",
        "客户可能怀孕了",
    ),
    _row(
        "religion",
        "宗教信仰",
        r"宗教|信仰|佛教|基督|伊斯兰|穆斯林|天主|道教|信教|礼拜|清真|\breligio|\bchristian|\bmuslim|\bbuddhis|\bchurch\b|\bmosque\b",
        "客户信仰伊斯兰教",
    ),
    _row("ethnicity", "民族", r"民族|汉族|回族|藏族|维吾尔|蒙古族|壮族|少数民族|\bethnic|\brace\b", "客户是少数民族"),
    _row(
        "sexual_orientation",
        "性取向",
        r"同性恋|性取向|同志|双性恋|\bgay\b|\blesbian\b|\blgbt|\bbisexual\b|\bsexual\s+orientation\b",
        "客户可能是同性恋",
    ),
    _row(
        "biometrics",
        "生物识别",
        r"指纹|人脸|面部识别|虹膜|声纹|基因|\bdna\b|\bfingerprint|\bface\s*id\b|\bbiometric",
        "客户录过指纹",
    ),
    _row(
        "financial_account",
        "金融账户与收入",
        r"银行卡|银行账户|账户余额|账户|存款|负债|欠款|欠债|信用卡|征信|收入|工资|月薪|年薪|资产|\bbank\b|\bcredit\s+card\b|\bsalary\b|\bincome\b|\bdebt\b|\bsavings\b",
        "客户月薪三万以上",
    ),
    _row(
        "whereabouts",
        "行踪与详细住址",
        r"行踪|住址|门牌|几号楼|几单元|定位|所在位置|几点出门|几点回家|每天[^，,。]{0,6}(?:出门|回家|下班|上班|出发)|出门时间|回家时间|\bwhereabouts\b|\bhome\s+address\b|\blocation\b",
        "客户每天八点出门",
    ),
    _row(
        "minor",
        "未成年人",
        r"未成年|小孩|孩子|儿子|女儿|宝宝|婴儿|小学生|初中生|\bminor\b|\bchild|\bkids?\b|\bson\b|\bdaughter\b|\bbaby\b",
        "客户的孩子在上小学",
    ),
    _row(
        "completed_transaction",
        "已完成的交易（签约、付款）",
        r"签了|已签|签约|签合同|签好|付了|已付|付清|交了|已交|交过|打款|转账|成交|买下|租下|已购|下单了|定金|押金已|\bsigned\b|\bpaid\b|\bdeposit\b|\bpurchased\b",
        "客户已经签了合同并付清押金",
    ),
)


def topics(text: str, *, places: PlaceNames | None = None, vocabulary: Vocabulary | None = None) -> frozenset[str]:
    """What `text` is about: the `TOPICS` rows it matches, the places it names (`place:<name>`) and the
    trade terms (`term:<word>`)."""
    folded = fold_compatibility(text)
    found = {row.name for row in TOPICS if row.pattern.search(folded)}
    found |= {f"place:{place.name}" for place in places_in(folded, places)}
    found |= {f"term:{term.word}" for term in (vocabulary or BUILT_IN).terms_in(folded)}
    return frozenset(found)


def shared_topics(
    hypothesis: str,
    evidence: Iterable[str],
    *,
    places: PlaceNames | None = None,
    vocabulary: Vocabulary | None = None,
) -> frozenset[str]:
    """The topics a hypothesis shares with the words it rests on (empty: it is about something else)."""
    about = topics(hypothesis, places=places, vocabulary=vocabulary)
    said: set[str] = set()
    for words in evidence:
        said |= topics(words, places=places, vocabulary=vocabulary)
    return about & frozenset(said)


def sensitive(text: str) -> Row | None:
    """The first `SENSITIVE` row the text falls under, or None."""
    folded = fold_compatibility(text)
    return next((row for row in SENSITIVE if row.pattern.search(folded)), None)


__all__ = ["SENSITIVE", "TOPICS", "Row", "sensitive", "shared_topics", "topics"]
