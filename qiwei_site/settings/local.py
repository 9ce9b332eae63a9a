"""Local / embedded defaults: SQLite files and the filesystem Celery broker under QIWEI_DATA_DIR."""

from .base import *  # noqa: F403
from .base import QIWEI_DATA_DIR

QIWEI_DATA_DIR.mkdir(parents=True, exist_ok=True)
(QIWEI_DATA_DIR / "static").mkdir(exist_ok=True)
