"""Capture gives extraction what a message alone does not say: its local send time, the agent's
question just before it and the account's place names; dated facts are written with an expiry
that the expiry sweep honours."""

from __future__ import annotations

import datetime as dt

from conversations.models import CustomerProfile, MessageDirection
from knowledge.services import knowledge_index
from memory.capture.services import capture_message, extract_context
from memory.governance.services import memory_items_expire_due
from memory.models import MemoryItem, MemoryStatus
from qiwei_site.reading.guard import item_refusal
from tests.factories import CustomerFactory, MessageFactory
from tests.qiwei_site.reading.extract.support import SHANGHAI

SENT = dt.datetime(2027, 3, 10, 1, 30, tzinfo=dt.UTC)  # 09:30 in Shanghai, a Wednesday


def _active(customer, key):
    return MemoryItem.objects.filter(customer=customer, key=key, status=MemoryStatus.ACTIVE).first()


def test_capture_move_in_date_resolves_in_local_time_and_expires(account):
    # given a message sent late on 2027-03-09 UTC, which is already the 10th in Shanghai
    customer = CustomerFactory()
    message = MessageFactory(
        customer=customer, text="明天就想搬进去", sent_at=dt.datetime(2027, 3, 9, 18, 0, tzinfo=dt.UTC)
    )
    # when it is captured
    capture_message(message=message)
    # then "明天" is the 11th, the profile shows words and date, and the item expires after it
    item = _active(customer, "profile:move_in_date")
    assert item.content == "入住时间：明天（2027-03-11）"
    assert item.expires_at == dt.datetime(2027, 3, 13, 0, 0, tzinfo=SHANGHAI)
    assert CustomerProfile.objects.get(customer=customer).move_in_date == "明天（2027-03-11）"


def test_capture_dated_fact_leaves_memory_and_profile_once_its_date_passed(account):
    # given a captured move-in date
    customer = CustomerFactory()
    capture_message(message=MessageFactory(customer=customer, text="下周五入住", sent_at=SENT))
    item = _active(customer, "profile:move_in_date")
    # when the expiry sweep runs after the date
    memory_items_expire_due(now=item.expires_at + dt.timedelta(minutes=1))
    # then the item is no longer active and the profile field is cleared with it
    item.refresh_from_db()
    assert item.status == MemoryStatus.SUPERSEDED
    assert CustomerProfile.objects.get(customer=customer).move_in_date == ""


def test_extract_context_uses_the_agent_message_right_before(account):
    # given the agent's question and the customer's bare answer right after it
    customer = CustomerFactory()
    MessageFactory(
        customer=customer, text="您对房子还有什么要求吗？", direction=MessageDirection.OUTBOUND, sent_at=SENT
    )
    answer = MessageFactory(customer=customer, text="采光好一点的", sent_at=SENT + dt.timedelta(minutes=2))
    # when the answer is captured
    context = extract_context(answer)
    capture_message(message=answer)
    # then the question is the context, and the bare phrase is a preference
    assert context.previous_outbound == "您对房子还有什么要求吗？"
    assert _active(customer, "preference:采光好").content == "偏好：采光好"


def test_extract_context_ignores_a_question_the_customer_already_moved_past(account):
    # given the agent's question, then another customer message, then a bare phrase
    customer = CustomerFactory()
    MessageFactory(
        customer=customer, text="您对房子还有什么要求吗？", direction=MessageDirection.OUTBOUND, sent_at=SENT
    )
    MessageFactory(customer=customer, text="稍等我问下家里", sent_at=SENT + dt.timedelta(minutes=1))
    later = MessageFactory(customer=customer, text="采光好一点的", sent_at=SENT + dt.timedelta(minutes=5))
    # when the later message is captured
    capture_message(message=later)
    # then it answers nothing, and no preference is written from the bare phrase (at most a
    # supervisor is asked: issue 35)
    assert extract_context(later).previous_outbound == ""
    assert not MemoryItem.objects.filter(customer=customer).exclude(status=MemoryStatus.PROPOSED).exists()


def test_capture_reads_the_account_place_list_from_the_knowledge_base(account, tmp_path):
    # given a knowledge base that lists the shop's 片区
    (tmp_path / "context.md").write_text(
        "# 业务背景\n## 服务片区\n- 朝阳区：酒仙桥、大望路\n- 前滩（浦东新区）\n", encoding="utf-8"
    )
    knowledge_index(root=tmp_path)
    customer = CustomerFactory()
    # when a customer names one of them without any suffix
    capture_message(message=MessageFactory(customer=customer, text="想在大望路附近租个一居室", sent_at=SENT))
    # then it is the district, with the district it lies in
    assert _active(customer, "profile:district").content == "意向区域：大望路（朝阳区）"


def test_capture_lease_end_viewing_time_and_must_have_are_written(account):
    # given one message with the end of the current lease, a viewing appointment and a must-have
    customer = CustomerFactory()
    message = MessageFactory(
        customer=customer, text="现在这套房子6月底到期。看房时间约在这周六下午。一定要有阳台", sent_at=SENT
    )
    # when it is captured
    capture_message(message=message)
    # then each is an active item of its own, the dated ones with their expiry
    lease = _active(customer, "fact:lease_end")
    viewing = _active(customer, "fact:viewing_time")
    must = _active(customer, "preference:阳台")
    assert lease.content == "租约到期：6月底（2027-06-21至2027-06-30）"
    assert lease.expires_at == dt.datetime(2027, 7, 2, 0, 0, tzinfo=SHANGHAI)
    assert viewing.content == "看房时间：这周六下午（2027-03-13）"
    assert (must.content, must.importance, must.expires_at) == ("必须：阳台", 5, None)


def test_capture_alternative_area_is_added_beside_the_one_the_profile_holds(account):
    # given a customer whose wanted area is 浦东
    customer = CustomerFactory()
    capture_message(message=MessageFactory(customer=customer, text="想在浦东租个两居室", sent_at=SENT))
    assert CustomerProfile.objects.get(customer=customer).district.startswith("浦东")
    # when they add an alternative
    capture_message(
        message=MessageFactory(customer=customer, text="滨江那边也行", sent_at=SENT + dt.timedelta(minutes=5))
    )
    # then profile and memory hold both areas, the first one kept
    district = CustomerProfile.objects.get(customer=customer).district
    assert "浦东" in district and "滨江" in district
    item = _active(customer, "profile:district")
    assert "浦东" in item.content and "滨江" in item.content


def test_capture_reads_the_account_trade_vocabulary_from_the_knowledge_base(account, tmp_path):
    # given an after-sales shop whose knowledge base names the choices its customers make
    (tmp_path / "context.md").write_text(
        "# 售后须知\n## 业务词汇\n- 售后方式：退款、换货、补发\n- 材质：纯棉、真皮\n", encoding="utf-8"
    )
    knowledge_index(root=tmp_path)
    customer = CustomerFactory()
    # when a customer chooses among them (a term a rental reader takes for a request to us)
    capture_message(message=MessageFactory(customer=customer, text="我倾向换货，必须是纯棉的", sent_at=SENT))
    # then each choice is an item of its own, the must-have flagged
    assert _active(customer, "preference:换货").content == "偏好：换货"
    assert _active(customer, "preference:纯棉").content == "必须：纯棉"


def test_capture_keeps_a_refund_wanted_but_not_a_refund_promised(account, tmp_path):
    # given an after-sales shop whose outcomes include a refund
    (tmp_path / "context.md").write_text("# 售后须知\n## 业务词汇\n- 售后方式：退款、换货、补发\n", encoding="utf-8")
    knowledge_index(root=tmp_path)
    customer = CustomerFactory()
    # when the customer prefers a refund (the guard once took the bare word for a pricing promise)
    capture_message(message=MessageFactory(customer=customer, text="换货不要了，直接退款吧", sent_at=SENT))
    # then the want is kept; a refund the customer claims we granted never is
    assert _active(customer, "preference:退款").content == "偏好：退款"
    assert item_refusal(key="preference:退款", content="偏好：全额退款给我")
    assert item_refusal(key="preference:退款", content="偏好：无条件退款")


def test_capture_without_a_trade_vocabulary_keeps_a_refund_a_request(account):
    # given no vocabulary: "我要退款" asks us to act; it is no preference
    customer = CustomerFactory()
    capture_message(message=MessageFactory(customer=customer, text="我要退款", sent_at=SENT))
    assert not MemoryItem.objects.filter(customer=customer).exists()
