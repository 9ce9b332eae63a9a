"""`qiwei_site.platform.sql`: the token read and the account-access check give what their ORM
twins give (DRF's `select_related` read; the membership query), for every kind of user and
account; and the statement engine converts values as the ORM does."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, models, transaction
from django.db.models.functions import Now
from rest_framework.authtoken.models import Token

from conversations.models import Alert, AuditAction, AuditEvent, Customer, Message, MessageSecret
from memory.models import CaptureJob, MemoryItem, MessageRecallFeatures
from qiwei_site.platform import audit
from qiwei_site.platform.audit import AuditEntry, account_audit_verify, audit_records_bulk
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.services import account_update, membership_grant
from qiwei_site.platform.sql import account_access, insert, insert_unless, token_with_user, update_rows
from tests.conftest import make_account
from tests.factories import CustomerFactory, StaffUserFactory, UserFactory
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


# --- `insert`: bulk_create's statement without its compiler -------------------------------------

_DIFFERS = {
    "id",
    "external_id",
    "message",
    "created_at",
    "updated_at",
    "entry_hash",
    "chain_seq",
    "prev_hash",
    "chain_hash",
}


def _row(model: type[models.Model], pk: object) -> dict[str, object]:
    """The stored row as the ORM reads it back, without what differs between two copies by design."""
    row = model._default_manager.filter(pk=pk).values().get()
    return {key: value for key, value in row.items() if not {key, key.removesuffix("_id")} & _DIFFERS}


def _batch(customer: Customer, tag: str, at: dt.datetime) -> dict[str, list[models.Model]]:
    messages = [
        Message(customer=customer, external_id=f"{tag}-{n}", direction=direction, sender=sender, text=text, sent_at=at)
        for n, (direction, sender, text) in enumerate(
            [
                ("inbound", "王先生", "预算五千，想要两室，最好近地铁"),
                ("outbound", "顾问小李", "好的，帮您找找张江附近的"),
            ]
        )
    ]
    return {"messages": messages}


def assert_insert_equals_bulk_create() -> None:
    """Rows of every model ingest and the audit write, inserted by `insert` and by `bulk_create`,
    read back alike (keys given back, times filled, JSON, text, the non-automatic keys of the
    message's secret and features), and the audit chain holds over both."""
    customer = CustomerFactory(display_name="王先生")
    at = dt.datetime(2026, 11, 30, 9, 30, 15, 250000, tzinfo=dt.UTC)
    ours, twin = _batch(customer, "ours", at)["messages"], _batch(customer, "twin", at)["messages"]
    assert insert(ours) is not None and Message.objects.bulk_create(twin)
    for mine, theirs in zip(ours, twin, strict=True):
        assert mine.pk is not None and not mine._state.adding and mine._state.db == theirs._state.db
        assert _row(Message, mine.pk) == _row(Message, theirs.pk)
        assert Message.objects.get(pk=mine.pk).created_at is not None
    follow = {
        "secret": lambda m: MessageSecret(message=m, sealed="密码是 Lm20461qa", categories=["credential"]),
        "features": lambda m: MessageRecallFeatures(
            message_id=m.pk, version=3, text_fingerprint="fp", features="b:张江"
        ),
        "job": lambda m: CaptureJob(customer=customer, message=m, next_attempt_at=at, enqueued_at=at),
    }
    for make in follow.values():
        made, twin_made = insert([make(ours[0])]), type(make(twin[0]))._default_manager.bulk_create([make(twin[0])])
        model = type(made[0])
        assert made[0].pk is not None and _row(model, made[0].pk) == _row(model, twin_made[0].pk)
    entry = AuditEntry(
        action=AuditAction.MESSAGES_INGESTED,
        conversation_id="wm_a",
        actor="wecom",
        reason="企微消息入库",
        payload={"message_ids": [m.pk for m in ours]},
    )
    made = audit_records_bulk([entry, entry])
    twin_columns = audit._hashed(
        "conversation_id", "wm_a", audit.audit_fields("messages_ingested", "wecom", entry.reason, entry.payload)
    )
    twin_made = AuditEvent.objects.bulk_create([AuditEvent(**twin_columns)])
    assert _row(AuditEvent, made[0].pk) == _row(AuditEvent, made[1].pk) == _row(AuditEvent, twin_made[0].pk)
    stored = AuditEvent.objects.filter(pk__in=[row.pk for row in [*made, *twin_made]]).order_by("pk")
    assert [row.chain_seq for row in stored] == sorted(row.chain_seq for row in stored)
    assert account_audit_verify().intact


@pytest.mark.django_db
def test_sql_insert_writes_what_bulk_create_writes(account):
    # Given new messages, their secret, features and job, and audit rows
    # Then `insert` stores each as `bulk_create` stores it, and the audit chain holds
    assert_insert_equals_bulk_create()


@pytest.mark.django_db
def test_sql_insert_leaves_a_set_key_or_an_expression_to_bulk_create(account):
    # Given a message whose automatic key is already chosen, and one whose time is a database expression
    customer = CustomerFactory(display_name="李女士")
    keyed = Message(
        pk=424242, customer=customer, external_id="keyed", direction="inbound", text="还有房吗", sent_at=Now()
    )
    dated = Message(customer=customer, external_id="dated", direction="inbound", text="押一付三可以吗", sent_at=Now())
    # When both are inserted
    insert([keyed])
    insert([dated])
    # Then bulk_create wrote them: the chosen key kept, the time the database's
    assert Message.objects.get(external_id="keyed").pk == 424242
    assert Message.objects.get(pk=dated.pk).sent_at is not None


@pytest.mark.django_db
def test_sql_insert_raises_the_orm_integrity_error_on_a_duplicate(account):
    # Given a stored message
    customer = CustomerFactory(display_name="陈小姐")
    insert(
        [
            Message(
                customer=customer, external_id="dup", direction="inbound", text="在吗", sent_at=dt.datetime.now(dt.UTC)
            )
        ]
    )
    # When the same external id is inserted again
    # Then Django's IntegrityError is raised (ingest's retry catches it), and nothing more is stored
    with pytest.raises(IntegrityError), transaction.atomic(using=Message.objects.db):
        insert(
            [
                Message(
                    customer=customer,
                    external_id="dup",
                    direction="inbound",
                    text="在吗",
                    sent_at=dt.datetime.now(dt.UTC),
                )
            ]
        )
    assert Message.objects.filter(external_id="dup").count() == 1


def assert_update_rows_equals_bulk_update() -> None:
    """One row and several rows, fields of every kind memory writes (JSON list, text, datetime, float,
    a foreign key, NULL), written by `update_rows` and by `bulk_update`, read back alike."""
    customer = CustomerFactory(display_name="刘女士")
    at = dt.datetime(2026, 11, 30, 9, 30, 15, 250000, tzinfo=dt.UTC)

    def items(tag: str) -> list[MemoryItem]:
        return insert(
            [
                MemoryItem(customer=customer, type="preference", key=f"preference:{tag}{n}", content=f"近地铁{n}号线")
                for n in range(3)
            ]
        )

    ours, twin = items("ours"), items("twin")
    for rows in (ours, twin):
        rows[0].source_message_ids, rows[0].confidence, rows[0].expires_at = [3, 4], 0.9, at
        rows[1].status, rows[1].superseded_by, rows[1].expires_at = "superseded", rows[2], None
        rows[2].content, rows[2].updated_at = "不要一楼", at + dt.timedelta(minutes=5)
    names = ["source_message_ids", "confidence", "expires_at", "status", "superseded_by", "content", "updated_at"]
    assert update_rows(ours[:1], names) == 1 and update_rows(ours[1:], names) == 2
    MemoryItem.objects.bulk_update(twin[:1], names)
    MemoryItem.objects.bulk_update(twin[1:], names)
    for mine, theirs in zip(ours, twin, strict=True):
        row, twin_row = _row(MemoryItem, mine.pk), _row(MemoryItem, theirs.pk)
        assert row.pop("key").replace("ours", "") == twin_row.pop("key").replace("twin", "")
        assert (row.pop("superseded_by_id") is None) == (twin_row.pop("superseded_by_id") is None)
        assert row == twin_row
    assert MemoryItem.objects.get(pk=ours[1].pk).superseded_by_id == ours[2].pk


@pytest.mark.django_db
def test_sql_update_rows_writes_what_bulk_update_writes(account):
    # Given three items changed in every kind of field
    # Then `update_rows` stores one row and several rows as `bulk_update` stores them
    assert_update_rows_equals_bulk_update()


def assert_insert_unless_equals_its_twin() -> None:
    """An alert inserted once per (customer, kind, cause): the first stored as `bulk_create` stores
    it, the same cause again nothing, another cause or another customer a row of their own."""
    wang, li = CustomerFactory(display_name="王先生"), CustomerFactory(display_name="李女士")

    def alert(customer: Customer, cause: str) -> Alert:
        return Alert(customer=customer, kind="personal_number", level="info", text="客户消息含个人号码", cause=cause)

    first = insert_unless(alert(wang, "message:41"), match=["customer", "kind", "cause"])
    twin = Alert.objects.bulk_create([alert(wang, "message:twin")])[0]
    assert first is not None and first.pk is not None and not first._state.adding
    assert {**_row(Alert, first.pk), "cause": ""} == {**_row(Alert, twin.pk), "cause": ""}
    assert insert_unless(alert(wang, "message:41"), match=["customer", "kind", "cause"]) is None
    assert insert_unless(alert(wang, "message:42"), match=["customer", "kind", "cause"]) is not None
    assert insert_unless(alert(li, "message:41"), match=["customer", "kind", "cause"]) is not None
    assert Alert.objects.filter(cause="message:41").count() == 2


@pytest.mark.django_db
def test_sql_insert_unless_inserts_once_per_match(account):
    # Given alerts raised with causes
    # Then a cause already stored for the customer inserts nothing, and the rows are the ORM's
    assert_insert_unless_equals_its_twin()


@pytest.mark.django_db
def test_sql_update_rows_refuses_a_row_without_a_key_and_takes_a_related_rows_key(account):
    # Given an item whose successor was assigned before it was saved
    customer = CustomerFactory(display_name="赵先生")
    old = insert([MemoryItem(customer=customer, type="preference", key="preference:楼层", content="高楼层")])[0]
    successor = MemoryItem(customer=customer, type="preference", key="preference:楼层二", content="中间楼层")
    old.superseded_by = successor
    insert([successor])
    # When the link is written
    update_rows([old], ["superseded_by"])
    # Then the successor's key is stored, as bulk_update stores it
    assert MemoryItem.objects.get(pk=old.pk).superseded_by_id == successor.pk
    # And a row with no key is refused, as bulk_update refuses it
    with pytest.raises(ValueError):
        update_rows([MemoryItem(customer=customer, key="preference:无", content="无")], ["content"])
