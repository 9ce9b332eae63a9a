"""The shell as a Django app: it only loads the Celery app when Django starts."""

from __future__ import annotations

from django.apps import AppConfig


class ShellConfig(AppConfig):
    name = "qiwei_site"
    label = "qiwei_shell"
    verbose_name = "项目外壳"

    def ready(self) -> None:
        # Every Django process (web, commands, tests, the worker) has the app that `shared_task`s
        # bind to, configured from the settings (eager in tests, the broker in production).
        from qiwei_site import celery  # noqa: F401
