"""The account registry's writes are audited in `default` (an account's own database cannot keep
the record of its deletion), and the audit takes only actions from the fixed list."""

from __future__ import annotations

import pytest
from django.urls import reverse

from conversations.models import AuditAction, AuditEvent, RegistryAuditEvent
from qiwei_site.platform.audit import audit_record
from qiwei_site.platform.models import AccountMembership, WeComAccount
from qiwei_site.platform.services import (
    account_create,
    account_delete,
    account_update,
    membership_grant,
    membership_revoke,
)
from qiwei_site.platform.tenancy import use_account
from tests.factories import StaffUserFactory, UserFactory


@pytest.mark.django_db
def test_account_create_records_it_in_the_registry_journal_and_the_account():
    # given a supervisor
    supervisor = StaffUserFactory()
    # when they create an account
    account_create(account_id="hangzhou", name="杭州租房一部", actor=supervisor, reason="新开门店")
    # then the registry journal and the account's own audit both say who did it
    event = RegistryAuditEvent.objects.get(action=AuditAction.ACCOUNT_CREATED)
    assert (event.account_id, event.actor_id, event.reason) == ("hangzhou", supervisor.pk, "新开门店")
    with use_account("hangzhou"):
        assert AuditEvent.objects.filter(action=AuditAction.ACCOUNT_CREATED).count() == 1


@pytest.mark.django_db
def test_account_delete_is_recorded_after_the_database_is_gone():
    # given an account
    account_create(account_id="tmp_shop", name="临时门店")
    # when it is deleted
    account_delete(account_id="tmp_shop", actor="agent_console_smoke", reason="临时账号用完")
    # then the registry row is gone and the journal keeps that it happened
    assert not WeComAccount.objects.filter(pk="tmp_shop").exists()
    event = RegistryAuditEvent.objects.get(action=AuditAction.ACCOUNT_DELETED)
    assert (event.account_id, event.actor_name, event.payload["registry_rows"]) == (
        "tmp_shop",
        "agent_console_smoke",
        1,
    )


def test_account_update_records_changed_fields_only(account):
    # when a supervisor renames the account, then renames it to the same name again
    account_update(account=account, changes={"name": "安居客服二部"}, actor="运营", reason="门店改名")
    account_update(account=account, changes={"name": "安居客服二部"}, actor="运营", reason="重复提交")
    # then one journal row holds the new name
    events = RegistryAuditEvent.objects.filter(action=AuditAction.ACCOUNT_UPDATED)
    assert [e.payload for e in events] == [{"name": "安居客服二部"}]


def test_membership_grant_and_revoke_are_journaled_once(account):
    # given an agent
    agent = UserFactory()
    # when access is granted twice and revoked once
    membership = membership_grant(user=agent, account=account, actor="主管", reason="新入职")
    membership_grant(user=agent, account=account, actor="主管", reason="重复授权")
    membership_revoke(membership=membership, actor="主管", reason="离职")
    # then the journal shows one grant and one revoke, and the agent has no access left
    actions = list(
        RegistryAuditEvent.objects.filter(account_id=account.pk)
        .exclude(action=AuditAction.ACCOUNT_CREATED)
        .order_by("id")
        .values_list("action", "payload")
    )
    assert actions == [
        (AuditAction.MEMBERSHIP_GRANTED, {"user_id": agent.pk}),
        (AuditAction.MEMBERSHIP_REVOKED, {"user_id": agent.pk}),
    ]
    assert not AccountMembership.objects.filter(user=agent).exists()


def test_audit_record_refuses_an_action_outside_the_list(account):
    # when a service names an action that is not in the fixed list, then nothing is written
    with pytest.raises(ValueError):
        audit_record(action="memory_item_teleported", actor="celery")
    assert not AuditEvent.objects.filter(action="memory_item_teleported").exists()


def test_audit_actions_have_chinese_labels():
    # every action reads as Chinese in admin
    for action in AuditAction:
        assert any("\u4e00" <= ch <= "\u9fff" for ch in str(action.label)), action


def test_admin_membership_add_and_delete_go_through_the_services(admin_client, account):
    # given an agent without access, and a superuser in admin
    agent = UserFactory(username="xiaozhang")
    superuser = StaffUserFactory(username="boss", is_superuser=True)
    admin_client.force_login(superuser)
    # when the superuser grants access in 账号授权, then deletes it
    response = admin_client.post(
        reverse("admin:platform_accountmembership_add"), {"user": agent.pk, "account": account.pk}
    )
    assert response.status_code == 302
    membership = AccountMembership.objects.get(user=agent)
    response = admin_client.post(
        reverse("admin:platform_accountmembership_delete", args=[membership.pk]), {"post": "yes"}
    )
    assert response.status_code == 302
    # then both are in the registry journal with the superuser as actor
    events = RegistryAuditEvent.objects.filter(account_id=account.pk, actor_id=superuser.pk).order_by("id")
    assert [e.action for e in events] == [AuditAction.MEMBERSHIP_GRANTED, AuditAction.MEMBERSHIP_REVOKED]


def test_admin_audit_list_shows_chinese_action_labels(admin_client, account):
    # given one audit row
    audit_record(action=AuditAction.MEMORY_ITEM_REJECTED, conversation_id="wm_liu", actor="主管")
    # when the supervisor opens the audit list
    body = admin_client.get(reverse("admin:conversations_auditevent_changelist")).content.decode()
    # then the action reads in Chinese
    assert "驳回记忆" in body
