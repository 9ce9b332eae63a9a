"""Test settings: eager Celery, fast password hashing, a throw-away data dir per run."""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

# Every test process (each xdist worker too) gets its own data dir and shared cache, beside the
# tests' own temporary directories (`PYTEST_DEBUG_TEMPROOT`, which ./test.sh points at memory where
# the machine has room), removed when the process that made it exits (not by a forked child).
os.environ["QIWEI_DATA_DIR"] = tempfile.mkdtemp(
    prefix="qiwei-test-", dir=os.environ.get("PYTEST_DEBUG_TEMPROOT") or None
)

from .base import *  # noqa: F403
from .base import BASE_DIR, QIWEI_DATA_DIR

_TEST_ROOT, _TEST_ROOT_OWNER = os.environ["QIWEI_DATA_DIR"], os.getpid()  # the folder made just above


@atexit.register
def _remove_test_root() -> None:
    if os.getpid() == _TEST_ROOT_OWNER:
        shutil.rmtree(_TEST_ROOT, ignore_errors=True)


QIWEI_DATA_DIR.mkdir(parents=True, exist_ok=True)
(QIWEI_DATA_DIR / "static").mkdir(exist_ok=True)
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = os.environ.get("QIWEI_TEST_CELERY_EAGER", "1") == "1"
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "memory://")
CELERY_BROKER_TRANSPORT_OPTIONS = {}  # type: ignore[var-annotated]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
QIWEI_TEST_ROOT = Path(QIWEI_DATA_DIR)
# The migrated account template is named by a hash of every account migration file and built under
# a file lock, so test processes (xdist workers, later runs) share one instead of each migrating it.
if "QIWEI_ACCOUNT_TEMPLATE_DIR" not in os.environ:
    QIWEI_ACCOUNT_TEMPLATE_DIR = BASE_DIR / ".cache" / "test-templates"

# A file (not shared-cache memory) so threads and worker processes can share the test database.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": str(QIWEI_DATA_DIR / "test-default.sqlite3")}  # noqa: F405

# A fixed sealing key (test data only), so worker processes and live servers started by a test open
# what the test process sealed; `tests/qiwei_site/platform/test_sealing.py` covers the key file.
QIWEI_SEALING_KEYS = QIWEI_SEALING_KEYS or ["YpPVYQ_IZbAFL5SbOEMHtaG7RCNxH4T47JFXEdyqDx4="]  # noqa: F405
