"""The fixed instructions cached per knowledge-index version (issue 13, item 4): one cheap version
read per build instead of the documents and sections, and never an outdated text."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from knowledge.context import (
    KNOWLEDGE_VERSION_CACHE_KEY,
    knowledge_version,
    project_context,
    project_context_cache_clear,
    project_context_cached,
)
from knowledge.services import knowledge_index

FILES = ["personality.md", "rules.md"]


def write(root, name, text):
    path = root / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def indexed(db, knowledge_root):
    """A persona that pulls in the rules' safety section, indexed."""
    write(knowledge_root, "personality.md", "# 人设\n你是安居优选的租房顾问，亲切专业\n@context rules.md#安全边界")
    write(knowledge_root, "rules.md", "# 规则\n## 安全边界\n不索要验证码和银行卡密码\n## 报价\n只报已确认的价格")
    knowledge_index()
    project_context_cache_clear()
    return knowledge_root


def same(first, second) -> bool:
    return first.text == second.text and first.report.as_dict() == second.report.as_dict()


def test_project_context_cached_equals_project_context(indexed):
    # When the instructions are read through the cache, twice
    cached = project_context_cached(files=FILES)
    again = project_context_cached(files=FILES)
    # Then both are what project_context reads from the index
    direct = project_context(files=FILES)
    assert same(cached, direct) and same(again, direct)
    assert "不索要验证码和银行卡密码" in cached.text


def test_project_context_cached_reads_nothing_once_cached(indexed, django_assert_num_queries):
    # Given the instructions were read once for this index version
    project_context_cached(files=FILES)
    # When they are read again
    with django_assert_num_queries(0):
        context = project_context_cached(files=FILES)
    # Then no query was needed (the version's token is in Django's cache)
    assert "亲切专业" in context.text


def test_project_context_cached_follows_a_reindexed_file(indexed):
    # Given cached instructions
    before = project_context_cached(files=FILES)
    # When a referenced section changes on disk and the index is refreshed
    write(indexed, "rules.md", "# 规则\n## 安全边界\n不索要验证码，也不索要身份证照片\n## 报价\n只报已确认的价格")
    knowledge_index()
    after = project_context_cached(files=FILES)
    # Then the new text is served, the old one is gone
    assert "也不索要身份证照片" in after.text and "银行卡密码" not in after.text
    assert knowledge_version() != () and not same(before, after)


def test_project_context_cached_follows_a_removed_file(indexed):
    # Given cached instructions
    project_context_cached(files=FILES)
    # When the rules file is deleted and the index refreshed
    (indexed / "rules.md").unlink()
    knowledge_index()
    after = project_context_cached(files=FILES)
    # Then the rules are missing, and said to be
    assert "银行卡密码" not in after.text
    assert after.report.missing_files == ["rules.md"]


def test_project_context_cached_keys_on_the_files_and_the_limit(indexed):
    # When the same index is read for other files and another limit
    persona_only = project_context_cached(files=["personality.md"])
    short = project_context_cached(files=FILES, limit=40)
    # Then each is what project_context gives for those arguments
    assert same(persona_only, project_context(files=["personality.md"]))
    assert same(short, project_context(files=FILES, limit=40)) and short.report.truncated


def test_project_context_cached_hands_out_independent_reports(indexed):
    # Given a caller that changes the report it got
    first = project_context_cached(files=FILES)
    first.report.files.append("injected.md")
    first.report.references_refused.append({"reference": "x", "in": "y", "reason": "z"})
    # When the instructions are read again
    second = project_context_cached(files=FILES)
    # Then the cached report was not touched
    assert second.report.files == FILES and second.report.references_refused == []


def test_project_context_cached_indexes_an_empty_index_lazily(db, knowledge_root):
    # Given files on disk and nothing indexed yet
    write(knowledge_root, "personality.md", "# 人设\n耐心回答租房问题")
    project_context_cache_clear()
    # When the instructions are read
    context = project_context_cached(files=["personality.md"])
    # Then the index was built on the way, and the next read is cached from it
    assert "耐心回答租房问题" in context.text
    assert [path for path, _sha in knowledge_version()] == ["personality.md"]
    assert same(project_context_cached(files=["personality.md"]), context)


def test_project_context_cached_never_keeps_new_text_under_a_stale_version(indexed):
    # Given instructions cached for version 1, whose token this process still holds in Django's cache
    # (a per-process cache: another process's reindex does not flush it)
    project_context_cached(files=FILES)
    stale = cache.get(KNOWLEDGE_VERSION_CACHE_KEY)
    # When another process reindexes a changed rules file (version 2), and this process asks for a
    # set of files it has not cached yet while its token still names version 1
    write(indexed, "rules.md", "# 规则\n## 安全边界\n不索要验证码，也不索要身份证照片\n## 报价\n只报已确认的价格")
    knowledge_index()
    cache.set(KNOWLEDGE_VERSION_CACHE_KEY, stale)
    fresh = project_context_cached(files=["personality.md"])
    # Then the text is version 2's, kept under version 2: once the index returns to version 1's
    # files, version 1's text is served, not version 2's under version 1's name
    assert "也不索要身份证照片" in fresh.text
    write(indexed, "rules.md", "# 规则\n## 安全边界\n不索要验证码和银行卡密码\n## 报价\n只报已确认的价格")
    knowledge_index()
    assert cache.get(KNOWLEDGE_VERSION_CACHE_KEY) in (None, stale)
    back = project_context_cached(files=["personality.md"])
    assert "不索要验证码和银行卡密码" in back.text and "身份证照片" not in back.text
