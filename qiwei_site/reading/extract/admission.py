"""What capture may write by itself, and why the rest waits for a person (issue 35: two tiers).

The extractor reads wants wherever a customer seems to state one; this module decides which of them
memory may take without a supervisor. A candidate is written automatically only when the clause it
came from is the customer's own words (not forwarded, quoted or templated), about the customer (not
a third party, not one listing), states something lasting (not a question, a comparison, bargaining,
a reason or opinion, a hypothetical, a past or one-off event, a hedge, a choice between two values)
and carries its value in the field's own form (a place the place vocabulary knows, the customer's
amount rather than a listing's price or an amount it is said not to be, a name shaped like a name, an
object that is a thing and not a fragment of the sentence). A want negated or taken back ("不打算要
三居", "三居算了") is no want at all: dropped. Acceptances pass the same rows before they may relax
an earlier refusal.

Everything else the extractor read becomes a *proposal*: it waits in the review queue with the rule
that held it back (`HOLD_BACKS`, one named row each, in order: the first row that holds names the
reason a supervisor reads), never in the snapshot, the prompt or the profile until accepted.

Plain Python, like the rest of the reader: a row is data with its example, and the table test
(`tests/qiwei_site/reading/extract/test_admission.py`) reads each example through `extract`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from qiwei_site.reading.extract._common import CJK_RE, CONSTRAINT, FACT, PREFERENCE, Candidate, ExtractContext
from qiwei_site.reading.extract.address import SURNAME, TITLE
from qiwei_site.reading.extract.clauses import PAST_RE, WEAK_HEDGE_RE
from qiwei_site.reading.extract.kinds import KIN, ClauseKind
from qiwei_site.reading.extract.profile_facts import EN_CITY_RE
from qiwei_site.reading.values import Amount, places_in
from qiwei_site.reading.values.places import PROVINCE


class SentenceShape:
    """What the rows read of a whole sentence, read once for every clause and candidate in it: a
    sentence of many clauses, each with many candidates, would otherwise be searched once per
    candidate (quadratic in its length; issue 36, item 9)."""

    def __init__(self, clauses: tuple[str, ...]) -> None:
        self.clauses = clauses

    @functools.cached_property
    def comparison(self) -> bool:
        return any(_COMPARISON_RE.search(clause) for clause in self.clauses)

    @functools.cached_property
    def bargaining(self) -> bool:
        return any(_BARGAIN_RE.search(clause) for clause in self.clauses)

    @functools.cached_property
    def listing(self) -> bool:
        return any(_LISTING_RE.search(clause) for clause in self.clauses)

    @functools.cached_property
    def hedge_clause(self) -> bool:
        """A clause of the sentence is only a hedge ("不确定，要三居", "一楼也行吧，我再想想")."""
        return any(_HEDGE_CLAUSE_RE.match(clause) for clause in self.clauses)

    @functools.cached_property
    def attributed_before(self) -> int:
        """The clauses before this index are attributed to somebody else by a clause after them ("滨江那边
        也行吧，我老婆说的", "“一楼也可以”，这是我妈说的"); -1 when no clause attributes."""
        return next((index for index, clause in enumerate(self.clauses) if _ATTRIBUTION_RE.match(clause)), -1)

    @functools.cached_property
    def others_speak(self) -> frozenset[int]:
        """The clauses whose subject is somebody else ("我姐要三居室", "我哥预算8000，想要三居"): one that
        opens with another person, and the clauses after it that name no subject of their own."""
        held: set[int] = set()
        other = False  # whether the clause before spoke of somebody else, and its subject goes on
        for index, clause in enumerate(self.clauses):
            subject = _OTHER_SUBJECT_RE.match(clause)
            if subject is not None:
                held.add(index)
                # "同学要来看我，想找一家餐馆": the customer is in it; the next clause is theirs
                other = "我" not in clause[subject.end() :]
            elif other and not _OWN_SUBJECT_RE.match(clause):
                held.add(index)  # "我哥预算8000，想要三居": still the brother
            else:
                other = False
        return frozenset(held)


@dataclass(frozen=True)
class ClauseReading:
    """What admission knows of the clause a candidate came from. The shapes a row reads in the clause
    alone are read once per clause (`functools.cached_property`), however many candidates it yields."""

    text: str  # the clause as the rule that decided it read it
    kind: ClauseKind
    rule: str  # the name of that clause rule (`extract.CLAUSE_RULES`)
    sentence: tuple[str, ...]  # the clauses of its sentence, as split
    question_sentence: bool  # its sentence ends as a question (a question mark, or a question last)
    line: str  # the line of the message it stands in
    forwarded: bool  # that line is part of a forwarded or pasted record of somebody's words
    context: ExtractContext | None
    # the sentence's shapes, shared by its clauses (one is made for a reading given none)
    shape: SentenceShape | None = field(default=None, compare=False)
    index: int = -1  # the clause's place in its sentence (-1: unknown)

    @functools.cached_property
    def sentence_shape(self) -> SentenceShape:
        return self.shape if self.shape is not None else SentenceShape(self.sentence)

    @functools.cached_property
    def quotes(self) -> tuple[str, ...]:
        return _quotes_in(self.line)

    @functools.cached_property
    def own_want(self) -> bool:
        return _OWN_WANT_RE.search(self.text) is not None

    @functools.cached_property
    def own_home(self) -> bool:
        return _OWN_HOME_RE.search(self.text) is not None

    @functools.cached_property
    def listing(self) -> bool:
        return _LISTING_RE.search(self.text) is not None

    @functools.cached_property
    def listing_price(self) -> bool:
        return _LISTING_PRICE_RE.search(self.text) is not None

    @functools.cached_property
    def price_words(self) -> bool:
        return re.search(r"总价|价格|价钱|多少钱|万", self.text) is not None

    @functools.cached_property
    def reason_shape(self) -> bool:
        return _REASON_RE.search(self.text) is not None

    @functools.cached_property
    def inquiry(self) -> bool:
        return _INQUIRY_VERB_RE.search(self.text) is not None and _FIRM_VERB_RE.search(self.text) is None

    @functools.cached_property
    def hypothetical(self) -> bool:
        return _HYPOTHETICAL_RE.search(self.text) is not None

    @functools.cached_property
    def past(self) -> bool:
        return PAST_RE.search(self.text) is not None

    @functools.cached_property
    def past_event(self) -> bool:
        return _PAST_EVENT_RE.search(self.text) is not None

    @functools.cached_property
    def trip(self) -> bool:
        return _TRIP_RE.search(self.text) is not None

    @functools.cached_property
    def hedged(self) -> bool:
        return WEAK_HEDGE_RE.search(self.text) is not None

    @functools.cached_property
    def negated_want(self) -> re.Match[str] | None:
        return _NEGATED_WANT_RE.search(self.text)

    @functools.cached_property
    def retracted(self) -> re.Match[str] | None:
        return _RETRACTED_RE.search(self.text)

    @functools.cached_property
    def alternative(self) -> bool:
        return _ALTERNATIVE_RE.search(self.text) is not None

    @functools.cached_property
    def third_party(self) -> bool:
        shape = self.sentence_shape
        if self.index < 0:
            return _OTHER_SUBJECT_RE.match(self.text) is not None
        return self.index in shape.others_speak or self.index < shape.attributed_before


Holds = Callable[[Candidate, ClauseReading], bool]
# The clause rules that read somebody else's words ("我老婆说，不要顶楼").
THIRD_PARTY_RULES = frozenset({"reported_speech", "reported"})


@dataclass(frozen=True)
class HoldBack:
    name: str
    label: str  # what the review queue says, in Chinese
    example: str  # a message whose candidate this row holds back (the table test reads it)
    holds: Holds
    asked: str = ""  # the agent's message before the example, when the row needs one


# --- the shapes the rows read -------------------------------------------------------------------

# A first-person want, need, refusal or limit in the clause itself: "我想找两居，有吗？" states the want
# before it asks; "能帮我找个两居吗" only asks.
_OWN_WANT_RE = re.compile(
    r"(?:我|我们|咱们|俺|本人)(?:家)?(?:就|也|还|只|都|比较|更|最|特别|主要|一定|必须)?"
    r"(?:想|要|需要|希望|打算|准备|计划|喜欢|倾向|偏向|偏好|考虑|不要|不想|不考虑|不能|不接受|接受不了|只要|只能|只考虑|"
    r"预算|的预算|最多|最少|至少)|"
    r"^(?:预算|租金|月租|总价|首付|月供)|(?:不考虑|不接受|排除|别给我)|"
    r"^(?:请|麻烦|那|就)?(?:你|您|你们)?(?:帮我|给我|帮忙|替我)(?:们)?(?:找|推荐|物色|挑|留意)",
)
# One listing, product or course named by pointing at it: the customer asks or remarks about that one.
_LISTING_RE = re.compile(
    r"(?:这|那|该|此)(?:一)?(?:套|间|户|栋|幢|处|个房子|房子|个房源|房源|个房|房|个小区|小区|个楼盘|楼盘|个户型|户型|个价格|价格|个价|"
    r"门课|节课|个班|个团|条线路|个线路)|上面那|上面的房|刚才那|刚发的|你发的|发的那|之前那套|之前发的|链接里|图上|图里|"
    r"\d+号楼|\d+栋|\d{3,4}室|\bthis\s+(?:one|flat|listing|apartment|unit|house)\b|\bthat\s+(?:one|flat|listing)\b",
    re.IGNORECASE,
)
_COMPARISON_RE = re.compile(
    r"哪(?:个|套|家|种|款|边|里)[^，,。？?]{0,4}?(?:更|比较|最)?(?:好|合适|划算|值|便宜|近|方便|适合|强)|哪个更|比较一下|对比|相比|比起|"
    r"(?:这|那)[^，,。]{0,4}比[^，,。]{1,8}(?:好|强|差|便宜|贵|近|远|大|小|高|低)|比(?:这|那)[^，,。]{0,6}(?:好|强|差|便宜|贵|近|远|大|小)|"
    r"这俩|这两|两套|二选一|\bwhich\s+(?:one|is)\s+better\b|\bcompared?\b|\bversus\b|\bvs\.?\b",
    re.IGNORECASE,
)
# Negotiating over what is offered: "能不能便宜点", "还有优惠空间吗", "330能谈下来吗". A want for cheaper
# homes said outright ("想要价格便宜一点的") is no bargaining.
_BARGAIN_RE = re.compile(
    r"优惠|打折|打个折|折扣|还价|议价|砍价|讲价|能谈|可谈|再谈|谈到|谈下|谈谈价|谈价|让价|让利|让点|再让|"
    r"(?:能|可以|再|能不能|可不可以)(?:再)?便宜|便宜(?:点|些|一点)?(?:的话|我就|就(?!好|行|可以)|吧)|少点|少一点|少些|能少|降价|降到|降点|底价|最低价|"
    r"最低多少|拿下|能到|卖吗|可以卖|能卖|"
    r"下浮|溢价|还价空间|议价空间|\b(?:discount|negotiate|bargain|lowest\s+price)\b",
    re.IGNORECASE,
)
# An amount that is what something costs, not what the customer will pay: a listing's price.
_LISTING_PRICE_RE = re.compile(
    r"单价|均价|挂牌|标价|报价|售价|开价|卖价|要价|成交价|市场价|每平|一平|平米多少|挂了|卖\d|卖[一二两三四五六七八九十百千万]|房东要|业主要"
)
# Why, or how it feels: "夏天太热了", "孩子自控力差", "户型我看不怎么样".
_REASON_RE = re.compile(
    r"^(?:主要|其实|就|也|还)?(?:是)?(?:因为|由于|毕竟|原因是|理由是|为了|怕|担心)|"
    r"太[\u4e00-\u9fff]{1,4}了|有点[\u4e00-\u9fff]{1,4}|不怎么样|不太行|一般般|还行吧|挺好的|不错的?$|没怎么"
)
# A trip, a meeting or a stay that is over: a place in it is not where the customer wants to live.
_TRIP_RE = re.compile(
    r"开会|出差|旅游|旅行|度假|玩|参加|办事|探亲|路过|看展|培训|考试|出游|自驾|看朋友|看望|探望|见朋友|见客户"
)
_PAST_EVENT_RE = re.compile(
    r"住过|待过|呆过|去过|来过|去年|前年|上次|上回|那时|当时|以前|之前|曾经|小时候|读书时|上学时"
)
DESTINATION_KEY = "preference:destination"  # a trip the customer plans (`extract._trip`)
# A want that is a place and a trip ("偏好：云南玩", "偏好：去桂林旅游"): the trip, read by another rule.
_TRIP_OBJECT_RE = re.compile(
    r"^(?:去|到)?(?P<where>[\u4e00-\u9fff]{2,6}?)(?:玩|旅游|旅行|度假|出游|自驾游?|转转|逛逛)(?:几天|[一两三四五六七八九十]天|一趟|一圈|一下)?$"
)

# --- the review of issue 35: families the rows above let through ---------------------------------

# A want negated before its verb ("我不会租三居", "不打算要三居", "没有要住浦东", "并不打算在宝安买"):
# what follows is no want, whatever the extractor read in it.
_NEGATED_WANT_RE = re.compile(
    r"(?:不会|不打算|没打算|没有打算|不准备|没准备|没有准备|不计划|没计划|没想过|没有想过|没有要|没要|不是要|并不是要|"
    r"没说要|没说过要|并不打算|并不想|从没|从来没|从不|绝不会|不可能|也不会)(?:再|去|要|会|打算)?"
    r"(?:要(?!求)|想|租|买|住|考虑|找|选|搬|定|订|报|接受|在)"
)
# A value retracted after it is named ("三居算了", "三居不用了", "预算8000是不可能的").
_RETRACTED_RE = re.compile(
    r"(?:就|那就|也就|还是|的话)?(?:算了|不用了|不要了|免了|拉倒|不必了|没必要了?|不需要了|不考虑了|"
    r"(?:是|那是|也是)?(?:不可能|不现实|做不到|达不到|办不到)(?:的)?)[的吧啊呀哈了呢哦嘛啦，,。！!]*$"
)
# Words before an amount that say it is not the amount ("我预算没有8000", "远远不止5000", "不是一万").
_NOT_THE_AMOUNT_RE = re.compile(r"(?:没有|没|不止|不只|远不止|远远不止|可不止|绝不止|不是|并非|并不是)\s*$")
# Either of two values ("三居或者两居", "精装或者简装"): no firm single value.
_ALTERNATIVE_RE = re.compile(r"[\u4e00-\u9fff\d](?:或者|或是|或(?!许|多|少|是|者))[\u4e00-\u9fff\d]|要么")
# A clause that is only a hedge, or leaves the decision to somebody ("要看老婆意见"); the sentence's
# other clauses are not firm.
_HEDGE_CLAUSE_RE = re.compile(
    r"^(?:嗯|那|其实)?(?:我|我们)?(?:也|还|暂时|目前|现在|真的)*(?:不确定|不太确定|没想好|没有想好|没定|没决定|没有决定|"
    r"说不准|说不好|拿不准|拿不定主意|定不下来|不好说|不一定|再想想|想想|再考虑(?:一下|考虑)?|考虑考虑|再看看|看情况|犹豫)"
    r"[的了吧呢啊呀哈嘛]*$|"
    r"^(?:这|还|也)?(?:要|得|还得|还要)(?:看|等|问问?)(?:一下)?[\u4e00-\u9fff]{1,8}(?:意见|意思|想法|态度|决定|安排|同意)"
)
# Somebody else as the subject ("我姐要三居室", "我哥预算8000", "她想要三居"); the customer with them
# ("我和我姐要…") or acting for them ("给我姐找…") is the customer's own want. Children are left to the
# extractor's own third-party reading: what a parent signs a child up for is the parent's want.
_OTHER_SUBJECT_RE = re.compile(
    rf"^(?:那|而且|还有|另外|不过|但是?|其实)?(?:(?:我|我们|我家|俺)?(?:的)?(?:{KIN}|他|她|他们|她们|人家)|"
    r"(?:我|我家|俺)(?:的)?(?:大|二|三|小)?(?:姐|哥|弟|妹|舅|姨|叔|婶|姑|伯))(?:们)?"
    r"(?:也|都|就|还|比较|更|特别|一直|只|说|那边)?"
    r"(?=想|要|需要|希望|打算|准备|计划|喜欢|倾向|偏好|预算|不想|不要|只要|只想|觉得|认为|坚持|非要|更喜欢|最好)"
    # "家里人要求一定要带电梯", "老婆需要书房": the household's requirement is the customer's own home's
    # (the statement reader keeps it as a requester), not somebody else's want
    r"(?!(?:(?<=家里人)|(?<=家人)|(?<=老人)|(?<=父母)|(?<=爸妈)|(?<=老婆)|(?<=老公)|(?<=媳妇)|(?<=爱人)|(?<=太太))"
    r"(?:要求|需要|坚持))"
)
# The customer speaking of themselves again, or asking us: "请帮我找…", "麻烦你…", "给我推荐…".
_OWN_SUBJECT_RE = re.compile(
    r"^(?:那|而且|还有|另外|不过|但是?|其实|好的?|嗯|谢谢)?(?:(?:我|我们|咱们|本人|俺)(?!的?(?:" + KIN + r"))|"
    r"请|麻烦|劳驾|帮我|给我|帮忙|替我|你|您)"
)
# A clause that names whose words the ones before it were ("我老婆说的", "这是我妈的意思", "中介讲的").
_ATTRIBUTION_RE = re.compile(
    r"^(?:这|这是|这些|这些是|那|那是|都是|是|这个是|以上是|上面是)?(?:我|我的)?"
    rf"(?:{KIN}|中介|房东|业主|经纪人|客服|别人|他|她|他们|她们|人家)(?:的)?"
    r"(?:说的|讲的|提的|写的|发的|觉得的?|认为的|想的|要的|意思|想法|要求|原话|意见|建议的?|要求的|觉得|说|讲)"
    r"[的了吧呢啊呀哈哦嘛]*$"
)
# A request about one time, not a lasting preference: "希望明天能送到", "希望这周能安排看房".
_ONE_OFF_RE = re.compile(
    r"(?:今天|明天|后天|今晚|明晚|今早|明早|今天下午|明天上午|这周|本周|下周|这两天|这几天|周[一二三四五六日末]前|月底前|马上|立刻|立即)"
    r"[^，,。]{0,8}?(?:送到|送来|送过来|到货|发货|发出|寄出|寄到|回复|回我|答复|安排|处理|办好|办理|上门|联系|打电话|看房|到|给我)"
)
# A form of address is a name: a surname (小/老/阿 before it, a title after it), a given name after a
# surname, or an English name; never a verb phrase after the naming cue ("叫我去看房", "叫我一声").
_NAME_SHAPE_RE = re.compile(
    rf"^(?:[小老阿]?{SURNAME}[\u4e00-\u9fff]{{0,2}}?(?:{TITLE})?|阿[\u4e00-\u9fff]|[A-Za-z][A-Za-z .'-]{{0,30}})"
    r"(?:（姓）)?$"
)
_VERB_IN_NAME_RE = re.compile(r"[去来看找帮给问说做买租搬带约等到回打发送拿办走跑吃喝玩聊]|一声|一下|就行|就好")
# Exploring or asking to be shown, not stating a want: "我想了解一下锦江的房子", "帮我介绍下成都的房价",
# "明天一起看看上隽的2房吧"; unless the clause also says what the customer will do (租, 买, 找…).
_INQUIRY_VERB_RE = re.compile(
    r"了解|介绍|咨询|打听|问问|问一下|问下|(?:约|带我|带|陪我|一起|过去|去)(?:个|几个|下|一下)?[^，,。]{0,8}?(?:看看|看一下|看下)|"
    r"看看房|看一下房|看下房|约(?:个|几个|一下)?看"
)
_FIRM_VERB_RE = re.compile(r"(?:想|要|打算|准备|计划|需要)(?:在)?[^，,。]{0,6}?(?:租|买|找|住|置换)|需要|预算")
# A fragment, not a thing: the object opens with a particle or a word cut in half, asks, or points.
_FRAGMENT_START_RE = re.compile(r"^(?:么|吗|呢|吧|了|的|及|与|而|且|并|但|就|也|都|又|再|才|面(?!积)|边(?!户)|里)")
_INQUIRY_RE = re.compile(
    r"看看|了解|咨询|介绍|请问|问问|问下|谈|让|能不能|可不可以|有没有|多少|几|什么|啥|哪|怎么|吗|呢|么"
)
# A claim that something is done sits in a slot where a thing or a place was expected: "想在已付定金附近租".
_CLAIM_RE = re.compile(r"已经|已付|已交|交了|付了|签了|定金|意向金|首付款|押金已")
# Words that are never the thing wanted on their own ("低楼层采光不能有影响" → 影响).
_ABSTRACT_RE = re.compile(
    r"^(?:影响|问题|情况|东西|方面|感觉|样子|空间|部分|相关|那种|这种|一些|事情|地方|要求|条件|选择)$"
)
# An object that starts with a verb of paying or waiting is an obligation, not a want ("要交很多税").
_OBLIGATION_RE = re.compile(
    r"^(?:交(?!通|流|界|易)|付(?!费方式)|花(?!园)|等|排(?!名)|办(?!公)|问|说|做(?!饭)|被|让|给|还(?!价))"
)
# Values nobody wants: a word cut in half by the clause's split ("要么沿街" → "么沿街"), bargaining or
# asking inside the value ("面谈能在让5000", "还价的空间"), a pointer at what was shown ("上面那个房子").
_JUNK_VALUE_RE = re.compile(
    r"^(?:么|吗|呢|吧|了|的|及|与|而|且|在|面(?!积)|边(?!户)|相关|周边介绍)|谈|让|还价|能下来|房子能看|介绍|那个房|这个房|"
    r"考虑|想想|商量|再说|还是|然后|看看|看一下|知道|顺便|帮我|符合|他|她|"
    r"怎么|什么|多少|"
    # somebody's say on it ("要看老婆意见" → 老婆意见): whose decision it is, never a thing wanted
    r"(?:意见|意思|看法|态度|想法)$"
)


def _place_names_known(candidate: Candidate, reading: ClauseReading) -> bool:
    names = reading.context.places if reading.context else None
    value = candidate.value.split("（")[0]
    if value.isascii():
        return bool(EN_CITY_RE.fullmatch(value))  # the English reader's cities ("I work in Beijing")
    parts = [part for part in re.split(r"[、，,/和或]|或者", value) if part]
    if not parts:
        return False
    for part in parts:
        found = places_in(part, names)
        if not found or found[0].words != part or (candidate.field == "district" and found[0].rank == PROVINCE):
            return False
    return True


def _object_of(candidate: Candidate) -> str:
    return candidate.content.partition("：")[2] or candidate.content.partition(":")[2]


def _object_in_form(candidate: Candidate, reading: ClauseReading) -> bool:
    obj = _object_of(candidate).strip()
    if not CJK_RE.search(obj):
        return bool(re.fullmatch(r"[A-Za-z0-9][\w .+/-]{0,40}", obj))  # "Prefers: quiet area", "L", "SUV"
    core = re.sub(r"（.*?）", "", obj)
    if len(core) < 2 and not re.fullmatch(r"[A-Za-z0-9]+", core):
        return False
    if _FRAGMENT_START_RE.match(core) or _INQUIRY_RE.search(core) or _LISTING_RE.search(core):
        return False
    if _CLAIM_RE.search(core):
        return False
    return not (_ABSTRACT_RE.match(core) or _OBLIGATION_RE.match(core))


def junk(candidate: Candidate) -> bool:
    """A value no supervisor would want to read: not even a proposal (the extractor cut a fragment)."""
    value = candidate.value or _object_of(candidate)
    core = re.sub(r"（.*?）", "", value).strip()
    if not core:
        return True
    if candidate.field == "preferred_name":
        # "叫我下午再打过来": an errand after the naming cue is no name at all (a nickname is judged
        # by `_name_form`)
        return bool(_VERB_IN_NAME_RE.search(core[1:])) and len(core) > 3
    return bool(_JUNK_VALUE_RE.search(core) or _ABSTRACT_RE.match(core) or _OBLIGATION_RE.match(core))


# --- the rows -----------------------------------------------------------------------------------


def _forwarded(candidate: Candidate, reading: ClauseReading) -> bool:
    return reading.forwarded


_QUOTE_MARKS = "“”\"「」『』‘’'"
_QUOTED_RE = re.compile(r"[“\"「『‘]([^”\"」』’]{1,200})[”\"」』’]")


def _quoted(candidate: Candidate, reading: ClauseReading) -> bool:
    """The candidate was read inside quotation marks: somebody's words, quoted (the landlord's, a
    friend's, an earlier message), which the customer may not mean as their own."""
    value = (candidate.value or candidate.content.partition("：")[2]).split("（")[0].strip(_QUOTE_MARKS)
    clause = reading.text.strip(_QUOTE_MARKS + "，,。 ")
    return any((clause and clause in quoted) or (value and value in quoted) for quoted in reading.quotes)


@functools.lru_cache(maxsize=64)
def _quotes_in(line: str) -> tuple[str, ...]:
    """The words inside quotation marks in a line (read once per line, not once per candidate)."""
    return tuple(match.group(1) for match in _QUOTED_RE.finditer(line))


def _third_party(candidate: Candidate, reading: ClauseReading) -> bool:
    # The statement reader keeps only what the customer says of themselves (a requester inside their
    # own requirement, their household); a clause read as someone else's words says so by its rule,
    # by its subject ("我姐要三居室") or by a clause after it naming whose words they were.
    return reading.rule in THIRD_PARTY_RULES or reading.third_party


def _value_at(candidate: Candidate, text: str) -> int:
    """Where the candidate's value stands in the clause (-1 when its words are not there as such)."""
    value = (candidate.value or _object_of(candidate)).split("（")[0].strip()
    if not value:
        return -1
    return text.find(value) if value in text else text.find(value[:2])


def _negated(candidate: Candidate, reading: ClauseReading) -> bool:
    # "我不打算要三居", "三居算了", "预算8000是不可能的": a want negated or taken back is no want; a
    # refusal (a constraint) already says so. The extractor reads the firm ones as a refusal
    # (`extract._negated_want`); what is left is dropped.
    if candidate.type == CONSTRAINT or candidate.content.startswith(("可以接受", "不强求")):
        return False
    if reading.rule == "budget_cap":
        return False  # "六千五以上的就不要了": what is refused above the amount makes it the cap
    at = _value_at(candidate, reading.text)
    negated, retracted = reading.negated_want, reading.retracted
    if negated is not None and (at < 0 or negated.start() < at):
        return True
    return retracted is not None and (at < 0 or retracted.start() > at)


def _amount_bound(candidate: Candidate, reading: ClauseReading) -> bool:
    # "我预算没有8000", "远远不止5000": the amount written is not the budget; a supervisor reads it.
    for amount in candidate.values:
        if not isinstance(amount, Amount) or not amount.words:
            continue
        at = reading.text.find(amount.words)
        if at >= 0 and _NOT_THE_AMOUNT_RE.search(reading.text[:at]):
            return True
        if amount.words.startswith("有") and _NOT_THE_AMOUNT_RE.search(reading.text[: max(at, 0)] + "没"):
            return True  # the amount reader took 有 from 没有 ("没有8000" → "有8000")
    return False


def _alternative(candidate: Candidate, reading: ClauseReading) -> bool:
    # "我想要三居或者两居": either value, so neither is the customer's one value. Areas are a list by
    # nature ("静安或者徐汇都可以" is both), and refusing either refuses both ("不要一楼或者顶楼").
    if candidate.type == CONSTRAINT or candidate.field in {"city", "district"}:
        return False
    if reading.rule in {"either_is_fine", "alternative_area"} or not reading.alternative:
        return False
    at = _value_at(candidate, reading.text)
    if at < 0:
        return True
    value = (candidate.value or _object_of(candidate)).split("（")[0].strip()
    # the or stands beside this value ("想在海淀或者昌平买套小两居": the layout is no alternative)
    return _ALTERNATIVE_RE.search(reading.text[max(0, at - 4) : at + len(value) + 4]) is not None


def _one_off(candidate: Candidate, reading: ClauseReading) -> bool:
    # "希望明天能送到": a request about one time (a window has its own key and expiry) is no lasting want.
    if candidate.type != PREFERENCE or candidate.field or candidate.expires_at is not None:
        return False
    return _ONE_OFF_RE.search(_object_of(candidate)) is not None


def _question(candidate: Candidate, reading: ClauseReading) -> bool:
    if reading.kind is ClauseKind.QUESTION:
        return True
    return reading.question_sentence and not reading.own_want


# The customer's own home is no listing: "现在这套房子6月底到期", "我住的这套太小了".
_OWN_HOME_RE = re.compile(r"(?:现在|目前|我|我们|我家)(?:住的|租的|买的)?(?:这|那)(?:套|间|个房子|房子)")


def _listing(candidate: Candidate, reading: ClauseReading) -> bool:
    if candidate.type == CONSTRAINT or reading.own_home:
        return False
    return reading.listing


def _comparison(candidate: Candidate, reading: ClauseReading) -> bool:
    return reading.sentence_shape.comparison


def _bargaining(candidate: Candidate, reading: ClauseReading) -> bool:
    return reading.sentence_shape.bargaining


def _listing_price(candidate: Candidate, reading: ClauseReading) -> bool:
    if candidate.field != "budget":
        return False
    if reading.listing_price:
        return True
    # "这套单价五万，总价三百万": a price in a sentence about one listing is the listing's
    return reading.price_words and reading.sentence_shape.listing


def _reason(candidate: Candidate, reading: ClauseReading) -> bool:
    # A fact a reason states is still the customer's ("因为家里有老人", "因为预算只有五千"); a want
    # read out of a reason or a complaint ("夏天太热了" → 偏好：夏天太热) is none.
    if candidate.type == FACT:
        return False
    if reading.kind is ClauseKind.REASON or reading.rule == "reason":
        return True
    return candidate.type != CONSTRAINT and not candidate.field and reading.reason_shape


def _inquiry(candidate: Candidate, reading: ClauseReading) -> bool:
    if reading.rule == "inquiry":
        return True
    return reading.inquiry


def _no_trigger(candidate: Candidate, reading: ClauseReading) -> bool:
    return reading.rule == "bare_comparative"


# A condition the reader let through (a topic's 的话 is no condition: "萧山的话也可以考虑").
_HYPOTHETICAL_RE = re.compile(
    r"如果|假如|假设|万一|倘若|(?<![主就还要])要是(?![\d一二三四五六七八九十两])|若是|除非|"
    r"一旦|假使|如若|前提是|条件是|只要[^，,。]{1,12}?(?<!不)就(?!行|好|可以|够|ok|OK)|"
    r"\bif\b|\bunless\b|\bsuppose\b|\bin\s+case\b|\bwhat\s+if\b",
    re.IGNORECASE,
)


def _hypothetical(candidate: Candidate, reading: ClauseReading) -> bool:
    return reading.rule == "conditional" or reading.hypothetical


def _past(candidate: Candidate, reading: ClauseReading) -> bool:
    if reading.past:
        return True
    return candidate.field in {"city", "district"} and reading.past_event


# Going to a place is a trip unless the customer goes there to live or work ("去杭州工作", "到上海找房").
_GOING_TO_RE = re.compile(r"(?:去|到)[\u4e00-\u9fff]{1,6}?(?:市)?(?P<after>[^，,。]{0,6})")
_SETTLING_RE = re.compile(
    r"^(?:工作|上班|定居|生活|发展|读书|上学|上课|找房|租房|买房|看房|找|租|买|住|安家|落户|长住|[\u4e00-\u9fff]{0,2}(?:校区|门店|网点))"
)


def _trip(candidate: Candidate, reading: ClauseReading) -> bool:
    if candidate.key == DESTINATION_KEY:
        return True
    if candidate.type == PREFERENCE and not candidate.field:
        trip = _TRIP_OBJECT_RE.match(_object_of(candidate))  # "偏好：云南玩"
        names = reading.context.places if reading.context else None
        return trip is not None and any(
            place.words == trip.group("where") for place in places_in(trip.group("where"), names)
        )
    if candidate.field not in {"city", "district"}:
        return False
    if reading.trip:
        return True
    value = candidate.value.split("（")[0]
    going = re.search(rf"(?:去|到){re.escape(value)}(?:市)?(?P<after>[^，,。]{{0,6}})", reading.text) if value else None
    return going is not None and not _SETTLING_RE.match(going.group("after"))


def _hedged(candidate: Candidate, reading: ClauseReading) -> bool:
    return reading.hedged or candidate.confidence <= 0.5 or reading.sentence_shape.hedge_clause


def _place_form(candidate: Candidate, reading: ClauseReading) -> bool:
    return candidate.field in {"city", "district"} and not _place_names_known(candidate, reading)


def _name_form(candidate: Candidate, reading: ClauseReading) -> bool:
    if candidate.field != "preferred_name":
        return False
    value = candidate.value
    return not _NAME_SHAPE_RE.match(value) or bool(_VERB_IN_NAME_RE.search(value[1:]))


def _object_form(candidate: Candidate, reading: ClauseReading) -> bool:
    return not candidate.field and not _object_in_form(candidate, reading)


HOLD_BACKS: tuple[HoldBack, ...] = (
    HoldBack("negated", "否定或收回的说法（不打算、算了、不可能…），不是想要", "我不打算要三居", _negated),
    HoldBack("forwarded", "转发或粘贴的聊天记录，不是客户本人的话", "[聊天记录] 张先生：我想在浦东租三室", _forwarded),
    HoldBack("quoted", "引号里引用的话，不一定是客户本人的意思", "“不要一楼”，这是我妈的意思", _quoted),
    HoldBack("third_party", "说的是别人（家人、朋友等）的想法，不是客户本人的", "我老婆说，不要顶楼", _third_party),
    HoldBack("comparison", "在比较或挑选几个选项，不是明确的需求", "这两套哪个好，我比较喜欢浦东那套", _comparison),
    HoldBack("bargaining", "议价或还价，不是客户的需求或预算", "便宜点的话我就要这套，预算三百万", _bargaining),
    HoldBack("listing_price", "房源的价格，不是客户的预算", "这套单价四万五", _listing_price),
    HoldBack("amount_bound", "金额前后有“没有、不止”等，写下的数不是客户的预算", "我预算远远不止五千", _amount_bound),
    HoldBack("question", "问句：客户在询问，没有明确说出自己的需求", "有没有两居室？", _question),
    HoldBack("listing", "说的是某一套房源或某件商品，不是客户的长期需求", "这套我比较喜欢朝南的卧室", _listing),
    HoldBack("inquiry", "在了解情况或约看房，没有明确说出需求", "我想了解一下锦江的房子", _inquiry),
    HoldBack("reason", "原因或感受，不是需求", "不考虑顶楼，夏天太热了", _reason, asked="您对楼层有要求吗？"),
    HoldBack("no_trigger", "没有说想要或需要，可能只是对房源的评价", "配套好一些", _no_trigger),
    HoldBack("hypothetical", "假设或条件，不是确定的需求", "有电梯的话我要高层", _hypothetical),
    HoldBack("past", "过去的事，不是现在的需求", "去年在南京住过半年", _past),
    HoldBack("trip", "一次出行或行程，不是长期需求（旅行业务可采纳）", "下周去上海开会", _trip),
    HoldBack("hedged", "语气不确定（可能、也许、应该…）", "可能要两居吧", _hedged),
    HoldBack("alternative", "在两个选项之间（或者），不是一个确定的值", "我想要三居或者两居", _alternative),
    HoldBack("one_off", "一次性的请求（某天送到、某天回复），不是长期偏好", "希望明天能送到", _one_off),
    HoldBack("place_form", "地名不在地名库（省市区与知识库的片区）中", "想在已付定金附近租", _place_form),
    HoldBack("name_form", "称呼不像人名", "叫我土豆就行", _name_form),
    HoldBack("object_form", "内容不像明确的需求，可能是句子的片段", "最好里面有阳台", _object_form),
)
# An acceptance with nothing to relax ("其实一楼也可以考虑" before any 不考虑：一楼): capture, which knows
# the customer's memory, holds it back under this name (the reader cannot tell).
RELEASE_ALONE = "release_alone"
# Rows whose candidates are no want at all: dropped, not even proposed (a reason or a complaint
# read as a preference would only fill the review queue).
DROPPED_ROWS = frozenset({"reason", "negated", "one_off"})
HOLD_BACK_LABELS: dict[str, str] = {
    **{row.name: row.label for row in HOLD_BACKS},
    RELEASE_ALONE: "只说了也可以接受（或不强求），之前没有对应的要求",
}


def hold_back(candidate: Candidate, reading: ClauseReading) -> HoldBack | None:
    """The first row that holds this candidate back from an automatic write, or None: it may be written."""
    return next((row for row in HOLD_BACKS if row.holds(candidate, reading)), None)


def hold_back_label(name: str) -> str:
    """The Chinese reason for a row's name (the name itself for a row this code no longer has)."""
    return HOLD_BACK_LABELS.get(name, name)


__all__ = [
    "DROPPED_ROWS",
    "HOLD_BACKS",
    "HOLD_BACK_LABELS",
    "RELEASE_ALONE",
    "ClauseReading",
    "HoldBack",
    "SentenceShape",
    "hold_back",
    "hold_back_label",
    "junk",
]
