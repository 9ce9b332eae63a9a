"""Capture never stores a credential or a personal number (issue 14): secrets block the message,
ID-card, bank-card and mobile numbers are cut out of what extraction reads; the facts beside them stay."""

from __future__ import annotations

import re
import unicodedata

from conversations.models import AuditEvent, Message
from conversations.received import received_text
from memory.models import MemoryItem, MemorySnapshot, MemoryStatus

MOBILE = "13812345678"
ID_NUMBER = "440305199003071236"
CARD = "6222021234567890128"

# Each of these, before issue 14, let a number or a credential into an item's content or key.
CUSTOMER_WORDS = [
    f"我更喜欢{MOBILE}这个号码",
    f"我比较喜欢用手机{MOBILE}联系",
    "最好用138 1234 5678联系我",
    f"I prefer contact at {MOBILE}",
    f"不要打{MOBILE}，上班时间不方便",
    f"我更喜欢用卡{CARD}付款",
    f"我更倾向于{CARD}这张卡",
    f"我的身份证号是{ID_NUMBER}，我比较喜欢朝南的",
    "我更喜欢 密 码 是 a b c 1 2 3",
    "ｐａｓｓｗｏｒｄ＝ａｂｃ１２３，我比较喜欢南向的",
    "验证码 4 8 2 9 1 3，我更喜欢地铁附近",
]
NUMBERS = [MOBILE, ID_NUMBER, CARD, "abc123", "482913"]


def _squeezed(text: str) -> str:
    # Compare what a reader would recognise: folded, without spaces or dashes.
    return re.sub(r"[\s\-]", "", unicodedata.normalize("NFKC", text)).lower()


def test_capture_no_memory_item_or_snapshot_holds_a_number_or_credential(ingest):
    # given customer messages that pair preferences with mobiles, ID and card numbers and credentials
    result = ingest(*CUSTOMER_WORDS)
    # when capture has run on each of them
    assert len(result.created) == len(CUSTOMER_WORDS)
    # then no item's content or key, and no snapshot, contains any of those numbers or secrets
    stored = [item.content for item in MemoryItem.objects.all()] + [item.key for item in MemoryItem.objects.all()]
    stored += [snapshot.content for snapshot in MemorySnapshot.objects.all()]
    leaks = [(text, number) for text in stored for number in NUMBERS if number in _squeezed(text)]
    assert leaks == []
    # and the messages' words as received are kept, sealed: the rows hold no number or secret
    assert sorted(received_text(m) for m in Message.objects.all()) == sorted(CUSTOMER_WORDS)
    rows = [m.text for m in Message.objects.all()]
    assert [(text, number) for text in rows for number in NUMBERS if number in _squeezed(text)] == []


def test_capture_keeps_the_facts_beside_a_personal_number(ingest):
    # given a customer who gives their mobile and ID number together with a budget and a layout
    ingest(f"我电话{MOBILE}，身份证{ID_NUMBER}，预算5000，想要两居室，我比较喜欢朝南的")
    # then the budget, the layout and the preference are remembered, without the numbers
    active = {item.key: item.content for item in MemoryItem.objects.filter(status=MemoryStatus.ACTIVE)}
    assert active["profile:budget"] == "预算：5000"
    assert "profile:layout" in active and "preference:朝南" in active
    assert not [content for content in active.values() if MOBILE in content or ID_NUMBER in content]
    # and nothing was blocked: a personal number is not a secret
    assert not AuditEvent.objects.filter(action="memory_capture_blocked").exists()


def test_capture_spaced_credential_blocks_and_audits_without_the_secret(ingest):
    # given a password spelt out with spaces inside a preference
    result = ingest("我更喜欢 密 码 是 a b c 1 2 3")
    # then nothing is remembered and the audit names the category only
    assert MemoryItem.objects.count() == 0
    event = AuditEvent.objects.get(action="memory_capture_blocked")
    assert event.payload == {"message_id": result.created[0].pk, "categories": ["credential"]}
    assert "a b c" not in str(event.payload) + event.reason


def test_capture_of_inline_code_blocks_a_real_value_and_lets_a_placeholder_through(ingest):
    # given a customer quoting a manual's placeholder as inline code, and another message with a real
    # value typed the same way, each beside a preference
    placeholder, secret = "changeme", "Lk82mq0Zt7"
    ingest(f"说明书写 `DOOR_PASSWORD={placeholder}`，我比较喜欢朝南的")
    ingest(f"物业给的 `DOOR_PASSWORD={secret}`，我比较喜欢有电梯的", conversation_id="wm_conv_capture_b")
    # then the placeholder's message is not blocked and its preference is remembered
    blocked = AuditEvent.objects.filter(action="memory_capture_blocked")
    assert blocked.count() == 1
    assert MemoryItem.objects.filter(customer__conversation_id="wm_conv_capture", key="preference:朝南").exists()
    # and the real value's message writes nothing, and no stored row or memory holds the value
    assert not MemoryItem.objects.filter(customer__conversation_id="wm_conv_capture_b").exists()
    assert [m.text for m in Message.objects.all() if secret in m.text] == []
