"""Token authentication that slows down guessing: after QIWEI_TOKEN_FAILURES_PER_MINUTE wrong tokens
from one address within a minute, further token attempts from it get 429 with Retry-After until the
minute is over (sign-in pages are throttled by django-axes)."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.request import Request

from qiwei_site.platform.sql import token_with_user

WINDOW_SECONDS = 60


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
        offered = get_authorization_header(request).split()
        if not offered or offered[0].lower() != self.keyword.lower().encode():
            return None  # no token offered: nothing to count
        window = int(time.time() // WINDOW_SECONDS)
        key = f"qiwei:token-failures:{_client_address(request)}:{window}"
        limit = settings.QIWEI_TOKEN_FAILURES_PER_MINUTE
        if int(cache.get(key, 0)) >= limit:
            raise exceptions.Throttled(wait=WINDOW_SECONDS - time.time() % WINDOW_SECONDS)
        try:
            return super().authenticate(request)
        except exceptions.AuthenticationFailed:
            try:
                cache.incr(key)
            except ValueError:
                cache.set(key, 1, WINDOW_SECONDS * 2)
            raise
