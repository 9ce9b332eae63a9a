"""Secrets and personal numbers never reach the model verbatim (issue 14, item 5): every quoted
message in the prompt — recent conversation, recall, the latest message — and the context and
account-search APIs show them masked; the stored message stays as received."""

from __future__ import annotations

import datetime as dt
import re

from django.utils import timezone

from conversations.models import Message
from conversations.received import received_text
from memory.capture.ingest import messages_ingest
from memory.context.builder import build_context

PASSWORD = "Xq7pass2026"
ID_CARD = "11010519491231002X"  # checksum-valid mainland ID number
MOBILE = "13812345678"


def _ingest(texts: list[str]) -> None:
    start = timezone.now() - dt.timedelta(hours=1)
    messages_ingest(
        conversation_id="wm_sun",
        messages=[
            {
                "external_id": f"sun-{i}",
                "direction": "inbound",
                "text": text,
                "sender": "孙先生",
                "sent_at": (start + dt.timedelta(minutes=i)).isoformat(),
            }
            for i, text in enumerate(texts)
        ],
        actor="wecom",
    )


def test_prompt_quotes_credentials_and_personal_numbers_masked(account):
    # given messages holding a password, an ID number and a mobile number, the last one the latest
    _ingest(
        [
            f"我的登录密码是 {PASSWORD}，帮我看看账号",
            f"身份证号 {ID_CARD}，签合同要用",
            f"有房源打我电话 {MOBILE}，预算6000",
        ]
    )
    from conversations.selectors import customer_get

    # when the context is built
    prompt = build_context(customer=customer_get("wm_sun")).prompt
    # then none of them is verbatim and each is masked (the stored messages hold the masked text,
    # the originals are sealed)
    assert PASSWORD not in prompt and ID_CARD not in prompt and MOBILE not in prompt
    # (the prompt's neutralisation turns the mask's asterisks full-width, so they form no markup)
    assert re.search(r"1101[*＊]{10}002X", prompt) and re.search(r"138[*＊]{4}5678", prompt)
    assert not Message.objects.filter(text__contains=ID_CARD).exists()
    assert any(ID_CARD in received_text(message) for message in Message.objects.all())


def test_context_and_search_apis_answer_masked(account, staff_client):
    _ingest([f"身份证号 {ID_CARD}，签合同要用", f"电话 {MOBILE}"])
    context = staff_client.get("/api/accounts/acme/conversations/wm_sun/context/").json()
    assert ID_CARD not in context["prompt"] and MOBILE not in context["prompt"]
    found = staff_client.get("/api/accounts/acme/messages/", {"q": "签合同"}).json()
    texts = [m["text"] for m in found["results"]]
    assert texts and all(ID_CARD not in text for text in texts)
