"""Create many WeCom accounts at once, each from the migrated template (issue 38, item 3).
Resumable: accounts registered and current are skipped, so a run cut short is finished by running
the same command again."""

from __future__ import annotations

import csv
import statistics
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from qiwei_site.platform.account_migrations import (
    CREATED,
    CURRENT,
    FAILED,
    REPAIRED,
    AccountOnboarding,
    NewAccount,
    default_jobs,
    onboard_accounts,
)
from qiwei_site.platform.tenancy import InvalidAccountId, validate_account_id

SAID = {CREATED: "已创建", REPAIRED: "已补齐迁移", CURRENT: "已存在且是最新，跳过", FAILED: "失败"}
HOW = {"template": "（模板）", "migrate": "（migrate）", "current": ""}
MAX_PROBLEMS_SHOWN = 10


class Command(BaseCommand):
    help = (
        "批量创建企微账号，每个账号从已迁移的模板建立并校验；已存在且是最新的账号跳过，可重复运行续做 "
        "(onboard many accounts from the migrated template; existing current accounts are skipped, so "
        "running it again resumes)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument(
            "--from",
            dest="csv_path",
            metavar="FILE.csv",
            help="CSV 文件，表头 account_id,name（name 可省略）(a CSV with a header account_id[,name])",
        )
        source.add_argument("--prefix", help="账号 ID 前缀：<prefix>0001 … (ids <prefix>0001, <prefix>0002, …)")
        parser.add_argument("--count", type=int, help="与 --prefix 一起：账号个数 (with --prefix: how many)")
        parser.add_argument(
            "--jobs",
            type=int,
            default=default_jobs(),
            help=f"同时创建的账号数，默认 {default_jobs()} (accounts created at once)",
        )
        parser.add_argument("--reason", default="批量开通账号", help="审计记录的原因 (the reason audited)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["jobs"] < 1:
            raise CommandError("--jobs 至少为 1 (--jobs must be at least 1).")
        if options["csv_path"]:
            if options["count"] is not None:
                raise CommandError("--count 只能与 --prefix 一起使用 (--count goes with --prefix).")
            rows = accounts_from_csv(Path(options["csv_path"]))
        else:
            rows = accounts_from_prefix(options["prefix"], options["count"])
        accounts = [NewAccount(account_id, name, reason=options["reason"]) for account_id, name in rows]
        started = time.perf_counter()
        results: list[AccountOnboarding] = []
        for index, result in enumerate(onboard_accounts(accounts, jobs=options["jobs"]), start=1):
            results.append(result)
            line = (
                f"[{index}/{len(accounts)}] {result.account_id}: {SAID[result.outcome]}"
                f"{HOW.get(result.made_by, '')} {result.seconds:.2f}s"
            )
            if result.outcome == FAILED:
                self.stderr.write(f"{line} {result.error}")
            else:
                self.stdout.write(line)
        self.stdout.write(summary(results, time.perf_counter() - started))
        failed = [result.account_id for result in results if result.outcome == FAILED]
        if failed:
            raise CommandError(
                f"{len(failed)} 个账号创建失败（再次运行同一命令续做）: {', '.join(failed[:MAX_PROBLEMS_SHOWN])}"
                f"{' …' if len(failed) > MAX_PROBLEMS_SHOWN else ''} "
                "(some accounts failed; run the same command again to resume)"
            )


def summary(results: list[AccountOnboarding], seconds: float) -> str:
    counts = {outcome: sum(1 for r in results if r.outcome == outcome) for outcome in SAID}
    made = [r for r in results if r.outcome in (CREATED, REPAIRED)]
    from_template = sum(1 for r in made if r.made_by == "template")
    times = sorted(r.seconds for r in results if r.outcome == CREATED)
    median = f"{statistics.median(times):.3f}s" if times else "-"
    return (
        f"完成：{len(results)} 个账号，用时 {seconds:.1f}s；新建 {counts[CREATED]}，补齐 {counts[REPAIRED]}，"
        f"跳过 {counts[CURRENT]}，失败 {counts[FAILED]}；从模板建立并校验通过 {from_template}，"
        f"migrate {len(made) - from_template}；每个新账号中位 {median} "
        f"(done: created {counts[CREATED]}, repaired {counts[REPAIRED]}, skipped {counts[CURRENT]}, "
        f"failed {counts[FAILED]}; from the verified template {from_template})"
    )


def accounts_from_prefix(prefix: str, count: int | None) -> list[tuple[str, str]]:
    """`<prefix>0001` … `<prefix>NNNN`: four digits (more when --count needs them), so a later run
    with a larger --count names the first accounts the same and skips them."""
    if count is None or count < 1:
        raise CommandError("--prefix 需要 --count N（N ≥ 1）(--prefix needs --count N, N ≥ 1).")
    width = max(4, len(str(count)))
    ids = [f"{prefix}{number:0{width}d}" for number in range(1, count + 1)]
    for account_id in (ids[0], ids[-1]):
        try:
            validate_account_id(account_id)
        except InvalidAccountId as exc:
            raise CommandError(str(exc)) from None
    return [(account_id, account_id) for account_id in ids]


def accounts_from_csv(path: Path) -> list[tuple[str, str]]:
    """(account id, name) of every row; every problem of the file is reported before anything is
    created (a line number each)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            if not reader.fieldnames or "account_id" not in [name.strip() for name in reader.fieldnames]:
                raise CommandError(f"{path}: 第一行须是表头 account_id,name (the first line must be account_id,name).")
            rows = [
                {(key or "").strip(): (value or "").strip() for key, value in row.items() if isinstance(value, str)}
                for row in reader
            ]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise CommandError(f"{path}: 无法读取 ({exc.__class__.__name__}: {exc})") from None
    accounts: list[tuple[str, str]] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for line, row in enumerate(rows, start=2):
        account_id, name = row.get("account_id", ""), row.get("name", "")
        try:
            validate_account_id(account_id)
        except InvalidAccountId:
            problems.append(f"第 {line} 行：账号 ID {account_id!r} 不合法 (invalid account id)")
            continue
        if account_id in seen:
            problems.append(f"第 {line} 行：账号 {account_id} 与第 {seen[account_id]} 行重复 (duplicate)")
            continue
        seen[account_id] = line
        accounts.append((account_id, name or account_id))
    if problems:
        shown = "\n".join(problems[:MAX_PROBLEMS_SHOWN])
        more = f"\n… 另有 {len(problems) - MAX_PROBLEMS_SHOWN} 处" if len(problems) > MAX_PROBLEMS_SHOWN else ""
        raise CommandError(f"{path}: {len(problems)} 处错误，未创建任何账号 (nothing created):\n{shown}{more}")
    if not accounts:
        raise CommandError(f"{path}: 没有账号 (no accounts in the file).")
    return accounts
