"""Typed customer memory (spec §3), immutable core snapshots and the durable capture queue."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from conversations.models import Customer, Message, account_history
from qiwei_site.platform.models import TimeStampedModel


class MemoryType(models.TextChoices):
    FACT = "fact", _("事实")
    PREFERENCE = "preference", _("偏好")
    CONSTRAINT = "constraint", _("约束")
    EVENT = "event", _("事件")
    HYPOTHESIS = "hypothesis", _("推断（待确认）")


class MemoryStatus(models.TextChoices):
    ACTIVE = "active", _("有效")
    # Looks like a want but failed the contract of automatic writes (issue 35): waits for a
    # supervisor, never in the snapshot, the prompt or the profile until accepted.
    PROPOSED = "proposed", _("待审核提议")
    REJECTED = "rejected", _("已拒绝")
    SUPERSEDED = "superseded", _("已失效")


class MemoryDirection(models.TextChoices):
    INBOUND = "inbound", _("客户原话")
    OUTBOUND = "outbound", _("客服/模型")
    INTERNAL = "internal", _("内部人工")


class MemoryCreatedBy(models.TextChoices):
    AUTO = "auto", _("自动")
    HUMAN = "human", _("人工")


class MemoryItem(TimeStampedModel):
    customer = models.ForeignKey(
        Customer, on_delete=models.CASCADE, related_name="memory_items", verbose_name=_("客户")
    )
    type = models.CharField(_("类型"), max_length=16, choices=MemoryType.choices)
    key = models.CharField(_("稳定键"), max_length=200)
    content = models.TextField(_("内容"))
    source_message_ids = models.JSONField(_("来源消息"), default=list, blank=True)
    confidence = models.FloatField(
        _("置信度"), default=0.8, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    importance = models.PositiveSmallIntegerField(
        _("重要性"), default=3, validators=[MinValueValidator(1), MaxValueValidator(5)]
    )
    status = models.CharField(
        _("状态"), max_length=16, choices=MemoryStatus.choices, default=MemoryStatus.ACTIVE, db_index=True
    )
    direction = models.CharField(
        _("证据方向"), max_length=16, choices=MemoryDirection.choices, default=MemoryDirection.INBOUND
    )
    created_by = models.CharField(
        _("创建方式"), max_length=16, choices=MemoryCreatedBy.choices, default=MemoryCreatedBy.AUTO
    )
    expires_at = models.DateTimeField(_("过期时间"), null=True, blank=True, db_index=True)
    superseded_by = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="supersedes",
        verbose_name=_("被替代为"),
    )
    # A proposal's reading: the rule that held it back from an automatic write (a row of
    # `qiwei_site.reading.extract.admission.HOLD_BACKS`) and the customer's clause it was read from.
    held_back = models.CharField(_("未自动写入的原因"), max_length=32, blank=True, default="")
    clause = models.CharField(_("客户原话片段"), max_length=300, blank=True, default="")
    history = account_history()

    class Meta:
        verbose_name = _("记忆条目")
        verbose_name_plural = _("记忆条目")
        ordering = ["-importance", "-confidence", "-updated_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["customer", "key"], condition=Q(status="active"), name="uniq_active_memory_key"
            ),
            # One pending proposal per key: a newer reading replaces it, so proposals never pile up.
            models.UniqueConstraint(
                fields=["customer", "key"], condition=Q(status="proposed"), name="uniq_proposed_memory_key"
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0) & Q(confidence__lte=1), name="memory_confidence_range"
            ),
            models.CheckConstraint(
                condition=Q(importance__gte=1) & Q(importance__lte=5), name="memory_importance_range"
            ),
        ]
        indexes = [models.Index(fields=["customer", "status"], name="memory_customer_status")]

    def __str__(self) -> str:
        # Ids only: admin puts this in page titles and its "deleted" message (a cookie), which forget
        # cannot reach, so the content must not be in it.
        return f"[{self.get_type_display()}] #{self.pk}"


class MemorySnapshot(models.Model):
    """An immutable, versioned rendering of a customer's active memory within the core limit."""

    customer = models.ForeignKey(
        Customer, on_delete=models.CASCADE, related_name="memory_snapshots", verbose_name=_("客户")
    )
    version = models.PositiveIntegerField(_("版本"))
    content = models.TextField(_("快照内容"), blank=True)
    sha256 = models.CharField(_("内容哈希"), max_length=64)
    char_count = models.PositiveIntegerField(_("字符数"))
    item_ids = models.JSONField(_("包含条目"), default=list)
    left_out_ids = models.JSONField(_("超限未收录条目"), default=list)
    reason = models.CharField(_("原因"), max_length=200, blank=True)
    created_at = models.DateTimeField(_("创建时间"), auto_now_add=True)

    class Meta:
        verbose_name = _("核心记忆快照")
        verbose_name_plural = _("核心记忆快照")
        ordering = ["customer", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["customer", "version"], name="uniq_snapshot_version"),
        ]

    def __str__(self) -> str:
        return f"快照 v{self.version}"


class DecisionKind(models.TextChoices):
    ADDED = "added", _("人工添加")
    EDITED = "edited", _("人工编辑")
    CONFIRMED = "confirmed", _("人工确认")
    REJECTED = "rejected", _("已拒绝")
    EXPIRED = "expired", _("已过期")
    CLEARED = "cleared", _("画像字段已清空")
    FORGOTTEN = "forgotten", _("已遗忘")
    REPLACED = "replaced", _("被人工改掉的值")
    DECLINED = "declined", _("提议被驳回")


class MemoryDecision(models.Model):
    """A governance decision that automatic paths must respect (DESIGN §7: decisions are final).

    Holds no content: only keyed fingerprints of the item's key and of its (key, value), so a
    forgotten value can still be recognised, and refused, without being kept.
    """

    customer = models.ForeignKey(
        Customer, on_delete=models.CASCADE, related_name="memory_decisions", verbose_name=_("客户")
    )
    kind = models.CharField(_("决定"), max_length=16, choices=DecisionKind.choices)
    key_fingerprint = models.CharField(_("键指纹"), max_length=64)
    value_fingerprint = models.CharField(_("值指纹"), max_length=64)
    decided_at = models.DateTimeField(_("决定时间"), db_index=True)

    class Meta:
        verbose_name = _("治理决定")
        verbose_name_plural = _("治理决定")
        ordering = ["-decided_at", "-id"]
        indexes = [
            models.Index(fields=["customer", "key_fingerprint"], name="decision_customer_key"),
            models.Index(fields=["customer", "value_fingerprint"], name="decision_customer_value"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.decided_at:%Y-%m-%d %H:%M}"


class CaptureJobStatus(models.TextChoices):
    PENDING = "pending", _("待处理")
    RUNNING = "running", _("处理中")
    DONE = "done", _("完成")
    FAILED = "failed", _("失败")


class CaptureJob(TimeStampedModel):
    """A durable extraction request: the row, not the broker message, is the source of truth."""

    customer = models.ForeignKey(
        Customer, on_delete=models.CASCADE, related_name="capture_jobs", verbose_name=_("客户")
    )
    message = models.ForeignKey(
        Message,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="capture_jobs",
        verbose_name=_("来源消息"),
    )
    # Grounded profile updates from a draft are captured through the same queue.
    payload = models.JSONField(_("附加数据"), default=dict, blank=True)
    status = models.CharField(
        _("状态"),
        max_length=16,
        choices=CaptureJobStatus.choices,
        default=CaptureJobStatus.PENDING,
        db_index=True,
    )
    attempts = models.PositiveIntegerField(_("尝试次数"), default=0)
    last_error = models.TextField(_("最近错误"), blank=True)
    next_attempt_at = models.DateTimeField(_("下次尝试"), null=True, blank=True, db_index=True)
    # When a broker message was last sent for this job; the sweeper re-sends only after a grace period.
    enqueued_at = models.DateTimeField(_("入队时间"), null=True, blank=True)
    started_at = models.DateTimeField(_("开始时间"), null=True, blank=True)
    finished_at = models.DateTimeField(_("完成时间"), null=True, blank=True)

    class Meta:
        verbose_name = _("记忆提取任务")
        verbose_name_plural = _("记忆提取任务")
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["message"], condition=Q(message__isnull=False), name="uniq_capture_job_message"
            ),
        ]

    def __str__(self) -> str:
        return f"提取任务 #{self.pk} {self.get_status_display()}"


class MessageRecallFeatures(models.Model):
    """A message's recall features (memory/context/recall.py), computed once when it is stored so
    recall reads them instead of tokenising the history on every turn. Derived data, like the
    search index: deleted with the message; `version` and `text_fingerprint` tell when they no
    longer match the tokeniser or the text, and recall then computes them again."""

    message = models.OneToOneField(
        Message,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="recall_features",
        verbose_name=_("消息"),
    )
    version = models.PositiveSmallIntegerField(_("特征版本"))
    text_fingerprint = models.CharField(_("原文指纹"), max_length=16)
    features = models.TextField(_("召回特征"), blank=True)

    class Meta:
        verbose_name = _("消息召回特征")
        verbose_name_plural = _("消息召回特征")

    def __str__(self) -> str:
        return f"召回特征 v{self.version} #{self.pk}"  # never the features: they spell the text


class MessageReading(models.Model):
    """What the reader read in one customer message when it was first read (issue 36, item 9), kept
    so grounding, re-capture and backfill use it instead of reading the words again inside a
    request. One row per message, deleted with it (forget, erasure). Derived data, like the recall
    features: `reader_version` and `context_key` (`qiwei_site.reading.extract.stored`) tell when it
    no longer matches the reader or what extraction read beside the words, and the one evidence
    check (`memory.capture.evidence`) then reads the message again, once.

    Never the words as received: the gate's verdict by category, rule name and position, and what
    extraction read (values and clauses of the gate-passed words, personal numbers cut out)."""

    message = models.OneToOneField(
        Message,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="reading",
        verbose_name=_("消息"),
    )
    reader_version = models.CharField(_("读取器版本"), max_length=32)
    # Why the message is no evidence when it was read (blocked by the gate, past the reader's
    # bound); empty when it is.
    refusal = models.CharField(_("不作为依据的原因"), max_length=64, blank=True)
    # The gate's verdict: {"blocked", "categories", "rules", "spans": [[start, end, category, rule]]}.
    gate = models.JSONField(_("安全闸结论"), default=dict, blank=True)
    # What extraction read beside the words (a digest), and what it read: null when only the gate
    # has read the message (a hypothesis's evidence needs no more).
    context_key = models.CharField(_("提取上下文指纹"), max_length=32, blank=True)
    extraction = models.JSONField(_("提取结果"), null=True, blank=True)
    read_at = models.DateTimeField(_("读取时间"), auto_now=True)

    class Meta:
        verbose_name = _("消息读取结果")
        verbose_name_plural = _("消息读取结果")

    def __str__(self) -> str:
        return f"读取结果 #{self.pk}"  # never what was read: it quotes the message


class StorageScrub(models.Model):
    """A forget or an erasure whose WAL checkpoint a reader blocked (SQLite): the -wal file keeps the
    old pages until a checkpoint completes. Retried every minute by `memory.tasks.storage_scrub_all`
    (at most `STORAGE_SCRUB_MAX_ATTEMPTS` times) and shown, while pending, on the supervisor's start
    page and on /readyz. Names the conversation, never the content."""

    cause = models.CharField(_("原因"), max_length=32)
    conversation_id = models.CharField(_("会话 ID"), max_length=128, blank=True)
    attempts = models.PositiveIntegerField(_("尝试次数"), default=1)
    created_at = models.DateTimeField(_("创建时间"), auto_now_add=True)
    last_attempt_at = models.DateTimeField(_("最近尝试"), auto_now=True)
    done_at = models.DateTimeField(_("完成时间"), null=True, blank=True)

    class Meta:
        verbose_name = _("待完成的存储清理")
        verbose_name_plural = _("待完成的存储清理")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"存储清理 #{self.pk}（{self.cause}）"
