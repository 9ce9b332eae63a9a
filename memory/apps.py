from typing import Any

from django.apps import AppConfig
from django.db.backends.signals import connection_created


def _account_sqlite_secure_delete(sender: Any, connection: Any, **kwargs: Any) -> None:
    # Customer data lives in account databases; with secure_delete every freed cell and page is
    # overwritten with zeros, so an edited or deleted value (a forgotten item, an erased customer)
    # leaves no bytes in the file's free space. A per-connection setting, hence the signal.
    if connection.vendor == "sqlite" and connection.alias.startswith("acct_"):
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA secure_delete=ON")


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "客户记忆"

    def ready(self) -> None:
        # Register the Celery tasks in every process (web included): capture jobs are queued by
        # task name, so the name must be known wherever a message is ingested.
        from memory import tasks  # noqa: F401
        from memory.admin.start_page import memory_start_page_counts
        from qiwei_site.platform.admin_site import start_page_counter_register

        # The admin index (platform, which imports no app) shows what memory counts as needing attention.
        start_page_counter_register(memory_start_page_counts)
        from memory.decisions import MEMORY_FINGERPRINT
        from memory.selectors import decision_samples
        from qiwei_site.platform.keyfiles import in_use_probe_register

        # Whether decisions exist: their fingerprint key is never made again while they do (issue 36).
        in_use_probe_register(MEMORY_FINGERPRINT.purpose, decision_samples)
        connection_created.connect(_account_sqlite_secure_delete, dispatch_uid="memory.sqlite_secure_delete")
