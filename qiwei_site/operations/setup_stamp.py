"""Whether `manage.py setup` may be skipped on a warm `./run.sh` (issue 39, item 5): a stamp in the
data dir, written by `setup` when it succeeds, naming what it was run on. Standard library only, so
run.sh checks it with `python qiwei_site/operations/setup_stamp.py check` before any Django start-up.

What it was run on is two halves. The inputs: every source file that can change what a step does
(each `.py` outside tests and benchmarks — the migrations, the commands, the settings among them —,
the static files, `pyproject.toml`), every file of the knowledge dir, the installed packages (the
site-packages folders' modification times move on any install or removal), the interpreter, `.env`
and the variables the settings read. The state: a random token `setup` writes into every SQLite
database it migrated (`PRAGMA user_version`) once every step has passed, the set of those files,
and the static collection's own stamp. A database restored from an older copy, a new or deleted
account, a wiped static folder or another data dir all fail the check. A wrong skip is worse than a
slow start, so anything unsure answers "run it": no stamp, another format, a database server
(`DATABASE_URL` or `QIWEI_ACCOUNT_DATABASE_URL`: its state cannot be read without connecting), or
any error while checking.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]
STAMP_NAME = ".setup-stamp.json"
STAMP_FORMAT = 1
# run.sh hands setup the inputs digest it computed before setup ran: a file edited while setup runs
# then fails the next check instead of being stamped as seen.
INPUTS_ENV = "QIWEI_SETUP_INPUTS"
STATIC_STAMP = "static/.collected-sources"  # commands/setup.py: STATIC_STAMP under STATIC_ROOT
SETTINGS_PREFIXES = ("QIWEI_", "DJANGO_", "DATABASE_URL", "CELERY_")
# Read by the settings but not by any step: a new port or password must not force a set-up.
IGNORED_VARIABLES = frozenset({"QIWEI_BIND", "QIWEI_ADMIN_PASSWORD", "QIWEI_INSTALLER", INPUTS_ENV})
SERVER_DATABASE_VARIABLES = ("DATABASE_URL", "QIWEI_ACCOUNT_DATABASE_URL")
# Folders whose files never change what a step does (or are the data itself).
PRUNED = frozenset(
    {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
    | {"tests", "benchmarks", "docs", "test-artifacts", "var", "deploy", "scripts"}
)
SOURCE_SUFFIXES = (".py", ".toml", ".cfg", ".ini")


@dataclass(frozen=True)
class Paths:
    data_dir: Path
    knowledge_dir: Path


def read_dotenv(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of `.env` (comments, blank lines and `export ` skipped, one pair of quotes
    stripped). A value read otherwise than django-environ reads it only makes the check fail."""
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.removeprefix("export ").split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def settings_environment(environ: Mapping[str, str], base_dir: Path = BASE_DIR) -> dict[str, str]:
    """The variables the settings read: the process's, then `.env`'s for those unset (the settings
    read it with overwrite=False)."""
    merged = {**read_dotenv(base_dir / ".env"), **environ}
    return {k: v for k, v in merged.items() if k.startswith(SETTINGS_PREFIXES) and k not in IGNORED_VARIABLES}


def resolve_paths(env: Mapping[str, str], base_dir: Path = BASE_DIR) -> Paths:
    """The data and knowledge dirs as qiwei_site/settings/base.py resolves them."""
    data_dir = Path(env.get("QIWEI_DATA_DIR") or base_dir / "var").resolve()
    knowledge_dir = Path(env.get("QIWEI_KNOWLEDGE_DIR") or base_dir / "knowledge_base").resolve()
    return Paths(data_dir=data_dir, knowledge_dir=knowledge_dir)


def _file_entries(root: Path, *, prune: Iterable[Path] = (), sources_only: bool = False) -> list[str]:
    entries = []
    skipped = {p.resolve() for p in prune}
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if d not in PRUNED and (here / d).resolve() not in skipped)
        in_static = "static" in here.relative_to(root).parts
        for name in sorted(files):
            if sources_only and not (in_static or name.endswith(SOURCE_SUFFIXES)):
                continue
            path = here / name
            try:
                info = path.stat()
            except OSError:
                continue
            entries.append(f"{path.relative_to(root)}\0{info.st_size}\0{info.st_mtime_ns}")
    return entries


def inputs_digest(environ: Mapping[str, str] | None = None, base_dir: Path = BASE_DIR) -> str:
    """The digest of everything that can change what a set-up step does (module docstring)."""
    env = settings_environment(os.environ if environ is None else environ, base_dir)
    paths = resolve_paths(env, base_dir)
    digest = hashlib.sha256(f"format {STAMP_FORMAT}\0{sys.executable}\0{sys.version}\n".encode())
    for key in sorted(env):
        digest.update(f"env\0{key}\0{env[key]}\n".encode())
    dotenv = base_dir / ".env"
    digest.update(b"dotenv\0" + (dotenv.read_bytes() if dotenv.is_file() else b"-") + b"\n")
    for folder in sorted({p for p in sys.path if p.endswith("site-packages")}):
        with_mtime = os.stat(folder).st_mtime_ns if os.path.isdir(folder) else -1
        digest.update(f"packages\0{folder}\0{with_mtime}\n".encode())
    for entry in _file_entries(base_dir, prune=[paths.data_dir, paths.knowledge_dir], sources_only=True):
        digest.update(f"source\0{entry}\n".encode())
    digest.update(f"knowledge\0{paths.knowledge_dir}\n".encode())
    if paths.knowledge_dir.is_dir():
        for entry in _file_entries(paths.knowledge_dir):
            digest.update(f"knowledge\0{entry}\n".encode())
    return digest.hexdigest()


def sqlite_files(data_dir: Path) -> list[str]:
    """The databases setup migrates, relative to the data dir: the default and every account's."""
    found = [data_dir / "default.sqlite3", *sorted((data_dir / "accounts").glob("*.sqlite3"))]
    return [str(path.relative_to(data_dir)) for path in found if path.is_file()]


def _user_version(path: Path) -> int:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _set_user_version(path: Path, token: int) -> None:
    conn = sqlite3.connect(path, timeout=30)
    try:
        conn.execute(f"PRAGMA user_version = {int(token)}")
        conn.commit()
    finally:
        conn.close()


def stamp_path(data_dir: Path) -> Path:
    return data_dir / STAMP_NAME


def forget(data_dir: Path) -> None:
    """Drop the stamp: setup calls this before its first step, so a failed setup leaves none."""
    stamp_path(data_dir).unlink(missing_ok=True)


def write(*, inputs: str, data_dir: Path, knowledge_dir: Path) -> Path:
    """After every step passed: a new token into every database, then the stamp naming them."""
    token = secrets.randbelow(2**31 - 2) + 1
    databases = sqlite_files(data_dir)
    for name in databases:
        _set_user_version(data_dir / name, token)
    static = data_dir / STATIC_STAMP
    record = {
        "format": STAMP_FORMAT,
        "inputs": inputs,
        "data_dir": str(data_dir.resolve()),
        "knowledge_dir": str(knowledge_dir.resolve()),
        "token": token,
        "databases": databases,
        "static": static.read_text(encoding="utf-8") if static.is_file() else None,
    }
    path = stamp_path(data_dir)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
    partial.replace(path)
    return path


def check(environ: Mapping[str, str] | None = None, base_dir: Path = BASE_DIR) -> tuple[str, str | None]:
    """The inputs digest, and None when setup may be skipped, else the reason it may not."""
    env = settings_environment(os.environ if environ is None else environ, base_dir)
    inputs = inputs_digest(environ, base_dir)
    if any(env.get(name) for name in SERVER_DATABASE_VARIABLES):
        return inputs, "database server configured (its state is not checked without connecting)"
    paths = resolve_paths(env, base_dir)
    try:
        record = json.loads(stamp_path(paths.data_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return inputs, "no set-up stamp"
    if not isinstance(record, dict) or record.get("format") != STAMP_FORMAT:
        return inputs, "stamp of another format"
    if record.get("inputs") != inputs:
        return inputs, "sources, migrations, static or knowledge files, packages or settings changed"
    if record.get("data_dir") != str(paths.data_dir) or record.get("knowledge_dir") != str(paths.knowledge_dir):
        return inputs, "data or knowledge dir moved"
    if record.get("databases") != sqlite_files(paths.data_dir):
        return inputs, "databases added or removed"
    for name in record["databases"]:
        try:
            if _user_version(paths.data_dir / name) != record.get("token"):
                return inputs, f"database {name} is not the one set up"
        except sqlite3.Error:
            return inputs, f"database {name} unreadable"
    static = paths.data_dir / STATIC_STAMP
    if not static.is_file() or static.read_text(encoding="utf-8") != record.get("static"):
        return inputs, "collected static files changed"
    return inputs, None


def main(argv: list[str]) -> int:
    """`check`: prints the inputs digest; exit 0 when setup may be skipped, 1 (the reason on
    stderr) when it must run."""
    if argv[1:] != ["check"]:
        print("usage: setup_stamp.py check", file=sys.stderr)  # noqa: T201
        return 2
    try:
        inputs, reason = check()
    except Exception as exc:  # unsure: run setup
        print(f"setup check failed ({exc}); running setup", file=sys.stderr)  # noqa: T201
        return 1
    print(inputs)  # noqa: T201
    if reason:
        print(f"需要准备 (setup runs): {reason}", file=sys.stderr)  # noqa: T201
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
