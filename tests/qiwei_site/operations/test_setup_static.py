"""`manage.py setup`'s static-files step (issue 24, item 5): collectstatic runs when a source file
changed or a collected file is missing, and is skipped when everything is as it was collected."""

from __future__ import annotations

import os
from io import StringIO
from pathlib import Path

import pytest

from qiwei_site.operations.management.commands.setup import STATIC_STAMP, Command, static_sources

SKIPPED = "静态文件未变，跳过收集"


@pytest.fixture
def static_dirs(settings, tmp_path) -> tuple[Path, Path]:
    """A project static folder of our own (one stylesheet) and an empty STATIC_ROOT."""
    source = tmp_path / "project_static"
    (source / "workbench").mkdir(parents=True)
    (source / "workbench" / "queue.css").write_text(".待审核 { color: #c00; }\n", encoding="utf-8")
    settings.STATICFILES_DIRS = [str(source)]
    settings.STATIC_ROOT = str(tmp_path / "static")
    return source, Path(settings.STATIC_ROOT)


def run_setup() -> str:
    """The set-up command's static-files step, as `manage.py setup` runs it (the other steps and
    the whole command are covered in test_setup.py)."""
    out = StringIO()
    Command(stdout=out).collect_static()
    return out.getvalue()


def test_setup_static_collects_on_a_fresh_install_and_stamps_the_sources(static_dirs):
    # Given nothing collected yet
    _, root = static_dirs
    # When set-up runs
    output = run_setup()
    # Then our file and Django's admin files are collected, with a stamp of their sources
    assert SKIPPED not in output
    assert (root / "workbench" / "queue.css").read_text(encoding="utf-8") == ".待审核 { color: #c00; }\n"
    assert (root / "admin" / "css" / "base.css").is_file()
    assert (root / STATIC_STAMP).read_text(encoding="utf-8") == static_sources()[1]


def test_setup_static_skips_collection_when_nothing_changed(static_dirs):
    # Given a first set-up collected everything
    _, root = static_dirs
    run_setup()
    collected = root / "admin" / "css" / "base.css"
    os.utime(collected, ns=(1, 1))
    # When set-up runs again with the same sources
    output = run_setup()
    # Then it says the step was skipped and leaves the collected files untouched
    assert SKIPPED in output
    assert collected.stat().st_mtime_ns == 1


def test_setup_static_collects_again_when_a_source_file_changed(static_dirs):
    # Given a first set-up, then the stylesheet edited (new content, a later modification time)
    source, root = static_dirs
    run_setup()
    edited = source / "workbench" / "queue.css"
    edited.write_text(".待审核 { color: #a00; font-weight: bold; }\n", encoding="utf-8")
    os.utime(edited, ns=(edited.stat().st_mtime_ns + 10**9,) * 2)
    # When set-up runs again
    output = run_setup()
    # Then the new content is collected and the stamp follows it
    assert SKIPPED not in output
    assert (root / "workbench" / "queue.css").read_text(encoding="utf-8") == edited.read_text(encoding="utf-8")
    assert (root / STATIC_STAMP).read_text(encoding="utf-8") == static_sources()[1]


def test_setup_static_collects_again_when_a_collected_file_is_missing(static_dirs):
    # Given a first set-up, then one collected file deleted from STATIC_ROOT
    _, root = static_dirs
    run_setup()
    (root / "workbench" / "queue.css").unlink()
    # When set-up runs again
    output = run_setup()
    # Then the file is collected again
    assert SKIPPED not in output
    assert (root / "workbench" / "queue.css").is_file()


def test_setup_static_collects_again_when_a_source_file_is_added(static_dirs):
    # Given a first set-up, then a new script added to the project's static folder
    source, root = static_dirs
    run_setup()
    (source / "workbench" / "review.js").write_text("// 审核队列\n", encoding="utf-8")
    # When set-up runs again
    output = run_setup()
    # Then the new file is collected
    assert SKIPPED not in output
    assert (root / "workbench" / "review.js").read_text(encoding="utf-8") == "// 审核队列\n"
