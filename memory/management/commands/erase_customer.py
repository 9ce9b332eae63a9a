"""Erase one customer's data on request: messages, profile, memory, snapshots, drafts, epochs, history."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from conversations.models import Customer
from memory.governance.erasure import customer_erase
from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.tenancy import use_account


class Command(BaseCommand):
    help = "彻底删除一个客户的全部数据 (erase a customer and everything about them)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", required=True, help="企微账号 ID (account id).")
        parser.add_argument("--conversation", required=True, help="会话 ID (conversation id).")
        parser.add_argument("--reason", default="客户要求删除数据", help="删除原因，写入审计 (reason, audited).")
        parser.add_argument("--yes", action="store_true", help="不再询问确认 (do not ask for confirmation).")

    def handle(self, *args: Any, **options: Any) -> None:
        account_id, conversation_id = options["account"], options["conversation"]
        if not WeComAccount.objects.filter(pk=account_id).exists():
            raise CommandError(f"账号 {account_id} 不存在 (no such account).")
        with use_account(account_id):
            customer = Customer.objects.filter(conversation_id=conversation_id).first()
            if customer is None:
                raise CommandError(f"账号 {account_id} 中没有会话 {conversation_id} (no such conversation).")
            if not options["yes"]:
                answer = input(f"将永久删除客户 {conversation_id} 的全部数据，输入 yes 确认 (type yes to erase): ")
                if answer.strip().lower() != "yes":
                    raise CommandError("已取消，未删除任何数据 (cancelled, nothing erased).")
            try:
                counts = customer_erase(customer=customer, actor="erase_customer 命令", reason=options["reason"])
            except ApplicationError as exc:
                raise CommandError(exc.detail) from exc
        summary = ", ".join(f"{label} {n}" for label, n in sorted(counts.items()))
        self.stdout.write(self.style.SUCCESS(f"已删除客户 {conversation_id} (erased): {summary}"))
