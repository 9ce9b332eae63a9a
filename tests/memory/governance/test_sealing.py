"""`manage.py messages_seal` (issue 21, item 1): messages stored in the clear by an earlier release
are masked in place with their originals sealed, recall features re-read, each customer audited;
a second run changes nothing; `--rotate` moves every original to the newest key; bad input exits
non-zero with a message."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.conf import settings
from django.core.management import CommandError, call_command

from conversations.models import (
    AuditAction,
    AuditEvent,
    Delivery,
    DeliveryStatus,
    Draft,
    DraftStatus,
    Message,
    MessageSecret,
)
from conversations.received import received_text
from memory.context.recall import recall_features_store
from memory.context.search import search_messages
from memory.models import MessageRecallFeatures
from tests.factories import CustomerFactory, DraftFactory, MessageFactory

PASSWORD = "Lx9#qa2041"
CLEAR = [
    f"门锁密码是{PASSWORD}，看房时直接进",
    "我手机13912345678，晚上联系",
    "想在徐汇租两居室，预算8000",
]


@pytest.fixture
def clear_messages(account):
    """Messages as an earlier release stored them: in the clear, with recall features."""
    wang = CustomerFactory(conversation_id="wm_seal_wang", display_name="王先生")
    li = CustomerFactory(conversation_id="wm_seal_li", display_name="李女士")
    messages = [MessageFactory(customer=wang, text=CLEAR[0]), MessageFactory(customer=li, text=CLEAR[1])]
    messages.append(MessageFactory(customer=li, text=CLEAR[2]))
    recall_features_store(messages=messages)
    return messages


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("messages_seal", *args, stdout=out)
    return out.getvalue()


def test_messages_seal_masks_stored_messages_and_seals_their_originals(account, clear_messages):
    # When the command runs over the account
    output = run("--account", account.id)
    # Then the two messages with a secret are masked in place, their originals sealed
    texts = [Message.objects.get(pk=m.pk).text for m in clear_messages]
    assert texts == ["门锁密码是••••••，看房时直接进", "我手机139****5678，晚上联系", CLEAR[2]]
    assert [received_text(Message.objects.get(pk=m.pk)) for m in clear_messages] == CLEAR
    assert MessageSecret.objects.count() == 2
    # And the recall features and the search index no longer hold them
    features = " ".join(MessageRecallFeatures.objects.values_list("features", flat=True))
    assert "lx9" not in features.casefold() and "13912345678" not in features
    assert search_messages(query=PASSWORD, conversation_id=None) == []
    # And each customer's audit lists the message ids and the categories, never the text
    events = AuditEvent.objects.filter(action=AuditAction.MESSAGES_SEALED).order_by("conversation_id")
    assert [(e.conversation_id, e.payload) for e in events] == [
        ("wm_seal_li", {"message_ids": [clear_messages[1].pk], "categories": ["mobile"]}),
        ("wm_seal_wang", {"message_ids": [clear_messages[0].pk], "categories": ["credential"]}),
    ]
    assert "masked=2" in output and "sealed=2" in output


def test_messages_seal_a_second_run_changes_nothing(account, clear_messages):
    run("--account", account.id)
    sealed = list(MessageSecret.objects.values_list("message_id", "sealed"))
    # When it runs again
    output = run("--account", account.id)
    # Then nothing changed and nothing more was audited
    assert list(MessageSecret.objects.values_list("message_id", "sealed")) == sealed
    assert AuditEvent.objects.filter(action=AuditAction.MESSAGES_SEALED).count() == 2
    assert "masked=0" in output


def test_messages_seal_leaves_no_clear_bytes_in_the_account_database(account, clear_messages):
    def files() -> list[Path]:
        return sorted(Path(settings.QIWEI_DATA_DIR, "accounts").glob(f"{account.id}.sqlite3*"))

    # Given the password in the clear in the account database's files
    assert any(PASSWORD.encode() in path.read_bytes() for path in files())
    # When the command runs (secure delete, the search index merged, the WAL truncated)
    run("--account", account.id)
    # Then the account database's files no longer hold it
    assert all(PASSWORD.encode() not in path.read_bytes() for path in files())


def test_messages_seal_rotate_moves_originals_to_the_newest_key(account, clear_messages, settings):
    # Given originals sealed with the old key
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.QIWEI_SEALING_KEYS = [old]
    run("--account", account.id)
    # When a new key is put first and the originals are re-sealed
    settings.QIWEI_SEALING_KEYS = [new, old]
    output = run("--account", account.id, "--rotate")
    # Then the old key can be retired: every original opens with the new one alone
    settings.QIWEI_SEALING_KEYS = [new]
    assert [received_text(Message.objects.get(pk=m.pk)) for m in clear_messages] == CLEAR
    assert "resealed=2" in output


def test_messages_seal_refuses_bad_input(account):
    with pytest.raises(CommandError, match="不存在"):
        run("--account", "nosuch")
    with pytest.raises(CommandError, match="batch"):
        run("--batch-size", "0")


@pytest.fixture
def clear_drafts(clear_messages):
    """Drafts an earlier release kept from those messages: the prompt quoted the password, one sent
    reply repeated it, and one pending reply (still to be sent as written) repeats it too."""
    wang = clear_messages[0].customer
    head = "一、规则\n只输出 JSON。\n"
    quoted = f"三、最近对话\n- 客户：{CLEAR[0]}\n"
    prompt = head + quoted
    trace = {
        "prompt_sections": [
            {"key": "instructions", "start": 0, "end": len(head), "chars": len(head)},
            {"key": "conversation", "start": len(head), "end": len(prompt), "chars": len(quoted)},
        ]
    }
    echo = f"好的，门锁密码是{PASSWORD}，周六见"
    sent = DraftFactory(customer=wang, prompt=prompt, context_trace=trace, reply=echo, final_text=echo)
    sent.status = DraftStatus.SENT
    sent.save()  # a history row with the echo
    Delivery.objects.create(draft=sent, idempotency_key="seal-1", text=echo, status=DeliveryStatus.SENT)
    pending = DraftFactory(customer=wang, reply=echo, final_text=echo)
    return sent, pending


def test_messages_seal_masks_the_prompts_and_done_replies_drafts_kept(account, clear_drafts):
    sent, pending = clear_drafts
    # When the command runs
    output = run("--account", account.id)
    # Then the sent draft's prompt, reply, final text, history and delivery no longer hold the password
    sent = Draft.objects.get(pk=sent.pk)
    kept = [sent.prompt, sent.reply, sent.final_text, Delivery.objects.get(draft=sent).text]
    kept += [h.reply + h.final_text for h in Draft.history.filter(id=sent.pk)]
    assert all(PASSWORD not in text for text in kept)
    assert "门锁密码是••••••" in sent.prompt
    # And the prompt's sections still split it, the trace saying it was redacted
    sections = sent.context_trace["prompt_sections"]
    assert sent.prompt[sections[1]["start"] : sections[1]["end"]].startswith("三、最近对话")
    assert sections[1]["end"] == len(sent.prompt) and sent.context_trace["prompt_redacted"] is True
    # And a pending draft is still to be sent as written
    assert Draft.objects.get(pk=pending.pk).final_text.count(PASSWORD) == 1
    # And the customer's audit lists the draft, and the figures say so
    assert AuditEvent.objects.filter(action=AuditAction.MESSAGES_SEALED, payload={"draft_ids": [sent.pk]}).exists()
    assert "drafts=1" in output
    # And a second run changes nothing more
    assert "drafts=0" in run("--account", account.id)


def test_messages_seal_masks_a_bare_value_sent_right_after_its_announcement(account):
    # Given old messages: "密码发你" then the bare value, stored in the clear before ingest masked them
    customer = CustomerFactory(conversation_id="wm_seal_zhao")
    announcement = MessageFactory(customer=customer, text="门锁密码发你")
    value = MessageFactory(customer=customer, text="Lm20461qa", sent_at=announcement.sent_at + dt.timedelta(minutes=1))
    # And the same shape three hours later, which announces nothing
    late = MessageFactory(customer=customer, text="Qz88310kk", sent_at=value.sent_at + dt.timedelta(hours=3))
    # When the command runs
    run("--account", account.id)
    # Then the announced value is one mask with its original sealed; the late one stays as it was
    assert Message.objects.get(pk=value.pk).text == "••••••"
    assert received_text(Message.objects.get(pk=value.pk)) == "Lm20461qa"
    assert Message.objects.get(pk=late.pk).text == "Qz88310kk"


def test_messages_seal_drops_the_kept_reading_of_a_message_it_masks(account, clear_messages):
    # Given a reading kept of a clear message (read before the gate knew its shape)
    from memory.models import MessageReading

    MessageReading.objects.create(message=clear_messages[1], reader_version="old", extraction={"clause": CLEAR[1]})
    MessageReading.objects.create(message=clear_messages[2], reader_version="old", extraction={})
    # When the command masks it
    run("--account", account.id)
    # Then its reading is gone (it would keep the number), and the untouched message keeps its own
    assert not MessageReading.objects.filter(message=clear_messages[1]).exists()
    assert MessageReading.objects.filter(message=clear_messages[2]).exists()


def test_messages_seal_masks_the_clause_a_held_back_item_kept(account, clear_messages):
    # Given a proposal read from a clear message, keeping the customer's clause with the number in it
    from memory.models import MemoryItem, MemoryStatus

    li = clear_messages[1].customer
    proposal = MemoryItem.objects.create(
        customer=li,
        type="preference",
        key="preference:晚上联系",
        content="偏好：晚上联系",
        status=MemoryStatus.PROPOSED,
        source_message_ids=[clear_messages[1].pk],
        held_back="question",
        clause=CLEAR[1],
    )
    # When the command masks the message
    out = run("--account", account.id)
    # Then the item's clause no longer holds the number, in the row or its history, and the run says so
    proposal.refresh_from_db()
    assert "13912345678" not in proposal.clause and "晚上联系" in proposal.clause
    history = list(MemoryItem.history.filter(id=proposal.pk).values_list("clause", flat=True))
    assert history and not any("13912345678" in clause for clause in history)
    assert "clauses=" in out and "clauses=0" not in out
