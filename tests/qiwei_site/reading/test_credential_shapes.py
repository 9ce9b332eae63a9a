"""The credential shapes issue 21 found unrecognised are masked (a symbol or emoji between keyword
and value, traditional characters, pinyin keywords, one-time codes and mobiles in Chinese numerals,
handovers, a credential sent right after "密码发你"); the ordinary messages that resemble them are not."""

from __future__ import annotations

import pytest

from qiwei_site.reading.masking import masked_after, masked_with_categories


@pytest.mark.parametrize(
    ("text", "secret", "category"),
    [
        ("密码🔑是Lx9qa2041", "Lx9qa2041", "credential"),
        ("验证码➡️482913", "482913", "verification_code"),
        ("我的密碼是Hk20240601", "Hk20240601", "credential"),
        ("驗證碼：573920", "573920", "verification_code"),
        ("mima shi abc12345", "abc12345", "credential"),
        ("yanzhengma 6631", "6631", "verification_code"),
        ("验证码四八二九一三", "四八二九一三", "verification_code"),
        ("我手机一三八一二三四五六七八", "一三八一二三四五六七八", "mobile"),
        ("密码我发你了：Tt556677", "Tt556677", "credential"),
        ("登录密码发你：gh7788kk", "gh7788kk", "credential"),
        ("你用这个登：ab12cd34", "ab12cd34", "credential"),
        ("用这个账号密码登录：wang123 / Zz998877", "Zz998877", "credential"),
        ("账号密码：wang123 / lx9qa2041", "lx9qa2041", "credential"),  # found by review: no filler
        ("账号密码：wang123/Lx9#qa2041", "Lx9#qa2041", "credential"),
    ],
)
def test_credential_shapes_are_masked(text, secret, category):
    masked, categories = masked_with_categories(text)
    assert secret not in masked and category in categories, (text, masked)


def test_credential_shape_mobile_in_chinese_numerals_keeps_its_readable_ends():
    assert masked_with_categories("我手机一三八一二三四五六七八")[0] == "我手机138****5678"


@pytest.mark.parametrize(
    ("previous", "text", "category"),
    [
        ("密码发你", "Lm20461qa", "credential"),
        ("我把门锁密码发给你", "6023", "credential"),
        ("验证码等下发你", "581203", "verification_code"),
        ("password coming", "Rr4455tt", "credential"),
    ],
)
def test_credential_announced_in_the_message_before_is_masked(previous, text, category):
    assert masked_after(text, previous) == ("••••••", (category,))


@pytest.mark.parametrize(
    ("previous", "text"),
    [
        (None, "密码锁坏了，能换一个吗"),
        (None, "我发你了：地址在张江高科"),
        (None, "好的👍 周六见"),
        (None, "這套房子還有嗎？我想週末看房"),
        (None, "mima shi shenme wo wang le"),
        (None, "住在一二三弄，靠近地铁"),
        (None, "一二三四五，上山打老虎"),
        (None, "你用这个登记一下我的信息吧"),
        (None, "门锁是密码锁吗"),
        (None, "密码锁品牌：xiaomi2"),  # a smart lock's brand, not a password (found by review)
        (None, "智能密码锁型号：YD-A200"),
        ("密码锁的钥匙给你", "abc123"),
        ("密码发你了吗？", "Lm20461qa"),  # a question announces nothing
        ("密码发你", "收到了吗"),  # not a value
        ("你好", "Lm20461qa"),  # nothing announced
    ],
)
def test_credential_look_alikes_are_left_alone(previous, text):
    assert masked_after(text, previous) == (text, ())
