"""The grounding reader: does this customer message state this value? Plain Python.

The model proposes profile values; one is kept only where the customer's own words affirm it.
A message is read as the clauses it affirms (what a clause negates, "我不要两居室", is cut out by
the extractor's clause guard), each compared after `normalise_for_grounding`.
"""

from __future__ import annotations

import re

from qiwei_site.reading.extract.clauses import affirmed_text, split_sentences
from qiwei_site.reading.normalise import fold_compatibility, normalise_for_grounding

# What may stand beside the numbers of a value and still be the same value ("4500元/月").
_UNIT_CHARS = frozenset("元块圆万千百kKwW/每月年左右以内上下约大概套室厅卫个间号日周天")
_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")
_THOUSANDS_RE = re.compile(r"(?<=\d)[,，](?=\d{3})")

normalise = normalise_for_grounding


def supports(value: str, statement: str) -> bool:
    """True when `statement` (one affirmed clause) carries `value`."""
    norm_value, norm_message = normalise_for_grounding(value), normalise_for_grounding(statement)
    if not norm_value:
        return False
    # Digits must not run on: "4500" is not supported by "14500" or "45000".
    pattern = ("(?<!\\d)" if norm_value[0].isdigit() else "") + re.escape(norm_value)
    pattern += "(?!\\d)" if norm_value[-1].isdigit() else ""
    if re.search(pattern, norm_message):
        return True
    # "4500元/月" is supported by "预算4500左右": every number of the value appears as a whole
    # number in the message, and the rest of the value is only units.
    numbers = _NUMBER_RE.findall(norm_value)
    if not numbers:
        return False
    remainder = _NUMBER_RE.sub("", norm_value)
    if any(char not in _UNIT_CHARS for char in remainder):
        return False
    message_numbers = set(_NUMBER_RE.findall(norm_message))
    return all(number in message_numbers for number in numbers)


def affirmed_statements(text: str) -> list[str]:
    """The customer's message as the clauses it affirms."""
    text = _THOUSANDS_RE.sub("", fold_compatibility(text))  # "４，５００" stays one number
    return [affirmed_text(clause) for clauses, _question in split_sentences(text) for clause in clauses]


def states(value: str, statements: list[str]) -> bool:
    """True when any of a message's affirmed statements carries `value`."""
    return any(supports(value, statement) for statement in statements)
