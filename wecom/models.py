"""An account's WeCom kf connection and its sync state. All of it lives in `default` beside the
account registry (it is the account's wiring, not customer data): the credentials sealed at rest,
the cursor per `open_kfid`, and the callbacks already taken (WeCom retries a callback three times)."""

from django.db import models
from django.utils.translation import gettext_lazy as _

from qiwei_site.platform.models import TimeStampedModel, WeComAccount


class Upstream(models.TextChoices):
    WECOM = "wecom", _("企业微信客服")
    DEFAULT = "default", _("按全局设置（回环或 HTTP 网关）")


class WeComConnection(TimeStampedModel):
    account = models.OneToOneField(
        WeComAccount, on_delete=models.CASCADE, primary_key=True, related_name="wecom", verbose_name=_("企微账号")
    )
    corp_id = models.CharField(_("企业 ID"), max_length=64)
    # Sealed with the message-original key (`qiwei_site.platform.sealing`); never shown after saving.
    secret_sealed = models.TextField(_("客服应用密钥（密封）"))
    token_sealed = models.TextField(_("回调令牌（密封）"))
    aes_key_sealed = models.TextField(_("消息加密密钥（密封）"))
    open_kfids = models.JSONField(_("客服账号 ID"), default=list, blank=True)
    upstream = models.CharField(_("上游"), max_length=16, choices=Upstream.choices, default=Upstream.WECOM)

    class Meta:
        verbose_name = _("企业微信客服连接")
        verbose_name_plural = _("企业微信客服连接")

    def __str__(self) -> str:
        return f"{self.account_id} 的企业微信客服连接"


class WeComCursor(models.Model):
    """Where `kf/sync_msg` stopped for one `open_kfid`: advanced only after the messages it covers
    are committed, so a crash replays (idempotent by msgid) and never skips."""

    account = models.ForeignKey(WeComAccount, on_delete=models.CASCADE, verbose_name=_("企微账号"))
    open_kfid = models.CharField(_("客服账号 ID"), max_length=64)
    cursor = models.CharField(_("游标"), max_length=255, blank=True)
    synced_at = models.DateTimeField(_("最近同步时间"), null=True, blank=True)
    messages_synced = models.PositiveBigIntegerField(_("已同步消息数"), default=0)
    # One sync per open_kfid at a time, on every database: a lease taken by a conditional UPDATE;
    # a sync that finds it taken sets `rerun`, and the holder pulls once more before letting go.
    leased_until = models.DateTimeField(_("同步租约到期"), null=True, blank=True)
    # host:pid of the pull holding the lease: a pull on the same host finding that process gone (a
    # worker killed mid-pull) takes the lease at once instead of waiting for it to run out.
    leased_by = models.CharField(_("租约持有者"), max_length=128, blank=True)
    rerun = models.BooleanField(_("需要再同步"), default=False)

    class Meta:
        verbose_name = _("企微同步游标")
        verbose_name_plural = _("企微同步游标")
        constraints = [models.UniqueConstraint(fields=["account", "open_kfid"], name="uniq_wecom_cursor")]

    def __str__(self) -> str:
        return f"{self.account_id}/{self.open_kfid}"


class WeComCallback(models.Model):
    """A callback already taken, by the digest of its decrypted event: WeCom's retries of it are
    answered without queueing the work again. Pruned after a day."""

    account = models.ForeignKey(WeComAccount, on_delete=models.CASCADE, verbose_name=_("企微账号"))
    digest = models.CharField(_("事件摘要"), max_length=64)
    open_kfid = models.CharField(_("客服账号 ID"), max_length=64, blank=True)
    received_at = models.DateTimeField(_("收到时间"), auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = _("企微回调")
        verbose_name_plural = _("企微回调")
        constraints = [models.UniqueConstraint(fields=["account", "digest"], name="uniq_wecom_callback")]

    def __str__(self) -> str:
        return f"{self.account_id} @ {self.received_at:%Y-%m-%d %H:%M:%S}"
