"""Questions that carry a want: asking after stock ("有没有能养猫的一居室", "四千左右的两房有吗") says what
the customer looks for; a question about one listing, the process or something that is no home
("这个小区有电梯吗", "押金可以分期付吗", "有没有停车位") says nothing to keep."""

from __future__ import annotations

import pytest

from tests.qiwei_site.reading.extract.support import contents, proposed

STOCK_WANTS = [
    ("有没有能养猫的一居室", {"户型：一居室", "偏好：养猫"}),
    ("四千左右的两房有吗", {"预算：四千左右（约4000元）", "户型：两居室"}),
    ("你们还有带大阳台的房子吗", {"偏好：带大阳台"}),
    ("有没有离学校近一点的", {"偏好：离学校近"}),
    ("有没有独门独院的", {"偏好：独门独院"}),
    ("浦东有没有五千以内的一室户", {"意向区域：浦东（浦东新区）", "预算：五千以内（≤5000元）", "户型：一室户"}),
    ("滨江附近有没有精装的两居", {"意向区域：滨江（滨江区）", "户型：两居室", "偏好：精装"}),
    # the statement after the question is the customer's own
    # can the customer get it: the same want
    ("六千块能租到三居吗", {"预算：六千（6000元）", "户型：三居室"}),
    # a refusal inside the question stays a refusal
    ("有没有不临街的房子", {"不考虑：临街"}),
    ("你们有免中介费的房源吗", {"不考虑：中介费"}),
    # an area the gazetteer does not know, in an area's frame
    ("光谷那边还有一千五以内的单间吗", {"意向区域：光谷", "预算：一千五以内（≤1500元）", "户型：单间"}),
    ("问下有没有朝东的次卧出租", {"偏好：朝东的次卧"}),
]
NOT_WANTS = [
    "这个小区有电梯吗",  # one listing
    "那间卧室有窗户吗",
    "它带家具吗",
    "上次那套还有吗",
    "押金可以分期付吗",  # the process
    "有没有什么要注意的",
    "你们有没有上门服务",
    "有没有人帮忙搬一下",  # people
    "有没有实拍图",  # media
    "最近有没有新房源",  # a lead that is no place
    "有没有停车位",  # no home asked after
    "有没有别的户型",  # compares with what was shown
    "合同里有没有写押金怎么退",
]


@pytest.mark.parametrize(("text", "expected"), STOCK_WANTS)
def test_extract_question_about_stock_is_a_proposal(text, expected):
    # given a customer asking whether such a home is available, when extracted
    # then what they ask after looks like a want: a proposal for a supervisor, never written by itself
    # (issue 35: a question states no want)
    assert contents(text) == set()
    assert proposed(text) == expected


def test_extract_budget_said_after_a_stock_question_is_written():
    # Given a question about stock, then the budget said outright in a sentence of its own
    text = "有没有朝南的两室一厅？预算七千"
    # then the budget is the customer's statement, and what the question asked after is proposed
    assert contents(text) == {"预算：七千（7000元）"}
    assert proposed(text) == {"户型：两室一厅", "偏好：朝南"}


@pytest.mark.parametrize("text", NOT_WANTS)
def test_extract_question_about_a_listing_or_the_process_is_no_want(text):
    # given a question about one listing, the process, people or media, when extracted, then nothing
    assert contents(text) == set()
