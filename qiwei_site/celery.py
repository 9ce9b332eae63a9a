"""The Celery app. Tasks take `account_id` first and run inside `use_account` (DESIGN §4)."""

import os

from celery import Celery
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
