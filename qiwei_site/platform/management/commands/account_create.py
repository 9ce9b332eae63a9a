"""Register a WeCom account and create and migrate its database."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.services import account_create


class Command(BaseCommand):
    help = "创建企微账号并建立独立数据库 (create a WeCom account and its database)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("account_id")
        parser.add_argument("--name", required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            account = account_create(account_id=options["account_id"], name=options["name"], actor="manage.py")
        except ApplicationError as exc:
            raise CommandError(exc.detail) from None
        self.stdout.write(self.style.SUCCESS(f"已创建账号 {account.id}（{account.name}）"))
