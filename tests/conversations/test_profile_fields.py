"""The declared profile fields are one list: the model's columns, the profile API and the extractor agree."""

from __future__ import annotations

from django.db import models

from conversations.models import CustomerProfile
from qiwei_site.reading.extract import PROFILE_LABELS
from qiwei_site.reading.fields import PROFILE_FIELD_NAMES, PROFILE_FIELD_SPECS


def test_profile_fields_are_exactly_the_models_text_columns():
    columns = [f for f in CustomerProfile._meta.concrete_fields if isinstance(f, models.CharField)]
    assert [(f.name, str(f.verbose_name), f.max_length) for f in columns] == [tuple(s) for s in PROFILE_FIELD_SPECS]


def test_profile_fields_are_the_extractors_vocabulary():
    assert tuple(PROFILE_LABELS) == PROFILE_FIELD_NAMES


def test_profile_api_accepts_every_declared_field(account, staff_client):
    from tests.factories import CustomerFactory

    CustomerFactory(conversation_id="wm_zhao")
    body = {name: "" for name in PROFILE_FIELD_NAMES} | {"city": "上海", "reason": "电话确认"}
    response = staff_client.patch("/api/accounts/acme/conversations/wm_zhao/profile/", body, format="json")
    assert response.status_code == 200
    assert response.json()["city"] == "上海"
