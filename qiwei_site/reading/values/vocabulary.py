"""A trade's vocabulary (issue 22, item 2): the objects customers of a trade choose between —
carriers, sizes, colours, materials, after-sales outcomes, subjects, class formats — so the
extractor's generic rules (wants, exclusions, must-haves, bare answers, corrections) know them
in any trade, not only rentals.

Built in: what every Chinese shop shares (sizes, colours, carriers). The rest comes from the
account's knowledge base, as its places do: the list items under a heading that names a
vocabulary (业务词汇, 可选项, 规格, 售后方式, 科目…), each item `- 组名：词、词、词` or one word:

    ## 业务词汇
    - 售后方式：退款、换货、补发
    - 材质：纯棉、真皮、羊毛

A term of the account's vocabulary is an object even where the generic reader would take it for a
request to us ("退款", "换货"): the account says its customers choose it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from qiwei_site.reading.values.lists import list_items_under

VOCABULARY_HEADING_RE = re.compile(
    r"词汇|术语|可选项|选项|规格|属性|品类|售后方式|服务项目|科目|课程类型|上课方式|vocabulary", re.IGNORECASE
)
MIN_CHARS, MAX_CHARS = 2, 12  # a one-character term ("棉") would match inside other words

_BUILT_IN: dict[str, tuple[str, ...]] = {
    "快递": (
        "顺丰",
        "中通",
        "圆通",
        "韵达",
        "申通",
        "京东",
        "京东快递",
        "京东物流",
        "邮政",
        "EMS",
        "极兔",
        "德邦",
        "丰巢",
    ),
}
# Sizes and colours are open families: read by shape.
_SIZE_RE = re.compile(
    r"(?<![A-Za-z0-9])(?:[2-5]?X{1,4}L|XS|S|M|L)(?:码|号)?(?![A-Za-z0-9型形字])|(?<!\d)[2-4]\d(?:\.5)?码|均码|"
    # a size relative to the one received: "想换大一码的", "小一号"
    r"[大小](?:一|两|半)(?:码|号)|"
    # a shoe size worn: "平时穿43"
    r"(?<=穿)[34]\d(?:\.5)?(?![\d码号])"
)
_COLOUR_RE = re.compile(
    r"(?:浅|深|亮|暗|米|藏|墨|奶|雾霾|荧光|酒|宝|天|湖|军|卡其|咖啡|香槟|玫瑰|樱花|薄荷|牛油果)?"
    r"(?:黑|白|灰|红|橙|黄|绿|青|蓝|紫|粉|棕|褐|金|银|米|杏|驼|卡其|咖|藏青|酒红|宝蓝|天蓝|湖蓝|军绿|墨绿|香槟)色|"
    r"(?:米白|奶白|藏青|酒红|宝蓝|天蓝|湖蓝|军绿|墨绿|雾霾蓝|荧光绿|卡其|香槟金|玫瑰金)"
)


# How a customer says an outcome the account offers as a verb (issue 22): "这件我想退了" (退货),
# "给我换一件" (换货), "直接退钱吧" (退款), "寄回去修一下" (维修), "补寄一个" (补发). Each row: the
# shape of the account's term, and the verb that says it (`{v}`: the term's verb character). A verb
# is read only with a completion after it, so "退到微信" and "换乘" say no outcome.
_COMPLETION = (
    r"(?=了|掉|吧|回去|一[件个双条台套下]|个|成|给我|这|那|新|能用|就行|就好|$|[，,。！!\s]|[^，,。！？]{0,2}[色码])"
)
VERB_GROUP = "动作"  # a term read from its verb
_VERB_READINGS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(?P<v>[退换])货$"), rf"(?<![交转替更切变兑])(?P<verb>{{v}}){_COMPLETION}"),
    (re.compile(r"^(?P<v>退)款$"), r"(?P<verb>{v}钱)"),
    (re.compile(r"^维(?P<v>修)$"), rf"(?<![维装返检])(?P<verb>{{v}})(?:一下|好)?{_COMPLETION}"),
    (re.compile(r"^补(?P<v>[发寄])$"), rf"(?P<verb>补[发寄]){_COMPLETION}"),
    # "要原路退", "退回支付宝": an account's …退回 said without its 回
    (re.compile(r"^(?P<v>[\u4e00-\u9fff]{1,3})退回$"), rf"(?P<verb>{{v}}退){_COMPLETION}"),
    # "我自己寄回去", "自己拿去驿站寄": the account's 自行寄回 said as what the customer will do
    (re.compile(r"^自行(?P<v>[寄送拿取])"), r"(?P<verb>自己[^，,。！？]{0,6}?{v}(?:回去|回来|过去|回|走)?)"),
)


# After a term, a CJK character that is no particle, verb or measure word continues a name.
_NAME_GOES_ON_RE = re.compile(
    r"(?![的吧了啊呀呢哦嘛就也都还再直先好行可能要是在给发寄送退换和或与跟、色码号款快物速请我你您吗])[\u4e00-\u9fff]"
)


@dataclass(frozen=True)
class Term:
    word: str
    group: str
    start: int
    end: int


class Vocabulary:
    """Terms by group; `terms_in` finds them in a clause, longest first, never overlapping."""

    def __init__(self, groups: Mapping[str, Iterable[str]] | None = None) -> None:
        merged: dict[str, set[str]] = {group: set(words) for group, words in _BUILT_IN.items()}
        for group, words in (groups or {}).items():
            merged.setdefault(group, set()).update(w for w in words if MIN_CHARS <= len(w) <= MAX_CHARS)
        self.groups = {group: tuple(sorted(words)) for group, words in merged.items()}
        self.account_words = frozenset(w for words in (groups or {}).values() for w in words)
        words = sorted({w for ws in self.groups.values() for w in ws}, key=len, reverse=True)
        self._group_of = {w: g for g, ws in self.groups.items() for w in ws}
        self._listed = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE) if words else None
        self._verbs = tuple(
            (re.compile(verb.replace("{v}", re.escape(shape.group("v")))), word)
            for word in sorted(self.account_words)
            for pattern, verb in _VERB_READINGS
            if (shape := pattern.match(word)) is not None
        )

    def verbs_in(self, text: str) -> list[Term]:
        """The account's outcomes said as verbs ("想退了" → 退货), where no term of it stands."""
        taken = [(term.start, term.end) for term in self.terms_in(text)]
        found: list[Term] = []
        for regex, word in self._verbs:
            for match in regex.finditer(text):
                start, end = match.span("verb")
                if any(start < e and s < end for s, e in taken):
                    continue
                taken.append((start, end))
                found.append(Term(word, VERB_GROUP, start, end))
        return sorted(found, key=lambda term: term.start)

    def terms_in(self, text: str) -> list[Term]:
        found: list[Term] = []
        taken: list[tuple[int, int]] = []

        def add(word: str, group: str, start: int, end: int) -> None:
            if any(start < e and s < end for s, e in taken):
                return
            if not word.isascii() and _NAME_GOES_ON_RE.match(text, end):
                return  # "京东大峡谷", "白色家电", "补发票": the term opens a longer word
            if word.isascii() and (
                re.match(r"[A-Za-z]", text[end : end + 1]) or re.match(r"[A-Za-z]", text[max(0, start - 1) : start])
            ):
                return  # "systems", "Emsland", "PUMA": letters inside a longer word
            taken.append((start, end))
            found.append(Term(word, group, start, end))

        if self._listed is not None:
            for match in self._listed.finditer(text):
                word = match.group(0)
                group = self._group_of.get(word) or self._group_of.get(word.upper(), "")
                add(word, group, *match.span())
        for match in _COLOUR_RE.finditer(text):
            add(match.group(0), "颜色", *match.span())
        for match in _SIZE_RE.finditer(text):
            add(match.group(0), "尺码", *match.span())
        return sorted(found, key=lambda term: term.start)

    def is_account_word(self, word: str) -> bool:
        return word in self.account_words


BUILT_IN = Vocabulary()


def parse_vocabulary(markdown: str, *, heading: str = "") -> dict[str, list[str]]:
    """The vocabulary an account's knowledge base names: list items under a vocabulary heading (and
    its sub-headings, which name the group of the items under them)."""
    groups: dict[str, list[str]] = {}
    for group_heading, body in list_items_under(markdown, VOCABULARY_HEADING_RE, heading=heading):
        group = group_heading
        if re.search(r"[:：]", body):
            left, right = (part.strip() for part in re.split(r"[:：]", body, maxsplit=1))
            # "- 快递：顺丰、中通" names a group; "- 退款：签收后7天内" describes the term 退款
            group, body = (left, right) if re.search(r"[、，,;；/|]", right) else (group_heading, left)
        for word in re.split(r"[、，,;；/|]", body):
            word = word.strip(" 。.")
            if MIN_CHARS <= len(word) <= MAX_CHARS:
                groups.setdefault(group, []).append(word)
    return groups


__all__ = ["BUILT_IN", "VERB_GROUP", "VOCABULARY_HEADING_RE", "Term", "Vocabulary", "parse_vocabulary"]
