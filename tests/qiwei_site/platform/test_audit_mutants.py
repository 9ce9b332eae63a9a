"""The audit's proof at its edges (issue 40, mutation testing of `audit_verify`): rows hashed in the
documented format by any writer verify, every kind of tampering is named with its row, a cut or
rebuilt chain is found against its anchor, and the command exits non-zero whenever a chain is broken."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connections

from conversations.models import AuditAction, AuditEvent
from qiwei_site.platform import audit_anchor, audit_chain
from qiwei_site.platform.audit import (
    account_audit_verify,
    audit_chain_verify,
    audit_record,
    audit_verify,
    audit_words_rewrite,
    registry_audit_verify,
)
from qiwei_site.platform.models import WeComAccount
from qiwei_site.platform.tenancy import current_alias

CONVERSATION = "wm_audit_edges_chen"


def _write(reason: str, **payload) -> AuditEvent:
    return audit_record(
        action=AuditAction.CUSTOMER_UPDATED,
        conversation_id=CONVERSATION,
        actor="admin-陈主管",
        reason=reason,
        payload=payload,
    )


def _sql(statement: str, params: list | None = None) -> None:
    with connections[current_alias()].cursor() as cursor:
        cursor.execute(statement, params or [])


def _drop_triggers() -> None:
    for name in audit_chain.trigger_names("conversations_auditevent", "sqlite"):
        _sql(f"DROP TRIGGER IF EXISTS {name}")


def _row_problems(report) -> dict[int, list[str]]:
    named: dict[int, list[str]] = {}
    for problem in report.problems:
        if problem.row_id is not None:
            named.setdefault(problem.row_id, []).append(problem.problem)
    return named


def _verify_command(*args: str) -> str:
    out = io.StringIO()
    call_command("audit_verify", *args, stdout=out)
    return out.getvalue()


def _anchor() -> None:
    call_command("audit_anchor", stdout=io.StringIO())


def _documented_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _documented_canonical(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _insert_hashed_elsewhere(
    *, reason: str, payload_text: str, words: dict, created_at: str, actor_id, actor_name: str
) -> int:
    """A row hashed as the module's docstring documents it, by hand (as a release before this one, or
    the PostgreSQL side, computes it), inserted in SQL; the database's trigger links it."""
    created = dt.datetime.fromisoformat(created_at).replace(tzinfo=dt.UTC)
    payload_hash = _documented_sha256(_documented_canonical(words))
    entry = _documented_canonical(
        [
            created.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "customer_updated",
            actor_id,
            actor_name,
            CONVERSATION,
            payload_hash,
        ]
    )
    _sql(
        "INSERT INTO conversations_auditevent (action, actor_id, actor_name, reason, payload, created_at, "
        "conversation_id, payload_hash, entry_hash, scrubbed_hash, prev_hash, chain_hash, chain_seq) "
        "VALUES ('customer_updated', %s, %s, %s, %s, %s, %s, %s, %s, '', '', '', NULL)",
        [actor_id, actor_name, reason, payload_text, created_at, CONVERSATION, payload_hash, _documented_sha256(entry)],
    )
    return AuditEvent.objects.order_by("-pk").values_list("pk", flat=True)[0]


# --- the hashes ---------------------------------------------------------------------------------


def test_audit_rows_hashed_in_the_documented_format_by_another_writer_verify(account, staff_user):
    # Given rows hashed by hand in the documented format: Chinese words and keys unescaped, keys
    # sorted, no spaces, times in UTC to the microsecond, a missing reason and payload as "" and {}
    rows = [
        _insert_hashed_elsewhere(
            reason="客户说：预算五千，想要两居室",
            payload_text=json.dumps({"字段": ["预算", "户型"], "fields": ["budget"]}, ensure_ascii=False),
            words={
                "reason": "客户说：预算五千，想要两居室",
                "payload": {"字段": ["预算", "户型"], "fields": ["budget"]},
            },
            created_at="2026-12-01 08:30:00.123456",
            actor_id=staff_user.pk,
            actor_name="admin-陈主管",
        ),
        _insert_hashed_elsewhere(
            reason="",
            payload_text="null",
            words={"reason": "", "payload": {}},
            created_at="2026-12-01 09:00:00.000001",
            actor_id=None,
            actor_name="wecom-webhook",
        ),
    ]
    # When the chain is verified
    report = account_audit_verify()
    # Then they verify like the rows this release writes
    assert report.intact, [str(problem) for problem in report.problems]
    assert set(rows) <= set(AuditEvent.objects.values_list("pk", flat=True))


def test_audit_chain_links_are_the_documented_sha256_of_the_previous_link_and_the_entry(account):
    # Given rows written by the service and linked by the database
    _write("客户要求改为人工接待", fields=["mode"])
    _write("客户同意周末电话回访", fields=["callback"])
    # When the links are recomputed by hand: sha256(prev ":" entry), the first row's prev empty
    rows = list(AuditEvent.objects.order_by("chain_seq"))
    previous = ""
    for row in rows:
        # Then every stored link is that hash, and the chain verifies
        assert row.prev_hash == previous
        assert row.chain_hash == _documented_sha256(f"{previous}:{row.entry_hash}")
        previous = row.chain_hash
    assert account_audit_verify().intact


# --- tampering, row by row ----------------------------------------------------------------------


def test_audit_verify_names_a_row_whose_chain_hash_alone_was_changed(account):
    # Given a row whose chain hash was overwritten (triggers dropped), its words and entry untouched
    row = _write("客户要求改为人工接待")
    _drop_triggers()
    AuditEvent.objects.filter(pk=row.pk).update(chain_hash="0" * 64)
    # When verified
    report = account_audit_verify()
    # Then that row's chain hash is named
    assert "链哈希被改动" in _row_problems(report)[row.pk]


def test_audit_verify_names_a_first_row_that_links_to_something_before_it(account):
    # Given the chain's first row made to link to a row that is not there (and rehashed to match)
    first = AuditEvent.objects.order_by("chain_seq").first()
    _drop_triggers()
    AuditEvent.objects.filter(pk=first.pk).update(
        prev_hash="f" * 64, chain_hash=audit_chain.chain_link("f" * 64, first.entry_hash)
    )
    # When verified
    report = account_audit_verify()
    # Then the first row is reported as not joined to the chain's start
    assert _row_problems(report)[first.pk] == ["与链上前一行不相接：前面的行被删除、改动或顺序被调换"]


def test_audit_verify_names_rows_cut_from_the_middle_with_their_range(account):
    # Given five rows, the second and third of them deleted (triggers dropped)
    rows = [_write(f"第 {n} 次修改接待方式") for n in range(5)]
    _drop_triggers()
    seqs = dict(AuditEvent.objects.values_list("pk", "chain_seq"))
    AuditEvent.objects.filter(pk__in=[rows[1].pk, rows[2].pk]).delete()
    # When verified
    report = account_audit_verify()
    # Then the row after the gap says which sequence numbers are missing
    first_gone, last_gone, after = seqs[rows[1].pk], seqs[rows[2].pk], seqs[rows[3].pk]
    assert (
        f"链序号为 {after}，应为 {first_gone}：第 {first_gone} 至 {last_gone} 行被删除或改动"
        in _row_problems(report)[rows[3].pk]
    )


def test_audit_verify_names_a_row_moved_before_the_chains_start(account):
    # Given the chain's first row renumbered 0 (triggers dropped): sequence numbers are unique, so
    # only the start can be undercut
    first = AuditEvent.objects.order_by("chain_seq").first()
    _drop_triggers()
    AuditEvent.objects.filter(pk=first.pk).update(chain_seq=0)
    # When verified
    report = account_audit_verify()
    # Then the row says its number is wrong, not that a range of rows was deleted
    assert _row_problems(report)[first.pk] == ["链序号为 0，应为 1：序号被删除或改动"]


def test_audit_verify_names_a_row_taken_out_of_the_chain(account):
    # Given a row whose sequence number was cleared (triggers dropped)
    rows = [_write(f"第 {n} 次修改接待方式") for n in range(3)]
    _drop_triggers()
    AuditEvent.objects.filter(pk=rows[1].pk).update(chain_seq=None)
    # When verified
    report = account_audit_verify()
    # Then it is named as unchained and the row after it as cut off
    assert _row_problems(report)[rows[1].pk] == ["没有链接到审计链（写入时触发器不在，或事务尚未提交）"]
    assert "与链上前一行不相接：前面的行被删除、改动或顺序被调换" in _row_problems(report)[rows[2].pk]


def test_audit_verify_names_unchained_rows_up_to_twenty(account):
    # Given 21 rows written while the triggers were gone (never linked)
    _drop_triggers()
    for n in range(21):
        audit_record(action=AuditAction.DRAFT_SENT, conversation_id=CONVERSATION, reason=f"第 {n} 条发送记录")
    unchained = list(AuditEvent.objects.filter(chain_seq__isnull=True).order_by("pk").values_list("pk", flat=True))
    # When verified
    report = account_audit_verify()
    # Then the first twenty are named as unlinked (a report stays readable), and the chain is broken
    named = [problem.row_id for problem in report.problems if problem.problem.startswith("没有链接到审计链")]
    assert named == unchained[:20]
    assert not report.intact


def test_audit_verify_reports_a_scrub_that_the_chain_does_not_record(account):
    # Given a row scrubbed with a valid signature but no scrub record in the chain (someone with the
    # key, outside the scrub service)
    row = _write("客户说：我老婆怀孕了，想找安静点的房子")
    words = audit_chain.payload_hash("客户说：［已遗忘内容已移除］", {})
    seal = audit_anchor.scrub_seal(
        table="conversations_auditevent", row_id=row.pk, payload_hash=row.payload_hash, words_hash=words
    )
    with audit_chain.audit_unlocked(audit_chain.SCRUB, using=current_alias()):
        AuditEvent.objects.filter(pk=row.pk).update(
            reason="客户说：［已遗忘内容已移除］", payload={}, scrubbed_hash=seal
        )
    # When verified
    report = account_audit_verify()
    # Then the row is named as scrubbed without a record, and counted as scrubbed
    assert _row_problems(report)[row.pk] == ["已清理，但链上没有对应的清理记录（不是通过清理服务改动的）"]
    assert report.scrubbed == 1


def test_audit_verify_accepts_a_scrub_recorded_by_the_service_only_for_its_rows(account):
    # Given two rows quoting the customer; the service scrubs the first
    first = _write("客户说：我老婆怀孕了")
    second = _write("客户说：孩子明年上小学")
    audit_words_rewrite([(first.pk, "客户说：［已遗忘内容已移除］", {})], using=current_alias())
    # When the second is scrubbed outside the service with a valid signature
    words = audit_chain.payload_hash("客户说：［已遗忘内容已移除］", {})
    seal = audit_anchor.scrub_seal(
        table="conversations_auditevent", row_id=second.pk, payload_hash=second.payload_hash, words_hash=words
    )
    with audit_chain.audit_unlocked(audit_chain.SCRUB, using=current_alias()):
        AuditEvent.objects.filter(pk=second.pk).update(
            reason="客户说：［已遗忘内容已移除］", payload={}, scrubbed_hash=seal
        )
    # Then only the second is reported; the first is recorded by the service's scrub row
    report = account_audit_verify()
    assert set(_row_problems(report)) == {second.pk}
    assert report.scrubbed == 2


def test_audit_verify_tells_an_unsigned_old_scrub_from_words_put_in_under_a_bad_signature(account):
    # Given one row scrubbed the old way (plain hash of the words left) and one with a wrong signature
    old = _write("客户说：我老婆怀孕了")
    forged = _write("客户要求改为人工接待")
    left = audit_chain.payload_hash("客户说：［已遗忘内容已移除］", {})
    with audit_chain.audit_unlocked(audit_chain.SCRUB, using=current_alias()):
        AuditEvent.objects.filter(pk=old.pk).update(
            reason="客户说：［已遗忘内容已移除］", payload={}, scrubbed_hash=left
        )
        AuditEvent.objects.filter(pk=forged.pk).update(reason="客户同意自动回复", payload={}, scrubbed_hash="a" * 64)
    # When verified
    problems = _row_problems(account_audit_verify())
    # Then each says what it is
    assert (
        problems[old.pk][0]
        == "清理没有签名（旧版清理：请运行 manage.py audit_anchor --sign-scrubs；或被人写入了新内容）"
    )
    assert problems[forged.pk][0] == "原因或详情被改动（清理签名不符：写入了清理之外的内容）"


# --- anchors ------------------------------------------------------------------------------------


def test_audit_verify_reports_the_anchor_it_checked_an_intact_chain_against(account):
    # Given an anchored chain that grew afterwards
    _write("客户要求改为人工接待")
    _anchor()
    anchored = AuditEvent.objects.order_by("-chain_seq").values_list("chain_seq", flat=True)[0]
    _write("客户要求改回自动回复")
    # When verified
    report = account_audit_verify()
    output = _verify_command("--account", account.pk)
    # Then it is intact and anchored at the signed row, not at the head
    assert report.intact and report.anchored_seq == anchored and report.head_seq == anchored + 1
    assert f"已锚定至 #{anchored}" in output


def test_audit_verify_accepts_an_anchor_at_the_head_and_refuses_one_beyond_it(account, settings, tmp_path):
    # Given a chain anchored exactly at its head
    _write("客户要求改为人工接待")
    _anchor()
    head = AuditEvent.objects.order_by("-chain_seq").first()
    assert account_audit_verify().anchored_seq == head.chain_seq
    # When the log holds a signed anchor one row beyond the head (its row deleted since)
    audit_anchor.anchor_append(
        [audit_anchor.Anchor(chain=f"account:{account.pk}", seq=head.chain_seq + 1, head="e" * 64, at="2026-12-06")]
    )
    report = account_audit_verify()
    # Then the chain is reported cut at the head it still has
    assert [problem.problem for problem in report.problems] == [
        f"链尾被截断：锚点（2026-12-06）记录到第 {head.chain_seq + 1} 行，现在只到第 {head.chain_seq} 行"
    ]


def test_audit_verify_reports_a_chain_emptied_below_its_anchor(account):
    # Given an anchored chain whose every row was then deleted under the flush unlock
    _write("客户要求改为人工接待")
    _anchor()
    with audit_chain.audit_unlocked(audit_chain.FLUSH, using=current_alias()):
        AuditEvent.objects.all().delete()
    # When verified
    report = account_audit_verify()
    # Then the cut is reported down to nothing
    assert any(problem.problem.endswith("现在只到第 0 行") for problem in report.problems)
    assert report.head_seq is None and report.anchored_seq is None


def test_audit_anchor_log_keeps_each_chains_highest_anchor_and_names_bad_lines(account):
    # Given a log with anchors of one chain (a forged one among them, the last one lower), a blank line and
    # lines cut short
    chain = f"account:{account.pk}"
    audit_anchor.anchor_append([audit_anchor.Anchor(chain=chain, seq=5, head="5" * 64, at="第一次")])
    with audit_anchor.anchor_log_path().open("a", encoding="utf-8") as log:
        log.write(json.dumps({"chain": chain, "seq": 9, "head": "9" * 64, "at": "伪造", "mac": "0" * 64}) + "\n")
    audit_anchor.anchor_append([audit_anchor.Anchor(chain=chain, seq=5, head="6" * 64, at="第二次")])
    audit_anchor.anchor_append([audit_anchor.Anchor(chain=chain, seq=3, head="3" * 64, at="第三次")])
    with audit_anchor.anchor_log_path().open("a", encoding="utf-8") as log:
        log.write("\n")
        log.write('{"chain": "registry", "seq": 1\n')
        log.write(json.dumps({"chain": chain, "seq": "七", "head": "", "at": "", "mac": ""}) + "\n")
    # When the log is read
    log = audit_anchor.anchors_read()
    # Then the chain's anchor is the highest, the later of two equal ones, and the bad lines are named
    assert log.latest[chain].seq == 5 and log.latest[chain].at == "第二次"
    assert log.forged == [
        "锚点日志第 2 行的签名不符 (line 2: signature does not verify)",
        "锚点日志第 6 行无法解析 (line 6 does not parse)",
        "锚点日志第 7 行无法解析 (line 7 does not parse)",
    ]


def test_audit_anchor_log_forged_lines_are_reported_once_with_the_registry(account, other_account):
    # Given an anchored audit and a line appended without the key
    _write("客户要求改为人工接待")
    _anchor()
    with audit_anchor.anchor_log_path().open("a", encoding="utf-8") as log:
        log.write(json.dumps({"chain": "registry", "seq": 1, "head": "0" * 64, "at": "x", "mac": "f" * 64}) + "\n")
    # When every chain is verified
    reports = audit_verify()
    # Then the forged line is reported by the registry's journal only, and the accounts stay intact
    by_name = {report.name: report for report in reports}
    assert by_name[f"账号 {account.pk} 的审计"].intact
    assert by_name[f"账号 {other_account.pk} 的审计"].intact
    assert [str(problem) for problem in by_name["账号登记日志"].problems] == [
        f"锚点日志第 {len(audit_anchor.anchor_log_path().read_text().splitlines())} 行的签名不符 "
        f"(line {len(audit_anchor.anchor_log_path().read_text().splitlines())}: signature does not verify)"
    ]


def test_audit_anchors_and_scrubs_signed_under_a_rotated_key_still_verify(account, settings):
    # Given a key in use: a scrub signed and the chain anchored under it
    settings.QIWEI_AUDIT_ANCHOR_KEY = "旧密钥-old-anchor-key-0001"
    row = _write("客户说：我老婆怀孕了")
    audit_words_rewrite([(row.pk, "客户说：［已遗忘内容已移除］", {})], using=current_alias())
    _anchor()
    # When a new key is put before it (rotation keeps the old one for verifying)
    settings.QIWEI_AUDIT_ANCHOR_KEY = ["新密钥-new-anchor-key-0002", "旧密钥-old-anchor-key-0001"]
    report = account_audit_verify()
    # Then the old scrub and anchor still verify
    assert report.intact and report.anchored_seq == report.head_seq
    # And once the old key is dropped, neither does
    settings.QIWEI_AUDIT_ANCHOR_KEY = "新密钥-new-anchor-key-0002"
    dropped = audit_verify()
    assert not all(report.intact for report in dropped)


def test_audit_verify_without_its_key_reports_it_cannot_verify(account, settings):
    # Given an anchored audit whose key file is then lost
    _write("客户要求改为人工接待")
    _anchor()
    (settings.QIWEI_KEY_DIR / audit_anchor.AUDIT_ANCHOR.file_name).unlink()
    # When verified
    with pytest.raises(CommandError) as refused:
        _verify_command("--account", account.pk)
    # Then the command fails naming the missing key (never a new key, never "intact")
    assert str(refused.value).startswith("审计锚定密钥：密钥文件") and "audit-anchor.key 不存在" in str(refused.value)


def test_audit_chain_verify_without_its_key_reports_the_chain_unverified(account, settings):
    # Given an anchored audit whose key file is then lost
    _write("客户要求改为人工接待")
    _anchor()
    (settings.QIWEI_KEY_DIR / audit_anchor.AUDIT_ANCHOR.file_name).unlink()
    # When one chain is verified (the anchors read from the log)
    report = audit_chain_verify(AuditEvent, using=current_alias(), name="账号 acme 的审计", chain="account:acme")
    # Then the chain is not intact: the one problem says why, and no row was counted
    assert len(report.problems) == 1 and report.problems[0].problem.startswith("无法核验锚点与清理签名：")
    assert report.rows == 0


def test_audit_chain_verify_walks_a_chain_longer_than_one_batch(account):
    # Given more rows than one read batch, one edited in the second batch (triggers dropped)
    rows = [_write(f"第 {n} 次回访：客户仍在考虑") for n in range(5)]
    _drop_triggers()
    AuditEvent.objects.filter(pk=rows[4].pk).update(reason="客户已签约")
    # When verified two rows at a time
    report = audit_chain_verify(
        AuditEvent, using=current_alias(), name="账号 acme 的审计", chain="account:acme", batch_size=2
    )
    # Then every row was walked and the edited one named
    assert report.rows == AuditEvent.objects.count()
    assert "原因或详情被改动（与写入时的哈希不符）" in _row_problems(report)[rows[4].pk]


# --- the command --------------------------------------------------------------------------------


def test_audit_verify_covers_inactive_accounts_and_the_registry_unless_one_is_named(account, other_account):
    # Given an inactive account (its audit is kept)
    WeComAccount.objects.filter(pk=other_account.pk).update(is_active=False)
    # When every chain is verified, then one account
    every = [report.name for report in audit_verify()]
    named = [report.name for report in audit_verify(account.pk)]
    # Then every account's audit and the registry's journal are checked; naming one checks it alone
    assert every == [f"账号 {account.pk} 的审计", f"账号 {other_account.pk} 的审计", "账号登记日志"]
    assert named == [f"账号 {account.pk} 的审计"]


def test_audit_verify_command_exits_non_zero_naming_each_broken_chain_and_summarising_the_rest(account, other_account):
    # Given two rows of one account edited behind the service (triggers dropped); the other account intact
    rows = [_write("客户要求改为人工接待"), _write("客户同意周末电话回访")]
    _drop_triggers()
    AuditEvent.objects.filter(pk=rows[0].pk).update(reason="客户同意自动回复")
    AuditEvent.objects.filter(pk=rows[1].pk).update(actor_name="system")
    out = io.StringIO()
    # When every chain is verified
    with pytest.raises(CommandError) as refused:
        call_command("audit_verify", stdout=out)
    # Then the command fails listing every problem with its chain's name, one per line
    lines = str(refused.value).splitlines()
    assert lines[0] == "审计链校验失败 (audit chain broken)："
    assert f"账号 {account.pk} 的审计：#{rows[0].pk}：原因或详情被改动（与写入时的哈希不符）" in lines
    assert f"账号 {account.pk} 的审计：#{rows[1].pk}：时间、操作、操作人、所属会话/账号或详情哈希被改动" in lines
    assert (
        f"账号 {account.pk} 的审计：触发器 conversations_auditevent_no_update 缺失：审计表不再拒绝修改和删除" in lines
    )
    # And the intact chains are summarised, the broken one not, and no success line is printed
    output = out.getvalue()
    assert f"账号 {other_account.pk} 的审计：1 行完整" in output and "账号登记日志：" in output
    assert f"账号 {account.pk} 的审计：" not in output and "审计链完整" not in output


def test_registry_journal_verify_names_its_own_chain(account):
    # Given the registry's journal as the services wrote it
    # When it is verified
    report = registry_audit_verify()
    # Then it is the registry's chain, intact, every row counted
    assert report.name == "账号登记日志" and report.intact and report.rows >= 1
    assert report.head_seq == report.rows


def test_audit_verify_checks_each_chain_against_the_anchors_it_is_given(account):
    # Given one read of the anchor log for every chain (what `audit_verify` does): an anchor of this
    # account beyond its head, and a line that did not verify
    head = AuditEvent.objects.order_by("-chain_seq").values_list("chain_seq", flat=True)[0]
    given = audit_anchor.AnchorLog(
        latest={
            f"account:{account.pk}": audit_anchor.Anchor(
                chain=f"account:{account.pk}", seq=head + 3, head="c" * 64, at="2026-12-06T08:00:00Z"
            )
        },
        forged=["锚点日志第 9 行的签名不符 (line 9: signature does not verify)"],
    )
    # When the account's audit and the registry's journal are verified against it (the log itself empty)
    account_report = account_audit_verify(given)
    registry_report = registry_audit_verify(given)
    # Then each is checked against what it was given, not the log read again
    assert [problem.problem for problem in account_report.problems] == [
        f"链尾被截断：锚点（2026-12-06T08:00:00Z）记录到第 {head + 3} 行，现在只到第 {head} 行"
    ]
    assert [problem.problem for problem in registry_report.problems] == given.forged


def test_audit_chain_verify_reads_the_store_it_is_told_to(account, other_account):
    # Given `acme` selected, with more audit rows than `globex`
    _write("客户要求改为人工接待")
    _write("客户同意周末电话回访")
    # When `globex`'s store is verified by its alias
    report = audit_chain_verify(
        AuditEvent, using="acct_globex", name="账号 globex 的审计", chain=f"account:{other_account.pk}"
    )
    # Then its own rows were walked, not the selected account's
    assert report.intact and report.rows == 1


def test_audit_verify_walks_past_a_scrub_record_that_names_no_rows(account):
    # Given a scrub record that names no rows (nothing was left to scrub), then more rows
    audit_record(
        action=AuditAction.AUDIT_WORDS_SCRUBBED,
        conversation_id=CONVERSATION,
        actor="system",
        reason="遗忘或删除：清理审计记录中的原话",
        payload={"count": 0},
    )
    _write("客户要求改为人工接待")
    # When verified
    report = account_audit_verify()
    # Then the chain is walked to its head and verifies
    assert report.intact and report.head_seq == AuditEvent.objects.count()
