"""Local relevance recall (spec §4): rank older messages against the latest customer message by
CJK character bigrams, English words and numbers weighted by rarity; no network, pure Python.

`rank` is the stable entry point for benchmarks and tools; `recall_for` applies it to a
customer's effective history outside the recent window.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    from conversations.models import Customer, Message

# Models and selectors are imported lazily so `rank` works without a configured Django
# (benchmarks, tools).

# --- tokenisation ------------------------------------------------------------------------

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_TOKEN_RE = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<num>\d+(?:[.,]\d+)*)|(?P<word>[a-z]+(?:'[a-z]+)*)")

# Feature weights: a shared CJK bigram or English word is a real lexical match; a shared
# single CJK character is weak evidence (很多字单独出现没有意义); numbers (budgets, dates,
# floors) are strong when they match.
_W_BIGRAM = 1.0
_W_UNIGRAM = 0.3
_W_WORD = 1.0
_W_NUMBER = 1.2

# BM25-style term saturation and (mild) length normalisation: chat messages are short, so a
# long one is penalised less than a long web page would be.
_K1 = 0.9
_B = 0.4
# Documents are a conversation in time order, and a question and its answer sit side by side:
# a message gets this share of its best neighbour's score (only if it matches on its own).
_NEIGHBOUR_SHARE = 0.3
# A document must match at least this share of the query's rarity-weighted features.
_MIN_COVERAGE = 0.08

_EN_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before being below
    between both but by can could couldn't did didn't do does doesn't doing don't down during each few for from
    further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself
    his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most my myself no nor
    not of off on once only or other ought our ours ourselves out over own same she she'd she'll she's should so
    some such than that that's the their theirs them themselves then there there's these they they'd they'll
    they're they've this those through to too under until up very was wasn't we we'd we'll we're we've were
    weren't what what's when when's where where's which while who who's whom why why's with won't would wouldn't
    you you'd you'll you're you've your yours yourself yourselves also just really yeah yes oh hey hi hello ok
    okay so well got get gets getting will shall may might must u im ive dont thats lot lots thing things
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
# Characters that carry grammar rather than meaning, dropped both as single characters and from
# bigrams ("的房" in "3000的房子" is noise). Ambiguous ones stay: 地 (地铁), 对 (对面), 过 (过户).
_ZH_STOP_CHARS = frozenset("的了是我你他她它们在吗呢啊吧呀嘛哦哈和与及就也都很还又这那个有着么")
_ZH_STOP_BIGRAMS = frozenset(
    """
    我们 你们 他们 她们 它们 什么 怎么 这个 那个 一个 一下 就是 还是 可以 没有 不是 这样 那样 然后 因为 所以
    但是 如果 我的 你的 他的 她的 是的 好的 谢谢 您好 你好 的话 一些 有点
    """.split()  # noqa: SIM905
)


def _stem(word: str) -> str:
    """A light English stemmer: possessives, plurals, -ing/-ed and a final -e."""
    if word.endswith("'s"):
        word = word[:-2]
    word = word.replace("'", "")
    if len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "ches", "shes", "xes", "zes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if len(stem) >= 3 and re.search("[aeiouy]", stem):
                # Undouble: "running" → "run", but keep "ll"/"ss" ("calling" → "call").
                if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                    stem = stem[:-1]
                word = stem
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


@lru_cache(maxsize=16384)
def features(text: str) -> tuple[tuple[str, float, int], ...]:
    """(feature, weight, count) for a text: CJK bigrams and single characters, stemmed English
    words without stopwords, and numbers. Cached: the same history is scored turn after turn."""
    normalised = unicodedata.normalize("NFKC", text or "").lower()
    counts: Counter[str] = Counter()
    for match in _TOKEN_RE.finditer(normalised):
        if match.lastgroup == "cjk":
            run = match.group()
            for char in run:
                if char not in _ZH_STOP_CHARS:
                    counts["c:" + char] += 1
            for i in range(len(run) - 1):
                bigram = run[i : i + 2]
                if (
                    bigram not in _ZH_STOP_BIGRAMS
                    and bigram[0] not in _ZH_STOP_CHARS
                    and bigram[1] not in _ZH_STOP_CHARS
                ):
                    counts["b:" + bigram] += 1
        elif match.lastgroup == "num":
            number = match.group().replace(",", "")
            counts["n:" + (number.rstrip("0").rstrip(".") if "." in number else number.lstrip("0") or "0")] += 1
        else:
            word = match.group()
            if word in _EN_STOPWORDS or len(word) < 2:
                continue
            stem = _stem(word)
            if stem and stem not in _EN_STOPWORDS:
                counts["w:" + stem] += 1
    weights = {"b": _W_BIGRAM, "c": _W_UNIGRAM, "w": _W_WORD, "n": _W_NUMBER}
    return tuple(sorted((feature, weights[feature[0]], count) for feature, count in counts.items()))


def tokens(text: str) -> list[str]:
    """The features of a text as a flat token list (what a BM25 baseline would index)."""
    return [feature for feature, _weight, count in features(text) for _ in range(count)]


# --- ranking -----------------------------------------------------------------------------


def rank(query: str, documents: Sequence[str], limit: int) -> list[int]:
    """Indexes of the documents most relevant to `query`, best first, at most `limit`.

    Score: for each distinct query feature, its weight × IDF over the candidate documents ×
    a BM25 saturation of its count in the document, with length normalisation so a long
    message does not win by size. Documents that match less than `_MIN_COVERAGE` of the
    query's rarity-weighted features are not returned. Documents are taken to be in time order:
    a matching message also gets a share of its best neighbour's score, because in a chat the
    answer sits next to the question. Ties go to the later index (the newer message).
    """
    if limit <= 0 or not documents:
        return []
    query_features = {feature: weight for feature, weight, _count in features(query)}
    if not query_features:
        return []
    doc_features = [features(document) for document in documents]
    lengths = [sum(weight * count for _f, weight, count in doc) for doc in doc_features]
    average_length = (sum(lengths) / len(lengths)) or 1.0
    document_frequency: Counter[str] = Counter()
    for doc in doc_features:
        document_frequency.update(feature for feature, _w, _c in doc if feature in query_features)
    total = len(documents)
    idf = {
        feature: math.log(1.0 + (total - document_frequency[feature] + 0.5) / (document_frequency[feature] + 0.5))
        for feature in query_features
    }
    query_mass = sum(query_features[feature] * idf[feature] for feature in query_features) or 1.0

    raw = [0.0] * total
    eligible = [False] * total
    for index, doc in enumerate(doc_features):
        norm = _K1 * (1.0 - _B + _B * lengths[index] / average_length)
        score = 0.0
        matched_mass = 0.0
        for feature, _weight, count in doc:
            query_weight = query_features.get(feature)
            if query_weight is None:
                continue
            term = query_weight * idf[feature]
            score += term * count * (_K1 + 1.0) / (count + norm)
            matched_mass += term
        raw[index] = score
        eligible[index] = score > 0.0 and matched_mass / query_mass >= _MIN_COVERAGE

    scored: list[tuple[float, int]] = []
    for index in range(total):
        if not eligible[index]:
            continue
        neighbour = max(raw[index - 1] if index > 0 else 0.0, raw[index + 1] if index + 1 < total else 0.0)
        scored.append((raw[index] + _NEIGHBOUR_SHARE * neighbour, index))
    scored.sort(key=lambda pair: (-pair[0], -pair[1]))
    return [index for _score, index in scored[:limit]]


# --- recall over a customer's history ---------------------------------------------------


@dataclass(frozen=True)
class RecalledMessage:
    id: int
    direction: str
    sender: str
    text: str
    sent_at: datetime


def recall_for(customer: Customer, query_message: Message | None) -> list[RecalledMessage]:
    """Older effective messages relevant to `query_message`, in time order.

    Only messages older than the newest QIWEI_AGENT_MEMORY_RECENT_MESSAGES (counted up to the
    query message) are candidates, and at most QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT of them,
    newest first, are scored; the best QIWEI_AGENT_MEMORY_RECALL_LIMIT are kept.
    """
    from conversations.selectors import messages_up_to

    limit = settings.QIWEI_AGENT_MEMORY_RECALL_LIMIT
    scan = settings.QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT
    recent = settings.QIWEI_AGENT_MEMORY_RECENT_MESSAGES
    if query_message is None or limit <= 0 or scan <= 0 or not query_message.text.strip():
        return []
    # The window ends at the query message, so an older turn can be rebuilt as it was.
    history = messages_up_to(customer, query_message)
    candidates = list(history.only("id", "direction", "sender", "text", "sent_at")[recent : recent + scan])
    if not candidates:
        return []
    # Oldest first, so rank()'s tie-break (later index wins) favours the newer message.
    candidates.reverse()
    best = rank(query_message.text, [message.text for message in candidates], limit)
    chosen = sorted((candidates[index] for index in best), key=lambda message: (message.sent_at, message.id))
    return [
        RecalledMessage(id=m.id, direction=m.direction, sender=m.sender, text=m.text, sent_at=m.sent_at) for m in chosen
    ]
