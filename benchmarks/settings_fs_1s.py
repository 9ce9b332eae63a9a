"""Benchmark-only settings: the local defaults with the filesystem broker polled at kombu's own 1 s
(instead of the shipped 0.1 s), to show why the shipped default polls faster (capture_throughput)."""

from qiwei_site.settings.local import *  # noqa: F403
from qiwei_site.settings.local import CELERY_BROKER_TRANSPORT_OPTIONS

CELERY_BROKER_TRANSPORT_OPTIONS = {**CELERY_BROKER_TRANSPORT_OPTIONS, "polling_interval": 1.0}
