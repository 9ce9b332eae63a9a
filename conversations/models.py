"""Per-account customer data: customers, messages, profiles, business state, drafts,
deliveries and the audit trail (DESIGN §5).

Every model here lives only in the account's own database (see qiwei_site.platform.tenancy);
the account registry itself is qiwei_site.platform.models.
"""

from __future__ import annotations

import functools
from typing import Any

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _
from simple_history.manager import HistoryManager
from simple_history.models import HistoricalRecords

from qiwei_site.platform.models import AuditAction as AuditAction
from qiwei_site.platform.models import AuditEvent as AuditEvent
from qiwei_site.platform.models import AuditRecord as AuditRecord
from qiwei_site.platform.models import RegistryAuditEvent as RegistryAuditEvent
from qiwei_site.platform.models import TimeStampedModel
from qiwei_site.reading.fields import PROFILE_FIELD_NAMES, PROFILE_FIELD_SPECS


class AccountHistoryManager(HistoryManager):
    """simple_history's manager with its class built once. The `history` descriptor asks for
    `from_queryset(...)` on every access, and simple_history reaches it for every history row it
    writes: building the class (Django walks the queryset's members) cost ~0.5 ms per tracked save
    and made a new class each time."""

    @classmethod
    @functools.cache
    def from_queryset(cls, queryset_class: Any, class_name: str | None = None) -> Any:
        return super().from_queryset(queryset_class, class_name)


def account_history(**options: Any) -> HistoricalRecords:
    """History settings that work across databases (the user lives in `default`)."""
    return HistoricalRecords(
        user_db_constraint=False,
        use_base_model_db=True,
        inherit=False,
        history_manager=AccountHistoryManager,
        **options,
    )


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
    # From the upstream, not from what the customer said (issue 37): WeCom's nickname goes to
    # display_name, its avatar here; the kf account (open_kfid) the customer last wrote to is where
    # a reply must leave from.
    avatar_url = models.URLField(_("头像"), max_length=500, blank=True)
    upstream_channel = models.CharField(_("企微客服账号 (open_kfid)"), max_length=64, blank=True)
    # The revision trail keeps what people and the upstream change; the time of the last message is
    # the messages' own record (each message is stored and audited), so moving it writes no revision.
    history = account_history(excluded_fields=["last_message_at"])

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
        return f"{self.get_direction_display()}消息 #{self.pk}"  # never the text: it may hold a secret


class MessageSecret(models.Model):
    """A message's words as received, sealed (`qiwei_site.platform.sealing`), kept only when the
    reader found a credential or a personal number in them: the message row itself holds the
    masked text, so search, recall, the prompt, the admin and every API see nothing else. Opened
    only by the audited staff reveal and by the safety gate and extraction, which must judge what
    the customer sent (`conversations.received`). Deleted with the message (erasure) and by forget
    for the messages a forgotten item cites."""

    message = models.OneToOneField(
        Message, on_delete=models.CASCADE, primary_key=True, related_name="secret", verbose_name=_("消息")
    )
    sealed = models.TextField(_("密封原文"))
    categories = models.JSONField(_("敏感类别"), default=list)
    created_at = models.DateTimeField(_("密封时间"), auto_now_add=True)

    class Meta:
        verbose_name = _("消息密封原文")
        verbose_name_plural = _("消息密封原文")

    def __str__(self) -> str:
        return f"消息 #{self.pk} 的密封原文"


def _profile_column(name: str) -> models.CharField:
    spec = next(spec for spec in PROFILE_FIELD_SPECS if spec.name == name)
    return models.CharField(spec.label, max_length=spec.max_length, blank=True)


class CustomerProfile(TimeStampedModel):
    customer = models.OneToOneField(Customer, on_delete=models.CASCADE, related_name="profile", verbose_name=_("客户"))
    # One column per entry of PROFILE_FIELD_SPECS (tests/conversations check they agree).
    preferred_name = _profile_column("preferred_name")
    city = _profile_column("city")
    budget = _profile_column("budget")
    district = _profile_column("district")
    layout = _profile_column("layout")
    move_in_date = _profile_column("move_in_date")
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


class ResolvedFields(models.Model):
    """Who closed a piece of business state, when and why (tasks, alerts, recommendations)."""

    resolution_reason = models.CharField(_("处理说明"), max_length=300, blank=True)
    resolved_at = models.DateTimeField(_("处理时间"), null=True, blank=True)
    resolved_by_id = models.IntegerField(_("处理人 ID"), null=True, blank=True)
    resolved_by_name = models.CharField(_("处理人"), max_length=150, blank=True)

    class Meta:
        abstract = True


class Task(ResolvedFields, TimeStampedModel):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="tasks", verbose_name=_("客户"))
    title = models.CharField(_("待办"), max_length=200)
    note = models.TextField(_("说明"), max_length=500, blank=True)  # the length is checked, not stored in the schema
    status = models.CharField(_("状态"), max_length=16, choices=TaskStatus.choices, default=TaskStatus.OPEN)
    due_at = models.DateTimeField(_("截止时间"), null=True, blank=True)
    history = account_history()

    class Meta:
        verbose_name = _("待办")
        verbose_name_plural = _("待办")
        ordering = ["due_at", "id"]
        indexes = [models.Index(fields=["customer", "status"], name="task_customer_status")]

    def __str__(self) -> str:
        return self.title


class AlertLevel(models.TextChoices):
    INFO = "info", _("提示")
    WARNING = "warning", _("警告")
    CRITICAL = "critical", _("严重")


class AlertKind(models.TextChoices):
    MANUAL = "manual", _("人工")
    MESSAGE_BLOCKED = "message_blocked", _("消息被安全拦截")
    PERSONAL_NUMBER = "personal_number", _("消息含个人号码")
    CAPTURE_FAILING = "capture_failing", _("记忆提取持续失败")


class Alert(ResolvedFields, TimeStampedModel):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="alerts", verbose_name=_("客户"))
    level = models.CharField(_("级别"), max_length=16, choices=AlertLevel.choices, default=AlertLevel.INFO)
    text = models.CharField(_("预警"), max_length=300)
    resolved = models.BooleanField(_("已处理"), default=False)
    kind = models.CharField(_("来源"), max_length=32, choices=AlertKind.choices, default=AlertKind.MANUAL)
    # What raised it (e.g. "message:42"): an automatic alert is raised once per cause.
    cause = models.CharField(_("起因"), max_length=64, blank=True, db_index=True)
    history = account_history()

    class Meta:
        verbose_name = _("预警")
        verbose_name_plural = _("预警")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.text


class RecommendationStatus(models.TextChoices):
    OPEN = "open", _("跟进中")
    RESOLVED = "resolved", _("已结束")


class Recommendation(ResolvedFields, TimeStampedModel):
    """Something we proposed to the customer (a listing, a viewing, a plan); its feedback is a
    history of RecommendationFeedback rows, the newest one being what the context shows."""

    customer = models.ForeignKey(
        Customer, on_delete=models.CASCADE, related_name="recommendations", verbose_name=_("客户")
    )
    text = models.CharField(_("推荐内容"), max_length=300)
    status = models.CharField(
        _("状态"), max_length=16, choices=RecommendationStatus.choices, default=RecommendationStatus.OPEN
    )
    history = account_history()

    class Meta:
        verbose_name = _("推荐与业务反馈")
        verbose_name_plural = _("推荐与业务反馈")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.text


class FeedbackSource(models.TextChoices):
    CUSTOMER = "customer", _("客户")
    AGENT = "agent", _("客服")


class FeedbackVerdict(models.TextChoices):
    ACCEPTED = "accepted", _("接受")
    INTERESTED = "interested", _("感兴趣")
    NEUTRAL = "neutral", _("未表态")
    DECLINED = "declined", _("不接受")


class RecommendationFeedback(models.Model):
    """One piece of feedback on a recommendation: whose (the customer's, relayed by an agent, or
    the agent's own), the verdict and a comment. Append-only: a change of mind is a new row."""

    recommendation = models.ForeignKey(
        Recommendation, on_delete=models.CASCADE, related_name="feedback", verbose_name=_("推荐")
    )
    # Kept beside the recommendation so every row about a customer is found by `customer`
    # (erasure and forget's scrub look rows up that way).
    customer = models.ForeignKey(
        Customer, on_delete=models.CASCADE, related_name="recommendation_feedback", verbose_name=_("客户")
    )
    source = models.CharField(_("反馈方"), max_length=16, choices=FeedbackSource.choices)
    verdict = models.CharField(_("反馈结论"), max_length=16, choices=FeedbackVerdict.choices)
    comment = models.CharField(_("反馈内容"), max_length=300, blank=True)
    actor_id = models.IntegerField(_("记录人 ID"), null=True, blank=True)
    actor_name = models.CharField(_("记录人"), max_length=150, blank=True)
    created_at = models.DateTimeField(_("记录时间"), auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = _("推荐反馈")
        verbose_name_plural = _("推荐反馈")
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["recommendation", "-created_at", "-id"], name="feedback_latest")]

    def __str__(self) -> str:
        return f"{self.get_source_display()}反馈：{self.get_verdict_display()}"


class DraftStatus(models.TextChoices):
    PENDING = "pending", _("待审核")
    APPROVED = "approved", _("已批准")
    REJECTED = "rejected", _("已拒绝")
    SENT = "sent", _("已发送")
    # The model gave no usable reply (not installed, unreachable, timed out, no valid output): never
    # approvable, not awaiting review; the Workbench offers 重新生成.
    FAILED = "failed", _("生成失败")
    # The model is still working on it (the Workbench queued the turn): shown with its elapsed
    # time, filled in place by the turn when it ends (conversations.drafts.draft_generating).
    GENERATING = "generating", _("生成中")
    # A failed (or abandoned) draft that a newer one replaced (`replaced_by`): kept with its history
    # and audit, no longer a card in the Workbench.
    SUPERSEDED = "superseded", _("已被替换")


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
    # The prompt exactly as the model received it (its sections' offsets are in context_trace).
    # Not in the history: one copy, which forget can scrub.
    prompt = models.TextField(_("模型收到的提示词"), blank=True)
    reviewed_by_id = models.IntegerField(_("审核人"), null=True, blank=True)
    reviewed_at = models.DateTimeField(_("审核时间"), null=True, blank=True)
    replaced_by = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="replaces",
        verbose_name=_("被替换为"),
    )
    history = account_history(excluded_fields=["prompt"])

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


class CustomerContextVersion(models.Model):
    """A customer's context version (`conversations.context_version`): written only by the
    database's triggers, read by the context builder. No foreign key: it is a counter, not data."""

    customer_id = models.BigIntegerField(_("客户"), primary_key=True)
    version = models.BigIntegerField(_("上下文版本"), default=0)

    class Meta:
        verbose_name = _("客户上下文版本")
        verbose_name_plural = _("客户上下文版本")

    def __str__(self) -> str:
        return f"{self.customer_id}@{self.version}"
