"""Decoded recall features kept per process (issue 38, item 1): a repeated build decodes only the
candidates it has not seen; a forgotten, masked or rewritten message is never served from the cache,
accounts never share entries, and the cache stays within its bound."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.models import Customer, Message, MessageDirection
from memory.context import recall as recall_module
from memory.context.recall import RECALL_COLUMNS, decoded_cache_clear, recall_features_store, recall_from_rows
from memory.governance.messages import message_forget
from memory.governance.sealing import messages_seal
from memory.models import MessageRecallFeatures
from qiwei_site.platform.tenancy import use_account
from tests.factories import BASE_TIME, CustomerFactory, MessageFactory
from tests.memory.context.conftest import FILLER

IN, OUT = MessageDirection.INBOUND, MessageDirection.OUTBOUND
PHONE = "13912345678"
HISTORY = [
    (IN, "您好，我想在浦东租个两居室，预算八千左右"),
    (OUT, "好的，请问对楼层有要求吗"),
    (IN, "不考虑顶楼，家里有老人"),
    (IN, f"我手机{PHONE}，晚上联系"),
    *[(OUT if i % 2 else IN, FILLER[i % len(FILLER)]) for i in range(20)],
]


@pytest.fixture(autouse=True)
def cold_cache():
    decoded_cache_clear()
    yield
    decoded_cache_clear()


@pytest.fixture
def decoded(monkeypatch) -> list[str]:
    """The stored features recall decodes."""
    seen: list[str] = []
    real = recall_module.document_decode

    def spy(encoded: str):
        seen.append(encoded)
        return real(encoded)

    monkeypatch.setattr(recall_module, "document_decode", spy)
    return seen


@pytest.fixture
def history(account) -> list[Message]:
    customer = CustomerFactory(conversation_id="wm_cache", display_name="王先生")
    messages = [
        MessageFactory(
            customer=customer,
            direction=direction,
            sender="客户" if direction == IN else "客服小安",
            text=text,
            sent_at=BASE_TIME + dt.timedelta(minutes=index),
        )
        for index, (direction, text) in enumerate(HISTORY)
    ]
    recall_features_store(messages=messages)
    return messages


def candidates(customer: Customer) -> list[tuple]:
    """The candidate rows as the builder reads them, oldest first."""
    return list(Message.objects.filter(customer=customer).order_by("sent_at", "pk").values_list(*RECALL_COLUMNS))


def recalled_ids(query: str, customer: Customer) -> list[int]:
    return [m.id for m in recall_from_rows(query, candidates(customer), 3)]


def test_recall_from_rows_second_build_decodes_nothing_already_decoded(history, decoded):
    customer = history[0].customer
    # Given a first build that decoded every candidate
    first = recalled_ids("顶楼的就别推荐了", customer)
    assert len(decoded) == len(history)
    decoded.clear()
    # When the next turn ranks the same candidates
    second = recalled_ids("顶楼的就别推荐了", customer)
    # Then nothing is decoded again and the answer is the same
    assert decoded == []
    assert second == first and history[2].pk in second


def test_recall_from_rows_decodes_only_a_new_message(history, decoded):
    customer = history[0].customer
    recalled_ids("顶楼的就别推荐了", customer)
    decoded.clear()
    # Given one more message, with its features stored
    new = MessageFactory(customer=customer, text="可以养猫吗", sent_at=BASE_TIME + dt.timedelta(hours=1))
    recall_features_store(messages=[new])
    # When the next turn ranks the candidates
    recalled_ids("顶楼的就别推荐了", customer)
    # Then only the new one is decoded
    assert decoded == [MessageRecallFeatures.objects.get(message=new).features]


def test_recall_from_rows_never_recalls_a_forgotten_message_from_the_cache(history, staff_user):
    customer = history[0].customer
    # Given a message recalled (and so cached)
    assert history[2].pk in recalled_ids("顶楼的就别推荐了", customer)
    # When the customer's message is forgotten
    message_forget(message=history[2], actor=staff_user, reason="客户要求删除")
    # Then the next turn does not recall it
    assert history[2].pk not in recalled_ids("顶楼的就别推荐了", customer)


def test_forgetting_a_message_drops_its_decoded_entry_from_this_process(history, staff_user):
    customer = history[0].customer
    # Given every candidate decoded and cached
    recalled_ids("顶楼的就别推荐了", customer)
    cached = {key[1] for key in recall_module._DECODED._entries}
    assert history[2].pk in cached
    # When the message is forgotten
    message_forget(message=history[2], actor=staff_user, reason="客户要求删除")
    # Then its words no longer wait in this process's memory for the LRU; the others stay
    cached = {key[1] for key in recall_module._DECODED._entries}
    assert history[2].pk not in cached and history[0].pk in cached


def test_recall_from_rows_serves_a_masked_message_with_its_new_features(history, staff_user, decoded):
    customer, phone = history[0].customer, history[3]
    # Given a message recalled by the number it holds (and so cached)
    assert phone.pk in recalled_ids(f"{PHONE}是谁的号码", customer)
    decoded.clear()
    # When messages_seal masks it and rewrites its features
    messages_seal(actor=staff_user)
    stored = MessageRecallFeatures.objects.get(message=phone).features
    assert PHONE not in stored
    # Then the next turn decodes its new features, and the number no longer recalls it
    assert recalled_ids(f"{PHONE}是谁的号码", customer) != [phone.pk]
    assert decoded == [stored]


def test_recall_from_rows_never_shares_entries_between_accounts(history, other_account, decoded):
    customer = history[0].customer
    rows = candidates(customer)
    # Given every candidate decoded in one account
    recall_from_rows("顶楼的就别推荐了", rows, 3)
    decoded.clear()
    # When another account ranks rows with the same message ids and the same stored bytes
    with use_account(other_account.id):
        recall_from_rows("顶楼的就别推荐了", rows, 3)
    # Then it decodes them all itself
    assert len(decoded) == len(rows)


def test_recall_from_rows_cache_stays_within_its_bound(history, monkeypatch, decoded):
    customer = history[0].customer
    # Given a cache bounded below the number of candidates
    monkeypatch.setattr(recall_module._DECODED, "size", 5)
    # When a build ranks them all, twice
    first = recalled_ids("顶楼的就别推荐了", customer)
    second = recalled_ids("顶楼的就别推荐了", customer)
    # Then the cache never holds more than its bound, and the answer is unchanged
    assert len(recall_module._DECODED) == 5
    assert first == second
    # least recently used first out: a scan evicts its own rows, but looks up all its candidates
    # before it decodes any, so the second scan finds the 5 the first one left
    assert len(decoded) == 2 * len(history) - 5
