"""The floor's models: the abstract base every app uses, the account registry with its
memberships (who may see which WeCom account; both registry tables live in `default`), and the
audit trail's models (`AuditAction`, `AuditEvent`, `RegistryAuditEvent`; see below)."""

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from qiwei_site.platform import audit_chain  # noqa: F401  (gives SQLite connections the chain's hash function)
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


class TokenFailureWindow(models.Model):
    """Wrong API tokens from one client address in one minute, counted in `default` so every worker
    process shares one limit (issue 36: a per-process count let two workers take twice as many)."""

    address = models.CharField(_("客户端地址"), max_length=64)
    minute = models.BigIntegerField(_("分钟"))
    failures = models.PositiveIntegerField(_("错误次数"), default=0)

    class Meta:
        verbose_name = _("错误令牌计数")
        verbose_name_plural = _("错误令牌计数")
        constraints = [models.UniqueConstraint(fields=["address", "minute"], name="uniq_token_failure_minute")]

    def __str__(self) -> str:
        return f"{self.address} @ {self.minute}: {self.failures}"


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


# --- the audit trail ---------------------------------------------------------------------------
# Defined on the floor, where the registry's services write them (`qiwei_site.platform.audit`),
# but labelled `conversations`: the tables, their migrations and the admin's URLs stay as they were.
# `AuditEvent` lives in each account's database, `RegistryAuditEvent` in `default`
# (`qiwei_site.platform.tenancy.DEFAULT_DB_MODELS`).


class AuditAction(models.TextChoices):
    """The fixed list of what the audit records; every service that writes names one of these."""

    ACCOUNT_CREATED = "account_created", _("创建企微账号")
    ACCOUNT_UPDATED = "account_updated", _("修改企微账号")
    ACCOUNT_DELETED = "account_deleted", _("删除企微账号")
    MEMBERSHIP_GRANTED = "membership_granted", _("授予账号权限")
    MEMBERSHIP_REVOKED = "membership_revoked", _("撤销账号权限")
    CUSTOMER_UPDATED = "customer_updated", _("修改客户设置")
    CUSTOMER_PROFILE_UPDATED = "customer_profile_updated", _("修改客户画像")
    CUSTOMER_ERASED = "customer_erased", _("删除客户数据")
    MESSAGES_INGESTED = "messages_ingested", _("收到消息")
    MESSAGE_REVEALED = "message_revealed", _("查看未遮蔽消息")
    MESSAGE_FORGOTTEN = "message_forgotten", _("遗忘消息")
    MESSAGES_SEALED = "messages_sealed", _("遮蔽并密封存量消息中的敏感信息")
    STORAGE_SCRUB_PENDING = "storage_scrub_pending", _("存储清理被读取占用，稍后重试")
    AUDIT_WORDS_SCRUBBED = "audit_words_scrubbed", _("清理审计记录中的原话")
    STORAGE_SCRUBBED = "storage_scrubbed", _("完成存储清理")
    MEMORY_ITEM_CAPTURED = "memory_item_captured", _("自动写入记忆")
    MEMORY_ITEM_PROPOSED = "memory_item_proposed", _("提议记忆，待审核")
    MEMORY_PROPOSAL_ACCEPTED = "memory_proposal_accepted", _("采纳提议")
    MEMORY_PROPOSAL_EXPIRED = "memory_proposal_expired", _("提议过期未审核")
    MEMORY_ITEM_BACKFILLED = "memory_item_backfilled", _("回填记忆")
    MEMORY_ITEM_ADDED = "memory_item_added", _("人工添加记忆")
    MEMORY_ITEM_EDITED = "memory_item_edited", _("人工编辑记忆")
    MEMORY_ITEM_CONFIRMED = "memory_item_confirmed", _("确认推断为事实")
    MEMORY_ITEM_REJECTED = "memory_item_rejected", _("驳回记忆")
    MEMORY_ITEM_EXPIRED = "memory_item_expired", _("记忆过期")
    MEMORY_ITEM_FORGOTTEN = "memory_item_forgotten", _("遗忘记忆")
    MEMORY_ITEM_SUPERSEDED = "memory_item_superseded", _("记忆被取代")
    MEMORY_CAPTURE_BLOCKED = "memory_capture_blocked", _("安全拦截：未写入记忆")
    MEMORY_CAPTURE_FAILED = "memory_capture_failed", _("记忆写入失败")
    MEMORY_RECALL_FAILED = "memory_recall_failed", _("读取记忆失败")
    SESSION_EPOCH_OPENED = "session_epoch_opened", _("开启模型会话")
    SESSION_EPOCH_ROTATED = "session_epoch_rotated", _("轮换模型会话")
    DRAFT_GENERATED = "draft_generated", _("生成回复草稿")
    DRAFT_APPROVED = "draft_approved", _("批准草稿")
    DRAFT_REJECTED = "draft_rejected", _("拒绝草稿")
    DRAFT_SENT = "draft_sent", _("发送回复")
    DRAFT_AUTO_SENT = "draft_auto_sent", _("自动发送回复")
    DRAFT_SEND_FAILED = "draft_send_failed", _("发送失败")
    WORKER_PING = "worker_ping", _("后台任务连通检查")
    ALERT_RAISED = "alert_raised", _("产生预警")
    ALERT_RESOLVED = "alert_resolved", _("处理预警")
    ALERT_CREATED = "alert_created", _("人工新建预警")
    ALERT_UPDATED = "alert_updated", _("修改预警")
    TASK_CREATED = "task_created", _("新建待办")
    TASK_UPDATED = "task_updated", _("修改待办")
    TASK_RESOLVED = "task_resolved", _("完成待办")
    RECOMMENDATION_CREATED = "recommendation_created", _("新建推荐")
    RECOMMENDATION_UPDATED = "recommendation_updated", _("修改推荐")
    RECOMMENDATION_RESOLVED = "recommendation_resolved", _("结束推荐")
    RECOMMENDATION_FEEDBACK_RECORDED = "recommendation_feedback_recorded", _("记录推荐反馈")
    WECOM_CONNECTED = "wecom_connected", _("连接企业微信客服")
    WECOM_DISCONNECTED = "wecom_disconnected", _("断开企业微信客服")
    CUSTOMER_UPSTREAM_PROFILE = "customer_upstream_profile", _("从企业微信更新客户昵称头像")


class AuditRecord(models.Model):
    """What every audit row says: which action, who, why, and ids (never forgotten content or secrets).

    Append-only and chained (`qiwei_site.platform.audit_chain`): the writer sets the time and the
    two content hashes, the database links the row to the one before it and refuses any change
    but a scrub's."""

    action = models.CharField(_("操作"), max_length=64, db_index=True, choices=AuditAction.choices)
    actor_id = models.IntegerField(_("操作人 ID"), null=True, blank=True)
    actor_name = models.CharField(_("操作人"), max_length=150, blank=True)
    reason = models.CharField(_("原因"), max_length=300, blank=True)
    payload = models.JSONField(_("详情"), default=dict, blank=True)
    # Set by the writer (not auto_now_add, which would overwrite it): the time is hashed before the insert.
    created_at = models.DateTimeField(_("时间"), default=timezone.now, db_index=True)
    payload_hash = models.CharField(_("原因与详情的哈希"), max_length=64, blank=True, default="", editable=False)
    entry_hash = models.CharField(_("记录哈希"), max_length=64, blank=True, default="", editable=False)
    prev_hash = models.CharField(_("前一行的链哈希"), max_length=64, blank=True, default="", editable=False)
    chain_hash = models.CharField(_("链哈希"), max_length=64, blank=True, default="", editable=False)
    chain_seq = models.PositiveBigIntegerField(_("链序号"), null=True, blank=True, unique=True, editable=False)
    # A scrub's signature over the words it left (forget, erasure; `audit_anchor.scrub_seal`, an HMAC
    # under a key the database does not hold); blank while the row is as written.
    scrubbed_hash = models.CharField(_("清理后的哈希"), max_length=64, blank=True, default="", editable=False)

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]


class AuditEvent(AuditRecord):
    """Who did what to whose data, in the account's database.

    Kept by conversation id rather than a foreign key, so an erasure's own audit survives it.
    """

    conversation_id = models.CharField(_("会话 ID"), max_length=128, blank=True, db_index=True)

    class Meta(AuditRecord.Meta):
        app_label = "conversations"  # its table, migrations and admin pages stay `conversations`'
        verbose_name = _("审计事件")
        verbose_name_plural = _("审计事件")

    def __str__(self) -> str:
        return f"{self.get_action_display()} {self.conversation_id}"


class RegistryAuditEvent(AuditRecord):
    """Who changed the account registry (accounts, memberships). Lives in `default`, because an
    account's own database cannot keep the record of its deletion."""

    account_id = models.CharField(_("账号 ID"), max_length=40, db_index=True)

    class Meta(AuditRecord.Meta):
        app_label = "conversations"  # its table, migrations and admin pages stay `conversations`'
        verbose_name = _("账号审计事件")
        verbose_name_plural = _("账号审计事件")

    def __str__(self) -> str:
        return f"{self.get_action_display()} {self.account_id}"


# --- what a context showed ---------------------------------------------------------------------


class ContextReadPurpose(models.TextChoices):
    DRAFT = "draft", _("生成草稿（交给模型）")
    API = "api", _("通过接口读取上下文")
    # issue 36: every other read of what a context showed is recorded too
    DRAFT_PROMPT = "draft_prompt", _("查看草稿的提示词")
    DRAFT_TRACE = "draft_trace", _("在后台查看草稿的上下文追踪")


class ContextRead(models.Model):
    """One context that fed a model or was read through the API: which snapshot version, memory
    items and messages it showed, in which model session, for whom. Ids only, never text.

    Its own table, not an audit action: reads outnumber writes by far and are purged after
    `QIWEI_CONTEXT_READ_RETENTION_DAYS`, which the append-only audit chain would refuse."""

    created_at = models.DateTimeField(_("时间"), default=timezone.now, db_index=True)
    conversation_id = models.CharField(_("会话 ID"), max_length=128, db_index=True)
    purpose = models.CharField(_("用途"), max_length=16, choices=ContextReadPurpose.choices)
    actor_id = models.IntegerField(_("操作人 ID"), null=True, blank=True)
    actor_name = models.CharField(_("操作人"), max_length=150, blank=True)
    reply_to_id = models.BigIntegerField(_("回复的消息 ID"), null=True, blank=True)
    snapshot_version = models.PositiveIntegerField(_("快照版本"), null=True, blank=True)
    item_ids = models.JSONField(_("记忆条目 ID"), default=list, blank=True)
    recalled_message_ids = models.JSONField(_("召回的消息 ID"), default=list, blank=True)
    recent_message_ids = models.JSONField(_("最近消息 ID"), default=list, blank=True)
    session_id = models.CharField(_("模型会话"), max_length=128, blank=True)
    draft_id = models.BigIntegerField(_("草稿 ID"), null=True, blank=True)
    degraded = models.BooleanField(_("记忆读取失败时的最小上下文"), default=False)

    class Meta:
        app_label = "conversations"  # in each account's database, beside the audit
        verbose_name = _("上下文读取记录")
        verbose_name_plural = _("上下文读取记录")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.get_purpose_display()} {self.conversation_id}"


class KeyFingerprint(models.Model):
    """A key this system has used, by fingerprint (an HMAC of a constant under the key: which key,
    never the key): a key is made only while none is on record, and a key none of whose fingerprints
    is on record is the wrong one (issue 36, `qiwei_site.platform.keyfiles`). In `default`."""

    purpose = models.CharField(_("用途"), max_length=32)
    fingerprint = models.CharField(_("指纹"), max_length=64)
    first_seen = models.DateTimeField(_("首次记录"), default=timezone.now)

    class Meta:
        verbose_name = _("密钥指纹")
        verbose_name_plural = _("密钥指纹")
        constraints = [models.UniqueConstraint(fields=["purpose", "fingerprint"], name="uniq_key_fingerprint")]

    def __str__(self) -> str:
        return f"{self.purpose}: {self.fingerprint[:12]}"
