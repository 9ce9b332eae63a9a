"""Token authentication (qiwei_site/platform/authentication.py): the cached token read answers as
DRF's own `TokenAuthentication` does, for a good, an unknown and an inactive user's token, and a
token's cached answer is flushed at once when the token or its user is written."""

from __future__ import annotations

import pytest
from django.core.cache import caches
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from qiwei_site.platform.authentication import KNOWN_TOKENS_CACHE, ThrottledTokenAuthentication, token_known_valid
from tests.factories import StaffUserFactory


def _both(key: str):
    """(ours, DRF's) answer for a key: the (user, token) pair or the error message."""
    answers = []
    for auth in (ThrottledTokenAuthentication(), TokenAuthentication()):
        try:
            answers.append(auth.authenticate_credentials(key))
        except exceptions.AuthenticationFailed as exc:
            answers.append(str(exc.detail))
    return answers


@pytest.mark.django_db
def test_token_authentication_finds_the_user_as_drf_does():
    # Given a supervisor with a token
    user = StaffUserFactory(username="zhang_supervisor", first_name="张")
    token = Token.objects.create(user=user)
    # When the token is checked by ours and by DRF's
    (our_user, our_token), (drf_user, drf_token) = _both(token.key)
    # Then both give the same user, every field alike, and the same token
    assert our_user == drf_user == user and our_token == drf_token
    fields = [field.attname for field in type(user)._meta.concrete_fields]
    assert {f: getattr(our_user, f) for f in fields} == {f: getattr(drf_user, f) for f in fields}
    assert our_user.is_staff and not our_user._state.adding and our_user._state.db == "default"
    assert our_token.created == drf_token.created and our_token.user is our_user


@pytest.mark.django_db
def test_token_authentication_refuses_unknown_and_inactive_as_drf_does():
    # Given a token of a user who has left, and a key nobody has
    user = StaffUserFactory(username="li_left")
    token = Token.objects.create(user=user)
    user.is_active = False
    user.save(update_fields=["is_active"])
    # Then both refuse both, with the same message
    ours, drf = _both(token.key)
    assert ours == drf and isinstance(ours, str)
    ours, drf = _both("0" * 40)
    assert ours == drf and isinstance(ours, str)
    assert _both(token.key)[0] != _both("0" * 40)[0]  # two different reasons


@pytest.mark.django_db
def test_token_authentication_deleted_token_stops_working_at_once():
    # Given a token checked once
    token = Token.objects.create(user=StaffUserFactory(username="wang_cached"))
    auth = ThrottledTokenAuthentication()
    user, _token = auth.authenticate_credentials(token.key)
    assert user.username == "wang_cached"
    # When the token is deleted behind the process's back (a queryset delete sends no signal)
    Token.objects.filter(key=token.key).delete()
    # Then the next check refuses it
    with pytest.raises(exceptions.AuthenticationFailed):
        auth.authenticate_credentials(token.key)


@pytest.mark.django_db
def test_token_authentication_user_deactivated_by_a_queryset_update_stops_working_at_once():
    # Given a token checked once (found by a read-only review: a cached answer outlived this)
    user = StaffUserFactory(username="probe_user")
    token = Token.objects.create(user=user)
    auth = ThrottledTokenAuthentication()
    auth.authenticate_credentials(token.key)
    # When its user is switched off by an UPDATE no signal sees
    type(user).objects.filter(pk=user.pk).update(is_active=False)
    # Then the token is refused
    with pytest.raises(exceptions.AuthenticationFailed):
        auth.authenticate_credentials(token.key)


@pytest.mark.django_db
def test_token_authentication_user_deactivated_stops_working_at_once():
    # Given a token checked once
    user = StaffUserFactory(username="zhao_leaving")
    token = Token.objects.create(user=user)
    auth = ThrottledTokenAuthentication()
    auth.authenticate_credentials(token.key)
    # When its user is switched off
    user.is_active = False
    user.save(update_fields=["is_active"])
    # Then the token is refused as DRF refuses it
    ours, drf = _both(token.key)
    assert ours == drf and isinstance(ours, str)


@pytest.mark.django_db
def test_token_known_valid_asks_the_shared_cache_once_per_process(monkeypatch):
    # Given a token made just now (so known to every process through the shared cache)
    token = Token.objects.create(user=StaffUserFactory(username="li_agent", first_name="李"))
    reads: list[str] = []
    shared = caches[KNOWN_TOKENS_CACHE]
    real_get = shared.get
    monkeypatch.setattr(shared, "get", lambda key, *a, **k: reads.append(key) or real_get(key, *a, **k))
    # When this process asks whether it is known, three times, and asks about a token never seen
    answers = [token_known_valid(token.key) for _ in range(3)]
    stranger = token_known_valid("0" * 40)
    # Then it is known without reading the shared cache (learned when it was made), and the
    # stranger is asked about there each time and stays unknown
    assert answers == [True, True, True] and stranger is False
    assert len(reads) == 1 and token_known_valid("0" * 40) is False and len(reads) == 2
    # And a valid token still fails once it is deleted: known only exempts it from the limit
    Token.objects.filter(pk=token.pk).delete()
    ours, drfs = _both(token.key)
    assert isinstance(ours, str) and ours == drfs
