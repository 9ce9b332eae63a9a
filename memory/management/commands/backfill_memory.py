"""Backfill memory from existing profiles and stored customer words (spec §8: idempotent backfill).

Profile values become `profile:<field>` items (typed by staff: human, internal); inbound history
goes through the same capture service and safety gate as live messages. A second run writes nothing.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from conversations.models import PROFILE_FIELDS, Customer, CustomerProfile, Message, MessageDirection, WeComAccount
from memory.capture.services import capture_message
from memory.items import UNCHANGED, memory_item_put
from memory.models import MemoryCreatedBy, MemoryDirection, MemoryType
from memory.snapshots import snapshot_refresh
from qiwei_site.errors import ApplicationError
from qiwei_site.tenancy import account_atomic, use_account

ACTOR = "backfill"
REASON = "历史画像与客户原话回填"
LABELS = dict(PROFILE_FIELDS)


class _DryRunRollback(Exception):
    pass


@dataclass
class Totals:
    customers: int = 0
    messages: int = 0
    written: int = 0
    present: int = 0
    blocked: int = 0


def _backfill_customer(customer: Customer, totals: Totals) -> None:
    changed = False
    profile = CustomerProfile.objects.filter(customer=customer).first()
    for field, value in (profile.as_dict() if profile else {}).items():
        if not value.strip():
            continue
        result = memory_item_put(
            customer=customer,
            type=MemoryType.FACT,
            key=f"profile:{field}",
            content=f"{LABELS[field]}：{' '.join(value.split())}",
            actor=ACTOR,
            reason=REASON,
            confidence=1.0,
            importance=4,
            direction=MemoryDirection.INTERNAL,
            created_by=MemoryCreatedBy.HUMAN,
            audit_action="memory_item_backfilled",
            refresh_snapshot=False,
        )
        if result.outcome == UNCHANGED:
            totals.present += 1
        else:
            totals.written += 1
            changed = True
    inbound = Message.objects.filter(customer=customer, direction=MessageDirection.INBOUND, is_effective=True).order_by(
        "sent_at", "id"
    )
    for message in inbound.iterator():
        totals.messages += 1
        outcome = capture_message(message=message, actor=ACTOR, refresh_snapshot=False)
        totals.blocked += int(outcome.blocked)
        totals.written += outcome.written
        totals.present += outcome.unchanged
        changed = changed or outcome.written > 0
    if changed:
        snapshot_refresh(customer=customer, reason=REASON)


class Command(BaseCommand):
    help = "从已有画像和客户原话回填长期记忆（可重复执行，第二次不会有任何改动）。"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", help="只回填这个企微账号 ID（默认：所有启用的账号）")
        parser.add_argument("--dry-run", action="store_true", help="只统计，不写入（所有改动回滚）")

    def handle(self, *args: Any, **options: Any) -> None:
        account_id = options.get("account")
        if account_id:
            if not WeComAccount.objects.filter(pk=account_id).exists():
                raise CommandError(f"账号 {account_id} 不存在 (no such account).")
            account_ids = [account_id]
        else:
            account_ids = list(WeComAccount.objects.filter(is_active=True).values_list("pk", flat=True))
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
                            _backfill_customer(customer, totals)
                            if dry_run:
                                raise _DryRunRollback()
                    except _DryRunRollback:
                        pass
                    except ApplicationError as exc:
                        raise CommandError(f"客户 {customer.conversation_id} 回填失败：{exc.detail}") from exc
        prefix = "[演练，未写入] " if dry_run else ""
        self.stdout.write(
            f"{prefix}客户 {totals.customers} 个，扫描消息 {totals.messages} 条，写入记忆 {totals.written} 条，"
            f"已存在 {totals.present} 条，拦截消息 {totals.blocked} 条"
            f" (customers={totals.customers} messages={totals.messages} written={totals.written}"
            f" present={totals.present} blocked={totals.blocked})"
        )
