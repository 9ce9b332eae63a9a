"""Forms of address: how the customer wants to be called ("叫我小王", "我姓李", "call me Anna"),
which is the profile's 称呼."""

from __future__ import annotations

import re

from qiwei_site.reading.extract._common import ADDRESS_KEY, CJK_RE, FACT, Candidate
from qiwei_site.reading.extract.clauses import NO_LONGER_EN
from qiwei_site.reading.guard import address_refusal

# Any mention of a form of address, chosen or not.
ADDRESS_PHRASE_RE = re.compile(r"叫我|称呼我|喊我|\bcall\s+me\b|\baddress\s+me\b", re.IGNORECASE)
_NAME_BLOCK = re.compile(
    r"^(?:朋友|老婆|老公|家人|一下|过来|他|她|一声|回来|下来|起来|出来|人|同事|师傅|中介|房东|你|您|我|一起|去|来|吃饭|帮忙|"
    r"起床|看房|电话|一个|有人|爸|妈|孩子)"
)
# Common Chinese surnames (single and compound): a "小周"/"老吴" or a bare "唐女士" is a form of address
# only when it starts with one, so "我是小白" (a novice) and "我是房东" (a role) are none.
_SURNAMES_COMPOUND = "欧阳|司马|上官|诸葛|东方|皇甫|尉迟|慕容|令狐|夏侯|公孙|长孙|宇文|司徒|端木"
_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜"
    "崔钟谭陆汪范金石廖贾夏韦付傅方白邹孟熊秦邱江尹薛闫阎段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤常温康施"
    "文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌毕单季裴霍涂成苗谷盛"
    "曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解牟艾尤阳时穆农司卓古吉缪简车项连芦麦褚娄窦戚岑景党宫费卜冷晏席"
    "卫米柏宗瞿桂全佟应臧闵苟邬边卞姬师和仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩明佘池查麻苑迟邝谈"
)
SURNAME = rf"(?:{_SURNAMES_COMPOUND}|[{_SURNAMES}])"
TITLE = r"先生|女士|小姐|太太|总|老师|经理|工|哥|姐|老板|阿姨|叔|大哥|大姐"
# "小白" (a novice), "老板" (a boss), "小区": words, not a surname with 小/老.
_NOT_A_NAME = re.compile(
    r"^(?:小白|小孩|小学生|小朋友|小伙子|小姑娘|小区|小户型|小两口|老人|老板|老师|老乡|老客户|老用户|老业主|老租客|老实人|老公|老婆)"
)
_ADDRESS_ZH_RE = re.compile(
    r"(?:^|[^别不])(?:叫我|称呼我为?|喊我)\s*(?P<name>[\u4e00-\u9fffA-Za-z]{1,6}?)\s*(?:就行|就好|就可以|即可|好了|吧|就成|就ok|就OK)?$"
    rf"|我(?:是|叫)(?P<full>[\u4e00-\u9fff]{{1,3}}(?:先生|女士|小姐|太太|总|老师|经理|工))[啊呀哈呢]?$"
    # "我是小周", "我是老吴": 小/老 and a surname; "阿杰" as it is.
    rf"|我(?:是|叫)(?P<nick>(?:小|老){SURNAME}|阿[\u4e00-\u9fff])[啊呀哈呢]?$"
    # "给我叫个车", "帮我叫辆车": someone calls something for the customer, no name.
    r"|(?<![给帮替为让])我叫(?P<given>(?![个辆台份一两])[\u4e00-\u9fff]{2,4})$"
    # "我姓李", "免贵姓孙", "我这边姓冯", "姓郑" (a clause of its own)
    rf"|(?:我|我这边|我们这边|免贵|鄙人|本人)姓(?P<surname>[\u4e00-\u9fff]{{1,2}}?)(?:先生|女士|小姐)?[啊呀哈呢]?$"
    rf"|^姓(?P<bare_surname>{SURNAME})(?:先生|女士|小姐)?[啊呀哈呢]?$"
)
# The bare answer to "怎么称呼您？": "小方就行", "唐女士", "叫小方", "方婷".
ADDRESS_ANSWER_RE = re.compile(
    rf"^(?:叫|喊|我是|我叫|免贵姓|姓)?(?P<name>(?:小|老|阿)?{SURNAME}[\u4e00-\u9fff]{{0,2}}?(?:{TITLE})?)"
    r"\s*(?:就行|就好|就可以|即可|好了|吧|就成|啊|呀)?$"
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


def address_answer(clause: str) -> Candidate | None:
    """A bare name answering the agent's "怎么称呼您？" ("小方就行", "唐女士", "姓方")."""
    chosen = address_candidate(clause)
    if chosen is not None:
        return chosen
    match = ADDRESS_ANSWER_RE.match(clause.strip())
    if match is None or _NOT_A_NAME.match(match.group("name")) or _NAME_JUNK.search(match.group("name")):
        return None
    name = match.group("name")
    if clause.strip().startswith(("免贵姓", "姓")) or len(name) == 1:
        name = f"{name}（姓）"
    return _address(name, clause)


def address_candidate(clause: str) -> Candidate | None:
    """The form of address the clause chooses, if it chooses one."""
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
        elif match.group("nick") is not None:
            name = match.group("nick")
            if _NOT_A_NAME.match(name):
                return None
        elif match.group("surname") is not None or match.group("bare_surname") is not None:
            name = f"{match.group('surname') or match.group('bare_surname')}（姓）"
    else:
        en = _ADDRESS_EN_RE.search(clause)
        if en is None:
            return None
        if _ADDRESS_NEGATED_EN.search(clause[: en.start()]) or NO_LONGER_EN.search(clause):
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
    if not name or (CJK_RE.search(name) and _NAME_JUNK.search(name)):
        return None
    return _address(name, clause)


def _address(name: str, clause: str) -> Candidate | None:
    if address_refusal(name):
        return None  # a role ("叫我系统管理员", "call me Admin") is no name and no polite title
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
