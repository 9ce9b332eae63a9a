"""What the §8 smoke steps share: the failure they raise, the scripted model, the way they feed a
conversation, and running the beat schedule's tasks the way beat and a worker would."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from celery import current_app as celery_current_app
from django.apps import apps
from django.conf import settings
from django.utils import timezone

from conversations.models import Customer, Message
from memory.capture.ingest import messages_ingest
from memory.models import MemoryItem, MemoryStatus
from qiwei_site.platform.history import stamp_history
from sessions_epoch.clients import ModelClient, ModelResult, SessionRef

ACTOR = "agent_console_smoke"


class StepFailed(AssertionError):
    pass


def check(condition: object, detail: str) -> None:
    if not condition:
        raise StepFailed(detail)


class ScriptedClient(ModelClient):
    """A model stand-in answering with a fixed structured output (the smoke check has no model)."""

    name = "scripted"

    def __init__(self, output: dict[str, Any]):
        self.output = output

    def generate(self, *, prompt: str, session: SessionRef, hints: Mapping[str, str] | None = None) -> ModelResult:
        return ModelResult(
            client=self.name, output=dict(self.output), raw_text=str(self.output), session_id=session.session_id
        )


def ingest(cid: str, texts: list[tuple[str, str]], *, start: dt.datetime | None = None) -> list[Message]:
    """Feed (direction, text) pairs into conversation `cid` through the ingest API's service."""
    start = start or timezone.now() - dt.timedelta(hours=1)
    batch = [
        {
            "external_id": f"{cid}-{uuid.uuid4().hex[:10]}",
            "direction": direction,
            "sender": "客户" if direction == "inbound" else "顾问",
            "text": text,
            "sent_at": (start + dt.timedelta(seconds=i)).isoformat(),
        }
        for i, (direction, text) in enumerate(texts)
    ]
    result = messages_ingest(conversation_id=cid, messages=batch, actor=ACTOR, reason="端到端检查")
    return list(result.messages)


def customer_of(cid: str) -> Customer:
    return Customer.objects.get(conversation_id=cid)


def active_items(customer: Customer) -> Any:
    return MemoryItem.objects.filter(customer=customer, status=MemoryStatus.ACTIVE)


def set_mode(customer: Customer, mode: str, *, whitelisted: bool | None = None) -> None:
    """Switch the customer's session mode (and whitelist), with history, as the admin does."""
    fields = ["session_mode", "updated_at"]
    customer.session_mode = mode
    if whitelisted is not None:
        customer.auto_send_whitelisted = whitelisted
        fields.append("auto_send_whitelisted")
    stamp_history(customer, actor=ACTOR, reason=f"端到端检查：会话模式 {mode}")
    customer.save(update_fields=fields)


@contextlib.contextmanager
def _tasks_in_this_process() -> Iterator[None]:
    """What a scheduled task queues (one task per account) runs here, at once, with errors raised:
    the smoke check has no worker and sends nothing to a broker. The command runs in one thread, so
    switching the app's eager flags for this block (and restoring them) affects nothing else; the
    worker's one-line-per-task log stays out of the check's report."""
    conf = celery_current_app.conf
    saved = conf.task_always_eager, conf.task_eager_propagates
    trace_logger = logging.getLogger("celery.app.trace")
    level = trace_logger.level
    conf.task_always_eager, conf.task_eager_propagates = True, True
    trace_logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        conf.task_always_eager, conf.task_eager_propagates = saved
        trace_logger.setLevel(level)


def beat_tasks_apply() -> dict[str, Any]:
    """Run every task of settings.CELERY_BEAT_SCHEDULE once, by the name beat would send, with the
    entry's arguments; returns each task's result by entry name. An unregistered name fails."""
    # A worker imports every installed app's tasks module at start; a management command may not
    # have yet (the worker's model validation at that point is left out: the check runs it anyway).
    celery_current_app.loader.autodiscover_tasks([config.name for config in apps.get_app_configs()])
    results: dict[str, Any] = {}
    with _tasks_in_this_process():
        for entry_name, entry in settings.CELERY_BEAT_SCHEDULE.items():
            task = celery_current_app.tasks.get(entry["task"])
            check(task is not None, f"定时任务 {entry_name} 指向未注册的任务 {entry['task']}")
            assert task is not None
            outcome = task.apply(args=entry.get("args", ()), kwargs=entry.get("kwargs", {}), throw=True)
            results[entry_name] = outcome.get()
    return results
