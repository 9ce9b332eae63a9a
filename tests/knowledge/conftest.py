"""Fixtures for knowledge tests: a throw-away knowledge base."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def knowledge_root(tmp_path, settings) -> Path:
    """An empty knowledge directory selected as QIWEI_KNOWLEDGE_DIR."""
    root = tmp_path / "kb"
    root.mkdir()
    settings.QIWEI_KNOWLEDGE_DIR = root
    return root
