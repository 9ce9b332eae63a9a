"""The grounding reader: does the reader itself read the model's value from a customer message? Plain Python.

The model proposes profile values and hypotheses; neither is the customer's word. A proposed value
is kept only where capture's own extraction reads that field from one of the customer's messages
with an equal canonical value (`reads_same`): amounts by their parsed numbers (4500 == 四千五 ==
4,500元/月), dates by the days they resolve to against the message's send time, places by the
place they name, other text by `normalise_for_grounding`. A substring is never enough: "我家有5口人"
holds a 5 but states no budget.

A hypothesis may rest only on a message that carries content: greetings and acknowledgements
(`SMALL_TALK`, one named row per family, its example beside it) carry none, nor does what remains of
a message once its personal numbers are cut out if that is only the number's label.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date

from qiwei_site.reading.extract import Candidate, ExtractContext
from qiwei_site.reading.meaning import DECORATION, words_only
from qiwei_site.reading.normalise import fold_compatibility, normalise_for_grounding, normalise_statement
from qiwei_site.reading.values import Amount, DateSpan, Place, amounts_in, dates_in, places_in

normalise = normalise_for_grounding

# --- profile values: the same field, the same canonical value ---------------------------------

AMOUNT, DATE, PLACE, TEXT = "amount", "date", "place", "text"

# How each declared profile field's value is compared; a field not listed compares as text.
FIELD_KINDS: dict[str, str] = {
    "budget": AMOUNT,
    "move_in_date": DATE,
    "city": PLACE,
    "district": PLACE,
    "preferred_name": TEXT,
    "layout": TEXT,
}


def _remainder_is_decoration(text: str, spans: Iterable[tuple[int, int]]) -> bool:
    kept: list[str] = []
    last = 0
    for start, end in sorted(spans):
        if start >= last:
            kept.append(text[last:start])
            last = end
    kept.append(text[last:])
    return all(char in DECORATION for char in words_only("".join(kept)).casefold())


def _amount_numbers(amounts: Iterable[Amount]) -> tuple[float, ...]:
    return tuple(sorted({number for amount in amounts for number in amount.numbers()}))


def _date_days(dates: Iterable[DateSpan]) -> frozenset[tuple[date, date]]:
    return frozenset((span.first, span.last) for span in dates if not span.soon)


def _place_names(places: Iterable[Place]) -> frozenset[str]:
    return frozenset(place.name for place in places)


def _proposed(kind: str, value: str, context: ExtractContext) -> tuple[object, bool]:
    """(the canonical value of a proposed `value`, whether nothing but decoration stands beside it)."""
    text = normalise_statement(value)
    if kind == AMOUNT:
        amounts = amounts_in(text, bare=True)
        return _amount_numbers(amounts), _remainder_is_decoration(text, ((a.start, a.end) for a in amounts))
    if kind == DATE:
        if context.sent_at is None:
            return frozenset(), False
        dates = dates_in(text, context.sent_at.date())
        return _date_days(dates), _remainder_is_decoration(text, ((d.start, d.end) for d in dates))
    places = places_in(text, context.places)
    return _place_names(places), _remainder_is_decoration(text, ((p.start, p.end) for p in places))


def _read(kind: str, candidate: Candidate, context: ExtractContext) -> object:
    """The canonical value the reader read: from the values it parsed from the customer's words,
    or (a city read as bare words) from its own value read the same way."""
    if kind == AMOUNT:
        amounts = [v for v in candidate.values if isinstance(v, Amount)]
        return _amount_numbers(amounts) if amounts else _proposed(kind, candidate.value, context)[0]
    if kind == DATE:
        dates = [v for v in candidate.values if isinstance(v, DateSpan)]
        return _date_days(dates) if dates else _proposed(kind, candidate.value, context)[0]
    places = [v for v in candidate.values if isinstance(v, Place)]
    return _place_names(places) if places else _proposed(kind, candidate.value, context)[0]


def reads_same(field: str, value: str, candidate: Candidate, context: ExtractContext) -> bool:
    """True when `candidate` (what extraction read from one customer message, with that message's
    `context`) is the field `field` with the same canonical value as the model's `value`."""
    if candidate.field != field or not candidate.value or not normalise_for_grounding(value):
        return False
    if normalise_for_grounding(value) == normalise_for_grounding(candidate.value):
        return True
    kind = FIELD_KINDS.get(field, TEXT)
    if kind == TEXT:
        return False
    proposed, bare = _proposed(kind, value, context)
    return bool(proposed) and bare and proposed == _read(kind, candidate, context)


def read_field(field: str, value: str, candidates: Iterable[Candidate], context: ExtractContext) -> bool:
    """True when any of one message's candidates reads `field` as `value` (see `reads_same`)."""
    return any(reads_same(field, value, candidate, context) for candidate in candidates)


# --- hypotheses: only messages that carry content ---------------------------------------------

# Greetings, acknowledgements and fillers, one family a row: (name, pattern, example). A message made
# of these alone, in any order and repeated, carries nothing a hypothesis could rest on.
SMALL_TALK: tuple[tuple[str, str, str], ...] = (
    (
        "greeting",
        r"你好|您好|你们好|大家好|哈喽|哈啰|嗨|早上好|上午好|中午好|下午好|晚上好|早安|晚安|早|hi|hello|hey",
        "你好",
    ),
    ("are you there", r"在吗|在么|在嘛|在不在|有人吗|有人在吗|在线吗|人呢", "在吗"),
    (
        "acknowledgement",
        r"好的|好滴|好嘞|好哒|好吧|好呀|好啊|好|行的|行吧|行|可以的|可以|收到|知道了|知道|明白了|明白|了解了|了解|"
        r"懂了|没问题|是的|是|对的|对|嗯呢|嗯+|恩+|额+|哦+|噢+|喔+|okay|ok|okk|yes|yep|sure|fine",
        "好的",
    ),
    ("thanks", r"谢谢你|谢谢您|谢谢|多谢|感谢|谢啦|谢了|辛苦了|辛苦|麻烦你了|麻烦了|thankyou|thanks|thank|thx", "谢谢"),
    ("farewell", r"再见|拜拜|回头聊|下次聊|bye", "拜拜"),
    ("addressing us", r"老板|亲亲|亲|小哥|小姐姐|美女|帅哥|师傅|客服|顾问|你|您", "谢谢老板"),
    ("laughter and particles", r"哈+|呵+|嘿+|嘻+|啊|呀|哦|呢|吧|嘛|哟|吗|啦|哈", "哈哈"),
)
_SMALL_TALK_RE = re.compile("(?:" + "|".join(f"(?:{pattern})" for _name, pattern, _example in SMALL_TALK) + ")+")

# What stays of "我的手机号是13800138000" once the number is cut out: the number's label, no content.
_NUMBER_LABEL_RE = re.compile(
    r"(?:我的|我|这是|这个|是|号码|手机号码|手机号|手机|电话号码|电话|联系方式|身份证号码|身份证号|身份证|"
    r"银行卡号|银行卡|卡号|尾号|号|给你|发你|你记一下|记一下)+"
)


def is_small_talk(text: str) -> bool:
    """True when `text` is only greetings, acknowledgements and fillers ("你好", "好的～", "嗯嗯 谢谢")
    — or nothing at all once punctuation, symbols and emoji are set aside."""
    words = words_only(fold_compatibility(text).casefold())
    return not words or _SMALL_TALK_RE.fullmatch(words) is not None


def carries_content(text: str) -> bool:
    """True when a message (with its personal numbers already cut out) says something beyond small
    talk and the label of a number that is no longer there."""
    if is_small_talk(text):
        return False
    words = words_only(fold_compatibility(text).casefold())
    stripped = _SMALL_TALK_RE.sub("", _NUMBER_LABEL_RE.sub("", words))
    return bool(stripped)
