"""One customer's memory written from several connections at once on PostgreSQL (review of issue 35,
L4): every writer locks the customer's row first and the items by id, so captures proposing under
one key cannot both insert a proposal (`uniq_proposed_memory_key`), and a supervisor's edit racing
captures neither deadlocks nor fails."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from memory.capture.services import capture_message
from memory.governance.services import memory_item_edit
from memory.items import memory_item_put
from memory.models import MemoryCreatedBy, MemoryItem, MemoryStatus
from qiwei_site.platform.services import account_create
from qiwei_site.platform.tenancy import use_account
from tests.factories import CustomerFactory, MessageFactory, StaffUserFactory

pytestmark = pytest.mark.integration

# A question about the stock: capture proposes (never writes) wants from it.
STOCK_QUESTION = "有没有带阳台的两居室？"
ROUNDS, CAPTURES = 4, 4


def _race(account_id: str, work: list) -> list[BaseException]:
    barrier = threading.Barrier(len(work))
    errors: list[BaseException] = []

    def run(step) -> None:
        try:
            with use_account(account_id):
                barrier.wait()
                step()
        except BaseException as exc:  # every failure is the finding
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(step,)) for step in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


@pytest.mark.django_db(transaction=True)
def test_concurrent_captures_and_an_edit_neither_fail_nor_duplicate_a_proposal_on_postgres(postgres_accounts):
    account_id = postgres_accounts("pglock")
    account_create(account_id=account_id, name="安居客服四部")
    staff = StaffUserFactory()
    for round_number in range(ROUNDS):
        # Given a customer with an active want a supervisor is about to edit, and four copies of a
        # stock question that capture turns into proposals (two keys: the layout and the balcony)
        with use_account(account_id) as alias:
            assert connections[alias].vendor == "postgresql"
            customer = CustomerFactory(conversation_id=f"wm_lock_{round_number}")
            item = memory_item_put(
                customer=customer,
                type="preference",
                key="preference:朝南",
                content="偏好：朝南",
                created_by=MemoryCreatedBy.HUMAN,
                actor=staff,
                reason="电话里说的",
            ).item
            questions = [
                MessageFactory(
                    customer=customer, text=STOCK_QUESTION, sender="王先生", external_id=f"q{round_number}-{n}"
                )
                for n in range(CAPTURES)
            ]

        # When the four captures and the edit run at once, each on its own connection
        work = [lambda m=message: capture_message(message=m) for message in questions]
        work.append(
            lambda item=item: memory_item_edit(
                item=item, content="偏好：朝南，采光好", actor=staff, reason="客户补充说明"
            )
        )
        errors = _race(account_id, work)

        # Then nothing failed, one proposal waits under each key, and the edit landed
        assert errors == [], (round_number, errors)
        with use_account(account_id):
            keys = list(
                MemoryItem.objects.filter(customer=customer, status=MemoryStatus.PROPOSED).values_list("key", flat=True)
            )
            assert keys and len(keys) == len(set(keys)), keys
            assert MemoryItem.objects.get(
                customer=customer, key="preference:朝南", status=MemoryStatus.ACTIVE
            ).content.endswith("采光好")
