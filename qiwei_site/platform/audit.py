"""The audit trail's writers and its proof: one row per write, saying which action, who and why
(never forgotten content or secrets). `audit_record` writes in the selected account's database,
`registry_audit_record` in `default` (the registry's journal). Each row is hashed as it is written
and chained by the database (`qiwei_site.platform.audit_chain`); `audit_chain_verify` walks a chain
and says which row was edited, deleted or moved (`manage.py audit_verify`).

What a context showed is recorded beside the audit, in its own table (`context_read_record`), and
purged after `QIWEI_CONTEXT_READ_RETENTION_DAYS` (`context_reads_purge`)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from qiwei_site.platform import audit_anchor, audit_chain, audit_owner, sql
from qiwei_site.platform.errors import ValidationFailed
from qiwei_site.platform.history import Actor, actor_identity
from qiwei_site.platform.keyfiles import KeyUnavailable
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
    return sql.insert([AuditEvent(**columns)], using=using)[0]


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
    return sql.insert(
        [
            AuditEvent(
                **_hashed(
                    "conversation_id",
                    entry.conversation_id,
                    audit_fields(entry.action, entry.actor, entry.reason, entry.payload),
                )
            )
            for entry in entries
        ]
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
    anchored_seq: int | None = None
    problems: list[ChainProblem] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        head = f"，链头 #{self.head_seq} {self.head_hash[:16]}" if self.head_seq else ""
        anchored = f"，已锚定至 #{self.anchored_seq}" if self.anchored_seq else "，尚未锚定"
        return f"{self.name}：{self.rows} 行完整（其中 {self.scrubbed} 行已按遗忘/删除清理）{head}{anchored}"


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


def _words_problem(row: dict[str, Any], table: str) -> str | None:
    """Whether the row's words are what it said, or what a signed scrub left of it."""
    words = audit_chain.payload_hash(row["reason"], row["payload"])
    if words == row["payload_hash"] and not row["scrubbed_hash"]:
        return None
    if not row["scrubbed_hash"]:
        return "原因或详情被改动（与写入时的哈希不符）"
    if audit_anchor.scrub_seal_valid(
        table=table, row_id=row["id"], payload_hash=row["payload_hash"], words_hash=words, seal=row["scrubbed_hash"]
    ):
        return None
    if row["scrubbed_hash"] == words:
        return "清理没有签名（旧版清理：请运行 manage.py audit_anchor --sign-scrubs；或被人写入了新内容）"
    return "原因或详情被改动（清理签名不符：写入了清理之外的内容）"


def _row_problems(row: dict[str, Any], subject: str, previous: dict[str, Any] | None, table: str) -> list[str]:
    """What is wrong with one row, given the row before it in the chain (None: the first)."""
    problems: list[str] = []
    words_problem = _words_problem(row, table)
    if words_problem:
        problems.append(words_problem)
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


def audit_chain_verify(
    model: type[AuditRecord],
    *,
    using: str,
    name: str,
    chain: str,
    anchors: audit_anchor.AnchorLog | None = None,
    batch_size: int = 2000,
) -> ChainReport:
    """Walk one audit table's chain in order and report every row that does not verify: its words
    against their hash (as written, or as a signed scrub left them), what it says against its entry
    hash, its place against the row before it; a scrubbed row no scrub record names; missing
    triggers and unchained rows; and the chain against its latest anchor (`anchors`, read from the
    log when not given): the anchored row must be there with the anchored hash."""
    subject = "conversation_id" if model is AuditEvent else "account_id"
    report = ChainReport(name=name)
    table = model._meta.db_table
    try:
        anchors = anchors if anchors is not None else audit_anchor.anchors_read()
    except KeyUnavailable as exc:
        report.problems.append(ChainProblem(None, f"无法核验锚点与清理签名：{exc.detail}"))
        return report
    for trigger in audit_chain.triggers_missing(table, using=using):
        report.problems.append(ChainProblem(None, f"触发器 {trigger} 缺失：审计表不再拒绝修改和删除"))
    rows = model._default_manager.using(using)
    unchained = list(rows.filter(chain_seq__isnull=True).order_by("pk").values_list("pk", flat=True)[:20])
    for row_id in unchained:
        report.problems.append(ChainProblem(row_id, "没有链接到审计链（写入时触发器不在，或事务尚未提交）"))
    anchor = anchors.latest.get(chain)
    anchored_hash: str | None = None
    scrubbed: list[int] = []
    recorded: set[int] = set()
    previous: dict[str, Any] | None = None
    columns = (*_VERIFY_COLUMNS, subject)
    chained = rows.filter(chain_seq__isnull=False).order_by("chain_seq").values(*columns)
    for row in chained.iterator(chunk_size=batch_size):
        report.rows += 1
        if row["scrubbed_hash"]:
            report.scrubbed += 1
            scrubbed.append(row["id"])
        if row["action"] == AuditAction.AUDIT_WORDS_SCRUBBED:
            recorded.update(int(i) for i in (row["payload"] or {}).get("row_ids", []) if isinstance(i, int))
        if anchor is not None and row["chain_seq"] == anchor.seq:
            anchored_hash = row["chain_hash"]
        report.problems.extend(
            ChainProblem(row["id"], problem) for problem in _row_problems(row, subject, previous, table)
        )
        previous = row
    if previous is not None:
        report.head_seq, report.head_hash = previous["chain_seq"], previous["chain_hash"]
    report.problems.extend(
        ChainProblem(row_id, "已清理，但链上没有对应的清理记录（不是通过清理服务改动的）")
        for row_id in scrubbed
        if row_id not in recorded
    )
    report.problems.extend(ChainProblem(None, line) for line in anchors.forged if chain == audit_anchor.REGISTRY_CHAIN)
    if anchor is not None:
        if report.head_seq is None or report.head_seq < anchor.seq:
            report.problems.append(
                ChainProblem(
                    None,
                    f"链尾被截断：锚点（{anchor.at}）记录到第 {anchor.seq} 行，现在只到第 {report.head_seq or 0} 行",
                )
            )
        elif anchored_hash != anchor.head:
            report.problems.append(
                ChainProblem(None, f"与锚点不符：第 {anchor.seq} 行及之前的记录被改写或重建（锚点 {anchor.at}）")
            )
        else:
            report.anchored_seq = anchor.seq
    return report


def account_audit_verify(anchors: audit_anchor.AnchorLog | None = None) -> ChainReport:
    """The selected account's audit chain."""
    account_id = str(current_account())
    return audit_chain_verify(
        AuditEvent,
        using=current_alias(),
        name=f"账号 {account_id} 的审计",
        chain=audit_anchor.account_chain(account_id),
        anchors=anchors,
    )


def registry_audit_verify(anchors: audit_anchor.AnchorLog | None = None) -> ChainReport:
    """The registry's journal (in `default`); also reports anchor log lines that do not verify."""
    return audit_chain_verify(
        RegistryAuditEvent, using="default", name="账号登记日志", chain=audit_anchor.REGISTRY_CHAIN, anchors=anchors
    )


# --- the scrub ----------------------------------------------------------------------------------


def audit_words_rewrite(rows: Iterable[tuple[int, str, Any]], *, using: str, actor: Actor = "system") -> int:
    """Rewrite the words of audit rows in the account database `using`, for the scrub of a forget
    or an erasure only: `rows` are (id, new reason, new payload). Each row keeps its chain and the
    hash of what it said; `scrubbed_hash` is the scrub's signature over the words left
    (`audit_anchor.scrub_seal`), and the scrub itself is recorded in the chain, per conversation,
    by row ids (`AUDIT_WORDS_SCRUBBED`). Returns rows changed."""
    rows = list(rows)
    if not rows:
        return 0
    table = AuditEvent._meta.db_table
    events = AuditEvent.objects.using(using)
    written = dict(events.filter(pk__in=[pk for pk, _r, _p in rows]).values_list("pk", "payload_hash"))
    subjects = dict(events.filter(pk__in=list(written)).values_list("pk", "conversation_id"))
    signed = [
        (
            pk,
            reason,
            payload,
            audit_anchor.scrub_seal(
                table=table, row_id=pk, payload_hash=written[pk], words_hash=audit_chain.payload_hash(reason, payload)
            ),
        )
        for pk, reason, payload in rows
        if pk in written
    ]
    by_conversation: dict[str, list[int]] = {}
    for pk, _reason, _payload, _seal in signed:
        by_conversation.setdefault(subjects[pk], []).append(pk)
    with transaction.atomic(using=using):
        _words_rewrite(events, signed, using=using)
        for conversation_id, row_ids in by_conversation.items():
            audit_record(
                action=AuditAction.AUDIT_WORDS_SCRUBBED,
                conversation_id=conversation_id,
                actor=actor,
                reason="遗忘或删除：清理审计记录中的原话",
                payload={"row_ids": sorted(row_ids)},
                using=using,
            )
    return len(signed)


def _words_rewrite(events: Any, signed: list[tuple[int, str, Any, str]], *, using: str) -> None:
    """Where the audit belongs to its owner role (PostgreSQL with provisioning apart), through the
    owner's scrub function, which refuses anything but removed words; elsewhere inside the unlock."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            if audit_owner.is_separated(cursor):
                for pk, reason, payload, seal in signed:
                    audit_owner.scrub(cursor, row_id=pk, reason=reason, payload_json=json.dumps(payload), seal=seal)
                return
    with audit_chain.audit_unlocked(audit_chain.SCRUB, using=using):
        for pk, reason, payload, seal in signed:
            events.filter(pk=pk).update(reason=reason, payload=payload, scrubbed_hash=seal)


def audit_scrubs_sign(*, using: str) -> int:
    """Sign the scrubs made before scrubs were signed (issue 36): a row whose `scrubbed_hash` is the
    plain hash of its words gets the signature, and the signing is recorded in the chain. Run once
    after the upgrade (`manage.py audit_anchor --sign-scrubs`); a row rewritten behind the service's
    back before then is signed as it stands, so verify first. Returns rows signed."""
    events = AuditEvent.objects.using(using)
    connection = connections[using]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            separated = audit_owner.is_separated(cursor)
        if separated:
            # Every scrub since separation went through the owner's function with a signature; an
            # unsigned one now was made by hand there (it can call the function), never legacy.
            raise ValidationFailed(
                "该账号的审计已交给审计属主，不再为未签名的清理补签：未签名的清理是被人改写的，请用 audit_verify 核查 "
                "(this account's audit belongs to its owner role: an unsigned scrub there was made by hand, "
                "not before the upgrade; it is not signed; check it with audit_verify).",
                code="audit_separated",
            )
    legacy = []
    for row in events.exclude(scrubbed_hash="").values("pk", "reason", "payload", "payload_hash", "scrubbed_hash"):
        words = audit_chain.payload_hash(row["reason"], row["payload"])
        if row["scrubbed_hash"] == words:
            legacy.append((row["pk"], row["reason"], row["payload"]))
    return audit_words_rewrite(legacy, using=using, actor="manage.py")


# --- anchoring ----------------------------------------------------------------------------------


@dataclass
class AnchorOutcome:
    chain: str
    name: str
    anchored_seq: int | None = None
    unchanged: bool = False
    problems: list[ChainProblem] = field(default_factory=list)


def _anchor_one(
    model: type[AuditRecord], *, using: str, chain: str, name: str, anchors: audit_anchor.AnchorLog
) -> tuple[AnchorOutcome, audit_anchor.Anchor | None]:
    """Check the rows appended since the chain's latest anchor (they must start from the anchored
    row, link one to the next and say what their hashes say), and return the new head to sign."""
    subject = "conversation_id" if model is AuditEvent else "account_id"
    table = model._meta.db_table
    outcome = AnchorOutcome(chain=chain, name=name)
    anchor = anchors.latest.get(chain)
    start = anchor.seq if anchor is not None else 1
    rows = model._default_manager.using(using).filter(chain_seq__gte=start).order_by("chain_seq")
    previous: dict[str, Any] | None = None
    for row in rows.values(*_VERIFY_COLUMNS, subject).iterator(chunk_size=2000):
        if previous is None and anchor is not None:
            if row["chain_seq"] != anchor.seq or row["chain_hash"] != anchor.head:
                outcome.problems.append(ChainProblem(row["id"], f"与锚点不符：第 {anchor.seq} 行被改写、删除或重建"))
                return outcome, None
            previous = row
            continue
        problems = _row_problems(row, subject, previous, table)
        outcome.problems.extend(ChainProblem(row["id"], problem) for problem in problems)
        previous = row
    if anchor is not None and previous is None:
        outcome.problems.append(ChainProblem(None, f"链尾被截断：锚点记录的第 {anchor.seq} 行不存在"))
    if outcome.problems or previous is None:
        return outcome, None
    if anchor is not None and previous["chain_seq"] == anchor.seq:
        outcome.unchanged, outcome.anchored_seq = True, anchor.seq
        return outcome, None
    outcome.anchored_seq = previous["chain_seq"]
    return outcome, audit_anchor.Anchor(
        chain=chain, seq=previous["chain_seq"], head=previous["chain_hash"], at=audit_anchor.now_text()
    )


def audit_anchor_heads(account_id: str | None = None) -> list[AnchorOutcome]:
    """Sign and log the head of every chain that grew since its last anchor (the named account's, or
    every account's and the registry's), after checking what was appended since; a chain that does
    not verify is not anchored and its problems are returned."""
    anchors = audit_anchor.anchors_read()
    if account_id:
        account_ids = account_ids_for_command(account_id)
    else:
        account_ids = list(WeComAccount.objects.order_by("pk").values_list("pk", flat=True))
    outcomes: list[AnchorOutcome] = []
    new: list[audit_anchor.Anchor] = []
    for current in account_ids:
        with use_account(current):
            outcome, head = _anchor_one(
                AuditEvent,
                using=current_alias(),
                chain=audit_anchor.account_chain(current),
                name=f"账号 {current} 的审计",
                anchors=anchors,
            )
        outcomes.append(outcome)
        new.extend([head] if head else [])
    if not account_id:
        outcome, head = _anchor_one(
            RegistryAuditEvent, using="default", chain=audit_anchor.REGISTRY_CHAIN, name="账号登记日志", anchors=anchors
        )
        outcomes.append(outcome)
        new.extend([head] if head else [])
    audit_anchor.anchor_append(new)
    return outcomes


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

    read = ContextRead(
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
    return sql.insert([read])[0]  # every context request writes one: the statement without the compiler


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
    anchors = audit_anchor.anchors_read()
    reports: list[ChainReport] = []
    for current in account_ids:
        with use_account(current):
            reports.append(account_audit_verify(anchors))
    if not account_id:
        reports.append(registry_audit_verify(anchors))
    return reports
