"""`qiwei_site.platform.sql`: the token read and the account-access check give what their ORM
twins give (DRF's `select_related` read; the membership query), for every kind of user and
account; and the statement engine converts values as the ORM does."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.db import models
from rest_framework.authtoken.models import Token

from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.services import account_update, membership_grant
from qiwei_site.platform.sql import account_access, token_with_user
from tests.conftest import make_account
from tests.factories import StaffUserFactory, UserFactory
from tests.qiwei_site.platform import sql_twins


def as_values(token: Token | None) -> object:
    if token is None:
        return None
    user = token.user
    return (
        token.key,
        token.user_id,
        token.created,
        {field.attname: getattr(user, field.attname) for field in get_user_model()._meta.concrete_fields},
    )


@pytest.mark.django_db
def test_sql_token_with_user_equals_drf_read(account):
    # Given an agent, a supervisor, a deactivated user and a superuser, each with a token
    users = [
        UserFactory(first_name="小李"),
        StaffUserFactory(),
        UserFactory(is_active=False),
        get_user_model().objects.create_superuser("root", "root@example.com", "pass-1234"),
    ]
    for user in users:
        user.last_login = dt.datetime(2026, 11, 30, 8, 15, 30, 123456, tzinfo=dt.UTC)
        user.save()
        key = Token.objects.create(user=user).key
        # Then the SQL read gives the token and user DRF's read gives, typed alike
        twin = Token.objects.select_related("user").get(key=key)
        assert as_values(token_with_user(key)) == as_values(twin)
        assert token_with_user(key).user.is_active is user.is_active
    # And an unknown key gives None
    assert token_with_user("0" * 40) is None


@pytest.mark.django_db
def test_sql_account_access_equals_its_orm_twin(account):
    # Given a member, a non-member, and an account switched off
    other = make_account("globex", "优居客服二部")
    member, stranger = UserFactory(), UserFactory()
    membership_grant(user=member, account=account)
    membership_grant(user=member, account=other)
    account_update(account=other, changes={"is_active": False}, actor="运维", reason="停用测试")
    assert WeComAccount.objects.get(pk="globex").is_active is False
    cases = [
        (user.pk, account_id, superuser)
        for user in (member, stranger)
        for account_id in ("acme", "globex", "nosuch")
        for superuser in (False, True)
    ]
    # Then every answer equals the ORM twin's, and they are not all the same
    answers = [account_access(*case[:2], superuser=case[2]) for case in cases]
    assert answers == [sql_twins.account_access(*case[:2], superuser=case[2]) for case in cases]
    assert answers == [True, True, False, False, False, False, False, True, False, False, False, False]


@pytest.mark.parametrize(
    "field",
    [
        models.DateField(),
        models.DecimalField(max_digits=8, decimal_places=2),
        models.UUIDField(),
        "TimeField",
    ],
    ids=["date", "decimal", "uuid", "time"],
)
def test_sql_statement_refuses_a_column_kind_it_does_not_convert(db, field):
    # Given a hand-written statement reading a kind the converter has no rule for (issue 39, item 7:
    # on SQLite a date or a decimal would come back as text without a word)
    from django.db import connection

    from qiwei_site.platform.sql import Statement

    statement = Statement("SELECT 1", [field])
    # When its rows are read
    with pytest.raises(TypeError, match="does not convert"):
        statement._converters_for(connection)
    # Then it is refused at once, naming the kind; the kinds it converts or passes still work
    assert Statement("SELECT 1", ["DateTimeField", "BooleanField", "CharField", None])._converters_for(connection)


def test_sql_statement_binds_parameters_and_reads_rows_by_name(db):
    # Given a statement whose parameters are named, one of them used twice, and a named row class
    from typing import NamedTuple

    from qiwei_site.platform.sql import Statement

    class Pair(NamedTuple):
        city: str
        twice: str

    statement = Statement("SELECT %(city)s, %(city)s || %(district)s", ["CharField", "CharField"], Pair)
    # When its rows are read
    rows = statement.rows(city="上海", district="浦东", using="default")
    # Then each value is bound by its name, once however often it is used, and read back by name
    assert rows == [Pair(city="上海", twice="上海浦东")] and rows[0].twice == "上海浦东"
    # And a row class that does not match the statement's columns is refused at once
    with pytest.raises(ValueError, match="2 fields for 3 columns"):
        Statement("SELECT 1, 2, 3", [None, None, None], Pair)
