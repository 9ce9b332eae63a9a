"""The Celery app. Tasks take `account_id` first and run inside `use_account` (DESIGN §4)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qiwei_site.settings.local")

app = Celery("qiwei_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def _prepare_filesystem_broker(sender: Celery, **kwargs: object) -> None:
    """The embedded filesystem broker needs its folders before the first message."""
    from pathlib import Path

    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)
