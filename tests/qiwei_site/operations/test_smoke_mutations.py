"""The smoke check catches regressions (issue 11): for each spec §8 step, the behaviour is broken on
purpose and `agent_console_smoke` must exit non-zero naming that step."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from conversations import drafts
from memory import snapshots
from memory.safety import ScanResult


def _without_blocker(prefix: str) -> Callable[..., list[str]]:
    """draft_auto_send_blockers with one of its checks removed (a regression someone might write)."""
    original = drafts.draft_auto_send_blockers

    def blockers(draft: Any, customer: Any = None) -> list[str]:
        return [reason for reason in original(draft, customer) if not reason.startswith(prefix)]

    return blockers


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


MUTATIONS: list[tuple[str, str, Callable[[pytest.MonkeyPatch, Any], None]]] = [
    (
        "explicit_fact_preference_constraint_capture",
        "extraction finds nothing",
        lambda mp, settings: mp.setattr("memory.capture.services.extract_candidates", lambda text: []),
    ),
    (
        "injection_and_credentials_kept_out_of_memory",
        "the safety gate lets everything through",
        lambda mp, settings: mp.setattr(
            "memory.capture.services.scan", lambda text: ScanResult(blocked=False, categories=[])
        ),
    ),
    (
        "older_relevant_history_recalled",
        "recall returns nothing",
        lambda mp, settings: mp.setattr("memory.context.recall.recall_for", lambda customer, latest, **kwargs: []),
    ),
    (
        "core_snapshot_within_limit",
        "the snapshot ignores the core limit",
        lambda mp, settings: mp.setattr(
            "memory.snapshots.render_snapshot", _render_without_limit(snapshots.render_snapshot)
        ),
    ),
    (
        "epoch_rotation_by_turns_keeps_parent_and_history",
        "epochs never rotate",
        lambda mp, settings: mp.setattr("sessions_epoch.services._rotation_due", lambda epoch, now: None),
    ),
    (
        "review_whitelist_send_idempotency_grounding",
        "auto-send ignores the session mode",
        lambda mp, settings: mp.setattr(
            "sessions_epoch.pipeline.draft_auto_send_blockers", _without_blocker("会话模式")
        ),
    ),
    (
        "review_whitelist_send_idempotency_grounding",
        "auto-send ignores the confidence threshold",
        lambda mp, settings: mp.setattr("sessions_epoch.pipeline.draft_auto_send_blockers", _without_blocker("置信度")),
    ),
    (
        "human_add_edit_confirm_reject_forget",
        "rejected items stay in the context",
        lambda mp, settings: mp.setattr("memory.snapshots.effective_items", _effective_including_rejected),
    ),
    (
        "human_add_edit_confirm_reject_forget",
        "the model's hypotheses never reach memory",
        lambda mp, settings: mp.setattr(
            "sessions_epoch.pipeline.ground_hypotheses", lambda customer, hypotheses: ([], [])
        ),
    ),
    (
        "temporary_memory_expires_out_of_snapshot",
        "the expiry schedule is gone",
        lambda mp, settings: _schedule_without_expiry(settings),
    ),
    (
        "backfill_profiles_and_customer_words_idempotent",
        "backfill re-creates rejected items",
        lambda mp, settings: mp.setattr("memory.items.automatic_write_refusal", lambda **kwargs: None),
    ),
    (
        "profile_field_clear_invalidates_stable_memory",
        "clearing a profile field leaves its memory item",
        lambda mp, settings: mp.setattr("memory.profile.memory_item_supersede", lambda **kwargs: kwargs["item"]),
    ),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("step", "breakage", "mutate"), MUTATIONS, ids=[f"{s}:{b}" for s, b, _ in MUTATIONS])
def test_smoke_step_fails_when_its_behaviour_is_broken(monkeypatch, settings, step, breakage, mutate):
    # given the behaviour of one §8 step broken on purpose
    mutate(monkeypatch, settings)
    out = io.StringIO()
    # when the smoke check runs that step, then it exits non-zero naming it
    with pytest.raises(CommandError, match=step):
        call_command("agent_console_smoke", "--step", step, stdout=out)
    assert f"FAIL {step}" in out.getvalue(), (breakage, out.getvalue())


@pytest.mark.django_db(transaction=True)
def test_smoke_covers_every_step_with_a_mutation():
    from qiwei_site.operations.smoke import STEPS

    assert {name for name, _func in STEPS} == {step for step, _b, _m in MUTATIONS}


@pytest.mark.django_db(transaction=True)
def test_smoke_unknown_step_is_a_clear_error():
    with pytest.raises(CommandError, match="未知的检查步骤"):
        call_command("agent_console_smoke", "--step", "no_such_step", stdout=io.StringIO())
