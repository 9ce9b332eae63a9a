"""The Celery app. Tasks take `account_id` first and run inside `use_account` (DESIGN §4)."""

import os
from typing import Any

from celery import Celery
from celery.signals import task_postrun, worker_init
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qiwei_site.settings.local")

# The embedded broker keeps its `filesystem://` URL, served by our atomic transport: kombu's own
# lets a worker read a half-written message file and die on it (qiwei_site/broker.py).
TRANSPORT_ALIASES["filesystem"] = "qiwei_site.broker:Transport"

app = Celery("qiwei_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

BROKER_FOLDER_OPTIONS = ("data_folder_in", "data_folder_out", "processed_folder", "control_folder", "corrupt_folder")


@app.on_after_finalize.connect
def _prepare_filesystem_broker(sender: Celery, **kwargs: object) -> None:
    """The embedded filesystem broker needs its folders before the first message."""
    from pathlib import Path

    options = sender.conf.broker_transport_options or {}
    for key in BROKER_FOLDER_OPTIONS:
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)


@task_postrun.connect(dispatch_uid="qiwei_account_connections_release")
def _release_account_connections(**kwargs: Any) -> None:
    """A task is over: its account connections go back to the process's pool (a task that left
    `use_account` has already done so; this catches any opened outside it)."""
    from qiwei_site.platform.tenancy import account_connections_release_idle

    account_connections_release_idle()


@worker_init.connect(dispatch_uid="qiwei_keys_check")
def _refuse_without_keys(**kwargs: Any) -> None:
    """A worker does not start while a key fails closed (issue 36): SystemExit, which Celery's signal
    dispatch does not swallow."""
    from django.db import connections

    from qiwei_site.platform.keyfiles import KeysRefused, startup_keys_check

    try:
        startup_keys_check()
    except KeysRefused as exc:
        import logging

        logging.getLogger(__name__).critical("拒绝启动 (refusing to start): %s", exc)
        raise SystemExit(1) from None
    finally:
        connections.close_all()
