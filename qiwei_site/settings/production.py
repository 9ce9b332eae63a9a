"""Production: secrets have no defaults, PostgreSQL per account and a real broker are expected."""

import os

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F403
from .base import QIWEI_DATA_DIR

for _required in ("DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS"):
    if not os.environ.get(_required):
        raise ImproperlyConfigured(f"{_required} must be set in production.")

DEBUG = False
SESSION_COOKIE_SECURE = os.environ.get("DJANGO_SECURE_COOKIES", "true").lower() == "true"
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
QIWEI_DATA_DIR.mkdir(parents=True, exist_ok=True)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "qiwei_site.logging.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}, "urllib3.connectionpool": {"level": "WARNING"}},
}
