"""Per-account customer data: customers, messages, profiles, business state, drafts,
deliveries and the audit trail (DESIGN §5).

Every model here lives only in the account's own database (see qiwei_site.platform.tenancy);
the account registry itself is qiwei_site.platform.models.
"""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from qiwei_site.platform.models import TimeStampedModel


def account_history() -> HistoricalRecords:
    """History settings that work across databases (the user lives in `default`)."""
    return HistoricalRecords(user_db_constraint=False, use_base_model_db=True, inherit=False)


# --- account databases ----------------------------------------------------------------


class SessionMode(models.TextChoices):
    MANUAL = "manual", _("人工")
    ASSISTED = "assisted", _("辅助")
    AUTO = "auto", _("自动")


class Customer(TimeStampedModel):
    conversation_id = models.CharField(_("会话 ID"), max_length=128, unique=True)
    display_name = models.CharField(_("显示名"), max_length=100, blank=True)
    session_mode = models.CharField(
        _("会话模式"), max_length=16, choices=SessionMode.choices, default=SessionMode.ASSISTED
    )
    auto_send_whitelisted = models.BooleanField(_("自动发送白名单"), default=False)
    last_message_at = models.DateTimeField(_("最近消息时间"), null=True, blank=True, db_index=True)
    history = account_history()

    class Meta:
        verbose_name = _("客户")
        verbose_name_plural = _("客户")
        ordering = ["-last_message_at", "conversation_id"]

    def __str__(self) -> str:
        return self.display_name or self.conversation_id


class MessageDirection(models.TextChoices):
    INBOUND = "inbound", _("客户")
    OUTBOUND = "outbound", _("客服")
    SYSTEM = "system", _("系统")


class Message(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="messages", verbose_name=_("客户"))
    external_id = models.CharField(_("外部消息 ID"), max_length=128)
    direction = models.CharField(_("方向"), max_length=16, choices=MessageDirection.choices)
    sender = models.CharField(_("发送人"), max_length=100, blank=True)
    text = models.TextField(_("内容"))
    sent_at = models.DateTimeField(_("发送时间"))
    is_effective = models.BooleanField(_("有效"), default=True)
    created_at = models.DateTimeField(_("入库时间"), auto_now_add=True)

    class Meta:
        verbose_name = _("消息")
        verbose_name_plural = _("消息")
        ordering = ["sent_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["customer", "external_id"], name="uniq_message_external_id"),
        ]
        indexes = [models.Index(fields=["customer", "sent_at", "id"], name="msg_customer_time")]

    def __str__(self) -> str:
        return f"[{self.get_direction_display()}] {self.text[:40]}"


# The declared profile fields: (field name, Chinese label). A profile edit updates the
# stable memory item `profile:<field>` (spec §3).
PROFILE_FIELDS: tuple[tuple[str, str], ...] = (
    ("preferred_name", "称呼"),
    ("city", "城市"),
    ("budget", "预算"),
    ("district", "意向区域"),
    ("layout", "户型"),
    ("move_in_date", "入住时间"),
)
PROFILE_FIELD_NAMES = tuple(name for name, _label in PROFILE_FIELDS)


class CustomerProfile(TimeStampedModel):
    customer = models.OneToOneField(Customer, on_delete=models.CASCADE, related_name="profile", verbose_name=_("客户"))
    preferred_name = models.CharField(_("称呼"), max_length=50, blank=True)
    city = models.CharField(_("城市"), max_length=50, blank=True)
    budget = models.CharField(_("预算"), max_length=50, blank=True)
    district = models.CharField(_("意向区域"), max_length=100, blank=True)
    layout = models.CharField(_("户型"), max_length=50, blank=True)
    move_in_date = models.CharField(_("入住时间"), max_length=50, blank=True)
    history = account_history()

    class Meta:
        verbose_name = _("客户画像")
        verbose_name_plural = _("客户画像")

    def __str__(self) -> str:
        return f"画像 {self.customer_id}"

    def as_dict(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in PROFILE_FIELD_NAMES}


class TaskStatus(models.TextChoices):
    OPEN = "open", _("未完成")
    DONE = "done", _("已完成")


class Task(TimeStampedModel):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="tasks", verbose_name=_("客户"))
    title = models.CharField(_("待办"), max_length=200)
    status = models.CharField(_("状态"), max_length=16, choices=TaskStatus.choices, default=TaskStatus.OPEN)
    due_at = models.DateTimeField(_("截止时间"), null=True, blank=True)

    class Meta:
        verbose_name = _("待办")
        verbose_name_plural = _("待办")
        ordering = ["due_at", "id"]

    def __str__(self) -> str:
        return self.title


class AlertLevel(models.TextChoices):
    INFO = "info", _("提示")
    WARNING = "warning", _("警告")
    CRITICAL = "critical", _("严重")


class Alert(TimeStampedModel):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="alerts", verbose_name=_("客户"))
    level = models.CharField(_("级别"), max_length=16, choices=AlertLevel.choices, default=AlertLevel.INFO)
    text = models.CharField(_("预警"), max_length=300)
    resolved = models.BooleanField(_("已处理"), default=False)

    class Meta:
        verbose_name = _("预警")
        verbose_name_plural = _("预警")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.text


class Recommendation(TimeStampedModel):
    customer = models.ForeignKey(
        Customer, on_delete=models.CASCADE, related_name="recommendations", verbose_name=_("客户")
    )
    text = models.CharField(_("推荐/业务反馈"), max_length=300)
    feedback = models.CharField(_("客户反馈"), max_length=300, blank=True)

    class Meta:
        verbose_name = _("业务反馈")
        verbose_name_plural = _("业务反馈")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.text


class DraftStatus(models.TextChoices):
    PENDING = "pending", _("待审核")
    APPROVED = "approved", _("已批准")
    REJECTED = "rejected", _("已拒绝")
    SENT = "sent", _("已发送")


class Draft(TimeStampedModel):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="drafts", verbose_name=_("客户"))
    reply_to = models.ForeignKey(
        Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="drafts", verbose_name=_("回复的消息")
    )
    session_id = models.CharField(_("模型会话 ID"), max_length=100, blank=True)
    client = models.CharField(_("模型客户端"), max_length=32, blank=True)
    reply = models.TextField(_("草稿回复"), blank=True)
    final_text = models.TextField(_("最终文本"), blank=True)
    confidence = models.FloatField(
        _("置信度"), default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    requires_human = models.BooleanField(_("需要人工"), default=True)
    reasons = models.JSONField(_("理由"), default=list, blank=True)
    profile_updates = models.JSONField(_("已核验画像更新"), default=dict, blank=True)
    dropped_updates = models.JSONField(_("未核验画像更新"), default=list, blank=True)
    status = models.CharField(_("状态"), max_length=16, choices=DraftStatus.choices, default=DraftStatus.PENDING)
    error = models.TextField(_("错误"), blank=True)
    context_trace = models.JSONField(_("上下文追踪"), default=dict, blank=True)
    reviewed_by_id = models.IntegerField(_("审核人"), null=True, blank=True)
    reviewed_at = models.DateTimeField(_("审核时间"), null=True, blank=True)
    history = account_history()

    class Meta:
        verbose_name = _("回复草稿")
        verbose_name_plural = _("回复草稿")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"草稿 #{self.pk} {self.get_status_display()}"


class DeliveryStatus(models.TextChoices):
    # A row is claimed as `sending` before the upstream call, so a concurrent or repeated
    # request finds it and never calls the upstream a second time.
    SENDING = "sending", _("发送中")
    SENT = "sent", _("已发送")
    FAILED = "failed", _("失败")


class Delivery(TimeStampedModel):
    draft = models.OneToOneField(Draft, on_delete=models.CASCADE, related_name="delivery", verbose_name=_("草稿"))
    idempotency_key = models.CharField(_("幂等键"), max_length=100, unique=True)
    upstream_id = models.CharField(_("上游消息 ID"), max_length=100, blank=True)
    status = models.CharField(_("状态"), max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.SENDING)
    text = models.TextField(_("发送文本"))
    auto = models.BooleanField(_("自动发送"), default=False)
    attempts = models.PositiveIntegerField(_("尝试次数"), default=0)
    last_error = models.CharField(_("最近错误"), max_length=300, blank=True)
    sent_at = models.DateTimeField(_("发送时间"), null=True, blank=True)

    class Meta:
        verbose_name = _("发送记录")
        verbose_name_plural = _("发送记录")

    def __str__(self) -> str:
        return f"发送 {self.idempotency_key}"


class AuditEvent(models.Model):
    """Who did what to whose data. Never holds forgotten content or matched secrets.

    Kept by conversation id rather than a foreign key, so an erasure's own audit survives it.
    """

    action = models.CharField(_("操作"), max_length=64, db_index=True)
    conversation_id = models.CharField(_("会话 ID"), max_length=128, blank=True, db_index=True)
    actor_id = models.IntegerField(_("操作人 ID"), null=True, blank=True)
    actor_name = models.CharField(_("操作人"), max_length=150, blank=True)
    reason = models.CharField(_("原因"), max_length=300, blank=True)
    payload = models.JSONField(_("详情"), default=dict, blank=True)
    created_at = models.DateTimeField(_("时间"), auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = _("审计事件")
        verbose_name_plural = _("审计事件")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.conversation_id}"
