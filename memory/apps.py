from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "客户记忆"

    def ready(self) -> None:
        # Register the Celery tasks in every process (web included): capture jobs are queued by
        # task name, so the name must be known wherever a message is ingested.
        from memory import tasks  # noqa: F401
