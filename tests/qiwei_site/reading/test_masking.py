"""mask_sensitive: what people and the model see of a message; labels and ordinary words stay."""

from __future__ import annotations

import pytest

from qiwei_site.reading.masking import HIDDEN, mask_sensitive

MASKED = [
    ("我的密码是abc12345", "我的密码是••••••"),
    ("我更喜欢 密 码 是 a b c 1 2 3", "我更喜欢 密 码 是 ••••••"),
    ("ｐａｓｓｗｏｒｄ＝ａｂｃ１２３", "ｐａｓｓｗｏｒｄ＝••••••"),
    ("my password is hunter2!", "my password is ••••••"),
    ("验证码482913请查收", "验证码••••••请查收"),
    ("OTP: 839201", "OTP: ••••••"),
    ("信用卡安全码 321", "信用卡安全码 ••••••"),
    ("我的身份证号是440305199003071236，签合同用", "我的身份证号是4403**********1236，签合同用"),
    ("身份证：11010519491231002x", "身份证：1101**********002X"),
    ("卡号 6222 0212 3456 7890 128", "卡号 ****0128"),
    ("押金退到我的卡6217000012345678907就行", "押金退到我的卡****8907就行"),
    ("我的手机号是13800138000，周六可以看房", "我的手机号是138****8000，周六可以看房"),
    ("电话138-1234-5678", "电话138****5678"),
    ("打我手机 +86 139 1234 5678", "打我手机 +86 139****5678"),
    ("联系方式：１３８１２３４５６７８", "联系方式：138****5678"),
    (
        "王先生，手机13912345678，身份证310101198511204568，预算5000",
        "王先生，手机139****5678，身份证3101**********4568，预算5000",
    ),
]


@pytest.mark.parametrize(("text", "expected"), MASKED)
def test_mask_sensitive_masks_each_family_in_its_own_shape(text, expected):
    # given a message with a secret or a personal number
    # when it is masked for display
    # then the label and the rest of the message read as before, the number is masked
    assert mask_sensitive(text) == expected


@pytest.mark.parametrize(
    "text",
    ["月租7500元，面积89平，1203室", "订单号 202611010930128877", "2026年11月1日看房", "验证码收不到怎么办", ""],
)
def test_mask_sensitive_leaves_ordinary_text_unchanged(text):
    assert mask_sensitive(text) == text


def test_mask_sensitive_hides_the_length_of_a_secret():
    # given two passwords of different lengths
    # then both masks are the same fixed width
    assert mask_sensitive("密码是a1b") == mask_sensitive("密码是a1b2c3d4e5f6g7") == f"密码是{HIDDEN}"


def test_mask_sensitive_leaves_nothing_of_an_api_key():
    text = "我的key是 sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD 你们帮我配一下"
    masked = mask_sensitive(text)
    assert "abcdefghij" not in masked and masked == f"我的key是 {HIDDEN} 你们帮我配一下"
