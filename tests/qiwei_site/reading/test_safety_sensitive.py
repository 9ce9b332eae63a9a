"""The gate's sensitive-number families (issue 14): credentials after spacing and full-width folding,
ID cards, bank cards, CVVs, one-time codes and mobiles, each with its span; ordinary numbers pass."""

from __future__ import annotations

import pytest

from memory.safety import scan
from qiwei_site.reading.safety import (
    BANK_CARD,
    CARD_SECURITY_CODE,
    CREDENTIAL,
    ID_CARD,
    MOBILE,
    VERIFICATION_CODE,
    find_sensitive,
    without_personal_numbers,
)

# Valid mainland ID numbers (region, birth date and check digit all correct).
ID_SHENZHEN = "440305199003071236"
ID_SHANGHAI = "310101198511204568"
ID_BEIJING = "11010519491231002X"
# Luhn-valid card numbers: UnionPay 19 digits, UnionPay 19 digits, a 16-digit Visa.
CARD_UNIONPAY = "6222021234567890128"
CARD_ABC = "6217000012345678907"
CARD_VISA = "4367420123456781"
OPENAI_KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"

# (message, the text that must be flagged, its category)
SECRETS = [
    # credentials, spaced out or full-width
    ("我更喜欢 密 码 是 a b c 1 2 3", "a b c 1 2 3", CREDENTIAL),
    ("ｐａｓｓｗｏｒｄ＝ａｂｃ１２３", "ａｂｃ１２３", CREDENTIAL),
    ("密 码：ａｂｃ１２３，别告诉别人", "ａｂｃ１２３", CREDENTIAL),
    ("p a s s w o r d : h u n t e r 2 2", "h u n t e r 2 2", CREDENTIAL),
    ("我家门锁密码是 0825，你们到时候直接进", "0825", CREDENTIAL),
    ("my password is hunter2!", "hunter2!", CREDENTIAL),
    ("支付宝支付密码 135790", "135790", CREDENTIAL),
    (f"我的key是 {OPENAI_KEY}", OPENAI_KEY, CREDENTIAL),
    # one-time and verification codes, by their context words
    ("验证码是 482913", "482913", VERIFICATION_CODE),
    ("验证码482913请查收", "482913", VERIFICATION_CODE),
    ("验证码：4 8 2 9 1 3", "4 8 2 9 1 3", VERIFICATION_CODE),
    ("动态码 837261，五分钟内有效", "837261", VERIFICATION_CODE),
    ("校验码 5521", "5521", VERIFICATION_CODE),
    ("482913是我的验证码", "482913", VERIFICATION_CODE),
    ("OTP: 839201", "839201", VERIFICATION_CODE),
    ("your verification code is 482913", "482913", VERIFICATION_CODE),
    ("the code is 771204", "771204", VERIFICATION_CODE),
    ("ＯＴＰ：８３９２０１", "８３９２０１", VERIFICATION_CODE),
    # card security codes
    ("信用卡安全码 321", "321", CARD_SECURITY_CODE),
    ("卡背面三位是 456", "456", CARD_SECURITY_CODE),
    ("CVV2: 123", "123", CARD_SECURITY_CODE),
    ("cvv 908", "908", CARD_SECURITY_CODE),
]

PERSONAL_NUMBERS = [
    # mainland ID cards: 18 digits with a valid check digit, spaced or full-width too
    (f"我的身份证号是{ID_SHENZHEN}，签合同用", ID_SHENZHEN, ID_CARD),
    (f"身份证：{ID_BEIJING.lower()}", ID_BEIJING.lower(), ID_CARD),
    ("身份证 440305 19900307 1236", "440305 19900307 1236", ID_CARD),
    ("证件号码３１０１０１１９８５１１２０４５６８", "３１０１０１１９８５１１２０４５６８", ID_CARD),
    (f"ID card {ID_SHANGHAI}", ID_SHANGHAI, ID_CARD),
    # bank cards: Luhn-valid 16–19 digits, or a card label before or after
    ("卡号 6222 0212 3456 7890 128", "6222 0212 3456 7890 128", BANK_CARD),
    (f"押金退到我的农行卡{CARD_ABC}就行", CARD_ABC, BANK_CARD),
    (f"我更倾向于{CARD_UNIONPAY}这张卡", CARD_UNIONPAY, BANK_CARD),
    (f"转账到 {CARD_VISA}", CARD_VISA, BANK_CARD),
    ("信用卡5500-0000-0000-0004", "5500-0000-0000-0004", BANK_CARD),
    ("my card number is 4367 4201 2345 6781", "4367 4201 2345 6781", BANK_CARD),
    # mobiles, with spaces, dashes, +86 and full-width forms
    ("我的手机号是13800138000，周六可以看房", "13800138000", MOBILE),
    ("手机 138 1234 5678", "138 1234 5678", MOBILE),
    ("电话138-1234-5678，下午都在", "138-1234-5678", MOBILE),
    ("打我手机 +86 139 1234 5678", "+86 139 1234 5678", MOBILE),
    ("联系方式：１３８１２３４５６７８", "１３８１２３４５６７８", MOBILE),
    ("0086 15912345678", "0086 15912345678", MOBILE),
    ("1 3 8 1 2 3 4 5 6 7 8 这是我微信同号", "1 3 8 1 2 3 4 5 6 7 8", MOBILE),
    ("call me on +86-186-1234-5678", "+86-186-1234-5678", MOBILE),
]

ORDINARY_NUMBERS = [
    "月租7500元，押一付三可以吗",
    "预算在7500元以内，最多8000",
    "总价350万，面积89平，三楼",
    "2026-11-01 下午三点看房",
    "2026年11月1日之前要入住",
    "20261101之前能入住吗",
    "1203室是朝南的吗",
    "我住在朝阳区建国路88号SOHO现代城1203室",
    "订单号 202611010930128877",
    f"订单号{CARD_UNIONPAY}，麻烦查一下",
    "快递单号 SF1234567890123 还没到",
    "运单号 773012345678901 卡住了",
    "房源编号 SH2026110188776655",
    "合同号 4367420123456781 的那份合同",
    "我的银行卡尾号6789",
    "座机021-62345678，工作日找我",
    "QQ 12345678",
    "邮编200120",
    "评分4.5分以上，人均100-150元",
    "地铁3号线，离站800米",
    "2 3 4 5 6 7 8 9号楼都可以",
    "价格是13800元一个月吗",
    "验证码收不到怎么办",
    "请问验证码是多少位的",
    "验证码是6位数吗",
    "密码锁坏了能修吗",
    "wifi密码是多少",
    "zip code is 200120",
    "I'd like a 2 bedroom near the subway, budget 3000",
    "Room 1203, 89 square meters, 7500 a month",
    "电话是多少？我想直接问房东",
]


def _flagged(text: str) -> list[tuple[str, str]]:
    return [(text[span.start : span.end], span.category) for span in find_sensitive(text)]


@pytest.mark.parametrize(("text", "secret", "category"), SECRETS)
def test_scan_secret_blocks_capture_and_reports_its_span(text, secret, category):
    # given a message carrying a secret, however it is spaced or folded
    # when it is scanned
    result = scan(text)
    # then capture is blocked as a credential, and the span covers exactly the secret
    assert result.blocked is True, text
    assert CREDENTIAL in result.categories
    assert (secret, category) in [(text[s.start : s.end], s.category) for s in result.spans]


@pytest.mark.parametrize(("text", "number", "category"), PERSONAL_NUMBERS)
def test_scan_personal_number_is_reported_without_blocking(text, number, category):
    # given a message with an ID-card, bank-card or mobile number and nothing else sensitive
    # when it is scanned
    result = scan(text)
    # then it is not blocked (its facts can still be remembered), and the number is a span
    assert result.blocked is False, result.rules
    assert result.categories == []
    assert _flagged(text) == [(number, category)]


@pytest.mark.parametrize("text", ORDINARY_NUMBERS)
def test_find_sensitive_leaves_ordinary_numbers_alone(text):
    # given prices, dates, rooms, areas, order and waybill numbers and complaints about codes
    # when the gate looks for sensitive numbers
    # then it finds none and blocks nothing
    assert find_sensitive(text) == []
    assert scan(text).blocked is False


def test_find_sensitive_keeps_the_label_outside_a_credential_span():
    # given a password after its label
    text = "我的登录密码：Qw12345678"
    # then only the value is flagged, so masking can keep "密码："
    assert _flagged(text) == [("Qw12345678", CREDENTIAL)]


def test_find_sensitive_an_invalid_id_check_digit_is_not_an_id_card():
    # given an 18-digit number whose check digit is wrong, with no card label
    text = "身份证号440305199003071234"
    # then it is not taken for an ID card
    assert [category for _, category in _flagged(text)] != [ID_CARD]


def test_find_sensitive_password_that_looks_like_a_mobile_is_a_credential():
    # given a password that happens to be a mobile number
    text = "密码是13812345678"
    # then the stronger reading wins and one span remains
    assert _flagged(text) == [("13812345678", CREDENTIAL)]


def test_find_sensitive_several_numbers_in_one_message_are_separate_spans():
    # given a customer who sends everything at once
    text = f"王先生，手机13912345678，身份证{ID_SHANGHAI}，退款打到卡号{CARD_UNIONPAY}"
    # then each number is its own span, in order
    assert _flagged(text) == [("13912345678", MOBILE), (ID_SHANGHAI, ID_CARD), (CARD_UNIONPAY, BANK_CARD)]


def test_find_sensitive_spans_survive_hidden_characters():
    # given a secret split by a zero-width space
    text = "密码是abc\u200b123"
    # then the span still covers it in the text as received
    [span] = find_sensitive(text)
    assert text[span.start : span.end] == "abc\u200b123"


def test_without_personal_numbers_cuts_numbers_and_keeps_the_facts():
    # given a message with a mobile, an ID card and real facts
    text = f"我电话13812345678，身份证{ID_SHENZHEN}，预算5000，想要两居室"
    # when capture's reading is made
    reading = without_personal_numbers(text, scan(text).spans)
    # then the numbers are gone and the facts remain
    assert "13812345678" not in reading and ID_SHENZHEN not in reading
    assert "预算5000" in reading and "两居室" in reading


def test_scan_result_never_repeats_a_personal_number():
    # given a message with an ID number
    result = scan(f"身份证号{ID_BEIJING}")
    # then the result (what an audit could copy) carries positions and names only
    assert ID_BEIJING not in repr(result)
