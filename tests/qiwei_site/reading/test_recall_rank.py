"""`rank` reads through a memoised inverted index; it must answer exactly as `rank_documents`."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from qiwei_site.reading.recall import RANK_CORPORA, _corpora, document, features, rank, rank_documents

WORDS = ["预算", "八千", "8000", "地铁", "两居室", "朝南", "养猫", "浦东", "月底", "搬家", "quiet", "budget", "7.5k"]
texts = st.lists(st.lists(st.sampled_from(WORDS), min_size=0, max_size=6).map("，".join), min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join), documents=texts)
def test_rank_answers_as_rank_documents(query, documents):
    # given any texts and a query / when ranked through the memo and directly
    expected = rank_documents(features(query), [document(features(text)) for text in documents], 6)
    # then the answers are the same, twice (the second read hits the memo)
    assert rank(query, documents, 6) == expected
    assert rank(query, documents, 6) == expected


def test_rank_keeps_a_bounded_number_of_corpora():
    # given more distinct corpora than the memo keeps
    for n in range(RANK_CORPORA * 3):
        rank("预算", [f"预算{n}千", "地铁"], 3)
    # then only the newest are kept
    assert len(_corpora) <= RANK_CORPORA
