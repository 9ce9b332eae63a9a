"""Places: China's administrative divisions (the gazetteer cpca ships, read lazily from its data file)
plus the account's own place names (its knowledge base's list of 片区/板块), so 浦东, 滨江 and 望京 are
places as much as 静安区.

The gazetteer's full names (浦东新区, 滨江区, 杭州市) and their short forms (浦东, 滨江, 杭州: the name
without 区/县/市/新区…) are both known; short forms that are everyday words (和平, 新华, 光明, 合作…) are
left out, and callers read a place only where the words around it say it is one. cpca itself is never
imported: it builds a matcher and imports pkg_resources at import time (~90 ms), and we need only
its table of names.
"""

from __future__ import annotations

import csv
import functools
import importlib.util
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from qiwei_site.reading.values.lists import list_items_under

PROVINCE, CITY, DISTRICT, LOCAL = "province", "city", "district", "local"
MIN_CHARS, MAX_CHARS = 2, 10
_SUFFIX_RE = re.compile(
    r"(?:维吾尔自治区|壮族自治区|回族自治区|自治区|特别行政区|省|市|新区|自治县|自治旗|林区|特区|区|县|旗|盟|地区)$"
)
# Short forms that are everyday words more often than places (a district of that name stays a place
# under its full name: 和平区, 光明区).
_COMMON_WORDS = frozenset(
    [
        "和平",
        "新华",
        "光明",
        "合作",
        "城关",
        "向阳",
        "红旗",
        "东风",
        "永安",
        "安宁",
        "方正",
        "大方",
        "平安",
        "和顺",
        "安定",
        "同心",
        "通道",
        "新兴",
        "清新",
        "永和",
        "大安",
        "吉利",
        "长安",
        "城中",
        "城东",
        "城西",
        "城南",
        "城北",
        "市中",
        "东区",
        "西区",
        "南区",
        "北区",
        "中区",
        "河东",
        "河西",
        "桥东",
        "桥西",
        "郊区",
        "矿区",
        "新区",
        "城区",
        "开发",
        "高新",
        "东山",
        "西山",
        "北山",
        "青山",
        "海港",
        "普通",
        "中心",
        "长寿",
        "富民",
        "阳光",
        "宁静",
        "安全",
        "利民",
        "老城",
        "古城",
        "南城",
        "北城",
        "新市",
        "美丽",
        "东方",
        "龙泉",
        "大同",
        "平山",
        "怀远",
        "延长",
        "安远",
        "和静",
        "仁和",
        "友好",
        "永顺",
        "团结",
        "民主",
        "胜利",
        "先锋",
        "前进",
        "兴隆",
        "江南",
        "江北",
        "新城",
    ]
)


@dataclass(frozen=True)
class Place:
    """A place as written (`words`) and what it stands for."""

    words: str
    name: str  # the full name: 浦东新区, or the account's own name
    rank: str  # province | city | district | local (the account's list)
    city: str = ""  # the city or province it lies in, when the name says it unambiguously
    code: str = ""  # the division code (adcode), when there is one and only one
    start: int = 0
    end: int = 0

    @property
    def shortened(self) -> bool:
        return self.words != self.name


@dataclass(frozen=True)
class _Entry:
    name: str
    rank: str
    code: str
    city: str


class PlaceNames:
    """Names to look up: the gazetteer's, and an account's own list on top (which wins on a tie)."""

    def __init__(self, local: Iterable[str] = ()) -> None:
        self.local: dict[str, _Entry] = {}
        for raw in local:
            name, parent = _split_local(raw)
            if MIN_CHARS <= len(name) <= MAX_CHARS:
                self.local[name] = _Entry(name=name, rank=LOCAL, code="", city=parent)

    def lookup(self, words: str) -> list[_Entry]:
        if words in self.local:
            return [self.local[words]]
        return _gazetteer().get(words, [])


def _split_local(raw: str) -> tuple[str, str]:
    """ "望京（朝阳区）" → ("望京", "朝阳区"); "望京" → ("望京", "")."""
    match = re.match(r"^\s*([\u4e00-\u9fffA-Za-z0-9]+)\s*(?:[（(]\s*([^）)]*)\s*[）)])?\s*$", raw)
    if match is None:
        return "", ""
    return match.group(1), (match.group(2) or "").strip()


def _data_file() -> Path | None:
    spec = importlib.util.find_spec("cpca")  # locates the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "resources" / "adcodes.csv"
    return path if path.is_file() else None


@functools.cache
def _gazetteer() -> dict[str, list[_Entry]]:
    """Every division name and short form → its entries (several when the name repeats: 朝阳区)."""
    path = _data_file()
    if path is None:
        return {}
    rows: list[tuple[str, str]] = []
    with path.open(encoding="utf-8") as handle:
        for record in csv.DictReader(handle):
            rows.append((record["adcode"][:6], record["name"]))
    names_by_code = dict(rows)
    index: dict[str, list[_Entry]] = {}
    for code, name in rows:
        rank = PROVINCE if code.endswith("0000") else CITY if code.endswith("00") else DISTRICT
        parent = ""
        if rank == DISTRICT:
            parent = names_by_code.get(code[:4] + "00", "")
            if parent in {"", "市辖区", "县", "省直辖县级行政区划", "自治区直辖县级行政区划"}:
                parent = names_by_code.get(code[:2] + "0000", "")
        elif rank == CITY:
            parent = names_by_code.get(code[:2] + "0000", "")
        if name in {"市辖区", "县"} or "直辖" in name:
            continue
        entry = _Entry(name=name, rank=rank, code=code, city=parent)
        index.setdefault(name, []).append(entry)
        short = _SUFFIX_RE.sub("", name)
        if short != name and len(short) >= MIN_CHARS and short not in _COMMON_WORDS:
            index.setdefault(short, []).append(entry)
    return index


# What may follow a short form (浦东, 滨江) for it to be the place, not the start of a longer word
# ("太平洋" is no 太平区): a place word, a particle, a verb of looking, punctuation or the end.
_SHORT_FOLLOWERS = frozenset(
    "这那附一周片板方沿的或和、，,。！？!?；;也都吧啊呀呢嘛就找租买住看上下靠离以等还边及跟与到去其 "
)

# A branch of a business named by its place ("浦东校区", "徐汇门店", "宝安分店"): the short form ends there.
_BRANCH_FOLLOWER_RE = re.compile(r"校区|分校|门店|分店|店|网点|自提点|取件点|取货点|服务点|营业厅|分部")


def _branch_lead(text: str, position: int) -> bool:
    """The branch's place stands on its own: not inside a shop's name ("全聚德(昌平店)", "温都水城店")."""
    return position == 0 or text[position - 1] in "在去到的或者和、跟选是就那这其实近离住我吧，,。 "


def places_in(text: str, names: PlaceNames | None = None) -> list[Place]:
    """The places named in `text`, longest name first at each position, left to right. A short form
    of a division counts only where the next character ends the word (`_SHORT_FOLLOWERS`)."""
    names = names or _default_names()
    raw: list[tuple[str, Sequence[_Entry], int]] = []
    position = 0
    length = len(text)
    while position < length:
        if not ("\u4e00" <= text[position] <= "\u9fff"):
            position += 1
            continue
        for size in range(min(MAX_CHARS, length - position), MIN_CHARS - 1, -1):
            words = text[position : position + size]
            entries = names.lookup(words)
            following = text[position + size : position + size + 1]
            shortened = bool(entries) and entries[0].rank != LOCAL and entries[0].name != words
            if (
                shortened
                and following
                and following not in _SHORT_FOLLOWERS
                and not (_BRANCH_FOLLOWER_RE.match(text, position + size) and _branch_lead(text, position))
            ):
                continue
            if entries:
                raw.append((words, entries, position))
                position += size
                break
        else:
            position += 1
    # An ambiguous name (长宁 is a district of Shanghai and a county in Sichuan) takes the city of
    # the unambiguous places beside it ("徐汇或者长宁").
    cities = {entries[0].city for _, entries, _ in raw if len({(e.name, e.city) for e in entries}) == 1}
    return [_place(words, entries, start, cities) for words, entries, start in raw]


def _place(words: str, entries: Sequence[_Entry], position: int, cities: Iterable[str] = ()) -> Place:
    first = entries[0]
    if len({(e.name, e.city) for e in entries}) == 1:
        return Place(words, first.name, first.rank, first.city, first.code, position, position + len(words))
    beside = [e for e in entries if e.city in set(cities)]
    if len(beside) == 1:
        entry = beside[0]
        return Place(words, entry.name, entry.rank, entry.city, entry.code, position, position + len(words))
    # Still ambiguous (朝阳区 is in Beijing and in Changchun): a city's district over a county's
    # name, but no city or code.
    urban = sorted(entries, key=lambda e: not e.name.endswith("区"))[0]
    return Place(words, urban.name, urban.rank, "", "", position, position + len(words))


@functools.cache
def _default_names() -> PlaceNames:
    return PlaceNames()


def gazetteer_place(words: str) -> Place | None:
    """The division `words` names on its own ("浦东" → 浦东新区), or None."""
    entries = PlaceNames().lookup(words)
    return _place(words, entries, 0) if entries else None


PLACE_HEADING_RE = re.compile(r"片区|板块|商圈|地名|区域|服务范围|小区名单|地段")


def parse_place_list(markdown: str, *, heading: str = "") -> list[str]:
    """An account's place names from its knowledge base: the list items under a heading about places
    (片区, 板块, 商圈, 区域, 地名…) and its sub-headings, each item one or more names split by
    、，,;/ ("- 朝阳区：望京、酒仙桥" and "- 望京（朝阳区）" keep the district they lie in; a sub-heading
    "### 朝阳区" does the same for the items under it). `heading` is the heading of a section whose
    text is given without it. Anything else in the document is ignored."""
    names: list[str] = []

    def group_of(title: str, top: bool) -> str:
        # a sub-heading names the district its items lie in ("### 朝阳区"); the places heading none
        return "" if top or not re.fullmatch(r"[\u4e00-\u9fff]{2,10}", title) else title

    for group, body in list_items_under(markdown, PLACE_HEADING_RE, heading=heading, group_of=group_of):
        if re.search(r"[:：]", body):
            group, body = re.split(r"[:：]", body, maxsplit=1)  # "- 朝阳区：望京、酒仙桥"
            group = group.strip()
        for part in re.split(r"[、，,;；/|]", body):
            name, parent = _split_local(part)
            parent = parent or group
            if name and MIN_CHARS <= len(name) <= MAX_CHARS and re.search(r"[\u4e00-\u9fff]", name):
                names.append(f"{name}（{parent}）" if parent and parent != name else name)
    return list(dict.fromkeys(names))
