"""Model-session epochs (spec §5): the model's session is short-term; the database is the memory."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from conversations.models import Customer, account_history


class CloseReason(models.TextChoices):
    MAX_TURNS = "max_turns", _("达到轮次上限")
    MAX_AGE = "max_age", _("超过时长")
    INVALID = "invalid", _("会话无效")
    BUDGET_EXCEEDED = "budget_exceeded", _("预算超限")
    MANUAL = "manual", _("人工关闭")


class SessionEpoch(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="epochs", verbose_name=_("客户"))
    session_id = models.CharField(_("会话 ID"), max_length=100, unique=True)
    parent_session_id = models.CharField(_("父会话 ID"), max_length=100, blank=True)
    memory_version = models.PositiveIntegerField(_("记忆快照版本"), null=True, blank=True)
    client = models.CharField(_("模型客户端"), max_length=32, blank=True)
    started_at = models.DateTimeField(_("开始时间"))
    closed_at = models.DateTimeField(_("关闭时间"), null=True, blank=True)
    turns = models.PositiveIntegerField(_("轮次"), default=0)
    close_reason = models.CharField(_("关闭原因"), max_length=32, choices=CloseReason.choices, blank=True)
    model_session_started = models.BooleanField(_("模型会话已建立"), default=False)
    history = account_history()

    class Meta:
        verbose_name = _("会话 Epoch")
        verbose_name_plural = _("会话 Epoch")
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["customer"], condition=Q(closed_at__isnull=True), name="uniq_open_epoch"),
        ]

    def __str__(self) -> str:
        return f"Epoch {self.session_id}"
