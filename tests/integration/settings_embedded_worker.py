"""Worker settings for the embedded-broker start/kill test: run.sh's local settings, with beat's
capture sweep ticking every 2 s so that every short-lived worker publishes from beat at once."""

import os

from qiwei_site.settings.local import *  # noqa: F403
from qiwei_site.settings.local import CELERY_BEAT_SCHEDULE

CELERY_BEAT_SCHEDULE = {
    **CELERY_BEAT_SCHEDULE,
    "capture-sweep": {"task": "memory.tasks.capture_sweep_all", "schedule": 2.0},
}

# The baseline: QIWEI_TEST_BROKER_TRANSPORT=kombu.transport.filesystem:Transport runs the same
# test on kombu's own transport (see tests/integration/test_embedded_broker.py).
if os.environ.get("QIWEI_TEST_BROKER_TRANSPORT"):
    CELERY_BROKER_TRANSPORT = os.environ["QIWEI_TEST_BROKER_TRANSPORT"]
