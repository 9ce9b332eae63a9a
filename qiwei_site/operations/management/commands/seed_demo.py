"""Create the demo account with realistic conversations and a staff login, once."""

from __future__ import annotations

import datetime as dt
import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from conversations.models import Alert, Customer, Task
from conversations.services import account_create, membership_grant
from memory.capture.ingest import messages_ingest
from qiwei_site.operations.demo_data import DEMO_ACCOUNT_ID, DEMO_ACCOUNT_NAME, DEMO_CUSTOMERS
from qiwei_site.platform.history import stamp_history
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.tenancy import account_atomic, use_account


class Command(BaseCommand):
    help = "创建演示账号、演示会话和管理员登录（已存在则跳过）(seed demo data once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default=os.environ.get("QIWEI_ADMIN_USERNAME", "admin"))

    def handle(self, *args: Any, **options: Any) -> None:
        self._ensure_admin(options["username"])
        if WeComAccount.objects.exists():
            self.stdout.write("已有账号，跳过演示数据 (accounts exist; demo data skipped).")
            return
        account = account_create(account_id=DEMO_ACCOUNT_ID, name=DEMO_ACCOUNT_NAME, actor="seed_demo")
        admin_user = get_user_model().objects.get(username=options["username"])
        membership_grant(user=admin_user, account=account)
        start = timezone.now() - dt.timedelta(days=2)
        with use_account(account.id):
            for c_index, spec in enumerate(DEMO_CUSTOMERS):
                messages = [
                    {
                        "external_id": f"{spec['conversation_id']}-{i:03d}",
                        "direction": direction,
                        "sender": sender,
                        "text": text,
                        "sent_at": (start + dt.timedelta(hours=c_index, minutes=7 * i)).isoformat(),
                    }
                    for i, (direction, sender, text) in enumerate(spec["messages"])
                ]
                messages_ingest(
                    conversation_id=spec["conversation_id"],
                    messages=messages,
                    actor="seed_demo",
                    reason="演示数据",
                )
                self._customer_details(spec)
        self.stdout.write(self.style.SUCCESS(f"已创建演示账号 {account.id}（{len(DEMO_CUSTOMERS)} 位客户）"))

    def _customer_details(self, spec: dict[str, Any]) -> None:
        with account_atomic():
            customer = Customer.objects.get(conversation_id=spec["conversation_id"])
            customer.display_name = spec["display_name"]
            customer.session_mode = spec["session_mode"]
            customer.auto_send_whitelisted = spec["whitelisted"]
            stamp_history(customer, actor="seed_demo", reason="演示数据")
            customer.save(update_fields=["display_name", "session_mode", "auto_send_whitelisted", "updated_at"])
            for title in spec["tasks"]:
                Task.objects.create(customer=customer, title=title)
            for level, text in spec["alerts"]:
                Alert.objects.create(customer=customer, level=level, text=text)

    def _ensure_admin(self, username: str) -> None:
        users = get_user_model().objects
        if users.filter(username=username).exists():
            self.stdout.write(
                f"管理员 {username} 已存在（密码只在首次创建时打印）。忘记密码可重设："
                f".venv/bin/python manage.py changepassword {username}"
            )
            return
        password = os.environ.get("QIWEI_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
        users.create_superuser(username=username, email="", password=password)
        self.stdout.write(
            self.style.WARNING(
                f"\n管理员登录 (staff login, shown once): 用户名 {username}  密码 {password}\n"
                "登录地址: http://127.0.0.1:4320/admin/\n"
            )
        )
