"""Reading one message is bounded (issue 36, item 9): past `READ_LIMIT_CHARS` a message is not read
at all and says why; within it, what admission reads of a clause or a sentence is read once however
many candidates it yields (no search per candidate: crafted text made that quadratic); and a
reading kept as data reads back exactly, under keys that change when the reader or what it reads
beside the words changes."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest

from qiwei_site.reading.extract import READ_LIMIT_CHARS, TOO_LONG, ExtractContext, admission, extract, unreadable
from qiwei_site.reading.extract.stored import context_key, extraction_data, extraction_of, reader_version
from qiwei_site.reading.values import PlaceNames

from .support import ACCOUNT_PLACES, SENT_AT, context


def _filled(unit: str, chars: int) -> str:
    return (unit * (chars // len(unit) + 1))[:chars]


# Crafted shapes, each at the ingest API's largest message (8,000 characters).
CRAFTED = {
    "digits": "1" * 8000,
    "numerals": _filled("三千五百四十二", 8000),
    "cue_words": _filled("我想要不考虑", 8000),
    "clauses": _filled("预算五千，", 8000),
    "nested_quotes": _filled("他说“我说「你说", 8000),
    "one_long_line": _filled("我想要一个朝南的两居室预算五千左右在浦东附近找房子不考虑顶楼", 8000),
}


@pytest.mark.parametrize("shape", list(CRAFTED))
def test_extract_of_a_message_past_the_bound_reads_nothing_and_says_why(shape):
    # given a crafted message longer than the reader's bound
    text = CRAFTED[shape]

    # when it is read
    reading = extract(text, context())

    # then nothing is read from it, and the reading says why
    assert unreadable(text) == TOO_LONG
    assert (reading.candidates, reading.releases, reading.proposals) == ([], [], [])
    assert reading.unread == TOO_LONG == "消息过长，未读取"


def test_extract_at_the_bound_still_reads_the_customers_words():
    # given a customer's message of exactly READ_LIMIT_CHARS characters, its wants first
    said = "我想在浦东找一套两居室，预算五千左右，不考虑顶楼。"
    text = said + _filled("周末我们一家人一般都在家，", READ_LIMIT_CHARS - len(said))
    assert len(text) == READ_LIMIT_CHARS and unreadable(text) is None

    # when it is read
    reading = extract(text, context())

    # then it is read as any message is
    assert reading.unread == ""
    assert {"户型：两居室", "不考虑：顶楼"} <= {candidate.content for candidate in reading.candidates}


class _CountedPattern:
    """A compiled pattern that counts its searches."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.searches = pattern, 0

    def search(self, text: str, *args: Any) -> re.Match[str] | None:
        self.searches += 1
        return self.pattern.search(text, *args)


def test_admission_reads_a_clause_and_its_sentence_once_however_many_candidates(monkeypatch):
    # given one long clause without punctuation that yields a candidate every few characters
    text = _filled("我想要不考虑", 1200)
    hedge = _CountedPattern(admission.WEAK_HEDGE_RE)
    comparison = _CountedPattern(admission._COMPARISON_RE)
    monkeypatch.setattr(admission, "WEAK_HEDGE_RE", hedge)
    monkeypatch.setattr(admission, "_COMPARISON_RE", comparison)
    judged: list[object] = []
    original = admission.hold_back
    monkeypatch.setattr(
        "qiwei_site.reading.extract.hold_back",
        lambda candidate, reading: judged.append(candidate) or original(candidate, reading),
    )

    # when it is read
    extract(text, context())

    # then admission judged many candidates, but searched the clause and its sentence once each
    assert len(judged) > 50
    assert hedge.searches <= 1 and comparison.searches == 1


# --- a reading kept as data -----------------------------------------------------------------------

MESSAGES = [
    "您好，我想在浦东找一套两居室，预算五千左右，最好朝南，不考虑顶楼。下个月15号之前要入住。",
    "酒仙桥或者大望路都行，叫我老王就好",
    "有没有带阳台的两居？可能要两居吧",
    "其实一楼也可以考虑",
    "我想12月20号搬进去，预算四千到五千",
]


@pytest.mark.parametrize("text", MESSAGES)
def test_kept_extraction_reads_back_exactly(text):
    # given what extraction read in a customer's message, kept as JSON
    reading = extract(text, context("您的预算大概多少？"))
    kept = json.loads(json.dumps(extraction_data(reading), ensure_ascii=False))

    # when it is read back
    back = extraction_of(kept)

    # then every candidate, release and proposal is the same, values and clauses included
    for tier in ("candidates", "releases", "proposals"):
        assert [dataclasses.asdict(c) for c in getattr(back, tier)] == [
            dataclasses.asdict(c) for c in getattr(reading, tier)
        ]


def test_context_key_changes_with_what_extraction_reads_beside_the_words():
    # given the context a message was read in
    base = context("您的预算大概多少？")

    # then the same context gives the same key, and each change a new one
    assert context_key(base) == context_key(context("您的预算大概多少？"))
    changed = [
        dataclasses.replace(base, previous_outbound="请问怎么称呼您？"),
        dataclasses.replace(base, sent_at=SENT_AT.replace(day=11)),
        dataclasses.replace(base, places=PlaceNames(["酒仙桥", "望京（朝阳区）"])),
        ExtractContext(sent_at=SENT_AT, previous_outbound="您的预算大概多少？", places=None),
    ]
    assert len({context_key(base), *(context_key(c) for c in changed)}) == 1 + len(changed)
    assert context_key(dataclasses.replace(base, places=PlaceNames(list(ACCOUNT_PLACES.local)))) != ""


def test_reader_version_is_a_digest_of_the_readers_source():
    # then it is stable within a process and looks like a digest
    assert reader_version() == reader_version()
    assert re.fullmatch(r"[0-9a-f]{16}", reader_version())
