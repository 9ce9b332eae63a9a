"""Recall reads amounts as amounts: 八千, 8k, 8,000 and 0.8万 are one number (issue 15 item 5)."""

from __future__ import annotations

import pytest

from memory.recall import features, rank


def values(text: str) -> set[str]:
    return {feature[2:] for feature, _weight, _count in features(text) if feature.startswith("n:")}


# (an old message, a later question, the value both must carry)
SAME_AMOUNT = [
    ("预算8000左右，再多就吃力了", "八千的房子还有吗", "8000"),
    ("月租八千以内都能接受", "8k的两居有没有", "8000"),
    ("最多8,000一个月", "八千块能租到什么样的", "8000"),
    ("租金0.8万可以", "8000的那套还在吗", "8000"),
    ("两万一个月也可以考虑", "20000的那套呢", "20000"),
    ("预算2w以内", "两万的有吗", "20000"),
    ("首付准备了三百万", "300万首付够不够", "3000000"),
    ("总价350万左右", "三百五十万的有哪些", "3500000"),
    ("押金七千五", "7500的押金能退吗", "7500"),
    ("预算一万二", "12000的房子多吗", "12000"),
    ("预算1.2w", "一万二左右的", "12000"),
    ("1万5千是底线", "一万五能谈下来吗", "15000"),
    ("五六千的都行", "6000的那套", "6000"),
    ("五六千的都行", "5000的有吗", "5000"),
    ("两到三千就好", "2000的单间", "2000"),
    ("两到三千就好", "3000以内的", "3000"),
    ("3-5k的都可以看看", "三千的呢", "3000"),
    ("一两千的押金没问题", "押金1000行吗", "1000"),
    ("预算六七十万", "70万的二手房", "700000"),
    ("三四千一个月", "4000的一居室", "4000"),
    ("想住三楼左右", "3楼的还有吗", "3"),
    ("想要两居室", "2居的房源", "2"),
    ("离地铁二号线近一点", "2号线沿线有吗", "2"),
    ("十五号之前要入住", "15号能搬进去吗", "15"),
    ("二零二六年底到期", "2026年的合同", "2026"),
    ("步行十分钟以内", "10分钟能到地铁吗", "10"),
    ("８０００元以内", "八千的有吗", "8000"),
    ("My budget is $8,000 a month", "Is 8k enough for a two-bedroom?", "8000"),
    ("We can pay 2500 at most", "Anything around 2,500?", "2500"),
]


@pytest.mark.parametrize(("old", "question", "value"), SAME_AMOUNT)
def test_features_read_the_same_amount_however_it_is_written(old, question, value):
    # Given an amount written one way in an old message and another way in a question
    # When both are turned into recall features
    # Then both carry the amount as the same number
    assert value in values(old)
    assert value in values(question)


# Characters that are numerals, in words that are not numbers.
NOT_NUMBERS = [
    "您稍等一下",
    "我一直在找这附近的房子",
    "万一房东不同意呢",
    "千万别给我推荐顶楼",
    "上次看的那套十分满意",
    "屋里乱七八糟的",
    "一五一十都告诉您了",
    "二手房也可以考虑",
    "别三心二意了",
    "能不能便宜一点",
    "我们一起住",
    "装修一般般",
    "百分之百确定",
    "这个小区统一装修",
]


@pytest.mark.parametrize("text", NOT_NUMBERS)
def test_features_leave_numeral_characters_in_ordinary_words_as_words(text):
    # Given a sentence whose numeral characters belong to words (一下, 万一, 十分)
    # Then it holds no number
    assert values(text) == set()


@pytest.mark.parametrize(
    ("old", "question"),
    [("预算八千", "9000的有吗"), ("五六千", "7000的呢"), ("两万以内", "两千的单间"), ("三楼", "13楼")],
)
def test_features_keep_different_amounts_apart(old, question):
    assert values(old).isdisjoint(values(question))


def test_features_do_not_keep_a_numeral_as_chinese_bigrams():
    # Given a budget in Chinese numerals inside a sentence
    text_features = {feature for feature, _weight, _count in features("预算八千左右")}
    # Then the amount is a number, and neither it nor its neighbour makes a bigram
    assert "n:8000" in text_features
    assert "b:八千" not in text_features and "b:算八" not in text_features
    assert {"b:预算", "b:左右"} <= text_features


def test_rank_finds_an_amount_written_in_digits_from_a_question_in_chinese_numerals():
    # Given a history where the budget was written in digits, among other talk
    documents = [
        "您好，想在浦东找个一居室",
        "预算8000左右，最好近地铁",
        "好的，我帮您看看",
        "周末可以看房吗",
        "不要一楼，太潮",
        "收到，谢谢",
    ]
    # When the customer later asks in Chinese numerals
    best = rank("八千的还有吗", documents, 6)
    # Then the budget message comes first
    assert best[0] == 1


def test_features_keep_a_long_order_number_exactly():
    # Given an order number longer than any amount, in an old message and a question
    old = values("订单号202612011234567890，麻烦帮我查一下")
    question = values("202612011234567890 这个订单退款了吗")
    # Then both carry it digit for digit (a float would round its last digits)
    assert "202612011234567890" in old and "202612011234567890" in question


def test_features_of_an_endless_digit_run_do_not_overflow():
    # Given a message that is one enormous number (pasted garbage)
    text = "1" * 400 + "万"
    # Then it is read as written, without failing
    assert values(text) == {"1" * 400}


@pytest.mark.parametrize(
    ("old", "question", "word"),
    [("不要一楼，太潮了", "1楼的有吗", "1楼"), ("想要两居室", "2居的房源", "2居"), ("离三号线近", "3号线附近", "3号")],
)
def test_features_keep_a_number_with_its_classifier_as_one_word(old, question, word):
    # Given a floor, a layout or a metro line written with a Chinese numeral once and a digit once
    # Then both share the number with its classifier, a stronger match than the number alone
    for text in (old, question):
        assert f"b:{word}" in {feature for feature, _weight, _count in features(text)}


def test_rank_tells_the_ground_floor_from_the_top_floor():
    # Given old messages about two different floors among other talk
    documents = ["顶楼太热了不考虑", "好的", "不要一楼，太潮了", "收到", "周末看房", "预算8000"]
    # When the customer asks about the first floor in digits
    best = rank("1楼的还有吗", documents, 6)
    # Then the first-floor message comes first
    assert best[0] == 2
