"""The ORM twins of `qiwei_site.platform.sql`'s hand-written statements, run beside them on the
same rows by `tests/qiwei_site/platform/test_sql.py`. Only the tests call them. (The token read's
twin is DRF's own `Token.objects.select_related("user")`, written in the test.)"""

from __future__ import annotations

from qiwei_site.platform.models import AccountMembership, WeComAccount


def account_access(user_id: int, account_id: str, *, superuser: bool) -> bool:
    """`qiwei_site.platform.sql.account_access` through the ORM."""
    if superuser:
        return WeComAccount.objects.filter(pk=account_id, is_active=True).exists()
    return AccountMembership.objects.filter(user_id=user_id, account_id=account_id, account__is_active=True).exists()
