"""Who may see an account (qiwei_site/platform/selectors.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connections
from django.test.utils import CaptureQueriesContext

from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.selectors import user_can_access_account
from qiwei_site.platform.services import membership_grant
from tests.conftest import make_account
from tests.factories import StaffUserFactory, UserFactory


@pytest.fixture
def branches(db) -> tuple[WeComAccount, WeComAccount]:
    return make_account("pudong", "浦东门店"), make_account("xuhui", "徐汇门店")


def test_user_can_access_account_only_a_member_of_an_active_one(branches):
    pudong, _xuhui = branches
    # Given an agent who is a member of 浦东门店 only
    agent = StaffUserFactory()
    membership_grant(user=agent, account=pudong)
    # Then they see 浦东 and not 徐汇, nor an account that does not exist
    assert user_can_access_account(agent, "pudong")
    assert not user_can_access_account(agent, "xuhui")
    assert not user_can_access_account(agent, "nosuch")
    # And once 浦东 is switched off, not 浦东 either
    WeComAccount.objects.filter(pk="pudong").update(is_active=False)
    assert not user_can_access_account(agent, "pudong")


def test_user_can_access_account_superuser_sees_every_active_one(branches):
    admin = UserFactory(username="admin", is_superuser=True, is_staff=True)
    assert user_can_access_account(admin, "xuhui")
    WeComAccount.objects.filter(pk="xuhui").update(is_active=False)
    assert not user_can_access_account(admin, "xuhui")
    assert not user_can_access_account(admin, "nosuch")


def test_user_can_access_account_anonymous_sees_none(branches):
    assert not user_can_access_account(AnonymousUser(), "pudong")


def test_user_can_access_account_asks_in_one_query(branches):
    agent = StaffUserFactory()
    membership_grant(user=agent, account=branches[0])
    with CaptureQueriesContext(connections["default"]) as queries:
        assert user_can_access_account(agent, "pudong")
    assert len(queries) == 1
