"""The account's audit journal, read-only, with each payload shown as labelled values and links."""

from __future__ import annotations

import json
import re
from typing import Any

from django.contrib import admin
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from conversations.models import AlertKind, AlertLevel, AuditEvent, CustomerProfile
from qiwei_site.platform.admin_site import AccountScopedAdminMixin, ReadOnlyAdminMixin
from qiwei_site.reading.fields import PROFILE_FIELD_NAMES
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


@admin.register(AuditEvent)
class AuditEventAdmin(AccountScopedAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["created_at", "action", "conversation_id", "actor", "reason", "short_payload"]
    list_filter = ("action", ActorFilter, "created_at")

    search_fields = ["=conversation_id", "actor_name", "action", "reason"]
    date_hierarchy = "created_at"
    fields = ["created_at", "action", "conversation_id", "actor_id", "actor_name", "reason", "readable_payload"]
    readonly_fields = [
        "created_at",
        "action",
        "conversation_id",
        "actor_id",
        "actor_name",
        "reason",
        "readable_payload",
    ]

    @admin.display(description="操作人", ordering="actor_name")
    def actor(self, obj: AuditEvent) -> str:
        return actor_label(obj.actor_name)

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
}
# Values that are codes, shown as their Chinese names: safety categories, actors, memory types.
_AUDIT_VALUE_LABELS = {
    **CATEGORY_LABELS,
    "fact": "事实",
    "preference": "偏好",
    "constraint": "排除",
    "event": "事件",
    "hypothesis": "待确认推断",
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


def _audit_value_html(key: str, value: Any) -> SafeString:
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
        return format_html("{}", json.dumps(value, ensure_ascii=False, sort_keys=True))
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
