"""The set-up stamp (issue 39, item 5): a warm ./run.sh skips `manage.py setup` only while nothing
it depends on changed; every change that matters, and every doubt, runs it."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from qiwei_site.operations import setup_stamp


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small project: a migration, a settings module, an app's static file, the knowledge dir,
    and a data dir as setup leaves it (default and one account database, collected static files)."""
    base = tmp_path / "project"
    for name, text in {
        "memory/migrations/0001_initial.py": "# first\n",
        "qiwei_site/settings/base.py": "X = 1\n",
        "memory/static/memory/app.css": "body {}\n",
        "knowledge_base/faq.md": "# 常见问题\n",
        "pyproject.toml": "[project]\n",
        "var/static/.collected-sources": "abc",
    }.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for database in ("var/default.sqlite3", "var/accounts/acme.sqlite3"):
        (base / database).parent.mkdir(parents=True, exist_ok=True)
        sqlite3.connect(base / database).close()
    return base


def env_for(base: Path, **extra: str) -> dict[str, str]:
    return {"QIWEI_DATA_DIR": str(base / "var"), "QIWEI_KNOWLEDGE_DIR": str(base / "knowledge_base"), **extra}


def stamp(base: Path, environ: dict[str, str]) -> None:
    setup_stamp.write(
        inputs=setup_stamp.inputs_digest(environ, base), data_dir=base / "var", knowledge_dir=base / "knowledge_base"
    )


def reason(base: Path, environ: dict[str, str]) -> str | None:
    return setup_stamp.check(environ, base)[1]


def touch_later(path: Path, text: str) -> None:
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before + 10**9, before + 10**9))


def test_setup_stamp_current_when_nothing_changed(project):
    # Given a data dir stamped after a set-up
    environ = env_for(project)
    stamp(project, environ)
    # Then the check says setup may be skipped, and a new port or admin password changes nothing
    assert reason(project, environ) is None
    assert reason(project, {**environ, "QIWEI_BIND": "127.0.0.1:9999", "QIWEI_ADMIN_PASSWORD": "x"}) is None


def test_setup_stamp_missing_runs_setup(project):
    assert reason(project, env_for(project)) == "no set-up stamp"


@pytest.mark.parametrize(
    ("change", "path", "text"),
    [
        ("a migration edited", "memory/migrations/0001_initial.py", "# first, edited\n"),
        ("a migration added", "memory/migrations/0002_more.py", "# second\n"),
        ("a settings module edited", "qiwei_site/settings/base.py", "X = 2\n"),
        ("an app's static file edited", "memory/static/memory/app.css", "body { color: red }\n"),
        ("a knowledge file edited", "knowledge_base/faq.md", "# 常见问题（新）\n"),
        ("a knowledge file added", "knowledge_base/prices.md", "# 价格\n"),
        ("pyproject.toml edited", "pyproject.toml", "[project]\nname = 'x'\n"),
        (".env written", ".env", "QIWEI_MODEL_CLIENT=openai\n"),
    ],
)
def test_setup_stamp_runs_setup_when_an_input_changed(project, change, path, text):
    # Given a stamped data dir
    environ = env_for(project)
    stamp(project, environ)
    # When an input changes
    touch_later(project / path, text)
    # Then setup runs
    assert reason(project, environ) is not None, change


def test_setup_stamp_knowledge_file_removed_runs_setup(project):
    environ = env_for(project)
    (project / "knowledge_base/old.md").write_text("旧\n", encoding="utf-8")
    stamp(project, environ)
    (project / "knowledge_base/old.md").unlink()
    assert reason(project, environ) is not None


def test_setup_stamp_a_setting_changed_runs_setup(project):
    environ = env_for(project)
    stamp(project, environ)
    assert reason(project, {**environ, "QIWEI_MODEL_CLIENT": "openai"}) is not None
    assert reason(project, {**environ, "DJANGO_SETTINGS_MODULE": "qiwei_site.settings.production"}) is not None


def test_setup_stamp_database_restored_from_an_older_copy_runs_setup(project, tmp_path):
    # Given a copy of the default database taken before the last set-up
    environ = env_for(project)
    shutil.copy(project / "var/default.sqlite3", tmp_path / "before.sqlite3")
    stamp(project, environ)
    # When it is copied back over the database (same file, same name)
    shutil.copyfile(tmp_path / "before.sqlite3", project / "var/default.sqlite3")
    # Then setup runs
    assert reason(project, environ) == "database default.sqlite3 is not the one set up"


@pytest.mark.parametrize("what", ["account added", "account removed", "default removed"])
def test_setup_stamp_databases_added_or_removed_run_setup(project, what):
    environ = env_for(project)
    stamp(project, environ)
    if what == "account added":
        sqlite3.connect(project / "var/accounts/new.sqlite3").close()
    elif what == "account removed":
        (project / "var/accounts/acme.sqlite3").unlink()
    else:
        (project / "var/default.sqlite3").unlink()
    assert reason(project, environ) == "databases added or removed"


def test_setup_stamp_static_collection_wiped_runs_setup(project):
    environ = env_for(project)
    stamp(project, environ)
    shutil.rmtree(project / "var/static")
    assert reason(project, environ) == "collected static files changed"


@pytest.mark.parametrize("variable", ["DATABASE_URL", "QIWEI_ACCOUNT_DATABASE_URL"])
def test_setup_stamp_database_server_always_runs_setup(project, variable):
    environ = env_for(project)
    stamp(project, environ)
    assert "database server" in str(reason(project, {**environ, variable: "postgres://x@127.0.0.1/y"}))
    # also when .env sets it
    (project / ".env").write_text(f"{variable}=postgres://x@127.0.0.1/y\n", encoding="utf-8")
    assert "database server" in str(reason(project, environ))


def test_setup_stamp_other_data_dir_or_format_runs_setup(project):
    environ = env_for(project)
    stamp(project, environ)
    record = json.loads((project / "var" / setup_stamp.STAMP_NAME).read_text(encoding="utf-8"))
    record["data_dir"] = "/elsewhere"
    (project / "var" / setup_stamp.STAMP_NAME).write_text(json.dumps(record), encoding="utf-8")
    assert reason(project, environ) == "data or knowledge dir moved"
    (project / "var" / setup_stamp.STAMP_NAME).write_text("{not json", encoding="utf-8")
    assert reason(project, environ) == "no set-up stamp"


def test_setup_stamp_forget_drops_it(project):
    # Given a stamp; when setup starts (it forgets the stamp first) and fails before writing one
    environ = env_for(project)
    stamp(project, environ)
    setup_stamp.forget(project / "var")
    # Then the next start runs setup
    assert reason(project, environ) == "no set-up stamp"


def test_setup_stamp_ignores_tests_and_caches(project):
    environ = env_for(project)
    stamp(project, environ)
    (project / "tests").mkdir()
    (project / "tests/test_x.py").write_text("def test(): ...\n", encoding="utf-8")
    (project / "memory/__pycache__").mkdir()
    (project / "memory/__pycache__/x.pyc").write_bytes(b"\0")
    assert reason(project, environ) is None


def test_read_dotenv_reads_quotes_comments_and_export(tmp_path):
    (tmp_path / ".env").write_text(
        "# comment\n\nexport QIWEI_A=1\nQIWEI_B='two words'\nQIWEI_C=\"3\"\nnot a pair\n", encoding="utf-8"
    )
    assert setup_stamp.read_dotenv(tmp_path / ".env") == {"QIWEI_A": "1", "QIWEI_B": "two words", "QIWEI_C": "3"}
