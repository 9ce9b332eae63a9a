"""Tenancy: one database per account, a router that fails closed, safe concurrent creation."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections

from conversations.models import Customer, Message
from memory.models import MemoryItem
from qiwei_site.platform import tenancy
from qiwei_site.platform.errors import ValidationFailed
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.services import account_create
from qiwei_site.platform.tenancy import CrossAccountAccess, NoAccountSelected, use_account
from tests.factories import CustomerFactory, MemoryItemFactory, MessageFactory


def test_router_customer_query_without_account_raises(db):
    with pytest.raises(NoAccountSelected):
        list(Customer.objects.all())


def test_router_registry_query_without_account_works(db):
    assert list(WeComAccount.objects.all()) == []


def test_accounts_sharing_a_conversation_id_never_see_each_other(account, other_account):
    # Given the same conversation id in two accounts
    mine = CustomerFactory(conversation_id="wm_shared", display_name="王先生")
    MessageFactory(customer=mine, text="我预算3000，想要地铁附近的两居室")
    MemoryItemFactory(customer=mine, content="预算3000")
    with use_account(other_account.id):
        theirs = CustomerFactory(conversation_id="wm_shared", display_name="赵女士")
        MessageFactory(customer=theirs, text="我想买学区房")
    # When each account reads its data
    # Then each sees only its own rows
    assert [c.display_name for c in Customer.objects.all()] == ["王先生"]
    assert [m.text for m in Message.objects.all()] == ["我预算3000，想要地铁附近的两居室"]
    assert MemoryItem.objects.count() == 1
    with use_account(other_account.id):
        assert [c.display_name for c in Customer.objects.all()] == ["赵女士"]
        assert [m.text for m in Message.objects.all()] == ["我想买学区房"]
        assert MemoryItem.objects.count() == 0


def test_router_row_of_one_account_used_in_another_raises(account, other_account):
    customer = CustomerFactory()
    with use_account(other_account.id), pytest.raises(CrossAccountAccess):
        customer.save()


def test_account_databases_are_separate_files(account, other_account, settings):
    accounts_dir = Path(settings.QIWEI_DATA_DIR) / "accounts"
    assert sorted(p.name for p in accounts_dir.glob("*.sqlite3")) == ["acme.sqlite3", "globex.sqlite3"]


# "acme\n": a regex's "$" matches before a trailing newline; the id is matched whole (issue 36)
@pytest.mark.parametrize(
    "bad_id", ["", "Acme", "../etc", "a b", "x" * 41, "-lead", "acme;drop", "shop-1", "acme\n", "\nacme", "acme\r\n"]
)
def test_account_create_refuses_unsafe_ids(db, bad_id):
    with pytest.raises(ValidationFailed) as exc:
        account_create(account_id=bad_id, name="坏账号")
    assert "不合法" in exc.value.detail


def test_account_create_command_refuses_unsafe_id_with_message(db):
    with pytest.raises(CommandError, match="不合法"):
        call_command("account_create", "../../etc", "--name", "坏账号")


@pytest.mark.django_db(transaction=True)
def test_account_create_from_five_threads_gives_five_migrated_databases():
    # Given five threads creating five accounts at the same moment
    barrier = threading.Barrier(5)
    errors: list[BaseException] = []

    def create(n: int) -> None:
        try:
            barrier.wait()
            account_create(account_id=f"branch{n}", name=f"分部{n}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=create, args=(n,)) for n in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then there is no error and every database is migrated and usable
    assert errors == []
    assert WeComAccount.objects.count() == 5
    for n in range(5):
        with use_account(f"branch{n}"):
            CustomerFactory(conversation_id="wm_first")
            assert Customer.objects.count() == 1


def test_use_account_registers_lazily_and_unregisters(db):
    account_create(account_id="lazy", name="懒加载")
    tenancy.unregister_account_database("lazy")
    assert not tenancy.is_registered("lazy")
    with use_account("lazy"):
        assert Customer.objects.count() == 0
    assert tenancy.is_registered("lazy")


def test_migrate_accounts_command_migrates_each_account(account, other_account, capsys):
    call_command("migrate_accounts", "--force")
    out = capsys.readouterr().out
    assert "acme: 已迁移" in out and "globex: 已迁移" in out


def test_migrate_accounts_unknown_account_fails(db):
    with pytest.raises(CommandError, match="不存在"):
        call_command("migrate_accounts", "--account", "nobody")
