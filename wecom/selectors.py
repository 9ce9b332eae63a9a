"""Reads of an account's WeCom connection: its credentials opened from their seals."""

from __future__ import annotations

from django.conf import settings

from qiwei_site.platform.sealing import SealBroken, unseal
from wecom.client import Credentials
from wecom.models import Upstream, WeComConnection


def connection_get(account_id: str) -> WeComConnection | None:
    return WeComConnection.objects.filter(account_id=account_id).first()


def uses_wecom(connection: WeComConnection | None) -> bool:
    """Whether replies of the connection's account leave through WeCom."""
    if connection is None:
        return False
    return connection.upstream == Upstream.WECOM or settings.QIWEI_UPSTREAM == "wecom"


def credentials_of(connection: WeComConnection) -> Credentials:
    """The connection's credentials opened (`SealBroken` when the sealing key cannot open them)."""
    return Credentials(
        account_id=connection.account_id,
        corp_id=connection.corp_id,
        secret=unseal(connection.secret_sealed),
        token=unseal(connection.token_sealed),
        aes_key=unseal(connection.aes_key_sealed),
        open_kfids=tuple(connection.open_kfids or ()),
    )


def credentials_get(account_id: str) -> Credentials | None:
    """The account's credentials, or None when it has no WeCom connection or its seals do not open."""
    connection = connection_get(account_id)
    if connection is None:
        return None
    try:
        return credentials_of(connection)
    except SealBroken:
        return None


def connections_active() -> list[WeComConnection]:
    """The connections of active accounts, for the beat's catch-up and status probes."""
    return list(WeComConnection.objects.filter(account__is_active=True).select_related("account").order_by("pk"))
