"""Accounts on PostgreSQL: one database per account, isolation and concurrent creation."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from conversations.models import Customer, Message
from qiwei_site.platform.services import account_create
from qiwei_site.platform.tenancy import use_account
from tests.factories import CustomerFactory, MessageFactory

pytestmark = pytest.mark.integration


@pytest.mark.django_db(transaction=True)
def test_postgres_accounts_sharing_a_conversation_id_are_isolated(postgres_accounts):
    # Given two accounts whose databases live on PostgreSQL
    a, b = postgres_accounts("pga"), postgres_accounts("pgb")
    account_create(account_id=a, name="浦东门店")
    account_create(account_id=b, name="徐汇门店")
    with use_account(a) as alias:
        assert connections[alias].vendor == "postgresql"
        customer = CustomerFactory(conversation_id="wm_shared", display_name="王先生")
        MessageFactory(customer=customer, text="我预算5000，想要两居室")
    with use_account(b):
        CustomerFactory(conversation_id="wm_shared", display_name="赵女士")
    # Then each account sees only its own customer and messages
    with use_account(a):
        assert list(Customer.objects.values_list("display_name", flat=True)) == ["王先生"]
        assert Message.objects.count() == 1
    with use_account(b):
        assert list(Customer.objects.values_list("display_name", flat=True)) == ["赵女士"]
        assert Message.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_postgres_five_accounts_created_from_five_threads(postgres_accounts):
    ids = [postgres_accounts(f"pgt{n}") for n in range(5)]
    barrier = threading.Barrier(5)
    errors: list[BaseException] = []

    def create(account_id: str) -> None:
        try:
            barrier.wait()
            account_create(account_id=account_id, name=f"分店{account_id}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=create, args=(i,)) for i in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for account_id in ids:
        with use_account(account_id):
            CustomerFactory(conversation_id="wm_first")
            assert Customer.objects.count() == 1
    connections.close_all()
