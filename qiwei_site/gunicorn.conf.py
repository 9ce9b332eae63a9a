"""gunicorn settings; every value can be overridden from the environment."""

import multiprocessing
import os

bind = os.environ.get("QIWEI_BIND", "127.0.0.1:4320")
workers = int(os.environ.get("GUNICORN_WORKERS", min(4, multiprocessing.cpu_count() * 2)))
threads = int(os.environ.get("GUNICORN_THREADS", 4))
worker_class = "gthread"
timeout = int(os.environ.get("GUNICORN_TIMEOUT", 120))
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", 20))
keepalive = 5
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", 2000))
max_requests_jitter = 200
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-")
# The path without its query string, and no referer: a search (`?q=`) names what an agent or a
# supervisor looked for, and an access log outlives forget and erasure. Method, path, status, size,
# time taken and the client stay.
access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms "%(a)s"'
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")


def on_starting(server):
    """Refuse to start while a key fails closed (issue 36: a missing, unreadable, wrong or
    world-readable key; never a new sealing key over sealed originals). Connections the check opened
    are closed before the workers fork."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qiwei_site.settings.local")
    import django

    django.setup()
    from django.db import connections

    from qiwei_site.platform.keyfiles import KeysRefused, startup_keys_check

    try:
        startup_keys_check()
    except KeysRefused as exc:
        server.log.error("拒绝启动 (refusing to start): %s", exc)
        raise SystemExit(1) from None
    finally:
        connections.close_all()


def worker_int(worker):
    """A quick stop (SIGINT, SIGQUIT: Ctrl-C reaches every process of the terminal's group, the
    master's quick stop follows): gunicorn drops requests in hand then, so leave at once instead of
    through the interpreter's exit, which a second signal arriving during it can hang until the master
    kills the worker after graceful_timeout ("was sent SIGKILL! Perhaps out of memory?")."""
    import sys

    worker.log.info("Worker exiting (pid: %s)", worker.pid)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)
