"""The floor's models: the abstract base every app uses, and the account registry with its
memberships (who may see which WeCom account). Both registry tables live in `default`."""

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from qiwei_site.platform.tenancy import ACCOUNT_ID_RE


class TimeStampedModel(models.Model):
    created_at = models.DateTimeField(_("创建时间"), auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(_("更新时间"), auto_now=True)

    class Meta:
        abstract = True


class WeComAccount(TimeStampedModel):
    id = models.CharField(
        _("账号 ID"),
        primary_key=True,
        max_length=40,
        validators=[RegexValidator(ACCOUNT_ID_RE.pattern, _("只能使用小写字母、数字和下划线"))],
    )
    name = models.CharField(_("名称"), max_length=100)
    is_active = models.BooleanField(_("启用"), default=True)

    class Meta:
        db_table = "conversations_wecomaccount"  # moved from conversations; the table stayed
        verbose_name = _("企微账号")
        verbose_name_plural = _("企微账号")
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"


class AccountMembership(TimeStampedModel):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="account_memberships", verbose_name=_("用户")
    )
    account = models.ForeignKey(
        WeComAccount, on_delete=models.CASCADE, related_name="memberships", verbose_name=_("企微账号")
    )

    class Meta:
        db_table = "conversations_accountmembership"
        verbose_name = _("账号授权")
        verbose_name_plural = _("账号授权")
        constraints = [models.UniqueConstraint(fields=["user", "account"], name="uniq_membership")]

    def __str__(self) -> str:
        return f"{self.user_id} → {self.account_id}"
