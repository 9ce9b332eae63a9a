"""The history manager of every tracked account model: its class built once, its rows still each
instance's own."""

from __future__ import annotations

import pytest
from django.apps import apps

from conversations.models import AccountHistoryManager, Customer, Draft
from tests.factories import CustomerFactory

pytestmark = pytest.mark.django_db


def test_history_manager_class_is_built_once_for_every_tracked_model():
    # given every model that keeps a history
    tracked = [model for model in apps.get_models() if hasattr(model._meta, "simple_history_manager_attribute")]
    assert Customer in tracked and Draft in tracked
    for model in tracked:
        # when its history is reached twice / then both are the one class, ours
        first, second = model.history, model.history
        assert type(first) is type(second), model
        assert isinstance(first, AccountHistoryManager), model


def test_history_manager_of_an_instance_lists_only_its_own_rows(account):
    # given two customers, one of them renamed
    wang = CustomerFactory(display_name="王先生")
    li = CustomerFactory(display_name="李女士")
    wang.display_name = "王总"
    wang.save()

    # when each one's history is read / then each sees its own rows, newest first
    assert list(wang.history.values_list("display_name", flat=True)) == ["王总", "王先生"]
    assert list(li.history.values_list("display_name", flat=True)) == ["李女士"]
    assert Customer.history.count() == 3
