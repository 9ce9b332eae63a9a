"""Personal numbers that identify without opening anything: mainland ID cards (checksum, python-stdnum),
passports and travel permits after their cue, bank cards (Luhn) and mobiles (phonenumbers); a label
beside the number decides.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import phonenumbers
from stdnum import luhn, numdb
from stdnum.cn import ric
from stdnum.exceptions import ValidationError

from qiwei_site.reading.safety.categories import BANK_CARD, ID_CARD, MOBILE

# --- personal numbers: mainland ID cards, bank cards, mobiles ---------------------------------

# Digit runs with at most one space or dash between digits ("6222 0212 3456 7890 123").
_ID_CARD_RE = re.compile(r"(?<![0-9A-Za-z])\d(?:[ -]?\d){16}[ -]?[0-9Xx](?![0-9A-Za-z])")
_CARD_RUN_RE = re.compile(r"(?<![0-9A-Za-z])\d(?:[ -]?\d){14,18}(?![0-9A-Za-z])")
# A label just before the number (same clause) says what it is; a label beats the bare rules.
_CLAUSE_TAIL = r"[^0-9\n。，,；;！!？?]{0,8}$"
_CARD_CONTEXT_RE = re.compile(
    r"(?:卡号|银行卡|信用卡|储蓄卡|借记卡|工资卡|银联|开户行|收款账户|银行账户|银行账号|"
    r"card|visa|master\s?card|amex|unionpay)" + _CLAUSE_TAIL,
    re.IGNORECASE,
)
# Weaker: "用卡6222…" or "6222…这张卡", unless an order or waybill label says otherwise.
_CARD_NEAR_BEFORE_RE = re.compile(r"卡[:：是为\s]{0,2}$")
_CARD_NEAR_AFTER_RE = re.compile(r"^\s?(?:这张|那张|的)?(?:银行卡|信用卡|储蓄卡|卡)(?![券住顿了])")
_ID_CONTEXT_RE = re.compile(r"(?:身份证|证件|身份号|公民身份|id\s?card|\bid\b|\bid\s?no)" + _CLAUSE_TAIL, re.IGNORECASE)
# ...and these make a number something else (order, waybill, invoice, contract numbers).
_OTHER_NUMBER_CONTEXT_RE = re.compile(
    r"(?:订单|单号|编号|流水|快递|运单|物流|工单|合同|发票|票号|房源|批次|序列号|order|tracking|invoice|ref|serial)"
    + _CLAUSE_TAIL,
    re.IGNORECASE,
)
_CONTEXT_WINDOW = 16

# A passport or travel-permit number after its cue ("护照号：E12345678", "Passport No. G12345678",
# "护照号是 533284617"): 6–10 letters and digits, at least six of them digits. The cue must touch the
# number (a word for "number" and 是/为/a colon may stand between), so "护照上的名字是 ZHANG SAN" and
# "passport expires 2026-05-01" stay.
_PASSPORT_RE = re.compile(
    r"(?:护照|通行证|回乡证|台胞证|(?<![A-Za-z])passport)"
    r"(?:\s*(?:号码|号|编号|证号|no\.?|number|num|#))?(?:\s*(?:是|为|:|：|is|=))?\s*"
    r"(?<![A-Za-z0-9])(?P<v>[A-Za-z]{0,2}\d[A-Za-z0-9]{5,9})(?![A-Za-z0-9-])",
    re.IGNORECASE,
)
PASSPORT_RULE = "passport"
_PASSPORT_CUE_RE = re.compile(r"护照|通行证|回乡证|台胞证|passport", re.IGNORECASE)


def _digits(value: str) -> str:
    return re.sub(r"[^0-9Xx]", "", value).upper()


def _before(text: str, start: int) -> str:
    return text[max(0, start - _CONTEXT_WINDOW) : start]


@lru_cache(maxsize=1)
def _places() -> Any:
    return numdb.get("cn/loc")


def _resident_id(number: str, *, labelled: bool) -> bool:
    """A mainland resident ID: 17 digits, a birth date and the check digit (0–9 or X), as python-stdnum
    reads them. `ric.is_valid` also wants the county to have existed in the birth year, which real
    numbers fail: a county code is given where a person registers, often years after birth
    (31011519800512001X, Pudong 1992–, born 1980). So the place only has to be a county stdnum knows
    at any time, and with a label ("身份证号…") not even that."""
    if len(number) != 18 or not number[:17].isdigit() or ric.calc_check_digit(number) != number[-1]:
        return False
    try:
        ric.get_birth_date(number)
    except ValidationError:
        return False
    return labelled or any("county" in props for _, props in _places().info(number[:6]))


def _is_id_card(text: str, start: int, end: int) -> bool:
    before = _before(text, start)
    labelled = bool(_ID_CONTEXT_RE.search(before))
    if not _resident_id(_digits(text[start:end]), labelled=labelled):
        return False
    return labelled or not _OTHER_NUMBER_CONTEXT_RE.search(before)


def _is_bank_card(text: str, start: int, end: int) -> bool:
    digits = _digits(text[start:end])
    before = _before(text, start)
    if _CARD_CONTEXT_RE.search(before):
        return 15 <= len(digits) <= 19
    if _OTHER_NUMBER_CONTEXT_RE.search(before):
        return False
    if _CARD_NEAR_BEFORE_RE.search(before) or _CARD_NEAR_AFTER_RE.search(text[end : end + 8]):
        return 15 <= len(digits) <= 19
    # A bare number: 16–19 digits, a card network's leading digit (UnionPay 62, Visa 4, Mastercard 5,
    # JCB/Discover 3 and 6), a valid Luhn check and not a repeated pattern.
    return 16 <= len(digits) <= 19 and digits[0] in "3456" and len(set(digits)) > 3 and bool(luhn.is_valid(digits))


def _passport_hits(text: str) -> Iterator[tuple[str, str, int, int]]:
    if not _PASSPORT_CUE_RE.search(text):
        return
    for match in _PASSPORT_RE.finditer(text):
        value = match.group("v")
        if sum(c.isdigit() for c in value) >= 6 and len(set(value)) > 2:
            yield PASSPORT_RULE, ID_CARD, match.start("v"), match.end("v")


def _personal_hits(text: str) -> Iterator[tuple[str, str, int, int]]:
    yield from _passport_hits(text)
    if sum(c.isdigit() for c in text) < 11:
        return
    ids: list[tuple[int, int]] = []
    for match in _ID_CARD_RE.finditer(text):
        if _is_id_card(text, match.start(), match.end()):
            ids.append(match.span())
            yield "id_card", ID_CARD, match.start(), match.end()
    for match in _CARD_RUN_RE.finditer(text):
        if any(start < match.end() and match.start() < end for start, end in ids):
            continue
        if _is_bank_card(text, match.start(), match.end()):
            yield "bank_card", BANK_CARD, match.start(), match.end()
    yield from _mobile_hits(text)


def _mobile_hits(text: str) -> Iterator[tuple[str, str, int, int]]:
    """Mainland mobiles as libphonenumber reads them: 13812345678, 138 1234 5678, +86-138-1234-5678."""
    for match in phonenumbers.PhoneNumberMatcher(text, "CN", leniency=phonenumbers.Leniency.VALID):
        number = match.number
        if (
            phonenumbers.region_code_for_number(number) == "CN"
            and phonenumbers.number_type(number) == phonenumbers.PhoneNumberType.MOBILE
        ):
            yield "mobile", MOBILE, match.start, match.end
