"""Connect an account to a WeCom 微信客服 app (or change or remove the connection)."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from qiwei_site.platform.errors import ApplicationError
from wecom.models import Upstream
from wecom.services import wecom_connect, wecom_disconnect


def _value(raw: str | None) -> str | None:
    """A credential as given, or read from stdin for "-" (so it stays out of the shell's history)."""
    if raw != "-":
        return raw
    line = sys.stdin.readline()
    return line.rstrip("\r\n")


class Command(BaseCommand):
    help = (
        "连接企业微信客服：企业 ID、客服应用 Secret、回调 Token 与 EncodingAESKey（密封保存，不再显示）。"
        "凭据写作 - 时从标准输入读取一行。"
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("account_id")
        parser.add_argument("--corp-id", help="企业 ID（我的企业 → 企业信息）")
        parser.add_argument("--secret", help="微信客服应用的 Secret（- 从标准输入读取）")
        parser.add_argument("--token", help="回调配置里的 Token（- 从标准输入读取）")
        parser.add_argument("--aes-key", help="回调配置里的 EncodingAESKey（- 从标准输入读取）")
        parser.add_argument(
            "--open-kfid", action="append", default=None, help="服务的客服账号 open_kfid，可重复（不给则保持原设置）"
        )
        parser.add_argument("--all-kfids", action="store_true", help="服务该企业的全部客服账号")
        parser.add_argument(
            "--upstream", choices=Upstream.values, default=None, help="不给则保持原设置（新连接：wecom）"
        )
        parser.add_argument("--reason", default="连接企业微信客服")
        parser.add_argument("--disconnect", action="store_true", help="断开连接（删除保存的凭据）")

    def handle(self, *args: Any, **options: Any) -> None:
        account_id = options["account_id"]
        try:
            if options["disconnect"]:
                removed = wecom_disconnect(account_id=account_id, actor="manage.py", reason=options["reason"])
                self.stdout.write("已断开企业微信客服连接" if removed else "该账号本来就没有连接企业微信客服")
                return
            if not options["corp_id"]:
                raise CommandError("需要 --corp-id (the corp id is required).")
            connection = wecom_connect(
                account_id=account_id,
                corp_id=options["corp_id"],
                secret=_value(options["secret"]),
                token=_value(options["token"]),
                aes_key=_value(options["aes_key"]),
                open_kfids=[] if options["all_kfids"] else options["open_kfid"],
                upstream=options["upstream"],
                actor="manage.py",
                reason=options["reason"],
            )
        except ApplicationError as exc:
            raise CommandError(exc.detail) from None
        kfids = "、".join(connection.open_kfids) or "（全部）"
        self.stdout.write(self.style.SUCCESS(f"账号 {account_id} 已连接企业微信客服（企业 {connection.corp_id}）"))
        self.stdout.write(f"服务的客服账号：{kfids}")
        self.stdout.write(f"在企业微信后台「接收消息」里填写的 URL：https://<你的域名>/wecom/{account_id}/callback/")
