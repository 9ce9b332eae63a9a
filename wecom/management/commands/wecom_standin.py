"""`manage.py wecom_standin`: runs the WeCom stand-in in the foreground for the demo, or (with --say) has its
simulated customer send one message to a stand-in that is already running."""

from __future__ import annotations

import threading
from argparse import ArgumentParser
from typing import Any
from urllib.parse import urlsplit

import requests
from django.core.management.base import BaseCommand, CommandError

from wecom.crypto import WeComCrypto
from wecom.standin import WeComStandin

API_BASE_SETTING = "QIWEI_WECOM_API_BASE"


class Command(BaseCommand):
    help = "运行企业微信（微信客服）替身服务，供演示与联调使用；加 --say 则让模拟客户发一条消息后退出。"
    # Neither the stand-in nor --say touches the database or the project's apps.
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--corp-id", default="", help="企业 ID（CorpID）")
        parser.add_argument("--secret", default="", help="微信客服的 Secret")
        parser.add_argument("--token", default="", help="回调的 Token")
        parser.add_argument("--aes-key", default="", help="回调的 EncodingAESKey（43 位）")
        parser.add_argument("--open-kfid", action="append", default=None, help="客服账号 ID，可重复；默认 wkstandin01")
        parser.add_argument(
            "--callback-url", default=None, help="回调地址，如 http://127.0.0.1:4320/wecom/<账号>/callback/"
        )
        parser.add_argument("--port", type=int, default=4330, help="监听端口，默认 4330")
        parser.add_argument("--say", default=None, help="让模拟客户发送的文本（需同时给出 --from）")
        parser.add_argument("--from", dest="from_user", default=None, help="模拟客户的 external_userid，如 wm...")

    def handle(self, *args: Any, **options: Any) -> None:
        port = options["port"]
        if not 0 <= port <= 65535:
            raise CommandError(f"端口 {port} 无效，应在 0–65535 之间。")
        say, from_user = options["say"], options["from_user"]
        if say is not None or from_user is not None:
            self._say(port, say, from_user, options["open_kfid"])
            return
        self._serve(options, port)

    def _say(self, port: int, text: str | None, from_user: str | None, open_kfids: list[str] | None) -> None:
        if not text or not from_user:
            raise CommandError("--say 与 --from 必须同时给出，且不能为空。")
        payload: dict[str, str] = {"external_userid": from_user, "text": text}
        if open_kfids:
            payload["open_kfid"] = open_kfids[0]
        url = f"http://127.0.0.1:{port}/standin/customer_says"
        try:
            response = requests.post(url, json=payload, timeout=15)
            answer = response.json()
        except (requests.RequestException, ValueError):
            raise CommandError(f"连不上 127.0.0.1:{port} 上的替身服务，请先运行 manage.py wecom_standin。") from None
        if answer.get("errcode") != 0:
            raise CommandError(f"替身服务拒绝了这条消息：{answer.get('errmsg')}（errcode {answer.get('errcode')}）")
        callback = answer.get("callback")
        if callback is None:
            note = "替身未配置回调地址，未发送回调。"
        elif callback.get("status") == 200:
            note = "已回调通知。"
        else:
            note = f"回调未成功（{callback.get('status') or callback.get('error')}）。"
        self.stdout.write(f"客户 {from_user} 已发送消息。{note}")

    def _serve(self, options: dict[str, Any], port: int) -> None:
        corp_id, secret, token, aes_key = (options[k].strip() for k in ("corp_id", "secret", "token", "aes_key"))
        missing = [
            name
            for name, value in (
                ("--corp-id", corp_id),
                ("--secret", secret),
                ("--token", token),
                ("--aes-key", aes_key),
            )
            if not value
        ]
        if missing:
            raise CommandError(f"缺少参数：{'、'.join(missing)}。")
        try:
            WeComCrypto(token=token, encoding_aes_key=aes_key, receive_id=corp_id)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        callback_url = options["callback_url"]
        if callback_url is not None:
            parts = urlsplit(callback_url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise CommandError(f"回调地址无效：{callback_url}（应以 http:// 或 https:// 开头）")
        open_kfids = options["open_kfid"] or ["wkstandin01"]
        standin = WeComStandin(
            corp_id=corp_id,
            secret=secret,
            token=token,
            encoding_aes_key=aes_key,
            open_kfids=open_kfids,
            callback_url=callback_url,
            port=port,
        )
        try:
            standin.start()
        except OSError as exc:
            raise CommandError(f"无法监听 127.0.0.1:{port}：{exc.strerror or exc}") from None
        self.stdout.write(f"企业微信替身已启动：{standin.url}")
        self.stdout.write(f"请设置 {API_BASE_SETTING}={standin.url}")
        self.stdout.write(f"客服账号：{'、'.join(open_kfids)}")
        self.stdout.write(f"回调地址：{callback_url}" if callback_url else "未设置回调地址，不会发送回调。")
        self.stdout.write(f"模拟客户发消息：manage.py wecom_standin --port {standin.port} --say 文本 --from wm客户ID")
        self.stdout.write("按 Ctrl-C 停止。")
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
        finally:
            standin.stop()
        self.stdout.write("替身已停止。")
