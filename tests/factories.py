"""factory_boy factories. Account-data factories must run inside `use_account` (the `account` fixture)."""

from __future__ import annotations

import datetime as dt

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from conversations.models import (
    Customer,
    CustomerProfile,
    Draft,
    Message,
    MessageDirection,
    Task,
)
from memory.models import MemoryItem, MemoryType
from sessions_epoch.models import SessionEpoch

BASE_TIME = dt.datetime(2026, 11, 1, 9, 0, tzinfo=dt.UTC)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"agent{n}")
    password = factory.django.Password("pass-1234")
    is_staff = False


class StaffUserFactory(UserFactory):
    username = factory.Sequence(lambda n: f"supervisor{n}")
    is_staff = True
    is_superuser = False

    @factory.post_generation
    def all_permissions(self, create, extracted, **kwargs):
        # Supervisors curate through the admin: give them every model permission.
        if create:
            from django.contrib.auth.models import Permission
            from django.db import connections, router

            # One INSERT … SELECT for a new user (no m2m signal is listened to): `set()` reads every
            # permission into a model and adds them one by one, ~7 ms per supervisor.
            through = type(self).user_permissions.through
            with connections[router.db_for_write(through)].cursor() as cursor:
                cursor.execute(  # a user fetched again by username (get_or_create) keeps its rows
                    f"INSERT INTO {through._meta.db_table} (user_id, permission_id) "
                    f"SELECT %s, id FROM {Permission._meta.db_table} WHERE true "
                    "ON CONFLICT (user_id, permission_id) DO NOTHING",
                    [self.pk],
                )


class CustomerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Customer
        skip_postgeneration_save = True

    conversation_id = factory.Sequence(lambda n: f"wm_conv_{n:04d}")
    display_name = factory.Iterator(["王先生", "李女士", "陈小姐", "张先生", "刘女士"])

    @factory.post_generation
    def with_profile(self, create, extracted, **kwargs):
        if create and not CustomerProfile.objects.filter(customer=self).exists():
            CustomerProfile.objects.create(customer=self)


class MessageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Message

    customer = factory.SubFactory(CustomerFactory)
    external_id = factory.Sequence(lambda n: f"msg_{n:06d}")
    direction = MessageDirection.INBOUND
    sender = "客户"
    text = "你好，我想咨询一下租房的事情"
    sent_at = factory.Sequence(lambda n: BASE_TIME + dt.timedelta(minutes=n))


class MemoryItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = MemoryItem

    customer = factory.SubFactory(CustomerFactory)
    type = MemoryType.PREFERENCE
    key = factory.Sequence(lambda n: f"preference:item{n}")
    content = "更喜欢地铁附近的房子"
    confidence = 0.8
    importance = 3


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Task

    customer = factory.SubFactory(CustomerFactory)
    title = "周六上午带看两居室"


class DraftFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Draft

    customer = factory.SubFactory(CustomerFactory)
    reply = "王先生您好，地铁附近的两居室我这边有三套，周六方便看房吗？"
    confidence = 0.9
    requires_human = False


class SessionEpochFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SessionEpoch

    customer = factory.SubFactory(CustomerFactory)
    session_id = factory.Faker("uuid4")
    started_at = factory.LazyFunction(timezone.now)
