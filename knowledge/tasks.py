"""Keep the knowledge index in step with the Markdown on disk (re-indexed when files change)."""

from __future__ import annotations

from celery import shared_task

from knowledge.services import knowledge_index


@shared_task(name="knowledge.tasks.knowledge_reindex")
def knowledge_reindex() -> dict[str, list[str]]:
    report = knowledge_index()
    return {key: value for key, value in report.as_dict().items() if key != "unchanged"}
