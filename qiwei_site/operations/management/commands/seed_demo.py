"""Create the demo account with realistic conversations and a staff login, once.

Everything goes through the services a real day uses: ingest (and capture, run inline so the demo's
memory, blocked messages and their alerts exist before the worker starts), tasks, alerts and
recommendations with their audit, and hypotheses through the same capture path as a model turn's."""

from __future__ import annotations

import datetime as dt
import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from conversations.business import alert_create, recommendation_create, task_create
from conversations.models import Customer, Message
from memory.capture.ingest import messages_ingest
from memory.capture.jobs import capture_inline
from memory.providers import CaptureTurn, TurnHypothesis, get_provider
from qiwei_site.operations.demo_data import DEMO_ACCOUNT_ID, DEMO_ACCOUNT_NAME, DEMO_CUSTOMERS
from qiwei_site.platform.history import stamp_history
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.services import account_create, membership_grant
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
        with use_account(account.id), capture_inline():
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
                self._hypotheses(spec)
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
                task_create(customer=customer, title=title, actor="seed_demo", reason="演示数据")
            for level, text in spec["alerts"]:
                alert_create(customer=customer, text=text, level=level, actor="seed_demo", reason="演示数据")
            for text in spec.get("recommendations", []):
                recommendation_create(customer=customer, text=text, actor="seed_demo", reason="演示数据")

    def _hypotheses(self, spec: dict[str, Any]) -> None:
        """What a model turn would infer, handed to memory the way the turn hands it (DESIGN §8)."""
        if not spec.get("hypotheses"):
            return
        customer = Customer.objects.get(conversation_id=spec["conversation_id"])
        hypotheses = []
        for entry in spec["hypotheses"]:
            external_ids = [f"{spec['conversation_id']}-{index:03d}" for index in entry["messages"]]
            ids = Message.objects.filter(customer=customer, external_id__in=external_ids).values_list("pk", flat=True)
            hypotheses.append(
                TurnHypothesis(
                    key=entry["key"], text=entry["text"], confidence=entry["confidence"], message_ids=tuple(sorted(ids))
                )
            )
        with account_atomic():
            get_provider().capture(CaptureTurn(customer=customer, draft_id=None, hypotheses=hypotheses))

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
                f"登录地址: {served_base_url()}/admin/\n"
            )
        )


def served_base_url() -> str:
    """The address run.sh serves on (QIWEI_BIND, default 127.0.0.1:4320); a wildcard bind is
    reached on the loopback."""
    host, _, port = os.environ.get("QIWEI_BIND", "127.0.0.1:4320").rpartition(":")
    if host in ("", "0.0.0.0", "[::]"):  # the address to open, not to bind
        host = "127.0.0.1"
    return f"http://{host}:{port}"
