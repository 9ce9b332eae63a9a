"""Compiled queries (`qiwei_site.platform.compiled`): a fixed-shape read or update compiled to SQL
once per backend returns what the ORM returns, and keeps running through the ORM whenever its two
compilations disagree or a value cannot be bound as the ORM binds it."""

from __future__ import annotations

import datetime as dt
import itertools
import logging

import pytest
from django.db import connections
from django.db.migrations.recorder import MigrationRecorder

from conversations.models import Customer, Message, Task, TaskStatus
from qiwei_site.platform.compiled import CompiledGet, CompiledRead, CompiledUpdate
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.tenancy import current_alias, use_account
from tests.factories import BASE_TIME, CustomerFactory, MessageFactory, TaskFactory

# Stand-ins: values no constant of the queries below equals, in range for their columns.
CUSTOMER, ROW = 2_117_263_591, 2_117_263_592
MOMENT = dt.datetime(1971, 1, 7, tzinfo=dt.UTC)


def _tasks_created_by(customer_id, moment):
    return (
        Task.objects.filter(customer_id=customer_id, created_at__lte=moment)
        .order_by("id")
        .values_list("id", "title", "status", "due_at", "resolved_at", "created_at")
    )


def _newest_messages(customer_id, size):
    return (
        Message.objects.filter(customer_id=customer_id).order_by("-sent_at", "-id").values_list("id", "sent_at")[:size]
    )


def _plans(read):
    return [plan for plan in read._plans.values() if plan is not None]


def test_compiled_read_returns_what_the_orm_returns_for_each_value(account, django_assert_num_queries):
    # given two customers' tasks, with and without a due time, and one customer with none
    first, second, empty = CustomerFactory(), CustomerFactory(), CustomerFactory()
    TaskFactory(customer=first, due_at=BASE_TIME)
    TaskFactory(customer=first, title="回电确认预算")
    TaskFactory(customer=second, due_at=BASE_TIME + dt.timedelta(days=2))
    later = Task.objects.order_by("-created_at").first().created_at + dt.timedelta(seconds=1)
    read = CompiledRead(_tasks_created_by, CUSTOMER, MOMENT)
    for customer, moment in [(first, later), (second, later), (empty, later), (first, BASE_TIME)]:
        # when it runs for each customer and moment, one statement each
        with django_assert_num_queries(1, connection=connections[current_alias()]):
            rows = read.rows(customer.pk, moment)
        # then it returns the ORM's rows, converted alike: aware datetimes, None where there is none
        assert rows == list(_tasks_created_by(customer.pk, moment))
    rows = read.rows(first.pk, later)
    assert [row[3] for row in rows] == [BASE_TIME, None] and rows[0][5].tzinfo is not None
    assert _plans(read), "the read ran its compiled SQL"


def test_compiled_read_static_limit_has_a_plan_per_value(account):
    # given a customer with six messages, and a read whose LIMIT is part of its SQL text
    customer = CustomerFactory()
    for _ in range(6):
        MessageFactory(customer=customer)
    read = CompiledRead(_newest_messages, CUSTOMER)
    # when it runs with two limits
    two = read.rows(customer.pk, static=(2,))
    five = read.rows(customer.pk, static=(5,))
    # then each returns the ORM's rows, from a plan of its own
    assert two == list(_newest_messages(customer.pk, 2)) and len(two) == 2
    assert five == list(_newest_messages(customer.pk, 5)) and len(five) == 5
    assert sorted(key[2] for key in read._plans) == [(2,), (5,)]
    assert len({plan.sql for plan in _plans(read)}) == 2


_calls = itertools.count()


@pytest.mark.parametrize(
    "build",
    [
        # a LIMIT passed as an argument: it is SQL text, the two compilations' texts differ
        lambda customer_id: (
            Message.objects.filter(customer_id=customer_id).order_by("id").values_list("id")[: customer_id % 7 + 3]
        ),
        # a constant that changes from one compilation to the next
        lambda customer_id: (
            Message.objects.filter(customer_id=customer_id)
            .exclude(external_id=f"probe-{next(_calls)}")
            .values_list("id")
        ),
        # an argument that never reaches the query's parameters
        lambda customer_id: Message.objects.filter(customer_id__gt=0).order_by("id").values_list("id"),
    ],
    ids=["limit_as_argument", "changing_constant", "unused_argument"],
)
def test_compiled_read_falls_back_to_the_orm_when_compilations_disagree(
    account, build, caplog, django_assert_num_queries
):
    # given a read that cannot be compiled once for all values
    customer = CustomerFactory()
    MessageFactory(customer=customer)
    MessageFactory(customer=customer)
    read = CompiledRead(build, CUSTOMER)
    # when it runs
    with (
        caplog.at_level(logging.WARNING, logger="qiwei_site.platform.compiled"),
        django_assert_num_queries(1, connection=connections[current_alias()]),
    ):
        rows = read.rows(customer.pk)
    # then it ran through the ORM (no plan, one statement) and returned the ORM's rows
    assert list(read._plans.values()) == [None]
    assert "runs through the ORM" in caplog.text
    assert sorted(rows) == sorted(Message.objects.filter(customer=customer).values_list("id"))


def test_compiled_read_runs_the_orm_for_a_value_it_cannot_bind(account):
    # given tasks with and without a due time, and a compiled read by due time
    customer = CustomerFactory()
    due = TaskFactory(customer=customer, due_at=BASE_TIME)
    undated = TaskFactory(customer=customer)
    read = CompiledRead(
        lambda customer_id, due_at: Task.objects.filter(customer_id=customer_id, due_at=due_at).values_list("id"),
        CUSTOMER,
        MOMENT,
    )
    # when it runs with a time, then with None (the ORM's `IS NULL`, which its SQL cannot say)
    # then each returns the rows the ORM returns
    assert read.rows(customer.pk, BASE_TIME) == [(due.pk,)]
    assert read.rows(customer.pk, None) == [(undated.pk,)]
    assert _plans(read)


def test_compiled_read_goes_where_the_router_sends_its_model(account):
    # given an account selected, and reads of an account model and of a `default` model
    customer = CustomerFactory()
    MessageFactory(customer=customer)
    messages = CompiledRead(_newest_messages, CUSTOMER)
    registry = CompiledRead(
        lambda since: WeComAccount.objects.filter(created_at__gte=since).order_by("id").values_list("id"), MOMENT
    )
    # when they run with no database named
    # then each reads the database its model lives in
    assert len(messages.rows(customer.pk, static=(3,))) == 1
    assert registry.rows(MOMENT) == [(account.id,)]


def test_compiled_read_plans_are_keyed_by_vendor_and_wrapper_class(account, other_account):
    # given a table every database has (Django's migration records), and a read of it
    table = MigrationRecorder.Migration

    def build(row_id):
        return table.objects.filter(id__gte=row_id).order_by("id").values_list("app", "name", "applied")[:3]

    read = CompiledRead(build, ROW)
    aliases = ["default", current_alias()]
    with use_account(other_account.id) as other:
        aliases.append(other)
    # when it runs on `default` and on two account databases
    for alias in aliases:
        rows = read.rows(1, using=alias)
        # then each database gives its own rows, as the ORM reads them there
        assert rows == list(build(1).using(alias)) and len(rows) == 3
    # and there is a plan per backend (vendor and wrapper class), not one per database
    backends = {(connections[alias].vendor, type(connections[alias])) for alias in aliases}
    assert {key[:2] for key in read._plans} == backends
    assert all(read._plans.values())


def test_compiled_read_refuses_stand_ins_it_cannot_trace():
    # given stand-ins of a type it cannot trace, or two equal ones
    # when a read is made with them / then it is refused
    with pytest.raises(TypeError):
        CompiledRead(_tasks_created_by, 7.5, MOMENT)
    with pytest.raises(TypeError):
        CompiledRead(_tasks_created_by, CUSTOMER, MOMENT.replace(tzinfo=None))
    with pytest.raises(ValueError):
        CompiledRead(lambda a, b: Task.objects.filter(customer_id=a, id=b).values_list("id"), CUSTOMER, CUSTOMER)


def _resolve_open_tasks(customer_id, moment):
    tasks = Task.objects.filter(customer_id=customer_id, status=TaskStatus.OPEN)
    return tasks, {"status": TaskStatus.DONE, "resolved_at": moment, "updated_at": moment}


def test_compiled_update_returns_its_rowcount(account, django_assert_num_queries):
    # given two open tasks of a customer, one done, and another customer's open task
    customer, other = CustomerFactory(), CustomerFactory()
    TaskFactory(customer=customer)
    TaskFactory(customer=customer)
    TaskFactory(customer=customer, status=TaskStatus.DONE)
    theirs = TaskFactory(customer=other)
    update = CompiledUpdate(_resolve_open_tasks, CUSTOMER, MOMENT)
    now = BASE_TIME + dt.timedelta(hours=5)
    # when the compiled update runs, then again
    with django_assert_num_queries(1, connection=connections[current_alias()]):
        first = update.run(customer.pk, now)
    second = update.run(customer.pk, now)
    # then it changed the two open tasks, as the ORM's update would, and nothing the second time
    assert (first, second) == (2, 0)
    assert _plans(update)
    done = Task.objects.filter(customer=customer, resolved_at=now)
    assert sorted(done.values_list("status", flat=True)) == [TaskStatus.DONE, TaskStatus.DONE]
    theirs.refresh_from_db()
    assert theirs.status == TaskStatus.OPEN and theirs.resolved_at is None


def test_compiled_read_unconverted_rows_convert_to_the_rows(account):
    # given a customer with messages, read with their send times (a column with a converter)
    customer = CustomerFactory()
    for _ in range(3):
        MessageFactory(customer=customer)
    read = CompiledRead(_newest_messages, CUSTOMER)
    # when the rows are read as the database returns them
    raw, convert = read.rows_unconverted(customer.pk, static=(5,))
    # then converting them gives exactly what `rows` gives, and a part of them converts alike
    assert convert(raw) == read.rows(customer.pk, static=(5,)) == list(_newest_messages(customer.pk, 5))
    assert convert(raw[1:2]) == read.rows(customer.pk, static=(5,))[1:2]
    # and the same rows read again compare equal as they are (what the answer cache relies on)
    assert read.rows_unconverted(customer.pk, static=(5,))[0] == raw


def test_compiled_read_unconverted_through_the_orm_come_converted(account):
    # given a read that cannot be compiled (its LIMIT passed as an argument)
    customer = CustomerFactory()
    MessageFactory(customer=customer)
    read = CompiledRead(_newest_messages, CUSTOMER, ROW)
    # when its rows are read unconverted
    raw, convert = read.rows_unconverted(customer.pk, 5)
    # then the ORM's rows come back, already converted, and converting leaves them as they are
    assert raw == list(_newest_messages(customer.pk, 5)) == convert(raw)


def test_compiled_read_string_argument_traced_or_left_to_the_orm(account):
    # given customers found by their conversation id, exactly and by a part of it
    CustomerFactory(conversation_id="wm_zhang_001", display_name="张先生")
    CustomerFactory(conversation_id="wm_li_002", display_name="李女士")
    exact = CompiledRead(lambda cid: Customer.objects.filter(conversation_id=cid).values_list("display_name"), "\x1e")
    part = CompiledRead(
        lambda cid: Customer.objects.filter(conversation_id__contains=cid).values_list("display_name"), "\x1e"
    )
    # when each runs
    # then the exact one runs its compiled SQL, the other (its value wrapped in %…%) the ORM, both right
    assert exact.rows("wm_li_002") == [("李女士",)] and exact.rows("wm_nobody") == []
    assert part.rows("zhang") == [("张先生",)]
    assert _plans(exact) and not _plans(part)
    # and a value of another type runs through the ORM too
    assert exact.rows(None) == []


def test_compiled_get_makes_the_instance_the_orm_makes(account):
    # given a customer
    made = CustomerFactory(conversation_id="wm_wang_003", display_name="王先生")
    get = CompiledGet(Customer, lambda cid: Customer.objects.filter(conversation_id=cid).order_by("pk"), "\x1e")
    # when it is read by its conversation id
    found = get.first("wm_wang_003")
    # then it is the same row, a saved instance of this account's database, every field alike
    orm = Customer.objects.get(pk=made.pk)
    assert found == orm and found._state.db == current_alias() and not found._state.adding
    assert {f.attname: getattr(found, f.attname) for f in Customer._meta.concrete_fields} == {
        f.attname: getattr(orm, f.attname) for f in Customer._meta.concrete_fields
    }
    # and an unknown id gives None
    assert get.first("wm_nobody") is None
