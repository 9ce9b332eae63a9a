"""Token authentication that slows down guessing: after QIWEI_TOKEN_FAILURES_PER_MINUTE wrong tokens
from one address within a minute, further unknown tokens from it get 429 with Retry-After until the
minute is over, while a token known to be valid is still evaluated (sign-in pages are throttled by
django-axes). The count lives in `default` and the known tokens in the shared cache, so every worker
process enforces one limit (issue 36)."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.request import Request

from qiwei_site.platform.sql import token_failure_give_back, token_failure_take, token_with_user

# Known-valid tokens are remembered where every process sees them.
KNOWN_TOKENS_CACHE = "shared"

WINDOW_SECONDS = 60
# A valid token is remembered this long (by its hash) as one the limit must never refuse.
KNOWN_TOKEN_SECONDS = 90 * 24 * 3600


def _client_address(request: Request) -> str:
    return str(request.META.get("REMOTE_ADDR") or "unknown")


class ThrottledTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        # DRF's: the same answers and messages.
        token = token_with_user(key)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (token.user, token)

    def authenticate(self, request: Request) -> Any:
        """Wrong tokens from one address are limited per minute; a token known to be valid is
        always evaluated, so the limit never refuses it (known: it signed in before, or was just
        made). Each unknown token takes a slot of the limit before it is evaluated, so parallel
        guesses cannot overshoot it; a valid one gives its slot back."""
        offered = get_authorization_header(request).split()
        if not offered or offered[0].lower() != self.keyword.lower().encode():
            return None  # no token offered: nothing to count
        minute = int(time.time() // WINDOW_SECONDS)
        address = _client_address(request)
        limit = settings.QIWEI_TOKEN_FAILURES_PER_MINUTE
        known = len(offered) == 2 and token_known_valid(offered[1])
        if not known:
            taken = token_failure_take(address=address, minute=minute)
            if taken > limit:
                raise exceptions.Throttled(wait=WINDOW_SECONDS - time.time() % WINDOW_SECONDS)
        result = super().authenticate(request)  # a wrong token keeps its slot: it is a failure
        if not known:
            token_failure_give_back(address=address, minute=minute)
            token_remember_valid(offered[1])
        return result


def _known_key(token: str) -> str:
    return "qiwei:token-known:" + hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


# What this process already learned is known (key → when that expires, monotonic): being known only
# exempts a token from the wrong-token limit and is never taken back before it expires, so the
# shared cache (a file read) is asked once per token and process, not on every request.
_KNOWN_HERE_MAX = 4096
_known_here: OrderedDict[str, float] = OrderedDict()
_known_here_lock = threading.Lock()


def token_known_valid(token: bytes | str) -> bool:
    """Whether this token authenticated before (or was just made): it is always evaluated, never
    throttled. Being known lets it be checked, not accepted: a revoked token still fails."""
    text = token.decode("utf-8", "replace") if isinstance(token, bytes) else token
    key = _known_key(text)
    with _known_here_lock:
        expires = _known_here.get(key)
    if expires is not None and expires > time.monotonic():
        return True
    known = bool(caches[KNOWN_TOKENS_CACHE].get(key))
    if known:
        _learn(key)
    return known


def token_remember_valid(token: bytes | str) -> None:
    text = token.decode("utf-8", "replace") if isinstance(token, bytes) else token
    caches[KNOWN_TOKENS_CACHE].set(_known_key(text), True, KNOWN_TOKEN_SECONDS)
    _learn(_known_key(text))


def _learn(key: str) -> None:
    """Remember here, for a day at most (the shared entry lives for KNOWN_TOKEN_SECONDS), that the key is known."""
    with _known_here_lock:
        _known_here[key] = time.monotonic() + min(KNOWN_TOKEN_SECONDS, 24 * 3600)
        _known_here.move_to_end(key)
        while len(_known_here) > _KNOWN_HERE_MAX:
            _known_here.popitem(last=False)


# --- a token is a password: named by its first characters only, wherever Django names it ----------

TOKEN_SHOWN_CHARS = 4


def masked_token(key: str) -> str:
    return f"{key[:TOKEN_SHOWN_CHARS]}…（已隐藏）" if key else "无"


def token_str(token: Any) -> str:
    """`Token.__str__` (set in `PlatformConfig.ready`): DRF names a token by its whole key, and
    Django puts a model's name in page titles, history pages, delete confirmations (a user's
    lists their token) and the admin log; ours shows the first characters only."""
    return masked_token(token.key)
