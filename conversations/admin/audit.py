"""The account's audit journal, read-only, with each payload shown as labelled values and links."""

from __future__ import annotations

import json
import re
from typing import Any

from django.apps import apps
from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from conversations.models import (
    AlertKind,
    AlertLevel,
    AuditEvent,
    Customer,
    CustomerProfile,
    FeedbackSource,
    MessageDirection,
)
from qiwei_site.platform.admin_site import AccountScopedAdminMixin, ReadOnlyAdminMixin
from qiwei_site.reading.extract import hold_back_label
from qiwei_site.reading.fields import PROFILE_FIELD_LABELS, PROFILE_FIELD_NAMES, profile_field_of
from qiwei_site.reading.safety import CATEGORY_LABELS


class ActorFilter(admin.SimpleListFilter):
    """Who acted, system actors by their Chinese names (「自动提取」, not `capture`)."""

    title = "操作人"
    parameter_name = "actor_name"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        names = model_admin.get_queryset(request).order_by("actor_name").values_list("actor_name", flat=True)
        return [(name, actor_label(name)) for name in dict.fromkeys(names) if name]

    def queryset(self, request: Any, queryset: Any) -> Any:
        return queryset.filter(actor_name=self.value()) if self.value() else queryset


class AuditChangeList(ChangeList):
    """The page's rows with their customers, fetched once for the whole page (rows name a
    customer by conversation id; the supervisor reads the customer's name)."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        rows = list(self.result_list)
        customers = customers_by_conversation({row.conversation_id for row in rows})
        for row in rows:
            row.customer_row = customers.get(row.conversation_id)  # type: ignore[attr-defined]


def customers_by_conversation(conversation_ids: set[str]) -> dict[str, Customer]:
    ids = {cid for cid in conversation_ids if cid}
    return {c.conversation_id: c for c in Customer.objects.filter(conversation_id__in=ids)} if ids else {}


def customer_html(conversation_id: str, customer: Customer | None) -> SafeString:
    """「王先生」 linked to the customer's page, the conversation id beside it; an erased or unknown
    customer by the conversation id alone."""
    if not conversation_id:
        return format_html("{}", "无")
    if customer is None:
        return format_html('{} <span class="quiet">（已删除或未知客户）</span>', conversation_id)
    url = _admin_change_url("admin:conversations_customer_change", customer.pk)
    name = customer.display_name or "未命名客户"
    if not url:
        return format_html("{}", name)
    return format_html('<a href="{}">{}</a> <span class="quiet">{}</span>', url, name, conversation_id)


@admin.register(AuditEvent)
class AuditEventAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["created_at", "action", "customer", "actor", "reason", "short_payload"]
    list_filter = ("action", ActorFilter, "created_at")

    search_fields = ["=conversation_id", "actor_name", "action", "reason"]
    date_hierarchy = "created_at"
    fields = ["created_at", "action", "customer", "actor", "reason", "readable_payload"]
    readonly_fields = ["created_at", "action", "customer", "actor", "reason", "readable_payload"]

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return AuditChangeList

    @admin.display(description="客户", ordering="conversation_id")
    def customer(self, obj: AuditEvent) -> SafeString:
        if hasattr(obj, "customer_row"):
            found = obj.customer_row
        else:
            found = customers_by_conversation({obj.conversation_id}).get(obj.conversation_id)
        return customer_html(obj.conversation_id, found)

    @admin.display(description="操作人", ordering="actor_name")
    def actor(self, obj: AuditEvent) -> SafeString:
        """A person by their user name, linked to their staff page; the system by its Chinese name."""
        url = _admin_change_url("admin:auth_user_change", obj.actor_id) if obj.actor_id else ""
        if url:  # the name was recorded with the row: no lookup per row
            return format_html('<a href="{}">{}</a>', url, obj.actor_name or f"用户 #{obj.actor_id}")
        return format_html("{}", actor_label(obj.actor_name))

    @admin.display(description="详情")
    def short_payload(self, obj: AuditEvent) -> str:
        return audit_payload_html(obj.payload or {}, limit=6)

    @admin.display(description="详情")
    def readable_payload(self, obj: AuditEvent) -> str:
        return audit_payload_html(obj.payload or {})


# What an audit payload's keys mean, and which admin page an id in it opens.
_AUDIT_KEY_LABELS = {
    "item_id": "记忆条目",
    "item_ids": "记忆条目",
    "superseded_item_id": "被替代的条目",
    "message_id": "消息",
    "message_ids": "消息",
    "source_message_ids": "依据消息",
    "draft_id": "草稿",
    "delivery_id": "发送记录",
    "task_id": "待办",
    "alert_id": "预警",
    "recommendation_id": "推荐",
    "feedback_id": "反馈",
    "job_id": "提取任务",
    "snapshot_version": "快照版本",
    "version": "版本",
    "type": "类型",
    "key": "键",
    "kind": "来源",
    "level": "级别",
    "field": "字段",
    "fields": "字段",
    "categories": "类别",
    "confidence": "置信度",
    "importance": "重要度",
    "status": "状态",
    "stage": "环节",
    "attempt": "第几次",
    "outcome": "结果",
    "counts": "数量",
    "session_id": "模型会话",
    "user_id": "用户",
    "account_id": "账号",
    "snapshots_redacted": "已改写的快照",
    "prompts_redacted": "已改写的提示词",
    # issue 24, item 2: every key a service writes has a Chinese name
    "history_rows_deleted": "删除的历史记录",
    "profile_field_cleared": "已清空画像字段",
    "superseded_ids": "被替代的条目",
    "sealed_originals_deleted": "删除的密封原文",
    "sealed_original_deleted": "已删除密封原文",
    "items_forgotten": "随之遗忘的记忆",
    "items_evidence_removed": "移除证据的记忆",
    "drafts_scrubbed": "已清除其内容的草稿",
    "capture_jobs_cancelled": "已取消的待写入",
    "draft_ids": "草稿",
    "row_ids": "清理的审计记录",
    "grounded_fields": "已核验的画像字段",
    "dropped_fields": "未核验的画像字段",
    "error": "错误",
    "client": "模型客户端",
    "auto": "自动发送",
    "upstream_id": "上游消息 ID",
    "requires_human": "需要人工",
    "reason": "原因",
    "close_reason": "关闭原因",
    "old_session_id": "旧会话",
    "new_session_id": "新会话",
    "memory_version": "记忆版本",
    "recalled_message_ids": "召回的消息",
    "recent_message_ids": "最近消息",
    "capture_job_ids": "提取任务",
    "scrub_id": "存储清理",
    "attempts": "尝试次数",
    "created": "新建",
    "updated": "更新",
    "unchanged": "未变",
    "count": "数量",
    "total": "合计",
    "threshold": "阈值",
    "value": "值",
    "cause": "起因",
    "customer_id": "客户",
    "external_id": "外部消息 ID",
    "direction": "方向",
    "due_at": "截止时间",
    "expires_at": "过期时间",
    "title": "标题",
    "text": "内容",
    "verdict": "结论",
    "grounded": "已核验",
    "duplicates": "重复消息",
    "name": "名称",
    # issue 39: the keys the issue found in English, and every other key a service writes
    "automatic": "自动执行",
    "edited": "已修改内容",
    "previous_type": "原类型",
    "hypothesis_content": "推断原措辞",
    "content": "内容",
    "wording_edited": "措辞经主管修改",
    "held_back": "未自动写入的原因",
    "proposal": "待审核提议",
    "final": "不再重试",
    "generating": "生成中",
    "regenerate": "重新生成",
    "replaces": "替换的草稿",
    "source": "来源",
    "old_turns": "旧会话轮数",
    "parent_session_id": "上一模型会话",
    "pruned_epochs": "清理的旧会话",
    "registry_rows": "删除的登记记录",
    "marker": "标记",
    "profile_updates": "画像更新",
    "forced": "强制",
    "is_active": "启用",
    "display_name": "显示名",
    "session_mode": "会话模式",
    "auto_send_whitelisted": "自动发送白名单",
    "clauses": "遮蔽的原话片段",
    "messages": "消息",
    "sealed": "已密封",
    "masked": "已遮蔽",
    "rule": "规则",
    "turns": "轮数",
    "chars": "字数",
    "history_rows": "历史记录",
    "corp_id": "企业 ID",
    "open_kfids": "客服账号",
    "upstream": "上游",
}
# Values that are codes, shown as their Chinese names: safety categories, actors, memory types.
_AUDIT_VALUE_LABELS = {
    **CATEGORY_LABELS,
    "wecom": "企业微信客服",
    "fact": "事实",
    "preference": "偏好",
    "constraint": "排除",
    "event": "事件",
    "hypothesis": "待确认推断",
    # a message's side, and the settled states of memory
    **{str(value): str(label) for value, label in MessageDirection.choices},
    **{str(value): str(label) for value, label in FeedbackSource.choices},
    # where a failure happened (`stage`) and what a storage scrub cleans up after (`cause`)
    "prefetch": "读取上下文",
    "context_read": "记录上下文读取",
    "knowledge": "知识库",
    "snapshot": "记忆快照",
    "epoch_open": "开启模型会话",
    "grounding": "画像核验",
    "hypothesis_grounding": "推断核验",
    "draft_capture": "草稿写入记忆",
    "recall": "召回",
    "capture": "记忆写入",
    "forget": "遗忘",
    "erase": "删除客户数据",
    "message_forget": "遗忘消息",
    "active": "有效",
    "proposed": "待审核",
    "rejected": "已拒绝",
    "auto": "自动",
    "human": "人工",
    "internal": "内部",
    # a capture's outcome (memory.items)
    "created": "新建",
    "evidence_added": "补充证据",
    "superseded": "替代旧值",
    "unchanged": "未变",
    "refused": "拒绝写入",
    # an alert's kind and level, and a profile field, by their labels
    **{str(value): str(label) for value, label in (*AlertKind.choices, *AlertLevel.choices)},
    **{
        field.name: str(field.verbose_name)
        for field in CustomerProfile._meta.concrete_fields
        if field.name in PROFILE_FIELD_NAMES
    },
}
# Who acted, when it was the system rather than a person.
ACTOR_LABELS = {
    "capture": "自动提取",
    "pipeline": "草稿流水线",
    "backfill": "历史回填",
    "seed_demo": "演示数据",
    "manage.py": "命令行",
    "system": "系统",
    "beat": "定时任务",
    "expiry": "到期清理",
    "grounding": "画像核验",
    "api": "接口",
}


def actor_label(name: str) -> str:
    return ACTOR_LABELS.get(name, name)


_AUDIT_ID_PAGES = {
    "item_id": "admin:memory_memoryitem_change",
    "item_ids": "admin:memory_memoryitem_change",
    "superseded_item_id": "admin:memory_memoryitem_change",
    "message_id": "admin:conversations_message_change",
    "message_ids": "admin:conversations_message_change",
    "source_message_ids": "admin:conversations_message_change",
    "draft_id": "admin:conversations_draft_change",
    "task_id": "admin:conversations_task_change",
    "alert_id": "admin:conversations_alert_change",
    "recommendation_id": "admin:conversations_recommendation_change",
    "job_id": "admin:memory_capturejob_change",
}


_MESSAGE_CAUSE = re.compile(r"message:(\d+)")


# The fields an edit names (`fields: ["content"]`): memory's (conversations may not import memory,
# so by name here) and, for any other, the verbose name of a model field of that name.
_FIELD_LABELS = {
    "avatar_url": "头像",
    "upstream_channel": "客服账号",
    "corp_id": "企业 ID",
    "secret": "客服应用密钥",
    "token": "回调令牌",
    "aes_key": "消息加密密钥",
    "open_kfids": "客服账号",
    "upstream": "上游",
    "content": "内容",
    "type": "类型",
    "importance": "重要度",
    "confidence": "置信度",
    "expires_at": "过期时间",
    "status": "状态",
    **PROFILE_FIELD_LABELS,
}
# A memory key's first part: what kind of item it is.
_KEY_KINDS = {
    "fact": "事实",
    "preference": "偏好",
    "constraint": "排除",
    "event": "事件",
    "hypothesis": "待确认推断",
    "address": "称呼",
}
_DIGEST = re.compile(r"[0-9a-f]{12}")


def field_label(name: str) -> str:
    if name in _FIELD_LABELS:
        return _FIELD_LABELS[name]
    for model in apps.get_models():
        try:
            field = model._meta.get_field(name)
        except FieldDoesNotExist:
            continue
        verbose = getattr(field, "verbose_name", None)
        if verbose:
            return str(verbose)
    return name


def memory_key_label(key: str) -> str:
    """A memory key as a supervisor reads it: 「画像·预算」, 「人工添加的偏好」, 「偏好：地铁附近」,
    never `human:preference:3fa2c1d0e9b8` (a digest is no word)."""
    profile_field = profile_field_of(key)
    if profile_field is not None:
        return f"画像·{PROFILE_FIELD_LABELS[profile_field]}"
    parts = key.split(":")
    if parts[0] == "human":
        return f"人工添加的{_KEY_KINDS.get(parts[1], '记忆') if len(parts) > 1 else '记忆'}"
    kind = _KEY_KINDS.get(parts[0])
    rest = ":".join(parts[1:])
    if kind is None:
        return "记忆键"
    if parts[0] == "hypothesis" or not rest or _DIGEST.fullmatch(rest) or rest.isascii():
        # a model's own slug (commute_first) or a digest says nothing a supervisor reads
        return kind
    return f"{kind}：{rest}"


def _counted_label(name: str) -> str:
    """A count's name: a model label (「conversations.Message」) by its verbose name, else the key's."""
    if "." in name:
        try:
            return str(apps.get_model(name)._meta.verbose_name)
        except (LookupError, ValueError):
            return name
    return _AUDIT_KEY_LABELS.get(name, name)


def _user_html(user_id: int) -> SafeString:
    user = get_user_model()._default_manager.filter(pk=user_id).first()
    if user is None:
        return format_html("用户 #{}", user_id)
    url = _admin_change_url(f"admin:{user._meta.app_label}_{user._meta.model_name}_change", user_id)
    name = user.get_username()
    return format_html('<a href="{}">{}</a>', url, name) if url else format_html("{}", name)


def _audit_value_html(key: str, value: Any) -> SafeString:
    if key == "user_id" and isinstance(value, int) and not isinstance(value, bool):
        return _user_html(value)
    if key in ("field", "fields") and isinstance(value, str | list):
        names = value if isinstance(value, list) else [value]
        return format_html("{}", "、".join(field_label(str(name)) for name in names) or "无")
    if key == "key" and isinstance(value, str):
        return format_html("{}", memory_key_label(value))
    if key == "held_back" and isinstance(value, str):
        return format_html("{}", hold_back_label(value) if value else "无")
    if key == "cause" and isinstance(value, str) and (cause := _MESSAGE_CAUSE.fullmatch(value)):
        # An automatic alert's cause names the message that raised it: "消息 #25", linked.
        message_id = int(cause.group(1))
        url = _admin_change_url("admin:conversations_message_change", message_id)
        return format_html('消息 <a href="{}">#{}</a>', url, message_id) if url else format_html("消息 #{}", message_id)
    page = _AUDIT_ID_PAGES.get(key)
    values = value if isinstance(value, list) else [value]
    if page and values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        links = []
        for v in values:
            url = _admin_change_url(page, v)
            links.append(format_html('<a href="{}">#{}</a>', url, v) if url else format_html("#{}", v))
        return format_html_join(", ", "{}", ((link,) for link in links))
    if value is None or value == "" or value == []:
        return format_html("{}", "无")
    if isinstance(value, bool):
        return format_html("{}", "是" if value else "否")
    if isinstance(value, list):
        return format_html("{}", "、".join(_AUDIT_VALUE_LABELS.get(str(v), str(v)) for v in value))
    if isinstance(value, str) and value in _AUDIT_VALUE_LABELS:
        return format_html("{}", _AUDIT_VALUE_LABELS[value])
    if isinstance(value, dict):
        # counts and changes: each entry by its Chinese name, never raw JSON
        entries = ((_counted_label(str(k)), _audit_value_html(str(k), v)) for k, v in value.items())
        return format_html_join("、", "{} {}", entries) if value else format_html("{}", "无")
    return format_html("{}", value)


def audit_payload_html(payload: dict[str, Any], limit: int | None = None) -> SafeString:
    """An audit payload as a supervisor reads it: Chinese names for its keys and links for its ids
    (payloads hold ids, types and categories, never the customer's words). Every value is escaped."""
    entries = list(payload.items())
    shown = entries if limit is None else entries[:limit]
    rows = [(_AUDIT_KEY_LABELS.get(key, key), _audit_value_html(key, value)) for key, value in shown]
    if not rows:
        return format_html("{}", "无")
    text = format_html_join("；", "{}：{}", rows)
    if limit is not None and len(entries) > limit:
        text = format_html("{}；…（另 {} 项）", text, len(entries) - limit)
    return text


def _pretty(value: Any) -> str:
    return format_html(
        '<pre style="white-space: pre-wrap; max-width: 80em">{}</pre>',
        json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True),
    )


def _admin_change_url(name: str, object_id: int) -> str:
    """An admin change page by URL name (memory's pages too: conversations may not import memory)."""
    try:
        return reverse(name, args=[object_id])
    except NoReverseMatch:
        return ""
