"""The secret shapes issue 36 found shown raw (item 3), one family at a time: resident IDs whose county
is newer than the birth year, passports after their cue, `pass`/`passwd`/`pwd`, cues split by symbols,
references to an earlier secret or a transformation of it, values typed with spaces, and numbers in
keycap emoji or 大写 numerals. Each family is masked in phrasings other than the benchmark's, and the
ordinary messages that resemble it are left alone."""

from __future__ import annotations

import pytest

from qiwei_site.reading.masking import HIDDEN, mask_sensitive, masked_with_categories
from qiwei_site.reading.safety import (
    CREDENTIAL,
    ID_CARD,
    MOBILE,
    SECRET_CATEGORIES,
    VERIFICATION_CODE,
    find_sensitive,
    scan,
)

KEYCAP = "\ufe0f\u20e3"


def keycaps(digits: str) -> str:
    return "".join(digit + KEYCAP for digit in digits)


# (message, what must disappear, the category it is masked as)
SHAPES = [
    # resident IDs: the check digit X, a county code given after the birth year (Pudong 1992–, born 1976)
    pytest.param("签约人身份证：31011519760704008X", "31011519760704008X", ID_CARD, id="id-county-newer-than-birth"),
    pytest.param("证件号码 44030619880213002x 麻烦核对", "44030619880213002x", ID_CARD, id="id-lower-case-x"),
    pytest.param("我的是 110105 19860615 002X", "110105 19860615 002X", ID_CARD, id="id-grouped"),
    # passports and permits after their cue
    pytest.param("订票用的护照号 EB7654321", "EB7654321", ID_CARD, id="passport-zh"),
    pytest.param("passport # G23456789 , thanks", "G23456789", ID_CARD, id="passport-en-hash"),
    pytest.param("港澳通行证是 C98765432", "C98765432", ID_CARD, id="permit"),
    # pass / passwd / pwd
    pytest.param("路由器 pass=Wf2025home", "Wf2025home", CREDENTIAL, id="pass-equals"),
    pytest.param("FTP 用户 rent01 passwd Rt20250101", "Rt20250101", CREDENTIAL, id="passwd-space"),
    pytest.param("后台pwd是Ad#7788min", "Ad#7788min", CREDENTIAL, id="pwd-shi"),
    pytest.param("PW: 66Home88", "66Home88", CREDENTIAL, id="pw-colon"),
    # the cue split by symbols
    pytest.param("门锁的密\\码：Door5521", "Door5521", CREDENTIAL, id="split-backslash"),
    pytest.param("密~码~是 Qz6612aa", "Qz6612aa", CREDENTIAL, id="split-tilde"),
    pytest.param("动/态/码 550321", "550321", VERIFICATION_CODE, id="split-code"),
    pytest.param("p/w/d: Mn5566vv", "Mn5566vv", CREDENTIAL, id="split-latin"),
    # a reference to an earlier secret, or a transformation of it
    pytest.param("网银密码跟刚才的一样，是 Bk202588", "Bk202588", CREDENTIAL, id="reference-same-as-before"),
    pytest.param("口令反着写：8877ppqq", "8877ppqq", CREDENTIAL, id="transformation-reversed"),
    pytest.param("门锁密码还是 5520", "5520", CREDENTIAL, id="reference-unchanged"),
    pytest.param("wifi和门锁的密码都是 Hz998877", "Hz998877", CREDENTIAL, id="reference-both"),
    pytest.param("pin reversed is 7319", "7319", CREDENTIAL, id="transformation-en"),
    # values typed with spaces inside
    pytest.param("登录密码是 wang 8866", "wang 8866", CREDENTIAL, id="space-word-digits"),
    pytest.param("门锁密码：1357 2468", "1357 2468", CREDENTIAL, id="space-digit-groups"),
    pytest.param("短信验证码 6630 21", "6630 21", VERIFICATION_CODE, id="space-code"),
    pytest.param("the password is Spring 2025#", "Spring 2025#", CREDENTIAL, id="space-en"),
    # keycap emoji and 大写 or mixed numerals
    pytest.param("加我微信或打电话 " + keycaps("13698765432"), keycaps("13698765432"), MOBILE, id="keycap-mobile"),
    pytest.param(
        "手机 " + keycaps("177") + " " + keycaps("2345") + " " + keycaps("6789"), None, MOBILE, id="keycap-spaced"
    ),
    pytest.param("取件码" + keycaps("7731"), keycaps("7731"), VERIFICATION_CODE, id="keycap-code"),
    pytest.param("我电话是壹伍捌零零零壹贰叁肆伍", "壹伍捌零零零壹贰叁肆伍", MOBILE, id="daxie-mobile"),
    pytest.param("号码 壹3玖 捌七陆伍 4三贰壹", "壹3玖 捌七陆伍 4三贰壹", MOBILE, id="mixed-numerals-grouped"),
    pytest.param("支付密码是陆陆捌捌玖玖", "陆陆捌捌玖玖", CREDENTIAL, id="daxie-password"),
]


@pytest.mark.parametrize(("text", "secret", "category"), SHAPES)
def test_secret_shape_36_is_masked(text, secret, category):
    # Given a customer message carrying a secret or a personal number in one of issue 36's shapes
    # When it is masked as ingest stores it
    masked, categories = masked_with_categories(text)
    # Then nothing of it is left and the category says what it was
    assert category in categories, (text, masked)
    if secret is not None:
        assert secret not in masked, (text, masked)
    if category in SECRET_CATEGORIES:  # (a personal number's ends are shown on purpose)
        assert not any(len(part) >= 4 and part in masked for part in secret.split()), (text, masked)
    # And masking the masked text changes nothing
    assert mask_sensitive(masked) == masked


LOOK_ALIKES = [
    # resident-ID look-alikes: a wrong check digit, an impossible date, an order number of that shape
    pytest.param("合同编号 31011519760704009X", id="id-wrong-check-digit"),
    pytest.param("流水 31011519761304008X", id="id-impossible-date"),
    pytest.param("订单号 31011519760704008X 什么时候发货", id="id-shaped-order-number"),
    # passport look-alikes
    pytest.param("护照办下来了吗？下周要去香港", id="passport-question"),
    pytest.param("护照上的拼音是 LI XIAOMING", id="passport-name"),
    pytest.param("passport valid until 2027-08-01", id="passport-expiry"),
    pytest.param("护照照片要 33x48 的", id="passport-photo-size"),
    pytest.param("运单号：E12345678", id="passport-shaped-waybill"),
    # pass / pwd look-alikes
    pytest.param("bus pass: 2025 monthly", id="pass-ticket"),
    pytest.param("boarding pass: CA1832", id="pass-boarding"),
    pytest.param("I'll pass on the 2nd flat", id="pass-verb"),
    pytest.param("pwd 命令是干嘛的", id="pwd-command"),
    pytest.param("password reset 邮件没收到", id="password-reset"),
    # split-cue look-alikes
    pytest.param("密码/指纹/人脸都能开", id="split-list-of-methods"),
    pytest.param("1/2/3 号楼都看过了", id="split-building-numbers"),
    pytest.param("价格 3 - 5 万都行", id="split-price-range"),
    # reference look-alikes
    pytest.param("密码还是原来的吗？", id="reference-question"),
    pytest.param("地址同上，联系人也同上", id="reference-address"),
    pytest.param("密码跟之前一样吗", id="reference-asks"),
    pytest.param("这张照片倒过来了", id="transformation-photo"),
    pytest.param("密码倒过来就是我的生日", id="transformation-without-value"),
    # space look-alikes
    pytest.param("密码 8 位以上吗", id="space-length"),
    pytest.param("预算 2000 3000 都可以", id="space-no-cue"),
    # keycap and numeral look-alikes
    pytest.param("好的" + keycaps("3") + "点见👍", id="keycap-time"),
    pytest.param("房号 " + keycaps("1203"), id="keycap-room"),
    pytest.param("合计人民币壹万贰仟叁佰肆拾伍元整", id="daxie-invoice-amount"),
    pytest.param("月租贰仟捌佰元，押一付三", id="daxie-rent"),
    pytest.param("四室两厅，一百二十平", id="numerals-flat"),
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_secret_shape_36_look_alike_is_left_alone(text):
    # Given an ordinary message that resembles one of the shapes
    # When it is masked
    # Then nothing in it is
    assert masked_with_categories(text) == (text, ())


def test_passport_mask_keeps_its_first_letter_and_last_two_characters():
    # Given a passport number after its cue
    # When it is masked
    # Then its letter stays, so the reader knows what kind of number it was
    assert mask_sensitive("护照号：E12345678") == "护照号：E******78"


def test_numbers_in_keycaps_and_daxie_are_masked_as_their_digits():
    # Given a mobile written in keycaps and one in 大写 numerals
    # When they are masked
    # Then each reads like any masked mobile, with no keycap left hanging at its end
    assert mask_sensitive("手机" + keycaps("13812345678") + "，晚上打") == "手机138****5678，晚上打"
    assert mask_sensitive("电话壹叁捌壹贰叁肆伍陆柒捌") == "电话138****5678"
    assert mask_sensitive("手机幺三8壹二3四五六七八") == "手机138****5678"


def test_spans_of_a_keycap_number_cover_its_last_keycap():
    # Given a keycap mobile
    text = "电话" + keycaps("13812345678")
    # When its span is found
    [span] = find_sensitive(text)
    # Then it runs to the end of the message: the last digit's U+FE0F and U+20E3 are part of it
    assert (span.start, span.end) == (2, len(text))


def test_value_typed_with_a_space_is_masked_whole():
    # Given a password typed with a space inside, after its cue
    # When it is masked
    # Then the mask covers both halves, and what follows the value stays
    assert mask_sensitive("密码是 abcd 1234，进门左转") == f"密码是 {HIDDEN}，进门左转"


def test_scan_blocks_the_new_secret_shapes_and_not_the_personal_numbers():
    # Given a split cue, a reference and a pass cue (secrets), and a passport (a personal number)
    # When capture scans them
    # Then the secrets block the message, the passport only marks a span
    for text in ("密/码/是 qaz741wsx", "密码同上一样是Qw135790", "pass: Hx7729qa"):
        result = scan(text)
        assert result.blocked and CREDENTIAL in result.categories, text
    passport = scan("护照号：E12345678，下周入住")
    assert not passport.blocked and [span.category for span in passport.spans] == [ID_CARD]
