"""Token answers cached by key, flushed on write (Zulip's caching.md).

Every API request asks who its token belongs to. The answers are kept in Django's `default`
cache under keys that carry one generation number; any save or delete of a token, a user, a
membership or an account bumps the generation, so every answer is flushed at once in this
process. A cache shared by the processes (Redis, memcached as `default`) flushes them everywhere;
with the per-process LocMem default, another process keeps an answer at most
QIWEI_ACCESS_CACHE_SECONDS.

The hooks are `post_save`/`post_delete` receivers because the token and user models are DRF's and
Django's (their writes go through no service of ours): each is a flush, never a write of its own.
Account access (`qiwei_site.platform.selectors.user_can_access_account`) is not cached: an
account is switched off by an UPDATE no hook sees, and that must take effect at once.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models.signals import post_delete, post_save

GENERATION_KEY = "qiwei:access:generation"
DEFAULT_SECONDS = 30
_MISSING = object()


def _timeout() -> int:
    return int(getattr(settings, "QIWEI_ACCESS_CACHE_SECONDS", DEFAULT_SECONDS))


def generation() -> int:
    value = cache.get(GENERATION_KEY)
    if value is None:
        value = 1
        cache.add(GENERATION_KEY, value, None)
        value = cache.get(GENERATION_KEY, value)
    return int(value)


def access_cache_flush(**_kwargs: Any) -> None:
    """Forget every cached token and access answer (a new generation)."""
    try:
        cache.incr(GENERATION_KEY)
    except ValueError:
        cache.set(GENERATION_KEY, 2, None)


def token_key(key: str) -> str:
    return f"qiwei:access:{generation()}:token:{hashlib.sha256(key.encode()).hexdigest()}"


def cached(key: str, compute: Any, *, keep_none: bool = True) -> Any:
    """The value under `key`, computed and kept when missing (None too, unless `keep_none` is
    False: a guessed token's miss is not worth a cache entry)."""
    value = cache.get(key, _MISSING)
    if value is _MISSING:
        value = compute()
        if value is not None or keep_none:
            cache.set(key, value, _timeout())
    return value


def connect() -> None:
    """Flush on every write of what the answers depend on (called once from the app's ready())."""
    from rest_framework.authtoken.models import Token

    from qiwei_site.platform.models import AccountMembership, WeComAccount

    for model in (Token, get_user_model(), AccountMembership, WeComAccount):
        post_save.connect(access_cache_flush, sender=model, dispatch_uid=f"qiwei-access-save-{model._meta.label}")
        post_delete.connect(access_cache_flush, sender=model, dispatch_uid=f"qiwei-access-delete-{model._meta.label}")
