"""`manage.py backfill_memory`: run the idempotent backfill over one or every account."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from conversations.models import Customer
from memory.capture.backfill import Totals, customer_backfill
from qiwei_site.platform.commands import command_account_ids
from qiwei_site.platform.errors import ApplicationError
from qiwei_site.platform.tenancy import account_atomic, use_account


class _DryRunRollback(Exception):
    pass


class Command(BaseCommand):
    help = "从已有画像和客户原话回填长期记忆（可重复执行，第二次不会有任何改动）。"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", help="只回填这个企微账号 ID（默认：所有启用的账号）")
        parser.add_argument("--dry-run", action="store_true", help="只统计，不写入（所有改动回滚）")

    def handle(self, *args: Any, **options: Any) -> None:
        account_ids = command_account_ids(options.get("account"))
        dry_run = bool(options.get("dry_run"))
        totals = Totals()
        for current in account_ids:
            with use_account(current):
                customers = Customer.objects.order_by("pk")
                iterable: Any = customers.iterator()
                if self.stdout.isatty() and sys.stderr.isatty():
                    from tqdm import tqdm

                    iterable = tqdm(iterable, total=customers.count(), desc=f"回填 {current}", unit="客户")
                for customer in iterable:
                    totals.customers += 1
                    try:
                        with account_atomic():
                            customer_backfill(customer=customer, totals=totals)
                            if dry_run:
                                raise _DryRunRollback()
                    except _DryRunRollback:
                        pass
                    except ApplicationError as exc:
                        raise CommandError(f"客户 {customer.conversation_id} 回填失败：{exc.detail}") from exc
        prefix = "[演练，未写入] " if dry_run else ""
        self.stdout.write(
            f"{prefix}客户 {totals.customers} 个，扫描消息 {totals.messages} 条，写入记忆 {totals.written} 条"
            f"（新建 {totals.created}，替换旧值 {totals.superseded}），补充证据 {totals.evidence_added} 条，"
            f"已存在 {totals.present} 条，待审核提议 {totals.proposed} 条，拦截消息 {totals.blocked} 条"
            f" (customers={totals.customers} messages={totals.messages} created={totals.created}"
            f" superseded={totals.superseded} evidence_added={totals.evidence_added}"
            f" present={totals.present} proposed={totals.proposed} blocked={totals.blocked})"
        )
