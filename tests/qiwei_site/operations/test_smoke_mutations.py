"""The smoke check catches regressions (issues 11 and 25): for each spec §8 step, the behaviour is
broken on purpose — the real function monkeypatched to what a plausible wrong change would make it
— and `agent_console_smoke` must exit non-zero naming that step, failing on the check meant for it."""

from __future__ import annotations

import copy
import dataclasses
import io
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from conversations import drafts
from conversations.models import Message
from memory import decisions, snapshots
from memory.capture import evidence
from memory.capture import services as capture_services
from memory.governance import services as governance
from memory.models import DecisionKind, MemoryCreatedBy
from memory.safety import ScanResult
from qiwei_site.reading.extract import Extraction
from sessions_epoch import services as epochs


def _without_blocker(prefix: str) -> Callable[..., list[str]]:
    """draft_auto_send_blockers with one of its checks removed (a regression someone might write)."""
    original = drafts.draft_auto_send_blockers

    def blockers(draft: Any, customer: Any = None) -> list[str]:
        return [reason for reason in original(draft, customer) if not reason.startswith(prefix)]

    return blockers


def _auto_send_without(mp: pytest.MonkeyPatch, prefix: str) -> None:
    # The function itself is broken: the pipeline and the send path both see it.
    broken = _without_blocker(prefix)
    mp.setattr("conversations.drafts.draft_auto_send_blockers", broken)
    mp.setattr("sessions_epoch.pipeline.draft_auto_send_blockers", broken)


def _schedule_without_expiry(settings: Any) -> None:
    settings.CELERY_BEAT_SCHEDULE = {
        name: entry
        for name, entry in settings.CELERY_BEAT_SCHEDULE.items()
        if entry["task"] != "memory.tasks.memory_expire_all"
    }


def _render_without_limit(original: Callable[..., Any]) -> Callable[..., Any]:
    return lambda items, limit=None: original(items, limit=10**9)


def _effective_including_rejected(customer: Any) -> Any:
    from memory.models import MemoryItem

    return MemoryItem.objects.filter(customer=customer).exclude(status="superseded").order_by("-importance", "-id")


def _gate_passing(original: Callable[[str], ScanResult]) -> Callable[[str], ScanResult]:
    """The gate as one caller would read it after losing its `blocked` check (spans still found)."""
    return lambda text: dataclasses.replace(original(text), blocked=False, categories=[])


class _MessagesOfBothDirections:
    """`Message` as grounding's query would see it with the filter's direction condition lost."""

    class objects:  # stands in for the model manager
        @staticmethod
        def filter(*args: Any, **kwargs: Any) -> Any:
            kwargs.pop("direction", None)
            return Message.objects.filter(*args, **kwargs)


class _AnyDirection:
    """`MessageDirection` as the evidence check would see it with its inbound condition lost."""

    class INBOUND:
        def __ne__(self, other: object) -> bool:
            return False

        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = object.__hash__

    INBOUND = INBOUND()  # type: ignore[assignment,misc]


def _staff_words_as_evidence(mp: pytest.MonkeyPatch) -> None:
    """Grounding's query and the one evidence check both lose the customer-only condition."""
    mp.setattr("memory.capture.grounding.Message", _MessagesOfBothDirections)
    mp.setattr("memory.capture.readings.Message", _MessagesOfBothDirections)
    mp.setattr("memory.capture.evidence.MessageDirection", _AnyDirection)


def _hypothesis_evidence_unjudged(message: Any, *, customer: Any, context: Any = None) -> Any:
    """The evidence check as hypothesis grounding would see it with its refusals lost (profile
    grounding, which passes a context, still judged)."""
    judged = evidence.message_evidence(message, customer=customer, context=context)
    return judged if context is not None else dataclasses.replace(judged, refusal=None, words=judged.words or "预算")


def _reads_any_mention(original: Callable[..., bool]) -> Callable[..., bool]:
    """read_field that also accepts a value any reading of the message mentions, whatever it says
    of it: "我不要朝阳区的房子" (a constraint) would ground district 朝阳区."""

    def read_field(field: str, value: str, candidates: Any, context: Any) -> bool:
        candidates = list(candidates)
        return original(field, value, candidates, context) or any(value in c.content for c in candidates)

    return read_field


def _newest_instead_of_relevant(query_features: Any, documents: Any, limit: int, **kwargs: Any) -> list[int]:
    """Recall that keeps the newest `limit` older messages (documents are oldest first)."""
    return list(range(len(documents)))[-limit:]


def _called_from(function_name: str) -> bool:
    return sys._getframe(2).f_code.co_name == function_name


def _edit_leaves_created_by(original: Callable[..., None]) -> Callable[..., None]:
    """item_row_save as memory_item_edit would call it with "created_by" missing from update_fields."""

    def item_row_save(item: Any, *, update_fields: list[str] | None = None, **kwargs: Any) -> None:
        if update_fields is not None and _called_from("memory_item_edit"):
            update_fields = [name for name in update_fields if name != "created_by"]
        original(item, update_fields=update_fields, **kwargs)

    return item_row_save


def _edit_skips_snapshot(original: Callable[..., Any]) -> Callable[..., Any]:
    """snapshot_refresh no longer called by memory_item_edit (every other service still calls it)."""

    def snapshot_refresh(**kwargs: Any) -> Any:
        return (None, False) if _called_from("memory_item_edit") else original(**kwargs)

    return snapshot_refresh


def _capture_without_snapshot(original: Callable[..., Any]) -> Callable[..., Any]:
    """capture_apply flushing its writes with refresh_snapshot=False, whatever the caller asked."""
    return lambda plan, *, actor="capture", refresh_snapshot=True: original(plan, actor=actor, refresh_snapshot=False)


def _rotation_by_turns_only(epoch: Any, now: Any) -> str | None:
    from django.conf import settings

    from sessions_epoch.models import CloseReason

    return CloseReason.MAX_TURNS if epoch.turns >= settings.CLAUDE_CODE_SESSION_MAX_TURNS else None


def _refusal_blind_to_edits(original: Callable[..., str | None]) -> Callable[..., str | None]:
    """automatic_write_refusal without the rules that let a supervisor's edit stand: the value an
    edit replaced is no longer remembered, and a human item no longer outranks older words."""

    def refusal(**kwargs: Any) -> str | None:
        customer = kwargs["customer"]
        known = kwargs.get("decisions") or decisions.CustomerDecisions.load(customer)
        kwargs["decisions"] = decisions.CustomerDecisions(
            rows=[row for row in known.rows if row[0] != DecisionKind.REPLACED]
        )
        active = kwargs.get("active")

        def as_automatic(key: str) -> Any:
            from memory.models import MemoryItem

            item = (
                active(key)
                if active is not None
                else MemoryItem.objects.filter(customer=customer, key=key, status="active").first()
            )
            if item is None or item.created_by != MemoryCreatedBy.HUMAN:
                return item
            seen = copy.copy(item)
            seen.created_by = MemoryCreatedBy.AUTO
            return seen

        kwargs["active"] = as_automatic
        return original(**kwargs)

    return refusal


class Mutation(NamedTuple):
    step: str
    breakage: str
    mutate: Callable[[pytest.MonkeyPatch, Any], None]
    # A fragment of the failing check's message: the step fails on the check meant for this breakage.
    detail: str


MUTATIONS: list[Mutation] = [
    Mutation(
        "explicit_fact_preference_constraint_capture",
        "extraction finds nothing",
        lambda mp, settings: mp.setattr("memory.capture.evidence.extract", lambda text, *a, **k: Extraction([], [])),
        "预算事实未写入",
    ),
    Mutation(
        "explicit_fact_preference_constraint_capture",
        "capture never refreshes the snapshot",
        lambda mp, settings: mp.setattr(
            "memory.capture.services.capture_apply", _capture_without_snapshot(capture_services.capture_apply)
        ),
        "捕获后快照未刷新",
    ),
    Mutation(
        "injection_and_credentials_kept_out_of_memory",
        "the safety gate lets everything through",
        lambda mp, settings: mp.setattr(
            "memory.capture.evidence.scan", lambda text: ScanResult(blocked=False, categories=[])
        ),
        "未被安全闸拦截",
    ),
    Mutation(
        "injection_and_credentials_kept_out_of_memory",
        "the gate stops blocking zero-width and bidi characters",
        lambda mp, settings: mp.setattr("qiwei_site.reading.safety._hidden_characters", lambda text: False),
        "未按隐藏字符拦截",
    ),
    Mutation(
        "older_relevant_history_recalled",
        "recall returns nothing",
        lambda mp, settings: mp.setattr("memory.context.recall.recall_for", lambda customer, latest, **kwargs: []),
        "未被召回",
    ),
    Mutation(
        "older_relevant_history_recalled",
        "recall returns the newest older messages instead of the relevant ones",
        lambda mp, settings: mp.setattr("memory.context.recall.rank_documents", _newest_instead_of_relevant),
        "未被召回",
    ),
    Mutation(
        "core_snapshot_within_limit",
        "the snapshot ignores the core limit",
        lambda mp, settings: mp.setattr(
            "memory.snapshots.render_snapshot", _render_without_limit(snapshots.render_snapshot)
        ),
        "超过上限",
    ),
    Mutation(
        "epoch_rotation_by_turns_keeps_parent_and_history",
        "epochs never rotate",
        lambda mp, settings: mp.setattr("sessions_epoch.services._rotation_due", lambda epoch, now: None),
        "应开启新 Epoch",
    ),
    Mutation(
        "epoch_rotation_by_age_keeps_last_50_closed",
        "age rotation removed",
        lambda mp, settings: mp.setattr("sessions_epoch.services._rotation_due", _rotation_by_turns_only),
        "后未开启新 Epoch",
    ),
    Mutation(
        "epoch_rotation_by_age_keeps_last_50_closed",
        "fewer than 50 closed epochs kept",
        lambda mp, settings: mp.setattr("sessions_epoch.services.CLOSED_EPOCHS_KEPT", epochs.CLOSED_EPOCHS_KEPT - 1),
        "应保留最近 50 个已关闭 Epoch",
    ),
    Mutation(
        "review_whitelist_send_idempotency_grounding",
        "auto-send ignores the session mode",
        lambda mp, settings: _auto_send_without(mp, "会话模式"),
        "辅助模式下的草稿被自动发送",
    ),
    Mutation(
        "review_whitelist_send_idempotency_grounding",
        "auto-send ignores the confidence threshold",
        lambda mp, settings: _auto_send_without(mp, "置信度"),
        "低置信度的草稿被自动发送",
    ),
    Mutation(
        "review_whitelist_send_idempotency_grounding",
        "auto-send ignores the whitelist",
        lambda mp, settings: _auto_send_without(mp, "客户不在自动发送白名单"),
        "不在白名单的客户被自动发送",
    ),
    Mutation(
        "grounding_reads_only_customer_affirmed_gate_passed_words",
        "grounding reads our staff's words",
        lambda mp, settings: _staff_words_as_evidence(mp),
        "采用了客服说的城市",
    ),
    Mutation(
        "grounding_reads_only_customer_affirmed_gate_passed_words",
        "grounding reads messages the safety gate blocks",
        lambda mp, settings: mp.setattr("memory.capture.evidence.scan", _gate_passing(evidence.scan)),
        "被安全闸拦截的消息中的预算",
    ),
    Mutation(
        "grounding_reads_only_customer_affirmed_gate_passed_words",
        "grounding reads negated statements",
        lambda mp, settings: mp.setattr("memory.capture.evidence.read_field", _reads_any_mention(evidence.read_field)),
        "客户否定的区域",
    ),
    Mutation(
        "grounding_reads_only_customer_affirmed_gate_passed_words",
        "hypotheses rest on messages the safety gate blocks",
        lambda mp, settings: mp.setattr("memory.capture.grounding.message_evidence", _hypothesis_evidence_unjudged),
        "推断依据了被安全闸拦截的消息",
    ),
    Mutation(
        "human_add_edit_confirm_reject_forget",
        "rejected items stay in the context",
        lambda mp, settings: mp.setattr("memory.snapshots.effective_items", _effective_including_rejected),
        "被拒绝的记忆仍进入上下文",
    ),
    Mutation(
        "human_add_edit_confirm_reject_forget",
        "the model's hypotheses never reach memory",
        lambda mp, settings: mp.setattr(
            "sessions_epoch.pipeline.ground_hypotheses", lambda customer, hypotheses: ([], [])
        ),
        "模型推断未作为待确认条目写入",
    ),
    Mutation(
        "human_add_edit_confirm_reject_forget",
        "an edit no longer marks the item created_by=human",
        lambda mp, settings: mp.setattr(
            "memory.governance.services.item_row_save", _edit_leaves_created_by(governance.item_row_save)
        ),
        "未标记为人工",
    ),
    Mutation(
        "human_add_edit_confirm_reject_forget",
        "an edit writes no snapshot",
        lambda mp, settings: mp.setattr(
            "memory.governance.services.snapshot_refresh", _edit_skips_snapshot(governance.snapshot_refresh)
        ),
        "编辑后没有写入新快照",
    ),
    Mutation(
        "temporary_memory_expires_out_of_snapshot",
        "the expiry schedule is gone",
        lambda mp, settings: _schedule_without_expiry(settings),
        "定时任务中缺少到期失效",
    ),
    Mutation(
        "temporary_memory_expires_out_of_snapshot",
        "the scheduled expiry task expires nothing",
        lambda mp, settings: mp.setattr("memory.tasks.governance.memory_items_expire_due", lambda **kwargs: 0),
        "运行后到期条目未失效",
    ),
    Mutation(
        "backfill_profiles_and_customer_words_idempotent",
        "backfill re-creates rejected items",
        lambda mp, settings: mp.setattr("memory.items.automatic_write_refusal", lambda **kwargs: None),
        "回填恢复了被拒绝的记忆",
    ),
    Mutation(
        "backfill_profiles_and_customer_words_idempotent",
        "backfill revives a forgotten value",
        lambda mp, settings: (
            mp.setattr("memory.decisions.FINAL_KINDS", (DecisionKind.REJECTED,)),
            # the value check reads its own tuple (a declined proposal rules out its value only)
            mp.setattr("memory.decisions.FINAL_VALUE_KINDS", (DecisionKind.REJECTED, DecisionKind.DECLINED)),
        ),
        "回填恢复了被遗忘的记忆",
    ),
    Mutation(
        "backfill_profiles_and_customer_words_idempotent",
        "backfill revives an expired value",
        lambda mp, settings: mp.setattr("memory.decisions.DATED_KINDS", (DecisionKind.CLEARED,)),
        "回填恢复了已到期失效的记忆",
    ),
    Mutation(
        "backfill_profiles_and_customer_words_idempotent",
        "backfill overrides a human edit",
        lambda mp, settings: mp.setattr(
            "memory.items.automatic_write_refusal", _refusal_blind_to_edits(decisions.automatic_write_refusal)
        ),
        "回填覆盖了主管的编辑",
    ),
    Mutation(
        "profile_field_clear_invalidates_stable_memory",
        "clearing a profile field leaves its memory item",
        lambda mp, settings: mp.setattr("memory.profile.memory_item_supersede", lambda **kwargs: kwargs["item"]),
        "清空画像字段后稳定记忆未失效",
    ),
]


# --- regressions of families no step names (issue 40 item 3) -------------------------------------
# Written before the smoke's property checks: the old smoke, whose steps checked named cases, caught
# 0 of these 5; the property checks (qiwei_site/operations/smoke_properties.py) catch all of them.


def _state_budget_plus_one(original: Callable[[], dict[str, int]]) -> Callable[[], dict[str, int]]:
    """The builder's budget lookup with the business state's budget one character larger."""

    def budgets() -> dict[str, int]:
        from memory.context.builder import BUSINESS_STATE

        found = original()
        return {**found, BUSINESS_STATE: found[BUSINESS_STATE] + 1}

    return staticmethod(budgets)  # type: ignore[return-value]


def _latest_dropped_when_long(original: Callable[..., str]) -> Callable[..., str]:
    """The latest message's block left out when its quoted line is longer than 1000 characters."""
    return lambda latest_line, note="": "" if len(latest_line) > 1000 else original(latest_line, note)


def _recall_scans_half(original: Callable[..., Any]) -> Callable[..., Any]:
    """Recall ranking only the newer half of the scan window (rows come oldest first)."""
    return lambda text, rows, limit, **kwargs: original(text, list(rows)[len(rows) // 2 :], limit, **kwargs)


def _scrub_skips_draft_reasons(original: Callable[..., int]) -> Callable[..., int]:
    """The scrub of one target lost: a draft's reasons keep the forgotten words."""
    return lambda queryset, field, quotes, *, is_json=False: (
        0 if field == "reasons" else original(queryset, field, quotes, is_json=is_json)
    )


def _refusal_skipped_on_model_turns(original: Callable[..., str | None]) -> Callable[..., str | None]:
    """The decision check skipped on one automatic path: what a model turn writes."""

    def refusal(**kwargs: Any) -> str | None:
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_name == "draft_generate":
                return None
            frame = frame.f_back  # type: ignore[assignment]
        return original(**kwargs)

    return refusal


def _patch(target: str, wrap: Callable[[Any], Any]) -> Callable[[pytest.MonkeyPatch, Any], None]:
    module, name = target.rsplit(".", 1)

    def mutate(mp: pytest.MonkeyPatch, settings: Any) -> None:
        import importlib

        owner: Any = importlib.import_module(module)
        if "." in name:
            raise ValueError(name)
        mp.setattr(target, wrap(getattr(owner, name)))

    return mutate


def _patch_budgets(mp: pytest.MonkeyPatch, settings: Any) -> None:
    from memory.context.builder.build import AgentContextBuilder

    mp.setattr(AgentContextBuilder, "_budgets", _state_budget_plus_one(AgentContextBuilder._budgets))


UNNAMED_MUTATIONS: list[Mutation] = [
    Mutation(
        "context_sections_within_budgets_latest_kept_in_order",
        "a section budget one character larger",
        _patch_budgets,
        "超过预算",
    ),
    Mutation(
        "context_sections_within_budgets_latest_kept_in_order",
        "the latest message dropped when long",
        _patch("memory.context.builder.layout._latest_block", _latest_dropped_when_long),
        "最新客户消息",
    ),
    Mutation(
        "older_relevant_history_recalled",
        "recall scans half the window",
        _patch("memory.context.recall.recall_from_rows", _recall_scans_half),
        "扫描窗口内",
    ),
    Mutation(
        "human_add_edit_confirm_reject_forget",
        "forgetting leaves a draft's reasons unscrubbed",
        _patch("memory.governance.scrub._scrub_column", _scrub_skips_draft_reasons),
        "遗忘的内容仍在",
    ),
    Mutation(
        "human_add_edit_confirm_reject_forget",
        "model turns skip the supervisor's decisions",
        _patch("memory.items.automatic_write_refusal", _refusal_skipped_on_model_turns),
        "自动路径",
    ),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mutation", UNNAMED_MUTATIONS, ids=[m.breakage for m in UNNAMED_MUTATIONS])
def test_whole_smoke_fails_on_a_regression_no_step_names(monkeypatch, settings, mutation):
    # given a regression of a family no step was written against
    mutation.mutate(monkeypatch, settings)
    out = io.StringIO()
    # when the whole smoke check runs, then it fails, on the property check meant for it
    with pytest.raises(CommandError, match=mutation.step):
        call_command("agent_console_smoke", stdout=out)
    failed = [line for line in out.getvalue().splitlines() if line.startswith(f"FAIL {mutation.step}")]
    assert failed, (mutation.breakage, out.getvalue())
    assert mutation.detail in failed[0], (mutation.breakage, failed[0])


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mutation", MUTATIONS, ids=[f"{m.step}:{m.breakage}" for m in MUTATIONS])
def test_smoke_step_fails_when_its_behaviour_is_broken(monkeypatch, settings, mutation):
    # given the behaviour of one §8 step broken on purpose
    mutation.mutate(monkeypatch, settings)
    out = io.StringIO()
    # when the smoke check runs that step
    with pytest.raises(CommandError, match=mutation.step):
        call_command("agent_console_smoke", "--step", mutation.step, stdout=out)
    # then it exits non-zero naming it, on the check meant for this breakage
    failed = [line for line in out.getvalue().splitlines() if line.startswith(f"FAIL {mutation.step}")]
    assert failed, (mutation.breakage, out.getvalue())
    assert mutation.detail in failed[0], (mutation.breakage, failed[0])


@pytest.mark.django_db(transaction=True)
def test_smoke_covers_every_step_with_a_mutation():
    from qiwei_site.operations.smoke import STEPS

    assert {name for name, _func in STEPS} == {mutation.step for mutation in [*MUTATIONS, *UNNAMED_MUTATIONS]}


@pytest.mark.django_db(transaction=True)
def test_smoke_unknown_step_is_a_clear_error():
    with pytest.raises(CommandError, match="未知的检查步骤"):
        call_command("agent_console_smoke", "--step", "no_such_step", stdout=io.StringIO())
