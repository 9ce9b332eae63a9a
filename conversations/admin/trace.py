"""A draft's context trace as the supervisor reads it (issue 24, item 3): one row per prompt section
with its characters, its budget, what was trimmed and the memory items and messages it quotes,
instead of the trace's JSON. Reads the draft and, in one query, the quoted messages.

Drafts whose prompt was kept carry section offsets (`conversations.selectors.draft_prompt_view`);
older ones only a name → characters map, which gives the same table with fewer details.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conversations.admin.audit import _admin_change_url
from conversations.models import Draft, Message, MessageDirection
from conversations.selectors import draft_prompt_view
from qiwei_site.reading.masking import mask_sensitive

# Section keys of the context builder (memory.context.builder.layout), for traces without titles.
SECTION_NAMES = {
    "instructions": "客服身份、规则与安全边界",
    "core_memory": "客户核心记忆快照",
    "recalled_history": "与最新消息相关的较早历史",
    "business_state": "当前画像、待办、预警与业务反馈",
    "recent_conversation": "近期有效会话",
    "latest_message": "需要回复的最新客户消息",
    "output_contract": "结构化输出约束",
}
# Where a trace says what failed (its `failures[].stage`).
STAGE_NAMES = {
    "prefetch": "读取记忆",
    "recall": "召回较早历史",
    "knowledge": "读取知识库",
    "state": "读取业务状态",
    "snapshot": "读取记忆快照",
}
_DIRECTIONS = {str(value): str(label) for value, label in MessageDirection.choices}
_BUSINESS = {"task": "待办", "alert": "预警", "recommendation": "推荐"}
QUOTE_CHARS = 24


@dataclass(frozen=True)
class TraceLink:
    label: str
    url: str
    text: str = ""  # a message's words, masked and shortened


@dataclass(frozen=True)
class TraceRow:
    title: str
    chars: int | None  # None: an old trace that did not record it
    budget: int | None
    shared_budget: bool
    trimmed: bool
    trimmed_note: str
    links: list[TraceLink] = field(default_factory=list)


@dataclass
class TraceTable:
    rows: list[TraceRow] = field(default_factory=list)
    prompt_chars: int | None = None
    snapshot_version: int | None = None
    fallback: bool = False
    redacted: bool = False
    failures: list[str] = field(default_factory=list)


def _ints(value: Any) -> list[int]:
    return [v for v in value if isinstance(v, int) and not isinstance(v, bool)] if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _quote(message: Message | None) -> str:
    if message is None:
        return ""
    text = " ".join(mask_sensitive(message.text).split())
    return "「" + (text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "…") + "」"


def _message_link(message_id: int, direction: str, messages: dict[int, Message]) -> TraceLink:
    message = messages.get(message_id)
    direction = direction or (message.direction if message else "")
    return TraceLink(
        label=f"{_DIRECTIONS.get(direction, '')}消息 #{message_id}",
        url=_admin_change_url("admin:conversations_message_change", message_id),
        text=_quote(message),
    )


def _item_link(item_id: int, type_label: str = "") -> TraceLink:
    label = f"记忆条目 #{item_id}" + (f"（{type_label}）" if type_label else "")
    return TraceLink(label=label, url=_admin_change_url("admin:memory_memoryitem_change", item_id))


def _trimmed_note(key: str, trimmed: bool, trimmed_ids: list[int], left_out: list[str]) -> str:
    parts = []
    if trimmed_ids:
        what = "记忆条目" if key == "core_memory" else "消息"
        parts.append(f"删去{what} " + "、".join(f"#{i}" for i in trimmed_ids))
    if left_out:
        parts.append("省略知识库段落：" + "、".join(left_out))
    if trimmed and not parts:
        parts.append("超出预算，已截短")
    return "；".join(parts) if parts else "未删减"


def _failures(trace: dict[str, Any]) -> list[str]:
    failures = trace.get("failures")
    return (
        [
            STAGE_NAMES.get(str(entry.get("stage")), str(entry.get("stage") or "未知环节")) + "失败"
            for entry in failures
            if isinstance(entry, dict)
        ]
        if isinstance(failures, list)
        else []
    )


def draft_trace_table(draft: Draft) -> TraceTable:
    """The draft's context trace as table rows, messages quoted by their masked words."""
    trace = draft.context_trace if isinstance(draft.context_trace, dict) else {}
    view = draft_prompt_view(draft)
    table = TraceTable(
        snapshot_version=view.snapshot_version,
        fallback=view.fallback,
        redacted=view.redacted,
        failures=_failures(trace),
        prompt_chars=trace.get("prompt_chars") if isinstance(trace.get("prompt_chars"), int) else None,
    )
    if view.sections:
        message_ids = [ref.id for ref in view.messages]
    else:
        message_ids = [
            *_ints(trace.get("recalled_message_ids")),
            *_ints(trace.get("recent_message_ids")),
            *_ints([trace.get("latest_message_id")]),
        ]
    messages = {m.pk: m for m in Message.objects.filter(customer_id=draft.customer_id, pk__in=message_ids)}
    if view.sections:
        for section in view.sections:
            links = [_item_link(ref.id, ref.type_label) for ref in view.memory_items if ref.section == section.key]
            links += [
                _message_link(ref.id, ref.direction, messages) for ref in view.messages if ref.section == section.key
            ]
            links += [
                TraceLink(
                    label=f"{_BUSINESS[ref.kind]} #{ref.id}",
                    url=_admin_change_url(f"admin:conversations_{ref.kind}_change", ref.id),
                )
                for ref in view.business
                if ref.section == section.key and ref.kind in _BUSINESS
            ]
            table.rows.append(
                TraceRow(
                    title=section.title,
                    chars=section.chars,
                    budget=section.budget,
                    shared_budget=section.budget_scope != section.key,
                    trimmed=section.trimmed or bool(section.trimmed_ids),
                    trimmed_note=_trimmed_note(section.key, section.trimmed, section.trimmed_ids, section.left_out),
                    links=links,
                )
            )
        return table
    # A trace from before prompts were kept: section sizes, budgets and trimmed ids by section name.
    sizes, budgets, trimmed = _dict(trace.get("sections")), _dict(trace.get("budgets")), _dict(trace.get("trimmed"))
    truncated = set(trace.get("truncated_sections") or [])
    quoted = {
        "core_memory": [_item_link(i) for i in _ints(trace.get("memory_item_ids"))],
        "recalled_history": [_message_link(i, "", messages) for i in _ints(trace.get("recalled_message_ids"))],
        "recent_conversation": [_message_link(i, "", messages) for i in _ints(trace.get("recent_message_ids"))],
        "latest_message": [_message_link(i, "", messages) for i in _ints([trace.get("latest_message_id")])],
    }
    keys = [*sizes, *(key for key, links in quoted.items() if links and key not in sizes)]
    for key in keys:
        chars = sizes.get(key)
        trimmed_ids = _ints(trimmed.get(key))
        budget = budgets.get(key)
        table.rows.append(
            TraceRow(
                title=SECTION_NAMES.get(str(key), str(key)),
                chars=chars if isinstance(chars, int) else None,
                budget=budget if isinstance(budget, int) else None,
                shared_budget=False,
                trimmed=key in truncated or bool(trimmed_ids),
                trimmed_note=_trimmed_note(str(key), key in truncated, trimmed_ids, []),
                links=quoted.get(str(key), []),
            )
        )
    return table
