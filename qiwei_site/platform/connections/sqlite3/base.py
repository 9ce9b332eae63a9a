"""Django's SQLite backend for account databases kept open between uses (issue 13).

A thread keeps its most recently used SQLite account connections open (`tenancy`: at most
`QIWEI_ACCOUNT_CONN_CAP` per thread): reopening one costs ~1.8 ms (the driver, Django's SQL
functions, the pragmas, SQLite reading the schema) on every request and capture job. A kept
connection must still be to the file the account's database is now: one deleted and created
again (an account erased and made anew, a test's fresh data dir) would otherwise be written
through a handle to the deleted file. So the connection remembers its file (device and inode) and
is unusable once the path names another file or none; Django's health check then reconnects."""

from __future__ import annotations

import os
from typing import Any

from django.db.backends.sqlite3 import base as sqlite3


def file_identity(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino)


class DatabaseWrapper(sqlite3.DatabaseWrapper):
    qiwei_file: tuple[int, int] | None = None

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        raw = super().get_new_connection(conn_params)
        self.qiwei_file = file_identity(str(self.settings_dict["NAME"]))
        return raw

    def is_usable(self) -> bool:
        identity = file_identity(str(self.settings_dict["NAME"]))
        return identity is not None and identity == self.qiwei_file
