"""gunicorn's access log keeps no query string and no referer (issue 21, item 1): a search names
what was looked for, and the log outlives forget and erasure."""

from __future__ import annotations

import datetime as dt
import runpy
from pathlib import Path
from types import SimpleNamespace

from gunicorn.config import Config
from gunicorn.glogging import Logger

import qiwei_site

CONF = Path(qiwei_site.__file__).with_name("gunicorn.conf.py")


def test_gunicorn_access_log_line_has_no_query_string_or_referer():
    # Given gunicorn configured from our file
    values = runpy.run_path(str(CONF))
    config = Config()
    config.set("access_log_format", values["access_log_format"])
    logger = Logger(config)
    # And a search for a guessed password, from a page whose address holds another search
    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": "/api/accounts/acme/messages/?q=Lx9%23qa2041",
        "PATH_INFO": "/api/accounts/acme/messages/",
        "QUERY_STRING": "q=Lx9%23qa2041",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "10.0.0.8",
        "HTTP_REFERER": "http://127.0.0.1:4320/workbench/?q=13912345678",
        "HTTP_USER_AGENT": "Mozilla/5.0",
    }
    response = SimpleNamespace(status="200 OK", sent=512, headers=[])
    request = SimpleNamespace(headers=[])
    # When its access line is formatted
    line = logger.cfg.access_log_format % logger.atoms(response, request, environ, dt.timedelta(milliseconds=12))
    # Then the path, status and size are there, and neither search is
    assert '"GET /api/accounts/acme/messages/ HTTP/1.1" 200 512 12ms' in line
    assert "Lx9" not in line and "q=" not in line and "13912345678" not in line
