"""Forms of address: how the customer wants to be called ("叫我小王", "我姓李", "call me Anna"),
which is the profile's 称呼."""

from __future__ import annotations

import re

from memory.capture.extract._common import ADDRESS_KEY, CJK_RE, FACT, Candidate
from memory.capture.extract.clauses import NO_LONGER_EN
from memory.capture.guard import address_refusal

# Any mention of a form of address, chosen or not.
ADDRESS_PHRASE_RE = re.compile(r"叫我|称呼我|喊我|\bcall\s+me\b|\baddress\s+me\b", re.IGNORECASE)
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
        elif match.group("surname") is not None:
            name = f"{match.group('surname')}（姓）"
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
