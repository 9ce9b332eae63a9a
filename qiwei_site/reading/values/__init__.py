"""Values in customers' words, normalised: amounts (六千, 七千五, 五六千, 两到三千, 不超过八千), places
(浦东, 滨江, 静安区, and the account's own place names) and dates (下个月15号, 国庆后) resolved against
when the message was sent. Plain Python, no Django: capture, recall and benchmarks share it.

Each value keeps the words it was read from beside what they mean, so memory can show both.
"""

from __future__ import annotations

from qiwei_site.reading.values.amounts import Amount, amounts_in, canonical_numbers
from qiwei_site.reading.values.dates import DateSpan, dates_in, resolve_date
from qiwei_site.reading.values.numbers import parse_number
from qiwei_site.reading.values.places import Place, PlaceNames, gazetteer_place, parse_place_list, places_in

__all__ = [
    "Amount",
    "DateSpan",
    "Place",
    "PlaceNames",
    "amounts_in",
    "canonical_numbers",
    "dates_in",
    "gazetteer_place",
    "parse_number",
    "parse_place_list",
    "places_in",
    "resolve_date",
]
