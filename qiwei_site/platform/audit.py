"""The audit trail's writers and its proof: one row per write, saying which action, who and why
(never forgotten content or secrets). `audit_record` writes in the selected account's database,
`registry_audit_record` in `default` (the registry's journal). Each row is hashed as it is written
and chained by the database (`qiwei_site.platform.audit_chain`); `audit_chain_verify` walks a chain
and says which row was edited, deleted or moved (`manage.py audit_verify`).

What a context showed is recorded beside the audit, in its own table (`context_read_record`), and
purged after `QIWEI_CONTEXT_READ_RETENTION_DAYS` (`context_reads_purge`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.utils import timezone

from qiwei_site.platform import audit_chain
from qiwei_site.platform.history import Actor, actor_identity
from qiwei_site.platform.models import (
    AuditAction,
    AuditEvent,
    AuditRecord,
    ContextRead,
    ContextReadPurpose,
    RegistryAuditEvent,
    WeComAccount,
)
from qiwei_site.platform.selectors import account_ids_for_command
from qiwei_site.platform.tenancy import current_account, current_alias, use_account


def audit_fields(
    action: AuditAction | str, actor: Actor, reason: str, payload: dict[str, Any] | None
) -> dict[str, Any]:
    """The columns every audit row shares. The action list is fixed: an unknown action is a
    programming error (ValueError), never silently stored."""
    actor_id, actor_name = actor_identity(actor)
    return {
        "action": AuditAction(action),
        "actor_id": actor_id,
        "actor_name": actor_name[:150],
        "reason": (reason or "")[:300],
        "payload": payload or {},
    }


def _hashed(subject_field: str, subject: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The row's columns with its time and content hashes (the database adds the chain link)."""
    created_at = timezone.now()
    words = audit_chain.payload_hash(fields["reason"], fields["payload"])
    entry = audit_chain.entry_hash(
        created_at=created_at,
        action=fields["action"],
        actor_id=fields["actor_id"],
        actor_name=fields["actor_name"],
        subject=subject,
        payload_hash=words,
    )
    return {**fields, subject_field: subject, "created_at": created_at, "payload_hash": words, "entry_hash": entry}


def audit_record(
    *,
    action: AuditAction | str,
    conversation_id: str = "",
    actor: Actor = None,
    reason: str = "",
    payload: dict[str, Any] | None = None,
    using: str | None = None,
) -> AuditEvent:
    """Write one audit row in the selected account's database (or the account database `using`
    names, for a writer that runs after the selection's transaction committed)."""
    columns = _hashed("conversation_id", conversation_id, audit_fields(action, actor, reason, payload))
    manager = AuditEvent.objects.using(using) if using else AuditEvent.objects
    return manager.create(**columns)


@dataclass(frozen=True)
class AuditEntry:
    """One audit row to write with `audit_records_bulk` (the arguments of `audit_record`)."""

    action: AuditAction | str
    conversation_id: str = ""
    actor: Actor = None
    reason: str = ""
    payload: dict[str, Any] | None = None


def audit_records_bulk(entries: Sequence[AuditEntry]) -> list[AuditEvent]:
    """Write several audit rows in the selected account's database in one statement (a batched
    memory write audits each of its changes, in order; the database chains them row by row)."""
    if not entries:
        return []
    return AuditEvent.objects.bulk_create(
        AuditEvent(
            **_hashed(
                "conversation_id",
                entry.conversation_id,
                audit_fields(entry.action, entry.actor, entry.reason, entry.payload),
            )
        )
        for entry in entries
    )


def registry_audit_record(
    *,
    action: AuditAction | str,
    account_id: str,
    actor: Actor = None,
    reason: str = "",
    payload: dict[str, Any] | None = None,
) -> RegistryAuditEvent:
    """Write one row of the registry's audit journal (in `default`)."""
    columns = _hashed("account_id", account_id, audit_fields(action, actor, reason, payload))
    return RegistryAuditEvent.objects.create(**columns)


# --- the proof ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChainProblem:
    row_id: int | None
    problem: str

    def __str__(self) -> str:
        return f"#{self.row_id}：{self.problem}" if self.row_id is not None else self.problem


@dataclass
class ChainReport:
    """What `audit_chain_verify` found in one chain."""

    name: str
    rows: int = 0
    scrubbed: int = 0
    head_seq: int | None = None
    head_hash: str = ""
    problems: list[ChainProblem] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        head = f"，链头 #{self.head_seq} {self.head_hash[:16]}" if self.head_seq else ""
        return f"{self.name}：{self.rows} 行完整（其中 {self.scrubbed} 行已按遗忘/删除清理）{head}"


_VERIFY_COLUMNS = (
    "id",
    "action",
    "actor_id",
    "actor_name",
    "reason",
    "payload",
    "created_at",
    "payload_hash",
    "entry_hash",
    "prev_hash",
    "chain_hash",
    "chain_seq",
    "scrubbed_hash",
)


def _row_problems(row: dict[str, Any], subject: str, previous: dict[str, Any] | None) -> list[str]:
    """What is wrong with one row, given the row before it in the chain (None: the first)."""
    problems: list[str] = []
    words = audit_chain.payload_hash(row["reason"], row["payload"])
    if words != (row["scrubbed_hash"] or row["payload_hash"]):
        problems.append("原因或详情被改动（与写入时或清理后的哈希不符）")
    entry = audit_chain.entry_hash(
        created_at=row["created_at"],
        action=row["action"],
        actor_id=row["actor_id"],
        actor_name=row["actor_name"],
        subject=row[subject],
        payload_hash=row["payload_hash"],
    )
    if entry != row["entry_hash"]:
        problems.append("时间、操作、操作人、所属会话/账号或详情哈希被改动")
    expected_seq = previous["chain_seq"] + 1 if previous else 1
    if row["chain_seq"] != expected_seq:
        gap = f"第 {expected_seq} 至 {row['chain_seq'] - 1} 行" if row["chain_seq"] > expected_seq else "序号"
        problems.append(f"链序号为 {row['chain_seq']}，应为 {expected_seq}：{gap}被删除或改动")
    if row["prev_hash"] != (previous["chain_hash"] if previous else ""):
        problems.append("与链上前一行不相接：前面的行被删除、改动或顺序被调换")
    if row["chain_hash"] != audit_chain.chain_link(row["prev_hash"], row["entry_hash"]):
        problems.append("链哈希被改动")
    return problems


def audit_chain_verify(model: type[AuditRecord], *, using: str, name: str, batch_size: int = 2000) -> ChainReport:
    """Walk one audit table's chain in order and report every row that does not verify: its words
    against their hash (as written, or as a scrub left them), what it says against its entry hash,
    its place against the row before it. Also reports missing triggers and unchained rows."""
    subject = "conversation_id" if model is AuditEvent else "account_id"
    report = ChainReport(name=name)
    table = model._meta.db_table
    for trigger in audit_chain.triggers_missing(table, using=using):
        report.problems.append(ChainProblem(None, f"触发器 {trigger} 缺失：审计表不再拒绝修改和删除"))
    rows = model._default_manager.using(using)
    unchained = list(rows.filter(chain_seq__isnull=True).order_by("pk").values_list("pk", flat=True)[:20])
    for row_id in unchained:
        report.problems.append(ChainProblem(row_id, "没有链接到审计链（写入时触发器不在，或事务尚未提交）"))
    previous: dict[str, Any] | None = None
    columns = (*_VERIFY_COLUMNS, subject)
    chained = rows.filter(chain_seq__isnull=False).order_by("chain_seq").values(*columns)
    for row in chained.iterator(chunk_size=batch_size):
        report.rows += 1
        report.scrubbed += bool(row["scrubbed_hash"])
        report.problems.extend(ChainProblem(row["id"], problem) for problem in _row_problems(row, subject, previous))
        previous = row
    if previous is not None:
        report.head_seq, report.head_hash = previous["chain_seq"], previous["chain_hash"]
    return report


def account_audit_verify() -> ChainReport:
    """The selected account's audit chain."""
    return audit_chain_verify(AuditEvent, using=current_alias(), name=f"账号 {current_account()} 的审计")


def registry_audit_verify() -> ChainReport:
    """The registry's journal (in `default`)."""
    return audit_chain_verify(RegistryAuditEvent, using="default", name="账号登记日志")


# --- the scrub ----------------------------------------------------------------------------------


def audit_words_rewrite(rows: Iterable[tuple[int, str, Any]], *, using: str) -> int:
    """Rewrite the words of audit rows in the account database `using`, for the scrub of a forget
    or an erasure only: `rows` are (id, new reason, new payload). Each row keeps its chain and
    records the hash of its new words (`scrubbed_hash`). Returns rows changed."""
    changed = 0
    with audit_chain.audit_unlocked(audit_chain.SCRUB, using=using):
        for pk, reason, payload in rows:
            AuditEvent.objects.using(using).filter(pk=pk).update(
                reason=reason, payload=payload, scrubbed_hash=audit_chain.payload_hash(reason, payload)
            )
            changed += 1
    return changed


# --- what a context showed ----------------------------------------------------------------------


def context_read_record(
    *,
    conversation_id: str,
    purpose: ContextReadPurpose | str,
    trace: dict[str, Any],
    actor: Actor,
    reply_to_id: int | None = None,
    session_id: str = "",
    draft_id: int | None = None,
) -> ContextRead:
    """Record, in the selected account's database, what one context showed (from the builder's
    trace: snapshot version, memory item ids, recalled and recent message ids) and to whom."""
    actor_id, actor_name = actor_identity(actor)
    version = trace.get("snapshot_version")
    latest = trace.get("latest_message_id")

    def ids(key: str) -> list[int]:
        value = trace.get(key)
        return [int(v) for v in value if isinstance(v, int)] if isinstance(value, list) else []

    return ContextRead.objects.create(
        conversation_id=conversation_id,
        purpose=ContextReadPurpose(purpose),
        actor_id=actor_id,
        actor_name=actor_name[:150],
        reply_to_id=reply_to_id if reply_to_id is not None else (latest if isinstance(latest, int) else None),
        snapshot_version=version if isinstance(version, int) else None,
        item_ids=ids("memory_item_ids"),
        recalled_message_ids=ids("recalled_message_ids"),
        recent_message_ids=ids("recent_message_ids"),
        session_id=(session_id or "")[:128],
        draft_id=draft_id,
        degraded=bool(trace.get("fallback")),
    )


def context_reads_purge(*, now: dt.datetime | None = None) -> int:
    """Delete the selected account's context reads older than the retention; returns how many."""
    cutoff = (now or timezone.now()) - dt.timedelta(days=settings.QIWEI_CONTEXT_READ_RETENTION_DAYS)
    deleted, _ = ContextRead.objects.filter(created_at__lt=cutoff).delete()
    return deleted


def audit_verify(account_id: str | None = None) -> list[ChainReport]:
    """The named account's audit chain, or every registered account's (inactive ones too: their
    audit is kept) and the registry's journal. An unknown account: NotFound."""
    if account_id:
        account_ids = account_ids_for_command(account_id)
    else:
        account_ids = list(WeComAccount.objects.order_by("pk").values_list("pk", flat=True))
    reports: list[ChainReport] = []
    for current in account_ids:
        with use_account(current):
            reports.append(account_audit_verify())
    if not account_id:
        reports.append(registry_audit_verify())
    return reports
