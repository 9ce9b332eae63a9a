#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent
# Commands that make or need no project database: everything else needs one set up first.
_WITHOUT_DATABASE = {
    "setup", "migrate", "makemigrations", "check", "collectstatic",
    "help", "version", "--help", "-h", "--version", "test", "diffsettings", "startapp", "shell",
}  # fmt: skip


def _missing_database() -> str:
    """The local default database's path when it does not exist yet (else ""): asked before Django
    starts, because the local settings create the data directory they name."""
    import environ

    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)
    if os.environ.get("DJANGO_SETTINGS_MODULE") != "qiwei_site.settings.local" or os.environ.get("DATABASE_URL"):
        return ""
    data_dir = Path(os.environ.get("QIWEI_DATA_DIR", "").strip() or BASE_DIR / "var").resolve()
    database = data_dir / "default.sqlite3"
    return "" if database.exists() else str(database)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qiwei_site.settings.local")
    command = sys.argv[1] if len(sys.argv) > 1 else "help"
    asks_help = any(arg in ("--help", "-h") for arg in sys.argv[2:])
    if command not in _WITHOUT_DATABASE and not asks_help and (missing := _missing_database()):
        sys.stderr.write(
            f"数据目录里没有项目数据库：{missing}\n"
            "先运行 ./run.sh 或 manage.py setup，或把 QIWEI_DATA_DIR 指向已有的数据目录 "
            "(no project database in the data directory; run setup first).\n"
        )
        sys.exit(1)
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A configuration error is the operator's to fix: say what and exit, no traceback.
        sys.stderr.write(f"配置错误 (configuration error): {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
