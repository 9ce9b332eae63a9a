"""Settings shared by every environment; everything configurable comes from the environment."""

from __future__ import annotations

from pathlib import Path

import environ

from qiwei_site.conf import env_bool, env_choice, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

SECRET_KEY = env_str("DJANGO_SECRET_KEY", "insecure-local-development-key-change-me")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "http://127.0.0.1:4320,http://localhost:4320")

# --- Paths -------------------------------------------------------------------
QIWEI_DATA_DIR = Path(env_str("QIWEI_DATA_DIR", str(BASE_DIR / "var"))).resolve()
# Migrated SQLite account templates are cached here (new accounts copy them instead of migrating).
QIWEI_ACCOUNT_TEMPLATE_DIR = Path(env_str("QIWEI_ACCOUNT_TEMPLATE_DIR", str(QIWEI_DATA_DIR / "templates"))).resolve()
QIWEI_KNOWLEDGE_DIR = Path(env_str("QIWEI_KNOWLEDGE_DIR", str(BASE_DIR / "knowledge_base"))).resolve()

# --- Agent memory and context (spec §2, §4) -----------------------------------------
QIWEI_AGENT_CONTEXT_FILES = env_list("QIWEI_AGENT_CONTEXT_FILES", "personality.md,context.md,rules.md")
QIWEI_AGENT_CONTEXT_CHAR_LIMIT = env_int("QIWEI_AGENT_CONTEXT_CHAR_LIMIT", 6000, 500, 50000)
QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT = env_int("QIWEI_AGENT_MEMORY_CORE_CHAR_LIMIT", 4000, 500, 8000)
QIWEI_AGENT_MEMORY_RECALL_LIMIT = env_int("QIWEI_AGENT_MEMORY_RECALL_LIMIT", 6, 0, 50)
QIWEI_AGENT_MEMORY_RECENT_MESSAGES = env_int("QIWEI_AGENT_MEMORY_RECENT_MESSAGES", 12, 1, 200)
QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT = env_int("QIWEI_AGENT_MEMORY_HISTORY_SCAN_LIMIT", 240, 0, 5000)
QIWEI_AGENT_STATE_CHAR_LIMIT = env_int("QIWEI_AGENT_STATE_CHAR_LIMIT", 3000, 200, 20000)
QIWEI_AGENT_CONVERSATION_CHAR_LIMIT = env_int("QIWEI_AGENT_CONVERSATION_CHAR_LIMIT", 8000, 500, 50000)
QIWEI_AGENT_PROMPT_CHAR_LIMIT = env_int("QIWEI_AGENT_PROMPT_CHAR_LIMIT", 24000, 2000, 200000)

# --- Capture jobs (DESIGN §6) -----------------------------------------------------------
QIWEI_CAPTURE_MAX_ATTEMPTS = env_int("QIWEI_CAPTURE_MAX_ATTEMPTS", 5, 1, 50)
QIWEI_CAPTURE_RETRY_BASE_SECONDS = env_int("QIWEI_CAPTURE_RETRY_BASE_SECONDS", 10, 0, 3600)
QIWEI_CAPTURE_STUCK_SECONDS = env_int("QIWEI_CAPTURE_STUCK_SECONDS", 300, 5, 86400)

# --- Model sessions (spec §5) -----------------------------------------------------------
CLAUDE_CODE_SESSION_MAX_TURNS = env_int("CLAUDE_CODE_SESSION_MAX_TURNS", 12, 1, 1000)
CLAUDE_CODE_SESSION_MAX_AGE_MS = env_int("CLAUDE_CODE_SESSION_MAX_AGE_MS", 86_400_000, 60_000, 30 * 86_400_000)
QIWEI_MODEL_CLIENT = env_choice("QIWEI_MODEL_CLIENT", "offline", ("offline", "claude_code", "openai"))
CLAUDE_CODE_BIN = env_str("CLAUDE_CODE_BIN", "claude")
CLAUDE_CODE_TIMEOUT_SECONDS = env_int("CLAUDE_CODE_TIMEOUT_SECONDS", 120, 5, 3600)
CLAUDE_CODE_MAX_BUDGET_USD = env_float("CLAUDE_CODE_MAX_BUDGET_USD", 0.5, 0.01, 100.0)
QIWEI_OPENAI_BASE_URL = env_str("QIWEI_OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
QIWEI_OPENAI_MODEL = env_str("QIWEI_OPENAI_MODEL", "qwen2.5-7b-instruct")
QIWEI_OPENAI_API_KEY = env_str("QIWEI_OPENAI_API_KEY", "")
QIWEI_OPENAI_TIMEOUT_SECONDS = env_int("QIWEI_OPENAI_TIMEOUT_SECONDS", 60, 1, 3600)
QIWEI_AUTO_SEND_CONFIDENCE = env_float("QIWEI_AUTO_SEND_CONFIDENCE", 0.85, 0.0, 1.0)
# Keys the fingerprints that let a forgotten or rejected value be refused without being kept;
# empty = a random key made once in QIWEI_DATA_DIR (one host). Changing it makes earlier decisions
# unrecognisable: set it once, the same on every host.
QIWEI_MEMORY_FINGERPRINT_KEY = env_str("QIWEI_MEMORY_FINGERPRINT_KEY", "")
# Fernet keys sealing the originals of messages that carry a credential or a personal number
# (`qiwei_site.platform.sealing`), comma-separated, newest first: the first seals, any unseals.
# Empty = a key made once in QIWEI_DATA_DIR/sealing.key (one host; back it up apart from the data).
QIWEI_SEALING_KEYS = env_list("QIWEI_SEALING_KEYS", "")
# The audit chains' anchors (issue 36): each chain's head, signed with this key (empty = a key file
# made once in QIWEI_KEY_DIR), appended to this log (empty = QIWEI_KEY_DIR/audit-anchors.jsonl)
# every QIWEI_AUDIT_ANCHOR_MINUTES. Keep both off the database's host or volume.
QIWEI_AUDIT_ANCHOR_KEY = env_str("QIWEI_AUDIT_ANCHOR_KEY", "")
QIWEI_AUDIT_ANCHOR_LOG = env_str("QIWEI_AUDIT_ANCHOR_LOG", "")
QIWEI_AUDIT_ANCHOR_MINUTES = env_int("QIWEI_AUDIT_ANCHOR_MINUTES", 10, 1, 1440)
# Where the embedded default keeps the key files it makes (sealing.key, memory-fingerprint.key,
# audit-anchor.key): the data dir unless set. A separate volume is backed up apart from the data.
QIWEI_KEY_DIR = Path(env_str("QIWEI_KEY_DIR", str(QIWEI_DATA_DIR))).resolve()

# /readyz fails an account whose SQLite file sits on a filesystem with less free space than this
# (MB): SQLite keeps a transaction's pages in memory, so a rolled-back probe cannot see a full disk.
QIWEI_READYZ_MIN_FREE_MB = env_int("QIWEI_READYZ_MIN_FREE_MB", 64, 0, 10**9)

# --- Upstream WeCom gateway (spec §9) ---------------------------------------------------
QIWEI_UPSTREAM_URL = env_str("QIWEI_UPSTREAM_URL", "")
# Which upstream every account uses: "auto" (the HTTP gateway when QIWEI_UPSTREAM_URL is set, else
# the loopback), "loopback", "http", or "wecom" (each account through its own WeCom kf connection,
# issue 37; an account connected with `wecom_connect` uses WeCom whatever this says).
QIWEI_UPSTREAM = env_choice("QIWEI_UPSTREAM", "auto", ("auto", "loopback", "http", "wecom"))
if QIWEI_UPSTREAM == "http" and not QIWEI_UPSTREAM_URL:
    from qiwei_site.conf import ConfigError

    raise ConfigError("QIWEI_UPSTREAM=http needs QIWEI_UPSTREAM_URL (the gateway's address).")
# WeCom's API (the stand-in's address in tests and the demo: `manage.py wecom_standin`).
QIWEI_WECOM_API_BASE = env_str("QIWEI_WECOM_API_BASE", "https://qyapi.weixin.qq.com")
QIWEI_WECOM_TIMEOUT_SECONDS = env_float("QIWEI_WECOM_TIMEOUT_SECONDS", 5.0, 0.5, 30.0)
QIWEI_UPSTREAM_PROBE_TIMEOUT_SECONDS = env_float("QIWEI_UPSTREAM_PROBE_TIMEOUT_SECONDS", 2.5, 0.1, 2.5)

# --- Caches: `shared` is seen by every web and worker process (the upstream status lives there).
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "shared": {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(QIWEI_DATA_DIR / "cache"),
    },
}

# --- Applications ----------------------------------------------------------------------
INSTALLED_APPS = [
    "qiwei_site.platform.admin_config.QiweiAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "qiwei_site.platform.admin_config.LoginProtectionConfig",  # django-axes, named 登录保护
    "simple_history",
    "qiwei_site.platform",
    "conversations",
    "knowledge",
    "memory",
    "sessions_epoch",
    "wecom",
    "qiwei_site.workbench",
    "qiwei_site.operations",
    "qiwei_site.apps.ShellConfig",  # loads the Celery app (qiwei_site/__init__.py imports nothing)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "qiwei_site.platform.middleware.AdminAccountMiddleware",
    "qiwei_site.platform.middleware.ApiJsonNotFoundMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into its lockout answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "qiwei_site.urls"
WSGI_APPLICATION = "qiwei_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Databases: `default` holds staff, the account registry and the knowledge index;
# each WeCom account gets its own database, registered lazily by qiwei_site.platform.tenancy.
DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{QIWEI_DATA_DIR / 'default.sqlite3'}"),
}
# Keep connections open between requests (PostgreSQL: 2.4× the context throughput measured; SQLite's
# `default` file too).
# For account databases: how long a connection lives in the process's pool (idle or not).
QIWEI_DB_CONN_MAX_AGE = env_int("QIWEI_DB_CONN_MAX_AGE", 60, 0, 3600)
# Account connections per process, in use and idle, whatever the number of accounts
# (qiwei_site/platform/connections; docs/scale-out.md). Keep it ≥ gunicorn threads; 0 = no pool:
# Django's connection per thread per account, which runs a server out of connections.
QIWEI_ACCOUNT_CONN_CAP = env_int("QIWEI_ACCOUNT_CONN_CAP", 8, 0, 1000)
# How long a request waits for a free account connection when all are in use (then a 503).
QIWEI_ACCOUNT_CONN_WAIT_SECONDS = env_float("QIWEI_ACCOUNT_CONN_WAIT_SECONDS", 5.0, 0.1, 120.0)
# The PostgreSQL URLs point at PgBouncer in transaction pooling: no server-side cursors and no
# prepared statements (Django's default), nothing that keeps state in a server session.
QIWEI_PGBOUNCER = env_bool("QIWEI_PGBOUNCER", False)
if DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("CONN_MAX_AGE", QIWEI_DB_CONN_MAX_AGE)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    if QIWEI_PGBOUNCER:
        DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
        DATABASES["default"].setdefault("OPTIONS", {}).pop("prepare_threshold", None)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Kept between requests too (issue 38): opening the file costs every request a connect, the
    # PRAGMAs and Django's functions registered on it (~6% of a real turn's server CPU, py-spy).
    DATABASES["default"].setdefault("CONN_MAX_AGE", QIWEI_DB_CONN_MAX_AGE)
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
# Where accounts live. Empty: a SQLite file each. A PostgreSQL URL naming one database
# (postgres://qiwei@host:5432/qiwei_accounts): a schema and a role per account in it, behind one
# shared pool (the PostgreSQL default, issue 23). A template with {account}
# (postgres://user@host:5432/qiwei_acct_{account}): a database per account.
QIWEI_ACCOUNT_DATABASE_URL = env_str("QIWEI_ACCOUNT_DATABASE_URL", "")
# Schema layout, provisioning apart from running (issue 36, item 1): a PostgreSQL superuser URL on
# the same server, given to the provisioning commands only (account_create, accounts_onboard,
# migrate_accounts), never to the web and worker processes. With it, account roles and schemas are
# made by that role, the runtime login needs no CREATEROLE, and each account's audit table, its
# unlock table and trigger functions belong to an audit owner role the runtime login never becomes
# (scrubs go through a SECURITY DEFINER function that only removes words). docs/scale-out.md.
QIWEI_ACCOUNT_PROVISION_URL = env_str("QIWEI_ACCOUNT_PROVISION_URL", "")
# Schema layout: a pooled connection that has served more account schemas than this is closed when
# handed back (its server backend caches each schema's catalogue: ~10 MB after 20, ~60 MB after 200).
QIWEI_PG_SCHEMAS_PER_CONNECTION = env_int("QIWEI_PG_SCHEMAS_PER_CONNECTION", 50, 1, 10000)
DATABASE_ROUTERS = ["qiwei_site.platform.tenancy.AccountRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

# Chinese is the product's language whatever the browser asks for (no LocaleMiddleware).
LANGUAGE_CODE = "zh-hans"
LANGUAGES = [("zh-hans", "简体中文"), ("en", "English")]
TIME_ZONE = "Asia/Shanghai"
USE_I18N = True
USE_TZ = True
LOCALE_PATHS = [BASE_DIR / "locale"]

STATIC_URL = "/static/"
STATIC_ROOT = QIWEI_DATA_DIR / "static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

LOGIN_URL = "workbench-login"

# Sign-in throttling (django-axes) on /login/ and /admin/login/: after QIWEI_LOGIN_FAILURE_LIMIT
# wrong passwords for one user from one address, that pair is locked for QIWEI_LOGIN_COOLOFF_MINUTES.
# Lockouts show in admin (访问尝试 / Access attempts), where staff can also release them.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
QIWEI_LOGIN_FAILURE_LIMIT = env_int("QIWEI_LOGIN_FAILURE_LIMIT", 5, 1, 100)
QIWEI_LOGIN_COOLOFF_MINUTES = env_int("QIWEI_LOGIN_COOLOFF_MINUTES", 15, 1, 1440)
AXES_FAILURE_LIMIT = QIWEI_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = QIWEI_LOGIN_COOLOFF_MINUTES / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
AXES_ENABLE_ACCESS_FAILURE_LOG = True  # every failed sign-in, for staff in admin
# Token authentication failures from one address: at most this many per minute, then 429.
QIWEI_TOKEN_FAILURES_PER_MINUTE = env_int("QIWEI_TOKEN_FAILURES_PER_MINUTE", 20, 1, 10000)

# --- DRF -------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "qiwei_site.platform.authentication.ThrottledTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "qiwei_site.platform.api.QiweiAutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "qiwei_site.platform.api.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "qiwei-memory API",
    "DESCRIPTION": "企微客服长期记忆与上下文后台（Workbench API）",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from the installed sidecar package: /api/docs/ works with no internet.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "qiwei_site.platform.schema.governance_reasons",
    ],
    "ENUM_NAME_OVERRIDES": {
        "MessageDirectionEnum": "conversations.models.MessageDirection",
        "MemoryDirectionEnum": "memory.models.MemoryDirection",
        "DraftStatusEnum": "conversations.models.DraftStatus",
        "MemoryStatusEnum": "memory.models.MemoryStatus",
        "MemoryTypeEnum": "memory.models.MemoryType",
    },
}

# --- Celery ----------------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://localhost/")
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = QIWEI_DATA_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        # Broadcast/control exchanges (worker pings, shutdown) — kombu's default is ./control.
        "control_folder": str(_broker_dir / "control"),
        # Message files that cannot be parsed are set aside here, never crash a worker (qiwei_site/broker.py).
        "corrupt_folder": str(_broker_dir / "corrupt"),
        # kombu polls the folder once a second by default: 2 capture jobs/s with two worker processes.
        "polling_interval": 0.1,
        "store_processed": False,
    }
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULE_FILENAME = str(QIWEI_DATA_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE: dict = {
    "capture-sweep": {"task": "memory.tasks.capture_sweep_all", "schedule": 30.0},
    "memory-expire": {"task": "memory.tasks.memory_expire_all", "schedule": 60.0},
    "storage-scrub": {"task": "memory.tasks.storage_scrub_all", "schedule": 60.0},
    "context-read-purge": {"task": "memory.tasks.context_reads_purge_all", "schedule": 3600.0},
    "upstream-status": {"task": "conversations.tasks.upstream_status_refresh", "schedule": 30.0},
    # WeCom (issue 37): each connected account's status, and a pull from the cursor that catches up
    # whatever a missed callback left behind.
    "wecom-status": {"task": "wecom.tasks.wecom_status_refresh_all", "schedule": 30.0},
    "wecom-catch-up": {"task": "wecom.tasks.wecom_catch_up_all", "schedule": 60.0},
    "wecom-callbacks-prune": {"task": "wecom.tasks.wecom_callbacks_prune", "schedule": 3600.0},
    "knowledge-reindex": {"task": "knowledge.tasks.knowledge_reindex", "schedule": 60.0},
    "audit-anchor": {
        "task": "qiwei_site.operations.tasks.audit_anchor_all",
        "schedule": 60.0 * QIWEI_AUDIT_ANCHOR_MINUTES,
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("DJANGO_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # At DEBUG urllib3 logs each request's URL, and WeCom's gettoken carries the secret in it.
        "urllib3.connectionpool": {"level": "WARNING"},
    },
}

# --- API input limits (issue 11) ----------------------------------------------------------
# A message may be dated at most this far past the server's clock; beyond it the message would stay
# "the latest customer message" until that date.
QIWEI_INGEST_MAX_FUTURE_SKEW_SECONDS = env_int("QIWEI_INGEST_MAX_FUTURE_SKEW_SECONDS", 300, 0, 86400)
# The largest documented ingest batch — 500 messages (MAX_BATCH) of 1,800 CJK characters — is
# about 5.9 MB when a client escapes every character as \uXXXX (Python's json.dumps default);
# 8 MiB leaves room for the other fields. Beyond it the API answers 413 naming this limit.
DATA_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024
# JSON only (a form-encoded or multipart body is a 415), parsed strictly: see StrictJSONParser.
REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"] = ["qiwei_site.platform.parsers.StrictJSONParser"]
# Outermost, so that no answer under /api/ or /workbench/api/ is ever an HTML error page.
MIDDLEWARE = ["qiwei_site.platform.middleware.ApiErrorMiddleware", *MIDDLEWARE]
# How long a model's inference (a `hypothesis` memory item) waits for a supervisor before it expires.
QIWEI_HYPOTHESIS_TTL_HOURS = env_int("QIWEI_HYPOTHESIS_TTL_HOURS", 168, 1, 8760)
# How long a proposal (a reading held back from an automatic write, issue 35) waits for a supervisor
# before it expires on its own (days).
QIWEI_MEMORY_PROPOSAL_TTL_DAYS = env_int("QIWEI_MEMORY_PROPOSAL_TTL_DAYS", 14, 1, 365)
# Automatic items below this confidence wait in the admin review queue beside hypotheses.
QIWEI_REVIEW_CONFIDENCE_BELOW = env_float("QIWEI_REVIEW_CONFIDENCE_BELOW", 0.7, 0.0, 1.0)
# The start page warns when an item has waited in the review queue longer than this (days).
QIWEI_REVIEW_STALE_DAYS = env_int("QIWEI_REVIEW_STALE_DAYS", 3, 1, 365)
# What each context showed (snapshot version, item and message ids, session, who) is kept this many
# days, then purged hourly by beat (`memory.tasks.context_reads_purge_all`).
QIWEI_CONTEXT_READ_RETENTION_DAYS = env_int("QIWEI_CONTEXT_READ_RETENTION_DAYS", 180, 1, 3650)
# Bytes of built contexts kept per process; an answer is reused only while every row it read is unchanged.
QIWEI_AGENT_CONTEXT_CACHE_BYTES = env_int("QIWEI_AGENT_CONTEXT_CACHE_BYTES", 8 * 1024 * 1024, 0, 1024**3)
