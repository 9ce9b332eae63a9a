"""List the registered WeCom accounts and where their data lives."""

from typing import Any

from django.core.management.base import BaseCommand

from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.tenancy import account_database_config


class Command(BaseCommand):
    help = "列出企微账号 (list WeCom accounts)."

    def handle(self, *args: Any, **options: Any) -> None:
        accounts = list(WeComAccount.objects.order_by("id"))
        if not accounts:
            self.stdout.write("没有账号 (no accounts). 使用 account_create 创建。")
            return
        for account in accounts:
            config = account_database_config(account.id)
            where = config["NAME"] if not config.get("HOST") else f"{config['HOST']}/{config['NAME']}"
            if config.get("QIWEI_SCHEMA"):
                where = f"{where} schema {config['QIWEI_SCHEMA']} role {config['QIWEI_ROLE']}"
            state = "启用" if account.is_active else "停用"
            self.stdout.write(f"{account.id}\t{account.name}\t{state}\t{where}")
