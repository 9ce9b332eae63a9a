"""Who will live in the home, when it bears on what the customer needs: elderly people (an elevator,
a low floor), children (a school), how many people, and pets (a landlord who accepts them).

Facts about the customer's own household, stated plainly ("家里有两个老人一起住", "我们有个三岁的孩子",
"一家三口", "养了一只泰迪"), each under its own key so one never supersedes another:

    fact:household_elderly 家庭情况：家里有两个老人一起住 · fact:household_children 家庭情况：有个三岁的孩子
    fact:household_size 家庭情况：一家三口 · fact:pets 宠物：一只泰迪

Not the customer's household: someone else's ("我朋友养了只猫"), a wish ("想养只猫", "可以养狗的"),
a negation ("没有宠物"), a question, or a thing seen ("楼下那只狗").
"""

from __future__ import annotations

import re

from qiwei_site.reading.extract._common import FACT, Candidate
from qiwei_site.reading.normalise import normalize_content

PETS_KEY = "fact:pets"
ELDERLY_KEY = "fact:household_elderly"
CHILDREN_KEY = "fact:household_children"
SIZE_KEY = "fact:household_size"
HOUSEHOLD_LABEL, PETS_LABEL = "家庭情况", "宠物"

# Only the customer (or their household) may stand before the fact: "我们家有条金毛", "家里有老人".
_OWN_PREFIX_RE = re.compile(
    r"^(?:嗯|哦|对|是的|因为|主要是|就是|另外|还有|而且|然后|平时|目前|现在|其实|我|我们|我们家|我家|咱家|咱们家|家里|家里面|家中|"
    r"本人|也|还|都|就|是)*$"
)
_COUNT = r"[一两二三四五六几\d]*"
_PET_RE = re.compile(
    rf"(?:养了|养着|养|有|带着|带)(?P<count>{_COUNT}(?:只|条|个|头)?)(?P<pet>(?:小)?(?:猫咪|猫|狗狗|狗)|泰迪|金毛|柯基|柴犬|"
    r"哈士奇|比熊|拉布拉多|边牧|萨摩耶|博美|布偶|英短|美短|橘猫|蓝猫|兔子|仓鼠|鹦鹉|宠物)"
)
_ELDERLY_RE = re.compile(
    rf"(?:有|带着|带|和|跟|与)(?:{_COUNT}个|俩)?(?:老人家|老人|父母|爸妈|老爸老妈|爷爷奶奶|外公外婆|姥姥姥爷)(?:一起|同)?住?|"
    rf"^(?:家里|家中|我家|我们家)(?:有)?(?:{_COUNT}个|俩)?的?老人|"
    r"^(?:父母|爸妈|老人|老人家|爷爷奶奶|外公外婆|公婆|岳父岳母)(?:也)?(?:跟|和|与)(?:我|我们)(?:一起)?住"
)
_CHILDREN_RE = re.compile(
    rf"(?:有|带着|带)(?:{_COUNT}个|俩)?(?:(?:\d+|[一二两三四五六七八九十]+)岁(?:多)?的?|[\u4e00-\u9fff]{{1,5}}的)?(?:小)?"
    r"(?:孩子|小孩|宝宝|儿子|女儿|娃|小朋友)"
    # "带孩子去玩", "带着孩子想去酒店": an outing, not who lives in the home
    r"(?!(?:想|要|一起)?(?:去|来|过去|过来|玩|吃|出|逛|看|参观|旅游|游玩|住宿))|"
    r"^孩子(?:要|在|准备)?(?:上学|上幼儿园|读书|上小学|上初中|上高中)"
)
_SIZE_RE = re.compile(
    r"一家(?:[三四五六七]|\d)口|(?:[一两二三四五六]|\d)个人住|我一个人住|我一个人|自己一个人住|单身(?!公寓)|"
    r"(?:两口子|夫妻俩|小两口|夫妻两个|我们俩|我俩|两个人)(?:一起)?住|"
    r"(?:和|跟)(?:女朋友|男朋友|老婆|老公|爱人|对象|朋友|同事|同学|室友)"
    r"(?:(?:还有|和|跟|带着?)(?:孩子|小孩|儿子|女儿|父母|爸妈|老人))?(?:一起|两个人|俩|三个人|四个人)?住"
)
# What the customer says of their own level (issue 35: who they are): "我是零基础", "完全是新手".
LEVEL_KEY, LEVEL_LABEL = "fact:level", "基础"
_LEVEL_RE = re.compile(r"(?:完全)?(?:是)?(?:零基础|新手|初学者|纯小白|没有基础|没基础|有一点基础|有点基础|有基础)")
_FACTS = (
    (_PET_RE, PETS_KEY, PETS_LABEL),
    (_ELDERLY_RE, ELDERLY_KEY, HOUSEHOLD_LABEL),
    (_CHILDREN_RE, CHILDREN_KEY, HOUSEHOLD_LABEL),
    (_SIZE_RE, SIZE_KEY, HOUSEHOLD_LABEL),
    (_LEVEL_RE, LEVEL_KEY, LEVEL_LABEL),
)
_FILLER_RE = re.compile(
    r"^(?:嗯|哦|对|是的|因为|主要是|就是|另外|还有|而且|然后|平时|目前|现在|其实|也|还|都|(?:我们|我)(?:是|家)?(?=一家|有|带))+"
)


def _pet_words(match: re.Match[str]) -> str:
    count, pet = match.group("count"), match.group("pet")
    if pet == "宠物":
        return "有宠物"
    if count and count[0] in "只条个头":
        count = "一" + count  # "有只猫" → 一只猫
    return count + pet


def household_candidates(clause: str) -> list[Candidate]:
    """The household facts the clause states about the customer's own home."""
    found: list[Candidate] = []
    for regex, key, label in _FACTS:
        match = regex.search(clause)
        if match is None or not _OWN_PREFIX_RE.match(clause[: match.start()]):
            continue
        if key == PETS_KEY:
            own_words = _pet_words(match)
        elif key == LEVEL_KEY:
            own_words = re.sub(r"^(?:完全)?是", "", match.group(0))
        else:
            own_words = _FILLER_RE.sub("", clause[: match.end()])
        words = normalize_content(own_words.strip())
        if not words:
            continue
        found.append(
            Candidate(
                type=FACT,
                key=key,
                content=f"{label}：{words}",
                confidence=0.85,
                importance=3,
                clause=clause,
            )
        )
    return found
