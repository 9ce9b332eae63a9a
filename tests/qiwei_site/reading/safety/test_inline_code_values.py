"""A value typed as inline code (between backticks) is what is between them: a placeholder there is
not a secret, a real value there still is (the safety gate's false positives found by issue 40's
mutation run: the value kept its closing backtick and the words after it, so `changeme` was missed)."""

from __future__ import annotations

import pytest

from qiwei_site.reading.masking import mask_sensitive
from qiwei_site.reading.safety import scan


@pytest.mark.parametrize(
    "text",
    [
        "部署手册里写着 `DB_PASSWORD=changeme`，上线前要改成什么？",
        "手册里的示例命令是 `deploy --api-key=changeme`，要换成自己的吗？",
        "说明书写 `--secret=your_secret_here`，这个要填吗",
        "接口文档写 `password: <password>` 是什么意思",
        "教程里是 `curl -u admin:changeme`，我照着填可以吗",
        "示例链接 `https://api.example.cn/v1?access_token=changeme`，打不开",
    ],
)
def test_scan_lets_a_placeholder_in_inline_code_pass(text):
    # Given a customer quoting a placeholder from a manual as inline code
    # When the gate scans it / Then nothing is blocked: the message may become memory
    assert not scan(text).blocked


@pytest.mark.parametrize(
    "text",
    [
        "物业给的是 `DOOR_PASSWORD=Lk82#mq0Zt`，你帮我存一下",
        "他发我 `login --password=Qw93kdm2Xa` 说这样能进后台",
        "我的 `password is Tianfu2026!` 别告诉别人",
        "同事给的 `curl -u ops:Rk27dmq8Lx` 能直接用吗",
        "链接是 `https://api.example.cn/v1?access_token=Hq82kLm0Zx7Tr9`，帮我看看",
    ],
)
def test_scan_still_blocks_a_real_value_in_inline_code(text):
    # Given a real value typed as inline code
    # When the gate scans it / Then it is a credential, never memory
    result = scan(text)
    assert result.blocked and "credential" in result.categories


def test_masking_hides_the_value_in_inline_code_and_keeps_the_words_after_it():
    # Given a real value typed as inline code, then the customer's question
    text = "物业给的是 `DOOR_PASSWORD=Lk82#mq0Zt`，你帮我存一下"
    # When it is masked (as it is stored and as any prompt or page shows it)
    masked = mask_sensitive(text)
    # Then the value is gone, and the backtick and the words after it are still there
    assert "Lk82#mq0Zt" not in masked
    assert masked.endswith("`，你帮我存一下")
