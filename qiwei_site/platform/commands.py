"""What operator commands share: which accounts a run covers, refused as the command's own error
(a non-zero exit with the message) rather than a traceback."""

from __future__ import annotations

from django.core.management.base import CommandError

from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.selectors import account_ids_for_command


def command_account_ids(account_id: str | None) -> list[str]:
    """The named account, or every active one (`account_ids_for_command`); unknown: CommandError."""
    try:
        return account_ids_for_command(account_id)
    except ApplicationError as exc:
        raise CommandError(exc.detail) from None
